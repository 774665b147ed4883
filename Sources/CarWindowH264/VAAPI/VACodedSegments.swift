internal import CVA

/// What went wrong while reading a coded buffer's segment list.
enum CodedSegmentError: Error, Equatable, CustomStringConvertible {
    /// The list is longer than any driver writes: a loop or garbage.
    case tooManySegments(Int)
    /// A segment claims bytes but has no data pointer.
    case missingData(segment: Int, size: Int)
    /// The bytes would exceed the limit (the size of the coded buffer).
    case tooLarge(limit: Int)
    /// The driver said the picture did not fit the coded buffer.
    case overflow(status: UInt32)

    var description: String {
        switch self {
        case .tooManySegments(let count): "the coded buffer lists more than \(count) segments"
        case .missingData(let segment, let size): "coded segment \(segment) claims \(size) bytes but has no data"
        case .tooLarge(let limit): "the coded segments hold more than the coded buffer's \(limit) bytes"
        case .overflow(let status):
            "the picture overflowed the coded buffer (segment status 0x\(String(status, radix: 16))); lower the bitrate or the size"
        }
    }
}

/// Walks libva's `VACodedBufferSegment` list (what `vaMapBuffer` gives for a coded buffer).
enum VACodedSegments {
    /// A driver writes one segment per slice or header; a thousand means a broken list.
    static let maximumSegments = 1024
    /// Status bits that mean bytes were lost.
    static let overflowMask = UInt32(VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK) | UInt32(VA_CODED_BUF_STATUS_FRAME_SIZE_OVERFLOW)

    /// The picture's mean QP, which a driver may put in the first segment's status
    /// (`VA_CODED_BUF_STATUS_PICTURE_AVE_QP_MASK`); nil where it leaves it 0 or out of range.
    static func quantizer(from head: UnsafeRawPointer?) -> Int? {
        guard let head else { return nil }
        let status = head.assumingMemoryBound(to: VACodedBufferSegment.self).pointee.status
        let quantizer = Int(status & UInt32(VA_CODED_BUF_STATUS_PICTURE_AVE_QP_MASK))
        return (1...51).contains(quantizer) ? quantizer : nil
    }

    /// Appends the bytes of every segment, in list order, to `output`, which keeps its capacity
    /// across pictures. Returns how many segments there were.
    @discardableResult
    static func append(from head: UnsafeRawPointer?, into output: inout [UInt8], limit: Int) throws(CodedSegmentError) -> Int {
        var current = head
        var count = 0
        var total = 0
        while let pointer = current {
            guard count < maximumSegments else { throw .tooManySegments(maximumSegments) }
            let segment = pointer.assumingMemoryBound(to: VACodedBufferSegment.self).pointee
            if segment.status & overflowMask != 0 { throw .overflow(status: segment.status) }
            let size = Int(segment.size)
            if size > 0 {
                guard let data = segment.buf else { throw .missingData(segment: count, size: size) }
                guard total + size <= limit else { throw .tooLarge(limit: limit) }
                output.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size))
                total += size
            }
            count += 1
            current = UnsafeRawPointer(segment.next)
        }
        return count
    }
}

/// nal_unit_type (H.264 table 7-1) for the units a low-delay baseline stream and its tools meet.
package enum NALUnitType: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Coded slice of a non-IDR picture (P or I), type 1.
    case slice
    /// Coded slice of an IDR picture: decoding can start here, type 5.
    case idrSlice
    /// Supplemental enhancement information, type 6.
    case sei
    /// Sequence parameter set, type 7.
    case sequenceParameterSet
    /// Picture parameter set, type 8.
    case pictureParameterSet
    /// Access unit delimiter, type 9.
    case accessUnitDelimiter
    /// End of sequence, type 10.
    case endOfSequence
    /// End of stream, type 11.
    case endOfStream
    /// Filler data (CBR padding), type 12.
    case fillerData
    /// Any other type, kept by value so unknown units pass through untouched.
    case other(UInt8)

    /// Maps the 5-bit nal_unit_type; values above 31 keep only their low five bits.
    package init(rawValue: UInt8) {
        switch rawValue & 0x1F {
        case 1: self = .slice
        case 5: self = .idrSlice
        case 6: self = .sei
        case 7: self = .sequenceParameterSet
        case 8: self = .pictureParameterSet
        case 9: self = .accessUnitDelimiter
        case 10: self = .endOfSequence
        case 11: self = .endOfStream
        case 12: self = .fillerData
        case let value: self = .other(value)
        }
    }

    /// The 5-bit nal_unit_type.
    var rawValue: UInt8 {
        switch self {
        case .slice: 1
        case .idrSlice: 5
        case .sei: 6
        case .sequenceParameterSet: 7
        case .pictureParameterSet: 8
        case .accessUnitDelimiter: 9
        case .endOfSequence: 10
        case .endOfStream: 11
        case .fillerData: 12
        case .other(let value): value & 0x1F
        }
    }

    /// Whether the unit carries slice data of a picture (types 1 to 5).
    package var isVCL: Bool { (1...5).contains(rawValue) }

    package var description: String {
        switch self {
        case .slice: "slice"
        case .idrSlice: "IDR slice"
        case .sei: "SEI"
        case .sequenceParameterSet: "SPS"
        case .pictureParameterSet: "PPS"
        case .accessUnitDelimiter: "AUD"
        case .endOfSequence: "end of sequence"
        case .endOfStream: "end of stream"
        case .fillerData: "filler"
        case .other(let value): "type \(value)"
        }
    }
}

/// NAL unit framing: the one-byte header, emulation prevention and Annex-B start codes.
package enum NALUnit {
    /// The four-byte start code; decoders find access units more easily after the long form.
    static let startCode: [UInt8] = [0, 0, 0, 1]

    /// The NAL unit header byte: forbidden_zero_bit 0, nal_ref_idc (0...3), nal_unit_type.
    static func header(type: NALUnitType, referenceIDC: UInt8) -> UInt8 {
        precondition(referenceIDC <= 3, "nal_ref_idc is two bits")
        return referenceIDC << 5 | type.rawValue
    }

    /// Turns an RBSP into the NAL payload: a 0x03 byte goes after every two zero bytes that are
    /// followed by a byte 0...3, so no start code can appear inside the unit (clause 7.4.1).
    static func insertEmulationPrevention(_ rbsp: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(rbsp.count + rbsp.count / 64 + 1)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2 && byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        // An RBSP ending in 0x00 (cabac_zero_words) needs a final 0x03 too, or the next start code fuses.
        if zeros >= 2 { output.append(3) }
        return output
    }

    /// Undoes `insertEmulationPrevention`: drops every 0x03 that follows two zero bytes.
    static func removeEmulationPrevention<C: Collection<UInt8>>(_ payload: C) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(payload.count)
        removeEmulationPrevention(payload, into: &output)
        return output
    }

    /// Appends the unescaped `payload` to `output` (whose storage a caller may keep and reuse).
    static func removeEmulationPrevention<C: Collection<UInt8>>(_ payload: C, into output: inout [UInt8]) {
        var zeros = 0
        for byte in payload {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
    }

    /// A whole NAL unit (header byte + escaped payload, no start code) from an RBSP.
    static func make(type: NALUnitType, referenceIDC: UInt8, rbsp: [UInt8]) -> [UInt8] {
        [header(type: type, referenceIDC: referenceIDC)] + insertEmulationPrevention(rbsp)
    }

    /// Reads a NAL unit's header and returns its type and the RBSP without emulation prevention.
    static func parse<C: Collection<UInt8>>(_ nalUnit: C) throws(H264BitstreamError)
        -> (type: NALUnitType, referenceIDC: UInt8, rbsp: [UInt8]) {
        guard let header = nalUnit.first, header & 0x80 == 0 else { throw .malformedNALHeader }
        return (NALUnitType(rawValue: header & 0x1F), (header >> 5) & 3,
                removeEmulationPrevention(nalUnit.dropFirst()))
    }

    /// The ranges of the NAL units in an Annex-B byte stream, start codes and the zero bytes
    /// before the next start code excluded. Bytes before the first start code are ignored;
    /// a stream with no start code yields no units.
    package static func ranges(in annexB: [UInt8]) -> [Range<Int>] {
        Array(NALUnitRanges(annexB))
    }

    /// The `nal_unit_type` of every NAL unit of an Annex-B stream, in order.
    static func types(in annexB: [UInt8]) -> [UInt8] {
        NALUnitRanges(annexB).map { annexB[$0.lowerBound] & 0x1F }
    }

    /// Bit `t` is set when a NAL unit of type `t` is in the stream: the per-picture checks
    /// (IDR? SPS and PPS?) without an array.
    static func typeMask(in annexB: [UInt8]) -> UInt32 {
        var mask: UInt32 = 0
        for range in NALUnitRanges(annexB) { mask |= 1 << UInt32(annexB[range.lowerBound] & 0x1F) }
        return mask
    }

    /// Annex-B: a start code before every unit.
    static func annexB(_ units: [[UInt8]]) -> [UInt8] {
        var stream: [UInt8] = []
        stream.reserveCapacity(units.reduce(0) { $0 + $1.count + 4 })
        for unit in units {
            stream += startCode
            stream += unit
        }
        return stream
    }
}

/// The NAL units of an Annex-B stream as ranges of its bytes (no start codes, no trailing zero
/// bytes, empty units left out), found as the loop asks for them: scanning a picture per frame
/// allocates nothing.
package struct NALUnitRanges: Sequence {
    private let bytes: [UInt8]

    package init(_ annexB: [UInt8]) { bytes = annexB }

    package func makeIterator() -> Iterator { Iterator(bytes: bytes) }

    package struct Iterator: IteratorProtocol {
        fileprivate let bytes: [UInt8]
        private var index = 0
        private var unitStart: Int?
        private var finished = false

        fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

        package mutating func next() -> Range<Int>? {
            let count = bytes.count
            while !finished {
                guard index + 2 < count else {
                    finished = true
                    if let start = unitStart, start < count {
                        let range = start..<trimZeros(start, count)
                        if !range.isEmpty { return range }
                    }
                    return nil
                }
                if bytes[index + 2] > 1 {
                    // No start code can end at index + 2, nor begin before it: skip ahead.
                    index += 3
                } else if bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] == 1 {
                    let previous = unitStart
                    let end = index
                    index += 3
                    unitStart = index
                    if let previous {
                        let range = previous..<trimZeros(previous, end)
                        if !range.isEmpty { return range }
                    }
                } else {
                    index += 1
                }
            }
            return nil
        }

        /// Zero bytes before a start code belong to the stream (leading/trailing_zero_8bits),
        /// not the unit.
        private func trimZeros(_ start: Int, _ end: Int) -> Int {
            var end = end
            while end > start && bytes[end - 1] == 0 { end -= 1 }
            return end
        }
    }
}

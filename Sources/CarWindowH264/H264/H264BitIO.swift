/// Why an H.264 bitstream could not be read or written.
package enum H264BitstreamError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The RBSP ended while a field still needed bits: the NAL unit is truncated or not what it claims.
    case endOfData(field: String)
    /// An Exp-Golomb code had more than 31 leading zeros, which no field of H.264 allows.
    case expGolombTooLong(field: String)
    /// A field holds a value the standard forbids (or that this code refuses to allocate for).
    case valueOutOfRange(field: String, value: Int)
    /// The NAL unit is not of the type the parser was given.
    case wrongNALUnitType(expected: UInt8, found: UInt8)
    /// The NAL unit is empty or its forbidden_zero_bit is set.
    case malformedNALHeader
    /// A valid feature this code does not handle; the message names it.
    case unsupported(String)

    package var description: String {
        switch self {
        case .endOfData(let field):
            "H.264 data ended while reading \(field): the NAL unit is truncated; pass whole NAL units"
        case .expGolombTooLong(let field):
            "H.264 Exp-Golomb code for \(field) has more than 31 leading zeros: the data is corrupt"
        case .valueOutOfRange(let field, let value):
            "H.264 field \(field) = \(value) is outside the range the standard allows: the data is corrupt"
        case .wrongNALUnitType(let expected, let found):
            "expected an H.264 NAL unit of type \(expected) but found type \(found)"
        case .malformedNALHeader:
            "H.264 NAL unit is empty or has forbidden_zero_bit set: the byte stream is corrupt"
        case .unsupported(let feature):
            "H.264 feature not supported here: \(feature)"
        }
    }
}

/// Writes an RBSP bit by bit, most significant bit first, as H.264 clause 7.2 describes.
struct BitWriter: Sendable {
    /// The finished bytes; the last one is padded with zero bits until `alignToByte` or trailing bits.
    private(set) var bytes: [UInt8] = []
    /// Bits written so far.
    private(set) var bitCount = 0

    init() {}

    /// Whether the next bit starts a new byte.
    var isByteAligned: Bool { bitCount % 8 == 0 }

    /// Appends one bit, u(1).
    mutating func writeFlag(_ flag: Bool) { writeBits(flag ? 1 : 0, count: 1) }

    /// Appends the low `count` bits of `value`, u(n); `count` is 0...32.
    mutating func writeBits(_ value: UInt32, count: Int) {
        precondition((0...32).contains(count), "u(n) takes 0 to 32 bits")
        var remaining = count
        while remaining > 0 {
            if bitCount % 8 == 0 { bytes.append(0) }
            let freeInByte = 8 - bitCount % 8
            let take = min(freeInByte, remaining)
            let shifted = UInt64(value) >> UInt64(remaining - take)
            let chunk = UInt8(truncatingIfNeeded: shifted & ((1 << UInt64(take)) - 1))
            bytes[bytes.count - 1] |= chunk << UInt8(freeInByte - take)
            remaining -= take
            bitCount += take
        }
    }

    /// Appends an unsigned Exp-Golomb code, ue(v); values up to 2^32 - 2 fit.
    mutating func writeUE(_ value: UInt32) {
        let codeNum = UInt64(value) + 1
        let length = 64 - codeNum.leadingZeroBitCount
        writeBits(0, count: length - 1)
        if length > 32 {
            writeBits(1, count: 1)
            writeBits(UInt32(truncatingIfNeeded: codeNum), count: 32)
        } else {
            writeBits(UInt32(codeNum), count: length)
        }
    }

    /// Appends an unsigned Exp-Golomb code from an `Int`; negative values are a programming error.
    mutating func writeUE(_ value: Int) {
        precondition(value >= 0 && value <= Int(UInt32.max - 1), "ue(v) holds 0...2^32-2")
        writeUE(UInt32(value))
    }

    /// Appends a signed Exp-Golomb code, se(v): positive k maps to 2k - 1, non-positive k to -2k.
    mutating func writeSE(_ value: Int32) {
        precondition(value != Int32.min, "se(v) holds -(2^31-1)...2^31-1")
        let magnitude = UInt32(value.magnitude)
        writeUE(value > 0 ? magnitude * 2 - 1 : magnitude * 2)
    }

    /// Appends a signed Exp-Golomb code from an `Int` in Int32's range.
    mutating func writeSE(_ value: Int) {
        precondition(value > Int(Int32.min) && value <= Int(Int32.max), "se(v) holds -(2^31-1)...2^31-1")
        writeSE(Int32(value))
    }

    /// Pads with zero bits up to the next byte boundary.
    mutating func alignToByte() {
        if !isByteAligned { writeBits(0, count: 8 - bitCount % 8) }
    }

    /// Ends the RBSP: rbsp_stop_one_bit then zero bits to the byte boundary.
    mutating func writeTrailingBits() {
        writeFlag(true)
        alignToByte()
    }

    /// Appends whole bytes; the writer must be byte-aligned (PCM samples, copied payloads).
    mutating func writeBytes(_ data: [UInt8]) {
        precondition(isByteAligned, "raw bytes go on a byte boundary")
        bytes.append(contentsOf: data)
        bitCount += data.count * 8
    }
}

/// Reads an RBSP bit by bit; every read names its field so a truncated unit says where it ended.
struct BitReader: Sendable {
    private let bytes: [UInt8]
    /// Bits consumed so far.
    private(set) var bitPosition = 0
    /// Index one past the rbsp_stop_one_bit, found once, so `hasMoreRBSPData` is cheap.
    private let stopBitPosition: Int

    /// Reads `rbsp`, which must already be free of emulation-prevention bytes.
    init(_ rbsp: [UInt8]) {
        bytes = rbsp
        var stop = 0
        if let lastNonZero = rbsp.lastIndex(where: { $0 != 0 }) {
            stop = lastNonZero * 8 + 7 - rbsp[lastNonZero].trailingZeroBitCount
        }
        stopBitPosition = stop
    }

    /// Bits not read yet.
    var bitsLeft: Int { bytes.count * 8 - bitPosition }

    /// Whether the next bit starts a byte.
    var isByteAligned: Bool { bitPosition % 8 == 0 }

    /// more_rbsp_data(): whether anything but the stop bit and its zero padding is left.
    var hasMoreRBSPData: Bool { bitPosition < stopBitPosition }

    /// Reads one bit, u(1).
    mutating func readFlag(_ field: String) throws(H264BitstreamError) -> Bool {
        try readBits(1, field) == 1
    }

    /// Reads `count` (0...32) bits as an unsigned number, u(n).
    mutating func readBits(_ count: Int, _ field: String) throws(H264BitstreamError) -> UInt32 {
        precondition((0...32).contains(count), "u(n) takes 0 to 32 bits")
        guard count <= bitsLeft else { throw .endOfData(field: field) }
        var value: UInt64 = 0
        var remaining = count
        while remaining > 0 {
            let byte = bytes[bitPosition / 8]
            let availableInByte = 8 - bitPosition % 8
            let take = min(availableInByte, remaining)
            let chunk = (UInt64(byte) >> UInt64(availableInByte - take)) & ((1 << UInt64(take)) - 1)
            value = (value << UInt64(take)) | chunk
            remaining -= take
            bitPosition += take
        }
        return UInt32(truncatingIfNeeded: value)
    }

    /// Reads `count` bits as an `Int`.
    mutating func readInt(_ count: Int, _ field: String) throws(H264BitstreamError) -> Int {
        Int(try readBits(count, field))
    }

    /// Reads an unsigned Exp-Golomb code, ue(v).
    mutating func readUE(_ field: String) throws(H264BitstreamError) -> UInt32 {
        var leadingZeros = 0
        while try readBits(1, field) == 0 {
            leadingZeros += 1
            guard leadingZeros <= 32 else { throw .expGolombTooLong(field: field) }
        }
        if leadingZeros == 32 {
            // Only 2^32 - 1 itself has 32 zeros; its suffix must be all zero or it overflows 32 bits.
            guard try readBits(32, field) == 0 else { throw .expGolombTooLong(field: field) }
            return UInt32.max
        }
        let suffix = try readBits(leadingZeros, field)
        return UInt32((UInt64(1) << UInt64(leadingZeros)) - 1 + UInt64(suffix))
    }

    /// Reads ue(v) and checks it against the range the standard gives the field.
    mutating func readUE(_ field: String, in range: ClosedRange<Int>) throws(H264BitstreamError) -> Int {
        let value = Int(try readUE(field))
        guard range.contains(value) else { throw .valueOutOfRange(field: field, value: value) }
        return value
    }

    /// Reads a signed Exp-Golomb code, se(v).
    mutating func readSE(_ field: String) throws(H264BitstreamError) -> Int {
        let codeNum = Int(try readUE(field))
        return codeNum % 2 == 1 ? (codeNum + 1) / 2 : -(codeNum / 2)
    }

    /// Reads se(v) and checks it against the field's range.
    mutating func readSE(_ field: String, in range: ClosedRange<Int>) throws(H264BitstreamError) -> Int {
        let value = try readSE(field)
        guard range.contains(value) else { throw .valueOutOfRange(field: field, value: value) }
        return value
    }

    /// Skips the zero bits up to the next byte boundary.
    mutating func alignToByte() throws(H264BitstreamError) {
        if !isByteAligned { _ = try readBits(8 - bitPosition % 8, "byte alignment") }
    }

    /// Reads rbsp_trailing_bits(): a one bit, then zero bits to the byte boundary.
    mutating func readTrailingBits() throws(H264BitstreamError) {
        guard try readFlag("rbsp_stop_one_bit") else {
            throw .valueOutOfRange(field: "rbsp_stop_one_bit", value: 0)
        }
        while !isByteAligned {
            guard try !readFlag("rbsp_alignment_zero_bit") else {
                throw .valueOutOfRange(field: "rbsp_alignment_zero_bit", value: 1)
            }
        }
    }
}

/// The wire types of the protocol buffer encoding, as the low three bits of a field tag give them.
enum ProtobufWireType: UInt8, Sendable {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case startGroup = 3
    case endGroup = 4
    case fixed32 = 5
}

/// A bounds-checked cursor over protocol buffer bytes.
///
/// Readers for nested messages share the same byte array (copy-on-write, so no copy is made) and
/// report offsets from the start of the outermost buffer, which is what a person inspecting a
/// broken file with a hex dump needs.
struct ProtobufReader {
    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    /// A reader over all of `bytes`.
    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
    }

    /// A reader over `range` of `bytes`; the range must lie inside the array.
    init(_ bytes: [UInt8], range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count)
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
    }

    var isAtEnd: Bool { offset >= end }
    var remaining: Int { end - offset }

    mutating func readByte() throws(TileDecodingError) -> UInt8 {
        guard offset < end else { throw .truncated(offset: offset) }
        let byte = bytes[offset]
        offset += 1
        return byte
    }

    /// A base-128 varint of at most ten bytes; bits beyond 64 are rejected rather than dropped.
    mutating func readVarint() throws(TileDecodingError) -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < end else { throw .truncated(offset: offset) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw .varintTooLong(offset: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw .varintTooLong(offset: start) }
        }
    }

    /// A varint that must fit 32 bits, as `uint32` fields and packed geometry integers do.
    mutating func readVarint32() throws(TileDecodingError) -> UInt32 {
        let start = offset
        let value = try readVarint()
        guard let narrow = UInt32(exactly: value) else { throw .valueOutOfRange(offset: start) }
        return narrow
    }

    mutating func readFixed32() throws(TileDecodingError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated(offset: offset) }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
        offset += 4
        return value
    }

    mutating func readFixed64() throws(TileDecodingError) -> UInt64 {
        guard remaining >= 8 else { throw .truncated(offset: offset) }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return value
    }

    /// A field tag: the field number and its wire type. Field number 0 and the wire types 6
    /// and 7 do not exist, so they mean the bytes are not a protocol buffer message.
    mutating func readTag() throws(TileDecodingError) -> (field: UInt64, wireType: ProtobufWireType) {
        let start = offset
        let tag = try readVarint()
        guard let wireType = ProtobufWireType(rawValue: UInt8(tag & 7)) else {
            throw .invalidWireType(UInt8(tag & 7), offset: start)
        }
        let field = tag >> 3
        guard field != 0 else { throw .invalidFieldNumber(offset: start) }
        return (field, wireType)
    }

    /// The byte range of a length-delimited field, checked against the end of this message.
    mutating func readLengthDelimitedRange() throws(TileDecodingError) -> Range<Int> {
        let start = offset
        let length = try readVarint()
        guard length <= UInt64(remaining) else { throw .truncated(offset: start) }
        let range = offset..<(offset + Int(length))
        offset = range.upperBound
        return range
    }

    /// A reader over the next length-delimited field.
    mutating func readMessage() throws(TileDecodingError) -> ProtobufReader {
        ProtobufReader(bytes, range: try readLengthDelimitedRange())
    }

    /// A length-delimited field read as UTF-8 text; invalid UTF-8 is an error, not replaced.
    mutating func readString() throws(TileDecodingError) -> String {
        let start = offset
        let range = try readLengthDelimitedRange()
        guard let string = String(validating: bytes[range], as: UTF8.self) else {
            throw .invalidUTF8(offset: start)
        }
        return string
    }

    /// Moves past a field of `wireType` whose tag was just read. Groups are deprecated and never
    /// appear in vector tiles, so meeting one means the data is not what it claims to be.
    mutating func skip(_ wireType: ProtobufWireType) throws(TileDecodingError) {
        let start = offset
        switch wireType {
        case .varint: _ = try readVarint()
        case .fixed64: _ = try readFixed64()
        case .fixed32: _ = try readFixed32()
        case .lengthDelimited: _ = try readLengthDelimitedRange()
        case .startGroup, .endGroup: throw .invalidWireType(wireType.rawValue, offset: start)
        }
    }

    /// Appends the values of a repeated `uint32` field, packed or not, to `values`. Each value
    /// takes at least one byte, so the capacity reserved never exceeds the bytes present.
    mutating func readRepeatedUInt32(_ wireType: ProtobufWireType,
                                     into values: inout [UInt32]) throws(TileDecodingError) {
        switch wireType {
        case .varint:
            values.append(try readVarint32())
        case .lengthDelimited:
            var packed = try readMessage()
            values.reserveCapacity(values.count + packed.remaining)
            while !packed.isAtEnd { values.append(try packed.readVarint32()) }
        default:
            throw .unexpectedWireType(wireType.rawValue, offset: offset)
        }
    }

    static func zigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
    }

    static func zigzag(_ value: UInt32) -> Int32 {
        Int32(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
    }
}

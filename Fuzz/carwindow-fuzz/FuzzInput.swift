/// Reads typed values off the front of a fuzz input; past the end every read gives zero, so a
/// short input is just a sequence of zeros rather than a reason to stop.
struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) -> T {
        var value: T = 0
        for _ in 0..<MemoryLayout<T>.size { value = value << 8 | T(truncatingIfNeeded: byte()) }
        return value
    }

    /// A value in `range`, from one or two bytes.
    mutating func integer(in range: ClosedRange<Int>) -> Int {
        let span = range.upperBound - range.lowerBound + 1
        let raw = span > 256 ? Int(integer(UInt16.self)) : Int(byte())
        return range.lowerBound + raw % span
    }

    /// Any double, the non-finite ones included.
    mutating func anyDouble() -> Double { Double(bitPattern: integer(UInt64.self)) }

    /// The rest of the input.
    mutating func remainder() -> [UInt8] {
        guard offset < bytes.count else { return [] }
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

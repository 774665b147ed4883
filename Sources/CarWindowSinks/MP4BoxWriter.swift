/// Builds ISO base media file format boxes (ISO/IEC 14496-12) big-endian into a byte array.
///
/// A box's 32-bit size is only known once its body is written, so `box` reserves it and fills it
/// in afterwards; nesting closures mirror the nesting of the boxes.
struct MP4BoxWriter {
    private(set) var bytes: [UInt8] = []

    mutating func uint8(_ value: UInt8) { bytes.append(value) }

    mutating func uint16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func uint64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// `count` zero bytes (reserved and pre_defined fields).
    mutating func zeros(_ count: Int) { bytes += [UInt8](repeating: 0, count: count) }

    mutating func append(_ data: [UInt8]) { bytes += data }

    /// A four-character code; box and brand names are ASCII by definition.
    mutating func fourCC(_ code: StaticString) {
        precondition(code.utf8CodeUnitCount == 4, "a four-character code has four bytes")
        code.withUTF8Buffer { bytes += $0 }
    }

    /// A box: 32-bit size, type, then what `body` writes.
    mutating func box(_ type: StaticString, _ body: (inout MP4BoxWriter) -> Void) {
        let start = bytes.count
        uint32(0)
        fourCC(type)
        body(&self)
        let size = UInt32(clamping: bytes.count - start)
        for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: size >> UInt32(24 - 8 * index)) }
    }

    /// A full box: a box whose body starts with an 8-bit version and 24-bit flags.
    mutating func fullBox(_ type: StaticString, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout MP4BoxWriter) -> Void) {
        box(type) { writer in
            writer.uint32(UInt32(version) << 24 | (flags & 0xFF_FFFF))
            body(&writer)
        }
    }

    /// The unity transformation matrix of mvhd and tkhd (16.16 and 2.30 fixed point).
    mutating func unityMatrix() {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { uint32(value) }
    }
}

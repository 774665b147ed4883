/// One BSON value, restricted to the types SmartDeviceLink's control payloads use.
///
/// SDL Core writes and reads only these; anything else (binary, ObjectId, dates...) is refused
/// as ``BSONError/unknownType(_:offset:)`` rather than skipped, because a control payload with a
/// type we cannot interpret is not one we can act on safely.
package enum BSONValue: Sendable, Equatable {
    /// Type 0x01, a little-endian IEEE 754 double.
    case double(Double)
    /// Type 0x02, UTF-8 text.
    case string(String)
    /// Type 0x03, an embedded document.
    case document(BSONDocument)
    /// Type 0x04, an array (a document keyed "0", "1", ...).
    case array([BSONValue])
    /// Type 0x08.
    case bool(Bool)
    /// Type 0x0A.
    case null
    /// Type 0x10.
    case int32(Int32)
    /// Type 0x12.
    case int64(Int64)

    /// The BSON element type byte.
    var typeByte: UInt8 {
        switch self {
        case .double: 0x01
        case .string: 0x02
        case .document: 0x03
        case .array: 0x04
        case .bool: 0x08
        case .null: 0x0A
        case .int32: 0x10
        case .int64: 0x12
        }
    }

    /// The value as an integer whichever integer width (or integral double) it was sent as:
    /// head units disagree on whether `mtu` is int32 or int64.
    package var integerValue: Int? {
        switch self {
        case .int32(let value): Int(value)
        case .int64(let value): Int(exactly: value)
        case .double(let value): value.isFinite && value.rounded() == value && abs(value) < 9e15 ? Int(value) : nil
        default: nil
        }
    }

    /// The text of a string value.
    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements of an array value.
    package var arrayValue: [BSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// An ordered BSON document. Order is kept because the encoding is compared byte for byte with
/// what head units send.
package struct BSONDocument: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// One key and its value.
    package struct Element: Sendable, Equatable {
        /// The key, without its NUL terminator.
        package var key: String
        /// The value.
        package var value: BSONValue

        /// A key and value.
        package init(key: String, value: BSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The elements in document order.
    package var elements: [Element]

    /// A document with these elements.
    package init(_ elements: [Element] = []) {
        self.elements = elements
    }

    /// A document from a literal, in the literal's order.
    package init(dictionaryLiteral elements: (String, BSONValue)...) {
        self.elements = elements.map { Element(key: $0.0, value: $0.1) }
    }

    /// The first value stored under `key`; setting replaces it in place or appends it.
    package subscript(key: String) -> BSONValue? {
        get { elements.first { $0.key == key }?.value }
        set {
            if let index = elements.firstIndex(where: { $0.key == key }) {
                if let newValue { elements[index].value = newValue } else { elements.remove(at: index) }
            } else if let newValue {
                elements.append(Element(key: key, value: newValue))
            }
        }
    }

    /// The keys in document order.
    package var keys: [String] { elements.map(\.key) }
}

/// Bounds on what the decoder accepts, so hostile input cannot make it recurse or allocate
/// without end.
package struct BSONLimits: Sendable, Equatable {
    /// The largest document, in bytes. SDL control payloads are a few hundred bytes.
    package var maximumDocumentSize: Int
    /// How deep documents and arrays may nest.
    package var maximumDepth: Int

    /// Limits; the defaults (64 KiB, depth 16) are far above anything SDL Core sends.
    package init(maximumDocumentSize: Int = 65_536, maximumDepth: Int = 16) {
        self.maximumDocumentSize = maximumDocumentSize
        self.maximumDepth = maximumDepth
    }
}

/// Why bytes are not a BSON document this decoder accepts.
public enum BSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input ended inside an element or a length.
    case truncated(offset: Int)
    /// A document, array or string declares a length that is impossible here.
    case badLength(offset: Int, declared: Int)
    /// An element type this decoder does not handle.
    case unknownType(UInt8, offset: Int)
    /// A document, key or string lacks its NUL terminator.
    case missingTerminator(offset: Int)
    /// Documents nest deeper than `BSONLimits.maximumDepth`.
    case nestingTooDeep(limit: Int)
    /// The document is larger than `BSONLimits.maximumDocumentSize`.
    case documentTooLarge(size: Int, limit: Int)
    /// A key or string is not valid UTF-8.
    case invalidUTF8(offset: Int)
    /// Bytes follow the document's declared end.
    case trailingBytes(count: Int)
    /// A key contains a NUL byte, which BSON cannot encode.
    case keyContainsNUL(String)

    /// What was wrong and what to do.
    public var description: String {
        switch self {
        case .truncated(let offset): "BSON ends early at byte \(offset); the payload was cut short"
        case .badLength(let offset, let declared): "BSON length \(declared) at byte \(offset) does not fit the data; the payload is corrupt"
        case .unknownType(let type, let offset): "BSON element type 0x\(String(type, radix: 16)) at byte \(offset) is not one SDL uses; the payload is refused"
        case .missingTerminator(let offset): "BSON document or string at byte \(offset) lacks its NUL terminator"
        case .nestingTooDeep(let limit): "BSON nests deeper than \(limit) levels; refused to bound the work"
        case .documentTooLarge(let size, let limit): "BSON document of \(size) bytes is larger than the \(limit) allowed"
        case .invalidUTF8(let offset): "BSON text at byte \(offset) is not valid UTF-8"
        case .trailingBytes(let count): "\(count) bytes follow the BSON document's end"
        case .keyContainsNUL(let key): "BSON key \(key.debugDescription) contains a NUL byte and cannot be encoded"
        }
    }
}

extension BSONDocument {
    /// The document's BSON bytes. Keys containing NUL cannot be represented and throw.
    package func encoded() throws(BSONError) -> [UInt8] {
        var output: [UInt8] = []
        try Self.append(elements, to: &output)
        return output
    }

    private static func append(_ elements: [Element], to output: inout [UInt8]) throws(BSONError) {
        let start = output.count
        output.append(contentsOf: [0, 0, 0, 0])
        for element in elements {
            guard !element.key.utf8.contains(0) else { throw .keyContainsNUL(element.key) }
            output.append(element.value.typeByte)
            output.append(contentsOf: element.key.utf8)
            output.append(0)
            try appendValue(element.value, to: &output)
        }
        output.append(0)
        writeInt32(Int32(truncatingIfNeeded: output.count - start), at: start, in: &output)
    }

    private static func appendValue(_ value: BSONValue, to output: inout [UInt8]) throws(BSONError) {
        switch value {
        case .double(let number): appendLittleEndian(number.bitPattern, to: &output)
        case .string(let text):
            let bytes = Array(text.utf8)
            appendLittleEndian(UInt32(truncatingIfNeeded: bytes.count + 1), to: &output)
            output.append(contentsOf: bytes)
            output.append(0)
        case .document(let document): try append(document.elements, to: &output)
        case .array(let values):
            try append(values.enumerated().map { Element(key: String($0.offset), value: $0.element) }, to: &output)
        case .bool(let flag): output.append(flag ? 1 : 0)
        case .null: break
        case .int32(let number): appendLittleEndian(UInt32(bitPattern: number), to: &output)
        case .int64(let number): appendLittleEndian(UInt64(bitPattern: number), to: &output)
        }
    }

    private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to output: inout [UInt8]) {
        var little = value.littleEndian
        withUnsafeBytes(of: &little) { output.append(contentsOf: $0) }
    }

    private static func writeInt32(_ value: Int32, at index: Int, in output: inout [UInt8]) {
        let bits = UInt32(bitPattern: value)
        for byte in 0..<4 { output[index + byte] = UInt8(truncatingIfNeeded: bits >> (8 * UInt32(byte))) }
    }

    /// Decodes one document that fills `bytes` exactly.
    package init(decoding bytes: some Collection<UInt8>, limits: BSONLimits = BSONLimits()) throws(BSONError) {
        let array = Array(bytes)
        guard array.count <= limits.maximumDocumentSize else {
            throw .documentTooLarge(size: array.count, limit: limits.maximumDocumentSize)
        }
        var reader = BSONReader(bytes: array, limits: limits)
        self = try reader.document(depth: 0)
        if reader.offset != array.count { throw .trailingBytes(count: array.count - reader.offset) }
    }
}

/// A cursor over BSON bytes that checks every length against what is left before using it.
private struct BSONReader {
    let bytes: [UInt8]
    let limits: BSONLimits
    var offset = 0

    init(bytes: [UInt8], limits: BSONLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func document(depth: Int) throws(BSONError) -> BSONDocument {
        guard depth <= limits.maximumDepth else { throw .nestingTooDeep(limit: limits.maximumDepth) }
        let start = offset
        let declared = Int(try int32())
        // 5 is the empty document: the length itself and the terminator.
        guard declared >= 5, declared <= bytes.count - start else { throw .badLength(offset: start, declared: declared) }
        let end = start + declared
        var elements: [BSONDocument.Element] = []
        while true {
            guard offset < end else { throw .missingTerminator(offset: start) }
            let typeOffset = offset
            let type = bytes[offset]
            offset += 1
            if type == 0 {
                guard offset == end else { throw .badLength(offset: start, declared: declared) }
                return BSONDocument(elements)
            }
            let key = try cString(before: end)
            let value = try value(type: type, typeOffset: typeOffset, end: end, depth: depth)
            elements.append(BSONDocument.Element(key: key, value: value))
        }
    }

    private mutating func value(type: UInt8, typeOffset: Int, end: Int, depth: Int) throws(BSONError) -> BSONValue {
        switch type {
        case 0x01: return .double(Double(bitPattern: try fixed(UInt64.self, end: end)))
        case 0x02:
            let lengthOffset = offset
            let length = Int(try int32(end: end))
            guard length >= 1, length <= end - offset else { throw .badLength(offset: lengthOffset, declared: length) }
            guard bytes[offset + length - 1] == 0 else { throw .missingTerminator(offset: lengthOffset) }
            let text = try utf8(bytes[offset..<(offset + length - 1)], at: offset)
            offset += length
            return .string(text)
        case 0x03, 0x04:
            let nestedStart = offset
            let nested = try document(depth: depth + 1)
            guard offset <= end else { throw .badLength(offset: nestedStart, declared: offset - nestedStart) }
            return type == 0x03 ? .document(nested) : .array(nested.elements.map(\.value))
        case 0x08:
            guard offset < end else { throw .truncated(offset: offset) }
            let flag = bytes[offset]
            offset += 1
            // BSON allows only 0 and 1; anything else is corruption, not "true".
            guard flag <= 1 else { throw .unknownType(flag, offset: offset - 1) }
            return .bool(flag == 1)
        case 0x0A: return .null
        case 0x10: return .int32(try int32(end: end))
        case 0x12: return .int64(Int64(bitPattern: try fixed(UInt64.self, end: end)))
        default: throw .unknownType(type, offset: typeOffset)
        }
    }

    private mutating func int32(end: Int? = nil) throws(BSONError) -> Int32 {
        Int32(bitPattern: try fixed(UInt32.self, end: end ?? bytes.count))
    }

    private mutating func fixed<T: FixedWidthInteger>(_ type: T.Type, end: Int) throws(BSONError) -> T {
        let size = MemoryLayout<T>.size
        guard end - offset >= size else { throw .truncated(offset: offset) }
        var value: T = 0
        for index in 0..<size { value |= T(bytes[offset + index]) << (8 * index) }
        offset += size
        return value
    }

    private mutating func cString(before end: Int) throws(BSONError) -> String {
        let start = offset
        guard let terminator = bytes[offset..<end].firstIndex(of: 0) else { throw .missingTerminator(offset: start) }
        offset = terminator + 1
        return try utf8(bytes[start..<terminator], at: start)
    }

    private func utf8(_ slice: ArraySlice<UInt8>, at offset: Int) throws(BSONError) -> String {
        guard let text = String(validating: slice, as: UTF8.self) else { throw .invalidUTF8(offset: offset) }
        return text
    }
}

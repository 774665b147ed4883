/// A parsed JSON document.
///
/// Objects keep their members in document order because MapLibre styles are edited by people,
/// and warnings read better when they follow the file; lookups take the last duplicate, as
/// JavaScript's `JSON.parse` does, so a style means here what it means in MapLibre.
package enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member called `key` when this is an object.
    package subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The JSON type name, as error messages show it.
    package var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Parses UTF-8 JSON text (RFC 8259, with an optional byte order mark).
    ///
    /// Nesting deeper than 512 levels (`JSONParser.maximumDepth`) is refused so hostile input
    /// cannot exhaust the stack.
    package init<Bytes: Collection>(parsing bytes: Bytes) throws(StyleError) where Bytes.Element == UInt8 {
        var parser = JSONParser(bytes: Array(bytes))
        self = try parser.parseDocument()
    }
}

/// A JSON object whose members stay in document order.
package struct JSONObject: Sendable, Hashable, Sequence {
    /// One `"key": value` pair of an object.
    package struct Member: Sendable, Hashable {
        /// The member's name.
        package var key: String
        /// The member's value.
        package var value: JSONValue

        /// Makes the member `"key": value`.
        package init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members in document order, duplicates included.
    package var members: [Member]

    /// Makes an object of `members`, kept in the order given.
    package init(_ members: [Member] = []) {
        self.members = members
    }

    /// The value of the last member called `key`, matching JavaScript's treatment of duplicates.
    package subscript(key: String) -> JSONValue? {
        members.last { $0.key == key }?.value
    }

    /// The distinct keys in first-appearance order.
    package var keys: [String] {
        var seen = Set<String>()
        return members.compactMap { seen.insert($0.key).inserted ? $0.key : nil }
    }

    package func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}

/// A recursive-descent JSON parser over UTF-8 bytes that reports line and column on error.
struct JSONParser {
    /// Deep enough for any real style (MapLibre's own nest a dozen levels), shallow enough that
    /// recursion over it stays far from the stack limit of a worker thread.
    static let maximumDepth = 512

    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(StyleError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        skipWhitespace()
        guard position < bytes.count else {
            throw failure("the document is empty; a style must be a JSON object")
        }
        let value = try parseValue()
        skipWhitespace()
        if position < bytes.count {
            throw failure("unexpected \(describe(bytes[position])) after the end of the document")
        }
        return value
    }

    private mutating func parseValue() throws(StyleError) -> JSONValue {
        guard position < bytes.count else { throw failure("the document ends where a value was expected") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected \(describe(bytes[position])) where a value was expected")
        }
    }

    private mutating func enterContainer() throws(StyleError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw failure("arrays and objects nest deeper than \(Self.maximumDepth) levels")
        }
    }

    private mutating func parseObject() throws(StyleError) -> JSONValue {
        try enterContainer()
        position += 1
        var members: [JSONObject.Member] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                throw failure("expected a string key in double quotes, found \(describeCurrent())")
            }
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                throw failure("expected ':' after the key \"\(key)\", found \(describeCurrent())")
            }
            position += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return .object(JSONObject(members))
            default: throw failure("expected ',' or '}' in an object, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseArray() throws(StyleError) -> JSONValue {
        try enterContainer()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            default: throw failure("expected ',' or ']' in an array, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseString() throws(StyleError) -> String {
        position += 1  // opening quote
        var utf8: [UInt8] = []
        while true {
            guard position < bytes.count else { throw failure("a string is not closed with '\"'") }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw failure("a string is not valid UTF-8; save the file as UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0..<0x20:
                throw failure("control character \(describe(byte)) inside a string; escape it (for example \\n)")
            default:
                utf8.append(byte)
                position += 1
            }
        }
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(StyleError) {
        position += 1
        guard position < bytes.count else { throw failure("a string ends inside an escape sequence") }
        let escape = bytes[position]
        position += 1
        let simple: UInt8? = switch escape {
        case UInt8(ascii: "\""): UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): UInt8(ascii: "\\")
        case UInt8(ascii: "/"): UInt8(ascii: "/")
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            utf8.append(simple)
            return
        }
        guard escape == UInt8(ascii: "u") else {
            position -= 1
            throw failure("unknown escape '\\\(Character(Unicode.Scalar(escape)))'; valid escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX")
        }
        var code = try parseHex4()
        if (0xD800...0xDBFF).contains(code) {
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                  bytes[position + 1] == UInt8(ascii: "u") else {
                throw failure("a high surrogate \\u\(hex(code)) is not followed by a low surrogate")
            }
            position += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else {
                throw failure("a high surrogate is followed by \\u\(hex(low)), which is not a low surrogate")
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(code) {
            throw failure("a low surrogate \\u\(hex(code)) appears without a high surrogate before it")
        }
        guard let scalar = Unicode.Scalar(code) else {
            throw failure("\\u\(hex(code)) is not a Unicode scalar value")
        }
        utf8.append(contentsOf: String(Character(scalar)).utf8)
    }

    private mutating func parseHex4() throws(StyleError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard position < bytes.count else { throw failure("a \\u escape needs four hexadecimal digits") }
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a \\u escape needs four hexadecimal digits, found \(describe(byte))")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private mutating func parseNumber() throws(StyleError) -> Double {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        if peek() == UInt8(ascii: "0") {
            position += 1
            if let next = peek(), isDigit(next) {
                throw failure("numbers may not have leading zeros")
            }
        } else {
            guard consumeDigits() > 0 else { throw failure("expected a digit in a number, found \(describeCurrent())") }
        }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard consumeDigits() > 0 else { throw failure("expected a digit after the decimal point, found \(describeCurrent())") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard consumeDigits() > 0 else { throw failure("expected a digit in the exponent, found \(describeCurrent())") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            position = start
            throw failure("the number \(text) is too large for a double")
        }
        return value
    }

    private mutating func consumeDigits() -> Int {
        let start = position
        while let byte = peek(), isDigit(byte) { position += 1 }
        return position - start
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(StyleError) {
        let expected = literal.withUTF8Buffer { Array($0) }
        guard bytes.count - position >= expected.count,
              bytes[position..<position + expected.count].elementsEqual(expected) else {
            throw failure("unexpected \(describeCurrent()); did you mean \(literal)? (strings need double quotes)")
        }
        position += expected.count
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            position += 1
        }
    }

    private func describeCurrent() -> String {
        peek().map(describe) ?? "the end of the document"
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// Builds the error at the current position; lines and columns count from 1, and columns
    /// count characters rather than bytes so they match what an editor shows.
    private func failure(_ reason: String) -> StyleError {
        var line = 1
        var column = 1
        for byte in bytes[..<min(position, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return .invalidJSON(line: line, column: column, reason: reason)
    }
}

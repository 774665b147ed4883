import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowTestSupport

@Suite("JSON parser")
struct JSONParserTests {
    private func parse(_ text: String) throws(StyleError) -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    private func errorPosition(_ text: String) -> (line: Int, column: Int, reason: String)? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            guard case .invalidJSON(let line, let column, let reason) = error else { return nil }
            return (line, column, reason)
        }
    }

    @Test func scalarsAndContainers() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("[]") == .array([]))
        #expect(try parse("{}") == .object(JSONObject()))
        #expect(try parse("[1, \"a\", [null], {\"k\": false}]") == .array([
            .number(1), .string("a"), .array([.null]),
            .object(JSONObject([.init(key: "k", value: .bool(false))])),
        ]))
    }

    @Test func objectsKeepKeyOrderAndLastDuplicateWins() throws {
        let value = try parse(#"{"zeta": 1, "alpha": 2, "mid": 3, "alpha": 4}"#)
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.members.map(\.key) == ["zeta", "alpha", "mid", "alpha"])
        #expect(object.keys == ["zeta", "alpha", "mid"])
        #expect(object["alpha"] == .number(4))
        #expect(value["mid"] == .number(3))
        #expect(value["missing"] == nil)
    }

    @Test func numbers() throws {
        // Expected values are the IEEE doubles Python's float() gives for the same literals.
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("12", 12), ("-3.25", -3.25), ("1e3", 1000), ("1E+2", 100),
            ("2.5e-3", 0.0025), ("0.1", 0.1), ("123456789012345678", 123456789012345680),
            ("1.7976931348623157e308", 1.7976931348623157e308), ("5e-324", Double.leastNonzeroMagnitude),
        ]
        for (text, expected) in cases {
            #expect(try parse(text) == .number(expected), "\(text)")
        }
        for bad in ["01", "1.", ".5", "+1", "1e", "1e+", "-", "1e400", "--1", "0x10", "NaN", "Infinity"] {
            #expect(errorPosition(bad) != nil, "\(bad) should be rejected")
        }
    }

    @Test func stringEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == .string("a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti"))
        #expect(try parse(#""\u0041\u00e9\u4e2d""#) == .string("Aé中"))
        // U+1F600 GRINNING FACE is the surrogate pair D83D DE00.
        #expect(try parse(#""\uD83D\uDE00!""#) == .string("😀!"))
        #expect(try parse("\"Töölö 😀\"") == .string("Töölö 😀"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func badStringsAreRejected() {
        for bad in [#""\uD83D""#, #""\uD83Dx""#, #""\uDE00""#, #""\uD83D\u0041""#, #""\x""#, #""\u12G4""#,
                    "\"open", "\"tab\tinside\"", "\"line\nbreak\""] {
            #expect(errorPosition(bad) != nil, "\(bad) should be rejected")
        }
        // 0xFF can never appear in UTF-8.
        #expect(throws: StyleError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
    }

    @Test func errorsCarryLineAndColumn() {
        // Line 3, column 12 is the stray 'x' (columns count characters from 1).
        let text = "{\n  \"a\": 1,\n  \"b\": [1, x]\n}"
        let error = errorPosition(text)
        #expect(error?.line == 3)
        #expect(error?.column == 12)
        #expect(error?.reason.contains("'x'") == true)

        // Multi-byte characters count as one column each.
        let unicode = errorPosition("[\"ä\", ]")
        #expect(unicode?.line == 1)
        #expect(unicode?.column == 7)

        let missingColon = errorPosition("{\"a\" 1}")
        #expect(missingColon?.column == 6)
        #expect(missingColon?.reason.contains("':'") == true)

        #expect(errorPosition("")?.reason.contains("empty") == true)
        #expect(errorPosition("[1] [2]")?.reason.contains("after the end") == true)
        #expect(errorPosition("[1,]") != nil)
        #expect(errorPosition("{\"a\":1,}") != nil)
        #expect(errorPosition("{'a':1}") != nil)
        #expect(errorPosition("tru") != nil)
    }

    @Test func descriptionExplainsTheFix() {
        let error = StyleError.invalidJSON(line: 3, column: 12, reason: "unexpected 'x'")
        #expect(error.description.contains("line 3, column 12"))
        #expect(error.description.contains("unexpected 'x'"))
    }

    @Test func byteOrderMarkIsSkipped() throws {
        #expect(try JSONValue(parsing: [0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == .array([.number(1)]))
    }

    @Test func nestingDepthIsLimited() throws {
        let allowed = String(repeating: "[", count: JSONParser.maximumDepth) + String(repeating: "]", count: JSONParser.maximumDepth)
        #expect(throws: Never.self) { try parse(allowed) }
        let tooDeep = String(repeating: "[", count: JSONParser.maximumDepth + 1) + String(repeating: "]", count: JSONParser.maximumDepth + 1)
        let error = errorPosition(tooDeep)
        #expect(error?.reason.contains("deeper than 512") == true)
        // A hostile document of a million brackets fails fast instead of overflowing the stack.
        #expect(errorPosition(String(repeating: "[{\"a\":", count: 1_000_000)) != nil)
    }
}

/// What the consumer of an expression's result wants, so literals can be typed at compile time
/// (MapLibre parses `"red"` in a colour property's `match` as a colour, not a string).
enum ExpectedType: Sendable {
    case value
    case color
}

/// The value type of a style property, deciding constant parsing, literal coercion and which
/// kind of legacy function applies when a function omits `type`.
enum ValueKind: Sendable {
    case number, color, numberArray, stringArray, boolean, formatted
    case enumeration([String])

    /// The kind as error messages name it.
    var name: String {
        switch self {
        case .number: "a number"
        case .color: "a colour string such as \"#1a2b3c\""
        case .numberArray: "an array of numbers"
        case .stringArray: "an array of strings"
        case .boolean: "a boolean"
        case .formatted: "a string"
        case .enumeration(let values): "one of " + values.map { "\"\($0)\"" }.joined(separator: ", ")
        }
    }

    var isInterpolatable: Bool {
        switch self {
        case .number, .color, .numberArray: true
        default: false
        }
    }

    var expected: ExpectedType {
        if case .color = self { return .color }
        return .value
    }
}

/// Turns JSON into ``ExpressionNode`` trees and records what the result depends on.
struct ExpressionCompiler {
    private(set) var usesZoom = false
    private(set) var usesFeature = false
    /// Whether an `image` operator appears: its result depends on the sprite, known only when
    /// drawing, so the expression must not be folded into a constant at load.
    private(set) var usesImages = false
    private(set) var warnings: [StyleWarning] = []

    // MARK: Expressions

    mutating func compile(_ json: JSONValue, path: String, expected: ExpectedType) throws(StyleError) -> ExpressionNode {
        switch json {
        case .array(let elements):
            guard let first = elements.first else {
                throw .invalidValue(path: path, reason: "an expression cannot be an empty array; write [\"literal\", []] for an empty array value")
            }
            guard case .string(let name) = first else {
                throw .invalidValue(path: path, reason: "an expression starts with an operator name; write [\"literal\", [...]] for an array value")
            }
            return try compileCall(name, Array(elements.dropFirst()), path: path, expected: expected)
        case .object:
            throw .invalidValue(path: path, reason: "an object is not an expression; write [\"literal\", {...}] or use an expression array")
        default:
            return .literal(try literal(json, path: path, expected: expected))
        }
    }

    /// Converts constant JSON into a value, parsing strings as colours where colours are wanted.
    func literal(_ json: JSONValue, path: String, expected: ExpectedType) throws(StyleError) -> StyleValue {
        switch json {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .number(let number): return .number(number)
        case .string(let text):
            guard expected == .color else { return .string(text) }
            guard let color = Color(css: text) else {
                throw .invalidValue(path: path, reason: "\"\(text)\" is not a CSS colour; use a form such as \"#1a2b3c\", \"rgb(26, 43, 60)\" or \"steelblue\"")
            }
            return .color(color)
        case .array(let elements):
            var values: [StyleValue] = []
            for (index, element) in elements.enumerated() {
                values.append(try literal(element, path: JSONPath.index(path, index), expected: .value))
            }
            return .array(values)
        case .object:
            throw .invalidValue(path: path, reason: "object values are not supported in expressions")
        }
    }

    private mutating func compileCall(_ name: String, _ args: [JSONValue], path: String,
                                      expected: ExpectedType) throws(StyleError) -> ExpressionNode {
        func argPath(_ index: Int) -> String { JSONPath.index(path, index + 1) }
        func requireCount(_ range: ClosedRange<Int>) throws(StyleError) {
            guard range.contains(args.count) else {
                let wanted = range.lowerBound == range.upperBound ? "\(range.lowerBound)"
                    : range.upperBound == Int.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
                throw .invalidValue(path: path, reason: "\"\(name)\" takes \(wanted) argument\(range == 1...1 ? "" : "s") but has \(args.count)")
            }
        }
        func compileAll(_ values: ArraySlice<JSONValue>, offset: Int = 0,
                        expected: ExpectedType = .value) throws(StyleError) -> [ExpressionNode] {
            var nodes: [ExpressionNode] = []
            for (index, value) in zip(values.indices, values) {
                nodes.append(try compile(value, path: argPath(index + offset), expected: expected))
            }
            return nodes
        }

        switch name {
        case "literal":
            try requireCount(1...1)
            return .literal(try literal(args[0], path: argPath(0), expected: expected))
        case "get", "has":
            try requireCount(1...2)
            guard args.count == 1 else {
                throw .unsupportedFeature(path: path, feature: "\"\(name)\" with an object argument")
            }
            usesFeature = true
            if case .string(let key) = args[0] { return name == "get" ? .get(key) : .has(key) }
            let key = try compile(args[0], path: argPath(0), expected: .value)
            return name == "get" ? .getDynamic(key) : .hasDynamic(key)
        case "id", "geometry-type":
            try requireCount(0...0)
            usesFeature = true
            return name == "id" ? .featureID : .geometryType
        case "zoom":
            try requireCount(0...0)
            usesZoom = true
            return .zoom
        case "line-progress":
            // Read like a feature property: the route's drawer evaluates `line-gradient` with
            // features that carry the progress under this key, which no tile can have.
            try requireCount(0...0)
            usesFeature = true
            return .get(LinePaint.lineProgressKey)
        case "!":
            try requireCount(1...1)
            return .not(try compile(args[0], path: argPath(0), expected: .value))
        case "==", "!=", "<", "<=", ">", ">=":
            try requireCount(2...3)
            guard args.count == 2 else { throw .unsupportedFeature(path: path, feature: "a collator in a comparison") }
            let lhs = try compile(args[0], path: argPath(0), expected: .value)
            let rhs = try compile(args[1], path: argPath(1), expected: .value)
            if let order = ExpressionNode.OrderOperator(rawValue: name) { return .order(order, lhs, rhs) }
            return .equals(lhs, rhs, negated: name == "!=")
        case "all":
            return .all(try compileAll(args[...]))
        case "any":
            return .any(try compileAll(args[...]))
        case "in":
            try requireCount(2...2)
            return .contains(needle: try compile(args[0], path: argPath(0), expected: .value),
                             haystack: try compile(args[1], path: argPath(1), expected: .value))
        case "match":
            return try compileMatch(args, path: path, expected: expected)
        case "case":
            guard args.count >= 3, args.count % 2 == 1 else {
                throw .invalidValue(path: path, reason: "\"case\" takes condition/output pairs and a fallback (an odd number of arguments, at least 3)")
            }
            var conditions: [ExpressionNode] = [], outputs: [ExpressionNode] = []
            for index in stride(from: 0, to: args.count - 1, by: 2) {
                conditions.append(try compile(args[index], path: argPath(index), expected: .value))
                outputs.append(try compile(args[index + 1], path: argPath(index + 1), expected: expected))
            }
            let fallback = try compile(args[args.count - 1], path: argPath(args.count - 1), expected: expected)
            return .conditional(conditions: conditions, outputs: outputs, fallback: fallback)
        case "coalesce":
            try requireCount(1...Int.max)
            return .coalesce(try compileAll(args[...], expected: expected))
        case "to-string":
            try requireCount(1...1)
            return .toString(try compile(args[0], path: argPath(0), expected: .value))
        case "to-boolean":
            try requireCount(1...1)
            return .toBoolean(try compile(args[0], path: argPath(0), expected: .value))
        case "to-number":
            try requireCount(1...Int.max)
            return .toNumber(try compileAll(args[...]))
        case "to-color":
            try requireCount(1...Int.max)
            return .toColor(try compileAll(args[...]))
        case "number", "string", "boolean":
            try requireCount(1...Int.max)
            guard let type = ExpressionNode.AssertedType(rawValue: name) else { break }
            return .assertType(type, try compileAll(args[...]))
        case "array":
            try requireCount(1...3)
            let last = args.count - 1
            return .assertType(.array, [try compile(args[last], path: argPath(last), expected: .value)])
        case "step":
            return try compileStep(args, path: path, expected: expected)
        case "interpolate", "interpolate-hcl", "interpolate-lab":
            if name != "interpolate" {
                warnings.append(StyleWarning(path: path, message: "\"\(name)\" is interpolated in RGB space like \"interpolate\""))
            }
            return try compileInterpolate(args, path: path, expected: expected)
        case "image":
            try requireCount(1...1)
            usesImages = true
            return .image(try compile(args[0], path: argPath(0), expected: .value))
        case "concat":
            try requireCount(1...Int.max)
            return .concat(try compileAll(args[...]))
        case "upcase", "downcase":
            try requireCount(1...1)
            let operand = try compile(args[0], path: argPath(0), expected: .value)
            return name == "upcase" ? .upcase(operand) : .downcase(operand)
        case "format":
            return try compileFormat(args, path: path)
        case "length":
            try requireCount(1...1)
            return .length(try compile(args[0], path: argPath(0), expected: .value))
        default:
            if let op = ExpressionNode.ArithmeticOperator(rawValue: name) {
                switch op {
                case .add, .multiply, .min, .max: try requireCount(1...Int.max)
                case .subtract: try requireCount(1...2)
                case .divide, .remainder, .power: try requireCount(2...2)
                case .abs, .floor, .ceil, .round, .sqrt: try requireCount(1...1)
                }
                return .arithmetic(op, try compileAll(args[...]))
            }
        }
        throw .unknownOperator(path: path, name: name)
    }

    private mutating func compileMatch(_ args: [JSONValue], path: String,
                                       expected: ExpectedType) throws(StyleError) -> ExpressionNode {
        guard args.count >= 4, args.count % 2 == 0 else {
            throw .invalidValue(path: path, reason: "\"match\" takes an input, label/output pairs and a fallback (an even number of arguments, at least 4)")
        }
        let input = try compile(args[0], path: JSONPath.index(path, 1), expected: .value)
        var labels: [StyleValue: Int] = [:]
        var outputs: [ExpressionNode] = []
        for index in stride(from: 1, to: args.count - 1, by: 2) {
            let labelPath = JSONPath.index(path, index + 1)
            let candidates: [JSONValue]
            if case .array(let list) = args[index] {
                guard !list.isEmpty else { throw .invalidValue(path: labelPath, reason: "a match label list cannot be empty") }
                candidates = list
            } else {
                candidates = [args[index]]
            }
            for candidate in candidates {
                let label: StyleValue
                switch candidate {
                case .string(let text): label = .string(text)
                case .number(let number): label = .number(number)
                case .bool(let flag): label = .bool(flag)
                default:
                    throw .invalidValue(path: labelPath, reason: "match labels must be strings or numbers (or arrays of them), not \(candidate.typeName)")
                }
                // The first branch with a label wins, as in MapLibre where duplicates are an error.
                if labels[label] == nil { labels[label] = outputs.count }
            }
            outputs.append(try compile(args[index + 1], path: JSONPath.index(path, index + 2), expected: expected))
        }
        let fallback = try compile(args[args.count - 1], path: JSONPath.index(path, args.count), expected: expected)
        return .match(input: input, labels: labels, outputs: outputs, fallback: fallback)
    }

    private mutating func compileStops(_ args: ArraySlice<JSONValue>, path: String, expected: ExpectedType,
                                       operatorName: String) throws(StyleError) -> (stops: [Double], outputs: [ExpressionNode]) {
        var stops: [Double] = []
        var outputs: [ExpressionNode] = []
        for index in stride(from: args.startIndex, to: args.endIndex - 1, by: 2) {
            let stopPath = JSONPath.index(path, index + 1)
            guard case .number(let stop) = args[index] else {
                throw .invalidValue(path: stopPath, reason: "\"\(operatorName)\" stop inputs must be literal numbers")
            }
            if let previous = stops.last, stop <= previous {
                throw .invalidValue(path: stopPath, reason: "\"\(operatorName)\" stop inputs must be in strictly ascending order")
            }
            stops.append(stop)
            outputs.append(try compile(args[index + 1], path: JSONPath.index(path, index + 2), expected: expected))
        }
        return (stops, outputs)
    }

    private mutating func compileStep(_ args: [JSONValue], path: String,
                                      expected: ExpectedType) throws(StyleError) -> ExpressionNode {
        guard args.count >= 2, args.count % 2 == 0 else {
            throw .invalidValue(path: path, reason: "\"step\" takes an input, a first output and stop/output pairs (an even number of arguments)")
        }
        let input = try compile(args[0], path: JSONPath.index(path, 1), expected: .value)
        let first = try compile(args[1], path: JSONPath.index(path, 2), expected: expected)
        let (stops, outputs) = try compileStops(args[2...], path: path, expected: expected, operatorName: "step")
        return .step(input: input, stops: stops, outputs: [first] + outputs)
    }

    private mutating func compileInterpolate(_ args: [JSONValue], path: String,
                                             expected: ExpectedType) throws(StyleError) -> ExpressionNode {
        guard args.count >= 4, args.count % 2 == 0 else {
            throw .invalidValue(path: path, reason: "\"interpolate\" takes a type, an input and stop/output pairs (an even number of arguments, at least 4)")
        }
        let typePath = JSONPath.index(path, 1)
        let interpolation: Interpolation
        switch args[0] {
        case .array(let parts) where parts.first == .string("linear") && parts.count == 1:
            interpolation = .linear
        case .array(let parts) where parts.first == .string("exponential") && parts.count == 2:
            guard case .number(let base) = parts[1], base > 0 else {
                throw .invalidValue(path: typePath, reason: "the exponential base must be a positive number")
            }
            interpolation = .exponential(base: base)
        case .array(let parts) where parts.first == .string("cubic-bezier") && parts.count == 5:
            var controls: [Double] = []
            for part in parts.dropFirst() {
                guard case .number(let value) = part else {
                    throw .invalidValue(path: typePath, reason: "cubic-bezier control points must be numbers")
                }
                controls.append(value)
            }
            guard (0...1).contains(controls[0]), (0...1).contains(controls[2]) else {
                throw .invalidValue(path: typePath, reason: "cubic-bezier x control points must lie in 0...1")
            }
            interpolation = .cubicBezier(x1: controls[0], y1: controls[1], x2: controls[2], y2: controls[3])
        default:
            throw .invalidValue(path: typePath, reason: "the interpolation type must be [\"linear\"], [\"exponential\", base] or [\"cubic-bezier\", x1, y1, x2, y2]")
        }
        let input = try compile(args[1], path: JSONPath.index(path, 2), expected: .value)
        let (stops, outputs) = try compileStops(args[2...], path: path, expected: expected, operatorName: "interpolate")
        return .interpolate(interpolation, input: input, stops: stops, outputs: outputs)
    }

    /// Keeps only the text of `format`, since this library draws each label in one style.
    private mutating func compileFormat(_ args: [JSONValue], path: String) throws(StyleError) -> ExpressionNode {
        var parts: [ExpressionNode] = []
        var hasOptions = false
        for (index, arg) in args.enumerated() {
            if case .object(let options) = arg {
                hasOptions = hasOptions || !options.members.isEmpty
                continue
            }
            parts.append(try compile(arg, path: JSONPath.index(path, index + 1), expected: .value))
        }
        if hasOptions {
            warnings.append(StyleWarning(path: path, message: "\"format\" options (font-scale, text-font, text-color) are ignored; the text is drawn in the layer's style"))
        }
        return .concat(parts)
    }

    // MARK: Filters

    mutating func compileFilter(_ json: JSONValue, path: String) throws(StyleError) -> ExpressionNode {
        if Self.isExpressionFilter(json) {
            return try compile(json, path: path, expected: .value)
        }
        return try compileLegacyFilter(json, path: path)
    }

    /// MapLibre's rule for telling expression filters from legacy ones, which share operator
    /// names: legacy comparisons have exactly a bare key and a value, legacy `in` a bare key
    /// followed by bare values, and `!in`, `!has` and `none` exist only in the legacy syntax.
    static func isExpressionFilter(_ json: JSONValue) -> Bool {
        if case .bool = json { return true }
        guard case .array(let elements) = json, case .string(let name)? = elements.first else { return false }
        func isArray(_ index: Int) -> Bool {
            guard index < elements.count, case .array = elements[index] else { return false }
            return true
        }
        switch name {
        case "has":
            guard elements.count >= 2 else { return false }
            return elements[1] != .string("$id") && elements[1] != .string("$type")
        case "in":
            guard elements.count >= 3 else { return false }
            if case .string = elements[1] { return isArray(2) }
            return true
        case "!in", "!has", "none":
            return false
        case "==", "!=", ">", ">=", "<", "<=":
            return elements.count != 3 || isArray(1) || isArray(2)
        case "any", "all":
            return elements.dropFirst().allSatisfy { element in
                if case .bool = element { return true }
                return isExpressionFilter(element)
            }
        default:
            return true
        }
    }

    private mutating func compileLegacyFilter(_ json: JSONValue, path: String) throws(StyleError) -> ExpressionNode {
        guard case .array(let elements) = json, !elements.isEmpty else {
            throw .wrongType(path: path, expected: "a filter array such as [\"==\", \"class\", \"primary\"]", found: json.typeName)
        }
        guard case .string(let name) = elements[0] else {
            throw .invalidValue(path: path, reason: "a filter starts with an operator name such as \"==\" or \"all\"")
        }
        usesFeature = true
        func key() throws(StyleError) -> ExpressionNode.LegacyKey {
            guard elements.count >= 2, case .string(let key) = elements[1] else {
                throw .invalidValue(path: JSONPath.index(path, 1), reason: "\"\(name)\" needs a property name as its first argument")
            }
            switch key {
            case "$type": return .type
            case "$id": return .id
            default: return .property(key)
            }
        }
        func scalar(_ index: Int) throws(StyleError) -> StyleValue {
            let value = elements[index]
            switch value {
            case .string, .number, .bool, .null: return try literal(value, path: JSONPath.index(path, index), expected: .value)
            default:
                throw .invalidValue(path: JSONPath.index(path, index), reason: "legacy filter values must be strings, numbers, booleans or null")
            }
        }
        switch name {
        case "==", "!=", "<", "<=", ">", ">=":
            guard elements.count == 3, let comparison = ExpressionNode.LegacyComparison(rawValue: name) else {
                throw .invalidValue(path: path, reason: "\"\(name)\" takes a property name and a value")
            }
            return .legacyCompare(try key(), comparison, try scalar(2))
        case "in", "!in":
            let legacyKey = try key()
            var values = Set<StyleValue>()
            for index in elements.indices.dropFirst(2) { values.insert(try scalar(index)) }
            return .legacyIn(legacyKey, values, negated: name == "!in")
        case "has", "!has":
            guard elements.count == 2 else { throw .invalidValue(path: path, reason: "\"\(name)\" takes one property name") }
            return .legacyHas(try key(), negated: name == "!has")
        case "all", "any", "none":
            var children: [ExpressionNode] = []
            for index in elements.indices.dropFirst() {
                let child = elements[index]
                if case .bool(let flag) = child {
                    children.append(.literal(.bool(flag)))
                } else {
                    children.append(try compileLegacyFilter(child, path: JSONPath.index(path, index)))
                }
            }
            switch name {
            case "all": return .all(children)
            case "any": return .any(children)
            default: return .not(.any(children))
            }
        default:
            throw .unknownOperator(path: path, name: name)
        }
    }

    // MARK: Legacy functions

    /// Compiles `{"base", "stops"}` zoom functions and `{"property", "type", "stops", "default"}`
    /// property functions into the equivalent expressions.
    mutating func compileFunction(_ function: JSONObject, path: String, kind: ValueKind) throws(StyleError) -> ExpressionNode {
        let expected = kind.expected
        let property: String?
        switch function["property"] {
        case nil: property = nil
        case .string(let name)?: property = name
        case let other?: throw .wrongType(path: JSONPath.member(path, "property"), expected: "a string", found: other.typeName)
        }
        var base = 1.0
        switch function["base"] {
        case nil: break
        case .number(let value)? where value > 0: base = value
        case let other?: throw .invalidValue(path: JSONPath.member(path, "base"), reason: "the base must be a positive number, not \(other.typeName == "number" ? "\(other)" : other.typeName)")
        }
        let type: String
        switch function["type"] {
        case nil: type = kind.isInterpolatable ? "exponential" : "interval"
        case .string(let name)? where ["identity", "exponential", "interval", "categorical"].contains(name): type = name
        case let other?:
            throw .invalidValue(path: JSONPath.member(path, "type"), reason: "the function type must be \"identity\", \"exponential\", \"interval\" or \"categorical\", not \(other)")
        }
        let fallback: ExpressionNode
        if let defaultValue = function["default"] {
            fallback = .literal(try literal(defaultValue, path: JSONPath.member(path, "default"), expected: expected))
        } else {
            fallback = .literal(.null)
        }

        if type == "identity" {
            guard let property else {
                throw .missingProperty(path: JSONPath.member(path, "property"))
            }
            usesFeature = true
            return .propertyGuard(key: property, requireNumber: false, body: .get(property), fallback: fallback)
        }

        let stopsPath = JSONPath.member(path, "stops")
        guard let stopsJSON = function["stops"] else { throw .missingProperty(path: stopsPath) }
        guard case .array(let stopList) = stopsJSON, !stopList.isEmpty else {
            throw .wrongType(path: stopsPath, expected: "a non-empty array of [input, output] pairs", found: stopsJSON.typeName)
        }
        var inputs: [JSONValue] = []
        var outputs: [ExpressionNode] = []
        for (index, stop) in stopList.enumerated() {
            let stopPath = JSONPath.index(stopsPath, index)
            guard case .array(let pair) = stop, pair.count == 2 else {
                throw .wrongType(path: stopPath, expected: "an [input, output] pair", found: stop.typeName)
            }
            if case .object = pair[0] {
                throw .unsupportedFeature(path: path, feature: "a zoom-and-property function")
            }
            inputs.append(pair[0])
            outputs.append(.literal(try literal(pair[1], path: JSONPath.index(stopPath, 1), expected: expected)))
        }

        if type == "categorical" {
            guard let property else {
                throw .invalidValue(path: JSONPath.member(path, "type"), reason: "categorical functions need a \"property\"")
            }
            var labels: [StyleValue: Int] = [:]
            for (index, input) in inputs.enumerated() {
                let label = try literal(input, path: JSONPath.index(JSONPath.index(stopsPath, index), 0), expected: .value)
                if labels[label] == nil { labels[label] = index }
            }
            usesFeature = true
            let body = ExpressionNode.match(input: .get(property), labels: labels, outputs: outputs, fallback: fallback)
            return .propertyGuard(key: property, requireNumber: false, body: body, fallback: fallback)
        }

        var stops: [Double] = []
        for (index, input) in inputs.enumerated() {
            let inputPath = JSONPath.index(JSONPath.index(stopsPath, index), 0)
            guard case .number(let value) = input else {
                throw .wrongType(path: inputPath, expected: "a number", found: input.typeName)
            }
            if let previous = stops.last, value < previous {
                throw .invalidValue(path: inputPath, reason: "stop inputs must be in ascending order")
            }
            stops.append(value)
        }
        let input: ExpressionNode
        if let property {
            usesFeature = true
            input = .get(property)
        } else {
            usesZoom = true
            input = .zoom
        }
        let body: ExpressionNode
        if type == "exponential" {
            guard kind.isInterpolatable else {
                throw .invalidValue(path: JSONPath.member(path, "type"), reason: "exponential functions need a number, colour or number-array property; use \"interval\"")
            }
            body = .interpolate(base == 1 ? .linear : .exponential(base: base), input: input, stops: stops, outputs: outputs)
        } else {
            body = .step(input: input, stops: Array(stops.dropFirst()), outputs: outputs)
        }
        guard let property else { return body }
        return .propertyGuard(key: property, requireNumber: true, body: body, fallback: fallback)
    }

    /// Turns a legacy `text-field` such as `"{name:latin} {ref}"` into a `concat` of property
    /// lookups; a missing property becomes the empty string, as in MapLibre.
    mutating func compileTokens(_ text: String) -> ExpressionNode {
        var parts: [ExpressionNode] = []
        var literalText = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(where: { $0 == "}" || $0 == "{" }),
                  rest[close] == "}", close > afterOpen else {
                literalText += rest[...open]
                rest = rest[afterOpen...]
                continue
            }
            literalText += rest[..<open]
            if !literalText.isEmpty { parts.append(.literal(.string(literalText))) }
            literalText = ""
            parts.append(.toString(.get(String(rest[afterOpen..<close]))))
            usesFeature = true
            rest = rest[rest.index(after: close)...]
        }
        literalText += rest
        if parts.isEmpty { return .literal(.string(literalText)) }
        if !literalText.isEmpty { parts.append(.literal(.string(literalText))) }
        return parts.count == 1 ? parts[0] : .concat(parts)
    }
}

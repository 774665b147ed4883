import Logging

/// Reads property values for one style, collecting warnings for what it had to ignore.
struct PropertyReader {
    var warnings: [StyleWarning] = []
    let logger: Logger
    /// The id of the layer whose properties are being read, for warnings that name it.
    var layerID: String?

    /// Parses `json` as a property of type `T`.
    ///
    /// Unknown operators and unsupported constructs become a warning and the default, so one
    /// exotic property does not cost the whole layer; malformed values throw.
    mutating func read<T: StylePropertyValue>(_ json: JSONValue, path: String,
                                              default defaultValue: T) throws(StyleError) -> StyleProperty<T> {
        let kind = T.valueKind
        var compiler = ExpressionCompiler()
        let root: ExpressionNode
        do throws(StyleError) {
            switch json {
            case .object(let function):
                root = try compiler.compileFunction(function, path: path, kind: kind)
            case .array(let elements) where Self.isExpression(elements, kind: kind):
                root = try compiler.compile(json, path: path, expected: kind.expected)
            case .string(let text) where kind.isFormatted:
                root = compiler.compileTokens(text)
            default:
                return .constant(try constant(json, path: path, kind: kind, compiler: compiler, default: defaultValue))
            }
        } catch {
            switch error {
            case .unknownOperator(let site, let name):
                warn(StyleWarning(path: site, message: "unknown expression operator \"\(name)\"; \(path) uses its default value instead"))
                return .constant(defaultValue)
            case .unsupportedFeature(let site, let feature):
                warn(StyleWarning(path: site, message: "\(feature) is not supported; \(path) uses its default value instead"))
                return .constant(defaultValue)
            default:
                throw error
            }
        }
        for warning in compiler.warnings { warn(warning) }
        let expression = Expression(root: root, isZoomDependent: compiler.usesZoom,
                                    isFeatureDependent: compiler.usesFeature, warnings: compiler.warnings)
        if !expression.isZoomDependent && !expression.isFeatureDependent && !compiler.usesImages {
            let result = expression.evaluate(EvaluationContext(zoom: 0))
            if let value = T(styleValue: result) { return .constant(value) }
            // The type is right but the arithmetic is not (["/", 1, 0]): MapLibre draws with the
            // default, as it does when the same expression depends on the zoom.
            if result.hasNonFiniteNumber {
                warn(StyleWarning(path: path, message: "the expression gives \(result), which is not a finite number; the property uses its default value instead"))
                return .constant(defaultValue)
            }
            throw .wrongType(path: path, expected: kind.name, found: Self.typeDescription(result, kind: kind))
        }
        return .expression(PropertyExpression(expression: expression, defaultValue: defaultValue, path: path,
                                              logger: logger, convert: { T(styleValue: $0) }))
    }

    /// The type of an expression result as errors name it. An array of the wrong elements names
    /// the first wrong one ("an array containing a string"), since "should be an array of numbers
    /// but is an array" would not say what is wrong.
    private static func typeDescription(_ value: StyleValue, kind: ValueKind) -> String {
        guard case .array(let elements) = value else { return value.typeName }
        let wanted: String
        switch kind {
        case .numberArray: wanted = "number"
        case .stringArray: wanted = "string"
        default: return value.typeName
        }
        guard let odd = elements.first(where: { $0.typeName != wanted }) else { return value.typeName }
        switch odd.typeName {
        case "null": return "array containing null"
        case "array": return "array containing an array"
        default: return "array containing a \(odd.typeName)"
        }
    }

    /// The current default of a property, whichever form it is in.
    static func defaultValue<T>(of property: StyleProperty<T>) -> T {
        switch property {
        case .constant(let value): value
        case .expression(let expression): expression.defaultValue
        }
    }

    mutating func warn(_ warning: StyleWarning) {
        warnings.append(warning)
        logger.warning("\(warning.description)")
    }

    /// MapLibre's test: an array is an expression when it starts with an operator name. For
    /// array-valued properties that means a known name, since `["Open Sans Regular"]` is a value.
    private static func isExpression(_ elements: [JSONValue], kind: ValueKind) -> Bool {
        guard case .string(let first)? = elements.first else { return false }
        switch kind {
        case .stringArray: return ExpressionCompiler.operatorNames.contains(first)
        case .numberArray: return true
        default: return true
        }
    }

    private mutating func constant<T: StylePropertyValue>(_ json: JSONValue, path: String, kind: ValueKind,
                                                          compiler: ExpressionCompiler,
                                                          default defaultValue: T) throws(StyleError) -> T {
        if case .object = json {
            throw .wrongType(path: path, expected: kind.name, found: json.typeName)
        }
        if case .string(let text) = json, case .enumeration = kind, T(styleValue: .string(text)) == nil {
            throw .invalidValue(path: path, reason: "\"\(text)\" is not allowed here; use \(kind.name)")
        }
        let value = try compiler.literal(json, path: path, expected: kind.expected)
        if let typed = T(styleValue: value), Self.matchesKind(json, kind) { return typed }
        // JSON numbers are finite, but the renderer draws with 32-bit floats: a number beyond
        // their range is of the right type and still cannot be drawn. The same number computed by
        // an expression warns and draws with the default, so a written one does too.
        if value.hasNonFiniteNumber {
            warn(StyleWarning(path: path, message: "\(layerID.map { "layer \"\($0)\": " } ?? "")\(value) is not a finite number for the renderer, whose 32-bit floats end at ±3.4e38; the property uses its default value, \(Self.describe(defaultValue)), instead. Give a value within that range"))
            return defaultValue
        }
        throw .wrongType(path: path, expected: kind.name, found: json.typeName)
    }

    /// A default value as a style would write it.
    private static func describe(_ value: some Sendable) -> String {
        switch value {
        case let number as Double: StyleValue.format(number)
        case let numbers as [Double]: "[" + numbers.map(StyleValue.format).joined(separator: ", ") + "]"
        default: "\(value)"
        }
    }

    /// Keeps the lenient text conversion from accepting arrays and the like as labels.
    private static func matchesKind(_ json: JSONValue, _ kind: ValueKind) -> Bool {
        switch (kind, json) {
        case (.formatted, .string), (.formatted, .number), (.formatted, .bool): true
        case (.formatted, _): false
        default: true
        }
    }
}

extension ValueKind {
    var isFormatted: Bool {
        if case .formatted = self { return true }
        return false
    }
}

extension ExpressionCompiler {
    /// Every operator ``compile(_:path:expected:)`` understands.
    static let operatorNames: Set<String> = [
        "literal", "get", "has", "id", "geometry-type", "zoom", "line-progress", "!", "==", "!=", "<", "<=", ">", ">=",
        "all", "any", "in", "match", "case", "coalesce", "to-string", "to-boolean", "to-number", "to-color",
        "number", "string", "boolean", "array", "step", "interpolate", "interpolate-hcl", "interpolate-lab",
        "concat", "upcase", "downcase", "format", "length", "+", "-", "*", "/", "%", "^", "min", "max",
        "abs", "floor", "ceil", "round", "sqrt", "image",
    ]
}

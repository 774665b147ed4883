import Foundation
import CarWindowGeo

/// A compiled MapLibre style expression (or legacy filter or function, which compile to the
/// same tree).
///
/// Compiling once and walking a tree per evaluation keeps per-feature work to dictionary
/// lookups and arithmetic; JSON is never consulted while drawing.
public struct Expression: Sendable {
    let root: ExpressionNode
    /// Whether the result can change with the camera zoom, so renderers know what to re-evaluate.
    public let isZoomDependent: Bool
    /// Whether the result depends on the feature, so renderers know whether one value fits all.
    public let isFeatureDependent: Bool
    /// Parts of the expression that were accepted but simplified (such as `format` options).
    public let warnings: [StyleWarning]

    init(root: ExpressionNode, isZoomDependent: Bool, isFeatureDependent: Bool, warnings: [StyleWarning]) {
        self.root = root
        self.isZoomDependent = isZoomDependent
        self.isFeatureDependent = isFeatureDependent
        self.warnings = warnings
    }

    /// Compiles an expression such as `["get", "class"]`.
    ///
    /// - Throws: ``StyleError/unknownOperator(path:name:)`` for operators this library lacks and
    ///   ``StyleError/invalidValue(path:reason:)`` for malformed expressions; `path` prefixes the
    ///   paths in those errors.
    package init(_ json: JSONValue, path: String = "") throws(StyleError) {
        var compiler = ExpressionCompiler()
        let root = try compiler.compile(json, path: path, expected: .value)
        self.init(root: root, isZoomDependent: compiler.usesZoom, isFeatureDependent: compiler.usesFeature,
                  warnings: compiler.warnings)
    }

    /// Compiles a layer filter, accepting both expression filters and the legacy filter syntax
    /// (`["==", "class", "primary"]`), told apart as MapLibre does.
    package static func filter(_ json: JSONValue, path: String = "") throws(StyleError) -> Expression {
        var compiler = ExpressionCompiler()
        let root = try compiler.compileFilter(json, path: path)
        return Expression(root: root, isZoomDependent: compiler.usesZoom,
                          isFeatureDependent: compiler.usesFeature, warnings: compiler.warnings)
    }

    /// Evaluates the expression; a runtime error (such as comparing a string with a number
    /// with `<`) yields ``StyleValue/null``, which properties replace with their default.
    public func evaluate(_ context: EvaluationContext) -> StyleValue {
        do {
            return try root.evaluate(context)
        } catch {
            return .null
        }
    }

    /// Evaluates the expression as a filter: only `true` passes; other values and errors reject.
    public func matches(_ context: EvaluationContext) -> Bool {
        evaluate(context) == .bool(true)
    }
}

/// Another name for ``Expression`` for files that also import Foundation, whose own
/// `Expression` type would otherwise make the bare name ambiguous.
public typealias StyleExpression = Expression

/// Why evaluation failed; carried only to unwind, the message helps when debugging.
struct EvaluationFailure: Error {
    let message: String
}

/// The compiled tree. Indirect so nodes can nest without boxing by hand.
indirect enum ExpressionNode: Sendable {
    case literal(StyleValue)
    case zoom
    case get(String)
    case getDynamic(ExpressionNode)
    case has(String)
    case hasDynamic(ExpressionNode)
    case featureID
    case geometryType
    case not(ExpressionNode)
    case equals(ExpressionNode, ExpressionNode, negated: Bool)
    case order(OrderOperator, ExpressionNode, ExpressionNode)
    case all([ExpressionNode])
    case any([ExpressionNode])
    case contains(needle: ExpressionNode, haystack: ExpressionNode)
    case match(input: ExpressionNode, labels: [StyleValue: Int], outputs: [ExpressionNode], fallback: ExpressionNode)
    case conditional(conditions: [ExpressionNode], outputs: [ExpressionNode], fallback: ExpressionNode)
    case coalesce([ExpressionNode])
    case toString(ExpressionNode)
    case toNumber([ExpressionNode])
    case toBoolean(ExpressionNode)
    case toColor([ExpressionNode])
    case assertType(AssertedType, [ExpressionNode])
    case step(input: ExpressionNode, stops: [Double], outputs: [ExpressionNode])
    case interpolate(Interpolation, input: ExpressionNode, stops: [Double], outputs: [ExpressionNode])
    case concat([ExpressionNode])
    /// `["image", name]`: the name, or null when the context knows the images and lacks it,
    /// so `coalesce` falls through to the next image as in MapLibre.
    case image(ExpressionNode)
    case upcase(ExpressionNode)
    case downcase(ExpressionNode)
    case arithmetic(ArithmeticOperator, [ExpressionNode])
    case length(ExpressionNode)
    /// Legacy property functions fall back to their `default` when the property is missing or,
    /// for exponential and interval functions, not a number.
    case propertyGuard(key: String, requireNumber: Bool, body: ExpressionNode, fallback: ExpressionNode)
    case legacyCompare(LegacyKey, LegacyComparison, StyleValue)
    case legacyIn(LegacyKey, Set<StyleValue>, negated: Bool)
    case legacyHas(LegacyKey, negated: Bool)

    enum OrderOperator: String, Sendable {
        case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

        func holds<T: Comparable>(_ a: T, _ b: T) -> Bool {
            switch self {
            case .less: a < b
            case .lessOrEqual: a <= b
            case .greater: a > b
            case .greaterOrEqual: a >= b
            }
        }
    }

    enum AssertedType: String, Sendable {
        case number, string, boolean, array
    }

    enum ArithmeticOperator: String, Sendable {
        case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%", power = "^"
        case min, max, abs, floor, ceil, round, sqrt
    }

    enum LegacyKey: Sendable, Hashable {
        case type, id, property(String)
    }

    enum LegacyComparison: String, Sendable {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    }
}

/// How `interpolate` blends between stops.
enum Interpolation: Sendable {
    case linear
    case exponential(base: Double)
    case cubicBezier(x1: Double, y1: Double, x2: Double, y2: Double)

    /// MapLibre's interpolation factor: for base b, `(b^progress - 1) / (b^range - 1)`.
    func factor(input: Double, lower: Double, upper: Double) -> Double {
        let range = upper - lower
        let progress = input - lower
        guard range > 0 else { return 0 }
        switch self {
        case .linear:
            return progress / range
        case .exponential(let base):
            if base == 1 { return progress / range }
            return (pow(base, progress) - 1) / (pow(base, range) - 1)
        case .cubicBezier(let x1, let y1, let x2, let y2):
            return Self.bezier(x: progress / range, x1: x1, y1: y1, x2: x2, y2: y2)
        }
    }

    /// Solves the CSS-style unit Bezier for y at x by bisection, which always converges.
    private static func bezier(x: Double, x1: Double, y1: Double, x2: Double, y2: Double) -> Double {
        func curve(_ t: Double, _ p1: Double, _ p2: Double) -> Double {
            let u = 1 - t
            return 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t
        }
        var low = 0.0, high = 1.0, t = x
        for _ in 0..<60 {
            let value = curve(t, x1, x2)
            if abs(value - x) < 1e-9 { break }
            if value < x { low = t } else { high = t }
            t = (low + high) / 2
        }
        return curve(t, y1, y2)
    }
}

// MARK: - Evaluation

extension ExpressionNode {
    func evaluate(_ context: EvaluationContext) throws(EvaluationFailure) -> StyleValue {
        switch self {
        case .literal(let value):
            return value
        case .zoom:
            return .number(context.zoom)
        case .get(let key):
            return context.feature?.properties[key].map(StyleValue.init) ?? .null
        case .getDynamic(let keyNode):
            guard case .string(let key) = try keyNode.evaluate(context) else {
                throw EvaluationFailure(message: "get needs a string key")
            }
            return context.feature?.properties[key].map(StyleValue.init) ?? .null
        case .has(let key):
            return .bool(context.feature?.properties[key] != nil)
        case .hasDynamic(let keyNode):
            guard case .string(let key) = try keyNode.evaluate(context) else {
                throw EvaluationFailure(message: "has needs a string key")
            }
            return .bool(context.feature?.properties[key] != nil)
        case .featureID:
            return context.feature?.id.map { .number(Double($0)) } ?? .null
        case .geometryType:
            return context.feature.map { .string(Self.typeName($0.type)) } ?? .null
        case .not(let operand):
            return .bool(!(try operand.evaluateBool(context)))
        case .equals(let lhs, let rhs, let negated):
            let equal = try lhs.evaluate(context) == rhs.evaluate(context)
            return .bool(equal != negated)
        case .order(let op, let lhs, let rhs):
            switch (try lhs.evaluate(context), try rhs.evaluate(context)) {
            case (.number(let a), .number(let b)): return .bool(op.holds(a, b))
            case (.string(let a), .string(let b)): return .bool(op.holds(a, b))
            case (let a, let b):
                throw EvaluationFailure(message: "\(op.rawValue) compares two numbers or two strings, not \(a.typeName) and \(b.typeName)")
            }
        case .all(let operands):
            for operand in operands where !(try operand.evaluateBool(context)) { return .bool(false) }
            return .bool(true)
        case .any(let operands):
            for operand in operands where try operand.evaluateBool(context) { return .bool(true) }
            return .bool(false)
        case .contains(let needleNode, let haystackNode):
            let needle = try needleNode.evaluate(context)
            switch try haystackNode.evaluate(context) {
            case .array(let values): return .bool(values.contains(needle))
            case .string(let text):
                guard case .string(let part) = needle else {
                    throw EvaluationFailure(message: "in over a string needs a string needle")
                }
                return .bool(part.isEmpty || text.contains(part))
            case .null: return .bool(false)
            case let other: throw EvaluationFailure(message: "in needs an array or string, not \(other.typeName)")
            }
        case .match(let input, let labels, let outputs, let fallback):
            if let index = labels[try input.evaluate(context)] { return try outputs[index].evaluate(context) }
            return try fallback.evaluate(context)
        case .conditional(let conditions, let outputs, let fallback):
            for (condition, output) in zip(conditions, outputs) where try condition.evaluateBool(context) {
                return try output.evaluate(context)
            }
            return try fallback.evaluate(context)
        case .coalesce(let operands):
            for operand in operands {
                let value = try operand.evaluate(context)
                if value != .null { return value }
            }
            return .null
        case .toString(let operand):
            return .string(try operand.evaluate(context).description)
        case .toNumber(let operands):
            for operand in operands {
                if let number = Self.number(from: try operand.evaluate(context)) { return .number(number) }
            }
            throw EvaluationFailure(message: "to-number found nothing convertible")
        case .toBoolean(let operand):
            return .bool(Self.truthiness(try operand.evaluate(context)))
        case .toColor(let operands):
            for operand in operands {
                if let color = Self.color(from: try operand.evaluate(context)) { return .color(color) }
            }
            throw EvaluationFailure(message: "to-color found nothing convertible")
        case .assertType(let type, let operands):
            for operand in operands {
                let value = try operand.evaluate(context)
                if value.typeName == type.rawValue { return value }
            }
            throw EvaluationFailure(message: "expected a \(type.rawValue)")
        case .step(let input, let stops, let outputs):
            guard case .number(let x) = try input.evaluate(context) else {
                throw EvaluationFailure(message: "step needs a number input")
            }
            // outputs[0] applies below the first stop; outputs[i + 1] from stops[i] on.
            var index = 0
            var low = 0, high = stops.count
            while low < high {
                let mid = (low + high) / 2
                if stops[mid] <= x { low = mid + 1 } else { high = mid }
            }
            index = low
            return try outputs[index].evaluate(context)
        case .interpolate(let interpolation, let input, let stops, let outputs):
            guard case .number(let x) = try input.evaluate(context) else {
                throw EvaluationFailure(message: "interpolate needs a number input")
            }
            guard let first = stops.first, let last = stops.last else { return .null }
            if x <= first { return try outputs[0].evaluate(context) }
            if x >= last { return try outputs[stops.count - 1].evaluate(context) }
            var low = 0, high = stops.count - 1
            while high - low > 1 {
                let mid = (low + high) / 2
                if stops[mid] <= x { low = mid } else { high = mid }
            }
            let t = interpolation.factor(input: x, lower: stops[low], upper: stops[high])
            return try Self.blend(outputs[low].evaluate(context), outputs[high].evaluate(context), t)
        case .image(let operand):
            let name = try operand.evaluate(context)
            guard case .string(let text) = name else { return .null }
            if let images = context.availableImages, !images.contains(text) { return .null }
            return name
        case .concat(let operands):
            var text = ""
            for operand in operands { text += try operand.evaluate(context).description }
            return .string(text)
        case .upcase(let operand):
            guard case .string(let text) = try operand.evaluate(context) else {
                throw EvaluationFailure(message: "upcase needs a string")
            }
            return .string(text.uppercased())
        case .downcase(let operand):
            guard case .string(let text) = try operand.evaluate(context) else {
                throw EvaluationFailure(message: "downcase needs a string")
            }
            return .string(text.lowercased())
        case .arithmetic(let op, let operands):
            var numbers: [Double] = []
            numbers.reserveCapacity(operands.count)
            for operand in operands {
                guard case .number(let value) = try operand.evaluate(context) else {
                    throw EvaluationFailure(message: "\(op.rawValue) needs numbers")
                }
                numbers.append(value)
            }
            return .number(Self.apply(op, numbers))
        case .length(let operand):
            switch try operand.evaluate(context) {
            case .string(let text): return .number(Double(text.count))
            case .array(let values): return .number(Double(values.count))
            case let other: throw EvaluationFailure(message: "length needs a string or array, not \(other.typeName)")
            }
        case .propertyGuard(let key, let requireNumber, let body, let fallback):
            guard let value = context.feature?.properties[key] else { return try fallback.evaluate(context) }
            if requireNumber && value.number == nil { return try fallback.evaluate(context) }
            let result = try body.evaluate(context)
            return result == .null ? try fallback.evaluate(context) : result
        case .legacyCompare(let key, let comparison, let expected):
            let actual = Self.legacyValue(key, context)
            switch comparison {
            case .equal: return .bool(actual == expected)
            case .notEqual: return .bool(actual != expected)
            default:
                let op: OrderOperator = switch comparison {
                case .less: .less
                case .lessOrEqual: .lessOrEqual
                case .greater: .greater
                default: .greaterOrEqual
                }
                switch (actual, expected) {
                case (.number(let a), .number(let b)): return .bool(op.holds(a, b))
                case (.string(let a), .string(let b)): return .bool(op.holds(a, b))
                default: return .bool(false)
                }
            }
        case .legacyIn(let key, let values, let negated):
            return .bool(values.contains(Self.legacyValue(key, context)) != negated)
        case .legacyHas(let key, let negated):
            let present = switch key {
            case .type: context.feature != nil
            case .id: context.feature?.id != nil
            case .property(let name): context.feature?.properties[name] != nil
            }
            return .bool(present != negated)
        }
    }

    func evaluateBool(_ context: EvaluationContext) throws(EvaluationFailure) -> Bool {
        guard case .bool(let value) = try evaluate(context) else {
            throw EvaluationFailure(message: "expected a boolean")
        }
        return value
    }

    static func typeName(_ type: GeometryType) -> String {
        switch type {
        case .point: "Point"
        case .lineString: "LineString"
        case .polygon: "Polygon"
        case .unknown: "Unknown"
        }
    }

    private static func legacyValue(_ key: LegacyKey, _ context: EvaluationContext) -> StyleValue {
        switch key {
        case .type: context.feature.map { .string(typeName($0.type)) } ?? .null
        case .id: context.feature?.id.map { .number(Double($0)) } ?? .null
        case .property(let name): context.feature?.properties[name].map(StyleValue.init) ?? .null
        }
    }

    /// JavaScript's `Number()` for the cases styles meet; nil where it gives NaN.
    static func number(from value: StyleValue) -> Double? {
        switch value {
        case .null: return 0
        case .bool(let flag): return flag ? 1 : 0
        case .number(let number): return number
        case .string(let text):
            let trimmed = text.trimmingWhitespace()
            if trimmed.isEmpty { return 0 }
            guard let number = Double(trimmed), !number.isNaN else { return nil }
            return number
        case .color, .array: return nil
        }
    }

    static func truthiness(_ value: StyleValue) -> Bool {
        switch value {
        case .null: false
        case .bool(let flag): flag
        case .number(let number): number != 0 && !number.isNaN
        case .string(let text): !text.isEmpty
        case .color, .array: true
        }
    }

    static func color(from value: StyleValue) -> Color? {
        switch value {
        case .color(let color): return color
        case .string(let text): return Color(css: text)
        case .array(let values) where values.count == 3 || values.count == 4:
            var components: [Double] = []
            for value in values {
                guard case .number(let number) = value else { return nil }
                components.append(number)
            }
            return Color(r: Float(components[0] / 255), g: Float(components[1] / 255), b: Float(components[2] / 255),
                         a: components.count == 4 ? Float(components[3]) : 1)
        default: return nil
        }
    }

    private static func apply(_ op: ArithmeticOperator, _ n: [Double]) -> Double {
        switch op {
        case .add: return n.reduce(0, +)
        case .multiply: return n.reduce(1, *)
        case .subtract: return n.count == 1 ? -n[0] : n[0] - n[1]
        case .divide: return n[0] / n[1]
        case .remainder: return n[0].truncatingRemainder(dividingBy: n[1])
        case .power: return pow(n[0], n[1])
        case .min: return n.min() ?? .nan
        case .max: return n.max() ?? .nan
        case .abs: return Swift.abs(n[0])
        case .floor: return n[0].rounded(.down)
        case .ceil: return n[0].rounded(.up)
        case .round: return n[0].rounded(.toNearestOrAwayFromZero)
        case .sqrt: return n[0].squareRoot()
        }
    }

    /// Blends two stop outputs. Colours blend premultiplied, as MapLibre Native does, so a fade
    /// to transparent does not darken.
    static func blend(_ a: StyleValue, _ b: StyleValue, _ t: Double) throws(EvaluationFailure) -> StyleValue {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            return .number(x + (y - x) * t)
        case (.array(let xs), .array(let ys)) where xs.count == ys.count:
            var result: [StyleValue] = []
            for (x, y) in zip(xs, ys) { result.append(try blend(x, y, t)) }
            return .array(result)
        default:
            guard let x = color(fromColorOrString: a), let y = color(fromColorOrString: b) else {
                throw EvaluationFailure(message: "cannot interpolate \(a.typeName) and \(b.typeName)")
            }
            let p = x.premultiplied, q = y.premultiplied
            return .color(Color(premultiplied: p + (q - p) * Float(t)))
        }
    }

    private static func color(fromColorOrString value: StyleValue) -> Color? {
        switch value {
        case .color(let color): color
        case .string(let text): Color(css: text)
        default: nil
        }
    }
}

import Logging
import Synchronization
import CarWindowGeo

/// A paint or layout property: either one value for every zoom and feature, or an expression.
///
/// Constant folding happens while loading, so an expression that depends on neither zoom nor
/// feature arrives here as ``constant(_:)`` and renderers can batch on ``isConstant``.
public enum StyleProperty<T: Sendable>: Sendable {
    case constant(T)
    case expression(PropertyExpression<T>)

    /// Whether one value serves every zoom and feature.
    public var isConstant: Bool {
        if case .constant = self { return true }
        return false
    }

    /// Whether the value must be recomputed when the camera zoom changes.
    public var dependsOnZoom: Bool {
        if case .expression(let expression) = self { return expression.expression.isZoomDependent }
        return false
    }

    /// Whether the value can differ between features of the same layer.
    public var dependsOnFeature: Bool {
        if case .expression(let expression) = self { return expression.expression.isFeatureDependent }
        return false
    }

    /// The value at `zoom` for `feature`; results of the wrong type (or evaluation errors) give
    /// the property's default, and a wrong type is logged once per property.
    public func evaluate(zoom: Double, feature: VectorTileFeature? = nil) -> T {
        switch self {
        case .constant(let value): value
        case .expression(let expression): expression.evaluate(EvaluationContext(zoom: zoom, feature: feature))
        }
    }

    /// The value at `zoom` for `feature` where `["image", ...]` knows which sprite images
    /// exist (`icon-image`, the pattern properties).
    public func evaluate(zoom: Double, feature: VectorTileFeature?, availableImages: Set<String>) -> T {
        switch self {
        case .constant(let value): value
        case .expression(let expression):
            expression.evaluate(EvaluationContext(zoom: zoom, feature: feature, availableImages: availableImages))
        }
    }
}

/// The expression form of a ``StyleProperty``: the compiled expression plus what is needed to
/// turn its result into `T`.
///
/// A class so the "already reported" flag is shared by every copy of the property; reporting a
/// bad type once per property keeps a per-feature failure from flooding the log.
public final class PropertyExpression<T: Sendable>: Sendable {
    /// The compiled expression.
    public let expression: Expression
    /// The value used when the expression yields null or a value of the wrong type.
    public let defaultValue: T
    /// The JSON path of the property, for log messages.
    public let path: String
    private let convert: @Sendable (StyleValue) -> T?
    private let logger: Logger?
    private let reported = Atomic<Bool>(false)

    init(expression: Expression, defaultValue: T, path: String, logger: Logger?,
         convert: @escaping @Sendable (StyleValue) -> T?) {
        self.expression = expression
        self.defaultValue = defaultValue
        self.path = path
        self.logger = logger
        self.convert = convert
    }

    /// The same property (default, path, conversion) computed by `expression` instead.
    func replacingExpression(_ expression: Expression) -> PropertyExpression<T> {
        PropertyExpression(expression: expression, defaultValue: defaultValue, path: path, logger: logger, convert: convert)
    }

    /// Evaluates with a full context, for callers that already hold one.
    public func evaluate(_ context: EvaluationContext) -> T {
        let result = expression.evaluate(context)
        if let value = convert(result) { return value }
        // Null is how a missing feature property or a failed runtime check shows up; MapLibre
        // silently uses the default for it, so only report real type mismatches.
        if result != .null, !reported.exchange(true, ordering: .relaxed) {
            if result.hasNonFiniteNumber {
                logger?.warning("\(path): the expression gave \(result), which is not a finite number, at zoom \(StyleValue.format(context.zoom)); the property uses its default wherever that happens")
            } else {
                logger?.warning("\(path): the expression produced \(result.typeName) \"\(result)\", not a value this property accepts; using the default")
            }
        }
        return defaultValue
    }
}

/// A type a style property can hold, with its conversion from expression results.
protocol StylePropertyValue: Sendable {
    static var valueKind: ValueKind { get }
    init?(styleValue: StyleValue)
}

extension Double: StylePropertyValue {
    static var valueKind: ValueKind { .number }
    init?(styleValue: StyleValue) {
        guard case .number(let number) = styleValue, StyleValue.isDrawable(number) else { return nil }
        self = number
    }
}

extension Bool: StylePropertyValue {
    static var valueKind: ValueKind { .boolean }
    init?(styleValue: StyleValue) {
        guard case .bool(let flag) = styleValue else { return nil }
        self = flag
    }
}

/// Text fields accept any value and show it as text, as MapLibre coerces to `formatted`.
extension String: StylePropertyValue {
    static var valueKind: ValueKind { .formatted }
    init?(styleValue: StyleValue) {
        guard styleValue != .null else { return nil }
        self = styleValue.description
    }
}

extension Color: StylePropertyValue {
    static var valueKind: ValueKind { .color }
    init?(styleValue: StyleValue) {
        switch styleValue {
        case .color(let color): self = color
        case .string(let text):
            guard let color = Color(css: text) else { return nil }
            self = color
        default: return nil
        }
    }
}

extension Array: StylePropertyValue where Element: StylePropertyValue {
    static var valueKind: ValueKind {
        Element.valueKind.isInterpolatable ? .numberArray : .stringArray
    }

    init?(styleValue: StyleValue) {
        guard case .array(let values) = styleValue else { return nil }
        var elements: [Element] = []
        for value in values {
            guard let element = Element(styleValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}

/// Enumerated layout values are parsed from their style-specification spelling.
protocol StyleEnumeration: StylePropertyValue, RawRepresentable<String>, CaseIterable {}

extension StyleEnumeration {
    static var valueKind: ValueKind { .enumeration(allCases.map(\.rawValue)) }
    init?(styleValue: StyleValue) {
        guard case .string(let text) = styleValue, let value = Self(rawValue: text) else { return nil }
        self = value
    }
}

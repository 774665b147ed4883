import CarWindowGeo
import Foundation
/// A value produced by evaluating a style expression: the runtime types of the MapLibre
/// expression language, minus objects, which no property this library draws needs.
public enum StyleValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case color(Color)
    case array([StyleValue])

    /// The expression-language type name, as runtime errors and warnings show it.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .color: "color"
        case .array: "array"
        }
    }

    /// The text MapLibre's `to-string` produces, so labels built with `concat` read the same.
    public var description: String {
        switch self {
        case .null: ""
        case .bool(let value): value ? "true" : "false"
        case .number(let value): Self.format(value)
        case .string(let value): value
        case .color(let color): color.description
        case .array(let values): "[" + values.map(\.jsonText).joined(separator: ",") + "]"
        }
    }

    private var jsonText: String {
        switch self {
        case .null: "null"
        case .string(let value): "\"" + value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .color(let color): "\"" + color.description + "\""
        default: description
        }
    }

    /// Whether this is a number, or an array holding one, that the renderer's 32-bit floats cannot
    /// carry: NaN, an infinity, or a magnitude beyond `Float`'s range. Arithmetic such as
    /// `["/", 1, 0]` produces them; properties then take their default, as MapLibre does.
    var hasNonFiniteNumber: Bool {
        switch self {
        case .number(let value): !Self.isDrawable(value)
        case .array(let values): values.contains { $0.hasNonFiniteNumber }
        case .null, .bool, .string, .color: false
        }
    }

    /// Whether `value` stays finite as the `Float` the renderer hands to GL.
    static func isDrawable(_ value: Double) -> Bool {
        Float(value).isFinite
    }

    /// A feature property as an expression value; every numeric encoding becomes a number.
    public init(_ value: FeatureValue) {
        switch value {
        case .string(let string): self = .string(string)
        case .bool(let bool): self = .bool(bool)
        default: self = .number(value.number ?? 0)
        }
    }

    /// Formats a number as JavaScript does for the common cases (integers without a decimal
    /// point), because MapLibre styles build label text that way.
    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "Infinity" : "-Infinity" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return value.description
    }
}

/// What an expression may look at: the camera zoom and, for data-driven properties and filters,
/// the feature being drawn.
public struct EvaluationContext: Sendable {
    /// The zoom level being drawn; fractional.
    public var zoom: Double
    /// The feature being drawn; nil where there is none, as for zoom-only properties.
    public var feature: VectorTileFeature?
    /// The sprite images that exist, for the `image` operator; nil where they are not known
    /// (every name then counts as present).
    public var availableImages: Set<String>?

    /// Makes a context for `zoom` and, optionally, one feature and the images that exist.
    public init(zoom: Double, feature: VectorTileFeature? = nil, availableImages: Set<String>? = nil) {
        self.zoom = zoom
        self.feature = feature
        self.availableImages = availableImages
    }
}

/// Why a style could not be loaded.
///
/// Paths name the offending JSON value in dotted form, with array indices in brackets and
/// object keys written bare even when they contain dashes or colons:
/// `layers[3].paint.line-width`, `sources.openmaptiles.tiles[0]`, `layers[2].filter[1]`.
/// The empty path means the whole document.
public enum StyleError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The text is not JSON; line and column count from 1 and point at the offending character.
    case invalidJSON(line: Int, column: Int, reason: String)
    /// A value has the wrong JSON type, such as a string where a number belongs.
    case wrongType(path: String, expected: String, found: String)
    /// A value has the right type but a meaning the style specification does not allow.
    case invalidValue(path: String, reason: String)
    /// A required member is absent.
    case missingProperty(path: String)
    /// The style declares a specification version other than 8.
    case unsupportedVersion(found: String)
    /// An expression uses an operator this library does not implement.
    ///
    /// While loading a style this becomes a warning; only standalone expression compilation
    /// throws it.
    case unknownOperator(path: String, name: String)
    /// A valid MapLibre construct this library does not implement, such as zoom-and-property
    /// functions; like ``unknownOperator(path:name:)`` it becomes a warning while loading.
    case unsupportedFeature(path: String, feature: String)
    /// The style file could not be read.
    case unreadable(path: String, reason: String)
    /// The document is larger than the loader accepts.
    case tooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .invalidJSON(let line, let column, let reason):
            "The style is not valid JSON at line \(line), column \(column): \(reason). Fix the text there (a JSON linter shows the exact spot)."
        case .wrongType(let path, let expected, let found):
            "\(Self.where(path)) should be \(expected) but is \(Self.withArticle(found)). Change it to \(expected) as the MapLibre style specification describes."
        case .invalidValue(let path, let reason):
            "\(Self.where(path)) is invalid: \(reason)."
        case .missingProperty(let path):
            "\(Self.where(path)) is required but missing. Add it; the MapLibre style specification lists what it must contain."
        case .unsupportedVersion(let found):
            "The style declares version \(found), but only version 8 styles are supported. Set \"version\": 8 (and convert older styles with MapLibre's migration tools)."
        case .unknownOperator(let path, let name):
            "\(Self.where(path)) uses the expression operator \"\(name)\", which is not supported. Rewrite it with the supported operators."
        case .unsupportedFeature(let path, let feature):
            "\(Self.where(path)) uses \(feature), which is not supported. Rewrite it with expressions this library implements."
        case .unreadable(let path, let reason):
            "The style file \(path) could not be read: \(reason). Check the path and its permissions."
        case .tooLarge(let bytes, let limit):
            "The style is \(bytes) bytes, more than the \(limit) bytes accepted. Styles are small; check that the file is a style and not tile data."
        }
    }

    static func `where`(_ path: String) -> String {
        path.isEmpty ? "The style's top level" : "The value at \(path)"
    }

    private static func withArticle(_ noun: String) -> String {
        if noun == "null" { return "null" }
        let vowel = noun.first.map { "aeiou".contains($0) } ?? false
        return (vowel ? "an " : "a ") + noun
    }
}

/// Something in a style that was ignored or replaced by a default so the rest could load.
public struct StyleWarning: Sendable, Hashable, CustomStringConvertible {
    /// The JSON path of the ignored value, in the same form as ``StyleError`` paths.
    public var path: String
    /// What was ignored and what was used instead.
    public var message: String

    /// Makes a warning about the value at `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String {
        path.isEmpty ? message : "\(path): \(message)"
    }
}

/// Builds the dotted JSON paths used in errors and warnings.
package enum JSONPath {
    package static func member(_ parent: String, _ key: String) -> String {
        parent.isEmpty ? key : "\(parent).\(key)"
    }

    package static func index(_ parent: String, _ index: Int) -> String {
        "\(parent)[\(index)]"
    }
}

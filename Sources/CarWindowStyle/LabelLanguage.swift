/// The language a map's labels are shown in, where the data has names in it.
///
/// OpenStreetMap data names places in many languages (`name:sv`, `name:ja`, ...), and tiles made
/// with the OpenMapTiles schema carry those as properties beside `name`. A style localised to a
/// language reads the name in that language first and falls back to the name it read before,
/// as MapLibre styles do with `coalesce`: a street with no Swedish name keeps its Finnish one.
///
/// Made from a language code as an engine or a head unit gives it: `sv`, `SV-SE` (SmartDeviceLink's
/// `Language`), `en_US`, `zh-TW`, `zh-Hant`.
public struct LabelLanguage: Sendable, Hashable, CustomStringConvertible {
    /// The lower-case ISO 639 code, such as `sv`.
    public let language: String
    /// The script, for the languages OpenStreetMap tags by script: `Hans` or `Hant` for Chinese.
    public let script: String?

    /// The language of `code`, or nil when `code` is not a language code: two or three ASCII
    /// letters, optionally followed by `-` or `_` and a region or script (`SV-SE`, `zh-Hant`).
    public init?(_ code: String) {
        let parts = code.split(omittingEmptySubsequences: false) { $0 == "-" || $0 == "_" }
        guard (1...3).contains(parts.count), let first = parts.first,
              (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }),
              parts.dropFirst().allSatisfy({ (2...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        language = first.lowercased()
        guard language == "zh" else {
            script = nil
            return
        }
        // OpenStreetMap tags Chinese by script: Taiwan, Hong Kong and Macau write Traditional.
        let rest = parts.dropFirst().map { $0.lowercased() }
        if rest.contains("hant") || rest.contains(where: { ["tw", "hk", "mo"].contains($0) }) {
            script = "Hant"
        } else if rest.contains("hans") || rest.contains(where: { ["cn", "sg"].contains($0) }) {
            script = "Hans"
        } else {
            script = nil
        }
    }

    /// The feature properties that hold a name in this language, first choice first:
    /// `name:zh-Hant` before `name:zh`, and OpenMapTiles' `name_en` and `name_de` columns last.
    public var nameKeys: [String] {
        var keys: [String] = []
        if let script { keys.append("name:\(language)-\(script)") }
        keys.append("name:\(language)")
        keys.append("name_\(language)")
        return keys
    }

    /// The code as the tags spell it: `sv`, `zh-Hant`.
    public var description: String { script.map { "\(language)-\($0)" } ?? language }

    /// Whether a feature property is one of the names a style shows: `name`, `name:xx`,
    /// `name_xx` (OpenMapTiles' `name_en`, `name_int`).
    static func isNameKey(_ key: String) -> Bool {
        key == "name" || key.hasPrefix("name:") || key.hasPrefix("name_")
    }
}

extension Style {
    /// The style with its labels in `language` where the features have names in it: every
    /// symbol layer's `text-field` that reads a name (`["get", "name"]`, `"{name:latin}"`,
    /// `name_en`...) reads the name in `language` first and falls back to what it read before.
    /// A field made only of names (a two-line `"{name:latin}\n{name:nonlatin}"`, say) is
    /// replaced as a whole by the one name; in a field that also shows other properties (`{ref}`,
    /// an elevation) each name read is localised in place. Nil gives the style unchanged.
    public func localizingLabels(to language: LabelLanguage?) -> Style {
        guard let language else { return self }
        var localized = self
        for index in localized.layers.indices {
            guard case .symbol(var layout) = localized.layers[index].layout,
                  case .expression(let field) = layout.textField else { continue }
            let root = field.expression.root.localizingNames(to: language.nameKeys)
            let expression = Expression(root: root, isZoomDependent: field.expression.isZoomDependent,
                                        isFeatureDependent: true, warnings: field.expression.warnings)
            layout.textField = .expression(field.replacingExpression(expression))
            localized.layers[index].layout = .symbol(layout)
        }
        return localized
    }
}

extension ExpressionNode {
    /// The node with its reads of names turned into `coalesce(keys..., read)`; see
    /// ``Style/localizingLabels(to:)``.
    func localizingNames(to keys: [String]) -> ExpressionNode {
        var reads: [String] = []
        collectReads(into: &reads)
        guard reads.contains(where: LabelLanguage.isNameKey) else { return self }
        let preferred = keys.map(ExpressionNode.get)
        if reads.allSatisfy(LabelLanguage.isNameKey) { return .coalesce(preferred + [self]) }
        return mapped { node in
            if case .get(let key) = node, LabelLanguage.isNameKey(key) { return .coalesce(preferred + [node]) }
            return nil
        }
    }

    /// The feature properties the node reads by name.
    func collectReads(into reads: inout [String]) {
        _ = mapped { node in
            switch node {
            case .get(let key), .has(let key), .propertyGuard(let key, _, _, _): reads.append(key)
            default: break
            }
            return nil
        }
    }

    /// The node with every sub-node for which `replacement` gives a node replaced by it (its
    /// own sub-nodes are not visited), visiting parents before their children.
    func mapped(_ replacement: (ExpressionNode) -> ExpressionNode?) -> ExpressionNode {
        if let replaced = replacement(self) { return replaced }
        func map(_ node: ExpressionNode) -> ExpressionNode { node.mapped(replacement) }
        switch self {
        case .literal, .zoom, .get, .has, .featureID, .geometryType, .legacyCompare, .legacyIn, .legacyHas:
            return self
        case .getDynamic(let key): return .getDynamic(map(key))
        case .hasDynamic(let key): return .hasDynamic(map(key))
        case .not(let operand): return .not(map(operand))
        case .equals(let a, let b, let negated): return .equals(map(a), map(b), negated: negated)
        case .order(let op, let a, let b): return .order(op, map(a), map(b))
        case .all(let operands): return .all(operands.map(map))
        case .any(let operands): return .any(operands.map(map))
        case .contains(let needle, let haystack): return .contains(needle: map(needle), haystack: map(haystack))
        case .match(let input, let labels, let outputs, let fallback):
            return .match(input: map(input), labels: labels, outputs: outputs.map(map), fallback: map(fallback))
        case .conditional(let conditions, let outputs, let fallback):
            return .conditional(conditions: conditions.map(map), outputs: outputs.map(map), fallback: map(fallback))
        case .coalesce(let operands): return .coalesce(operands.map(map))
        case .toString(let operand): return .toString(map(operand))
        case .toNumber(let operands): return .toNumber(operands.map(map))
        case .toBoolean(let operand): return .toBoolean(map(operand))
        case .toColor(let operands): return .toColor(operands.map(map))
        case .assertType(let type, let operands): return .assertType(type, operands.map(map))
        case .step(let input, let stops, let outputs): return .step(input: map(input), stops: stops, outputs: outputs.map(map))
        case .interpolate(let interpolation, let input, let stops, let outputs):
            return .interpolate(interpolation, input: map(input), stops: stops, outputs: outputs.map(map))
        case .concat(let operands): return .concat(operands.map(map))
        case .image(let operand): return .image(map(operand))
        case .upcase(let operand): return .upcase(map(operand))
        case .downcase(let operand): return .downcase(map(operand))
        case .arithmetic(let op, let operands): return .arithmetic(op, operands.map(map))
        case .length(let operand): return .length(map(operand))
        case .propertyGuard(let key, let requireNumber, let body, let fallback):
            return .propertyGuard(key: key, requireNumber: requireNumber, body: map(body), fallback: map(fallback))
        }
    }
}

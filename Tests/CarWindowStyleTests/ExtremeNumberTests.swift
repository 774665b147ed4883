import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle

/// Numbers JSON allows but the renderer's 32-bit floats cannot carry (1e39, 1e308) are a
/// warning and the property's default, written as constants just as when an expression computes
/// them; no number refuses a style or traps while it loads.
@Suite("Extreme style numbers")
struct ExtremeNumberTests {
    /// Finite doubles at and beyond the edges of Float, signed zero and subnormals.
    static let extremes: [Double] = [1e39, -1e39, 1e308, -1e308, 1e19, -1e19, -0.0,
                                     Double(Float.greatestFiniteMagnitude) * 2, Double(Float.greatestFiniteMagnitude),
                                     -Double(Float.greatestFiniteMagnitude), Double.greatestFiniteMagnitude,
                                     -Double.greatestFiniteMagnitude, Double.leastNonzeroMagnitude,
                                     Double.leastNormalMagnitude / 1e3, -Double.leastNormalMagnitude / 1e5, 1e-45]

    static func style(type: String, group: String, key: String, value: String) throws(StyleError) -> Style {
        let source = type == "background" ? "" : #", "source": "omt", "source-layer": "roads""#
        return try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}},
             "layers": [{"id": "probe", "type": "\#(type)"\#(source), "\#(group)": {"\#(key)": \#(value)}}]}
            """#.utf8))
    }

    // MARK: The reported examples

    @Test(arguments: [
        ("line", "paint", "line-width", "1e39", "1"),
        ("line", "paint", "line-width", "1e308", "1"),
        ("symbol", "layout", "text-size", "1e39", "16"),
        ("symbol", "layout", "text-letter-spacing", "1e300", "0"),
    ])
    func aConstantBeyondFloatWarnsAndUsesTheDefault(type: String, group: String, key: String, value: String,
                                                     defaultText: String) throws {
        let style = try Self.style(type: type, group: group, key: key, value: value)
        #expect(style.warnings.count == 1, "\(style.warnings)")
        let warning = try #require(style.warnings.first)
        #expect(warning.path == "layers[0].\(group).\(key)")
        #expect(warning.message.contains("layer \"probe\"") && warning.message.contains("default value, \(defaultText),"),
                "\(warning.message)")
        let property = try #require(Self.numericProperty(style.layers[0], group: group, key: key))
        #expect(property.isConstant)
        #expect(property.evaluate(12) == [Double(defaultText)!])
    }

    // MARK: Every numeric property

    /// A layer's numeric properties, found by reflection over the model so a property added later
    /// is covered too: JSON key, group and current value (one number, or a number array).
    struct NumericProperty {
        var key: String
        var group: String
        var isArray: Bool
        var evaluate: (Double) -> [Double]?
        var isConstant: Bool
    }

    static func kebab(_ name: String) -> String {
        name.reduce(into: "") { text, character in
            if character.isUppercase { text += "-" + character.lowercased() } else { text.append(character) }
        }
    }

    static func numericProperties(of layer: StyleLayer) -> [NumericProperty] {
        var result: [NumericProperty] = []
        let groups: [(String, Any)] = [("paint", layer.paint), ("layout", layer.layout)]
        for (group, value) in groups {
            guard let payload = Mirror(reflecting: value).children.first?.value else { continue }
            for child in Mirror(reflecting: payload).children {
                guard let label = child.label else { continue }
                let key = kebab(label)
                // By exact type: a nil optional of any type would cast to any other optional.
                let type = Swift.type(of: child.value)
                if type == StyleProperty<Double>.self || type == StyleProperty<Double>?.self {
                    let property = child.value as? StyleProperty<Double>
                    result.append(NumericProperty(key: key, group: group, isArray: false,
                                                  evaluate: { zoom in property.map { [$0.evaluate(zoom: zoom)] } },
                                                  isConstant: property?.isConstant ?? true))
                } else if type == StyleProperty<[Double]>.self || type == StyleProperty<[Double]>?.self {
                    let property = child.value as? StyleProperty<[Double]>
                    result.append(NumericProperty(key: key, group: group, isArray: true,
                                                  evaluate: { zoom in property?.evaluate(zoom: zoom) },
                                                  isConstant: property?.isConstant ?? true))
                }
            }
        }
        return result
    }

    static func numericProperty(_ layer: StyleLayer, group: String, key: String) -> NumericProperty? {
        numericProperties(of: layer).first { $0.group == group && $0.key == key }
    }

    /// Every numeric property of every layer type: (type, property).
    static var everyNumericProperty: [(type: LayerType, property: NumericProperty)] {
        LayerType.allCases.flatMap { type in
            numericProperties(of: StyleLayer(id: "probe", type: type)).map { (type, $0) }
        }
    }

    static func json(_ value: Double) -> String { "\(value)" }

    static func arrayJSON(_ key: String, _ value: Double) -> String {
        let count = key == "icon-text-fit-padding" ? 4 : 2
        return "[" + (0..<count).map { $0 == 0 ? json(value) : "1" }.joined(separator: ", ") + "]"
    }

    /// The reflection finds the properties, and each name is one the parser knows.
    @Test func theModelsNumericPropertiesAreAllFoundAndKnown() throws {
        let all = Self.everyNumericProperty
        #expect(all.count >= 35, "\(all.map(\.property.key))")
        for (type, property) in all {
            let value = property.isArray ? Self.arrayJSON(property.key, 2) : "2"
            let style = try Self.style(type: type.rawValue, group: property.group, key: property.key, value: value)
            #expect(style.warnings.isEmpty, "\(type.rawValue) \(property.key): \(style.warnings)")
            let loaded = try #require(Self.numericProperty(style.layers[0], group: property.group, key: property.key))
            #expect(loaded.evaluate(12)?.first == 2, "\(type.rawValue) \(property.key)")
        }
    }

    /// Each extreme number, as a constant, inside a constant expression and inside zoom stops,
    /// in every numeric property: never a refusal; beyond Float it is the default with a warning,
    /// within it the number itself.
    @Test func extremeNumbersNeverRefuseAStyle() throws {
        for (type, property) in Self.everyNumericProperty {
            let defaults = property.evaluate(12)
            for value in Self.extremes {
                let drawable = Float(value).isFinite
                let constant = property.isArray ? Self.arrayJSON(property.key, value) : Self.json(value)
                let forms = [constant, #"["literal", \#(constant)]"#, #"{"stops": [[0, \#(constant)], [10, \#(constant)]]}"#]
                for form in forms {
                    let label = "\(type.rawValue) \(property.key) = \(form)"
                    let style: Style
                    do {
                        style = try Self.style(type: type.rawValue, group: property.group, key: property.key, value: form)
                    } catch {
                        Issue.record("\(label) refused: \(error)")
                        continue
                    }
                    let loaded = try #require(Self.numericProperty(style.layers[0], group: property.group, key: property.key))
                    let result = loaded.evaluate(12)
                    if drawable {
                        #expect(style.warnings.isEmpty, "\(label): \(style.warnings)")
                        #expect(result?.first == value, "\(label): \(String(describing: result))")
                    } else {
                        if defaults != nil {
                            #expect(result == defaults, "\(label): \(String(describing: result)) instead of the default")
                        }
                        #expect(result?.allSatisfy { Float($0).isFinite } ?? true, "\(label): \(String(describing: result))")
                        #expect(!form.hasPrefix("{") ? style.warnings.count == 1 : style.warnings.count <= 1,
                                "\(label): \(style.warnings)")
                        for warning in style.warnings {
                            #expect(warning.path.hasPrefix("layers[0].\(property.group).\(property.key)"), "\(label): \(warning)")
                            #expect(warning.message.contains("default"), "\(label): \(warning)")
                        }
                    }
                }
            }
        }
    }
}

import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle

/// Labels in the language an engine or a head unit asks for, falling back name by name.
@Suite("Label language")
struct LabelLanguageTests {
    @Test(arguments: [
        ("sv", "sv", ["name:sv", "name_sv"]),
        ("SV-SE", "sv", ["name:sv", "name_sv"]),
        ("en_US", "en", ["name:en", "name_en"]),
        ("zh-TW", "zh-Hant", ["name:zh-Hant", "name:zh", "name_zh"]),
        ("ZH-CN", "zh-Hans", ["name:zh-Hans", "name:zh", "name_zh"]),
        ("zh-Hant-HK", "zh-Hant", ["name:zh-Hant", "name:zh", "name_zh"]),
        ("zh", "zh", ["name:zh", "name_zh"]),
        ("fil", "fil", ["name:fil", "name_fil"]),
    ])
    func aCodeBecomesTheNamesToTry(code: String, description: String, keys: [String]) throws {
        let language = try #require(LabelLanguage(code))
        #expect(language.description == description)
        #expect(language.nameKeys == keys)
    }

    @Test(arguments: ["", "s", "swedish", "sv-", "-SE", "sv-SE-x-y", "s1", "sv SE", "ру", "sv-S", "sv-ÅÅ"])
    func whatIsNotALanguageCodeIsRefused(code: String) {
        #expect(LabelLanguage(code) == nil, "\(code)")
    }

    static let style = """
    {"version": 8, "sources": {"basemap": {"type": "vector", "url": "pmtiles://x.pmtiles"}},
     "layers": [
      {"id": "get", "type": "symbol", "source": "basemap", "layout": {"text-field": ["get", "name"]}},
      {"id": "tokens", "type": "symbol", "source": "basemap", "layout": {"text-field": "{name:latin}\\n{name:nonlatin}"}},
      {"id": "mixed", "type": "symbol", "source": "basemap", "layout": {"text-field": "{name} {ref}"}},
      {"id": "ref", "type": "symbol", "source": "basemap", "layout": {"text-field": "{ref}"}},
      {"id": "constant", "type": "symbol", "source": "basemap", "layout": {"text-field": "Helsinki"}},
      {"id": "roads", "type": "line", "source": "basemap"}]}
    """

    static func text(_ style: Style, layer: String, _ properties: [String: FeatureValue]) -> String? {
        let feature = VectorTileFeature(id: 1, type: .point, properties: properties, geometry: [])
        return style.layer(withID: layer)?.layout.symbol?.textField.evaluate(zoom: 14, feature: feature)
    }

    @Test func namesAreReadInTheLanguageFirstAndFallBack() throws {
        let original = try Style(data: Data(Self.style.utf8))
        let swedish = original.localizingLabels(to: LabelLanguage("sv"))
        let bilingual: [String: FeatureValue] = ["name": .string("Helsinki"), "name:latin": .string("Helsinki"),
                                                 "name:nonlatin": .string("Хельсинки"), "name:sv": .string("Helsingfors"),
                                                 "ref": .string("E12")]
        let finnishOnly: [String: FeatureValue] = ["name": .string("Kamppi"), "name:latin": .string("Kamppi"), "ref": .string("E12")]
        #expect(Self.text(swedish, layer: "get", bilingual) == "Helsingfors")
        #expect(Self.text(swedish, layer: "get", finnishOnly) == "Kamppi", "no Swedish name: the style's own")
        // A field of names only is one name: not Helsingfors twice.
        #expect(Self.text(swedish, layer: "tokens", bilingual) == "Helsingfors")
        #expect(Self.text(swedish, layer: "tokens", finnishOnly) == Self.text(original, layer: "tokens", finnishOnly))
        // A field with other properties keeps them, with the name localised in place.
        #expect(Self.text(swedish, layer: "mixed", bilingual) == "Helsingfors E12")
        #expect(Self.text(swedish, layer: "mixed", finnishOnly) == "Kamppi E12")
        #expect(Self.text(swedish, layer: "ref", bilingual) == "E12")
        #expect(Self.text(swedish, layer: "constant", bilingual) == "Helsinki")
        // OpenMapTiles' name_de column serves German where name:de is missing.
        let german = original.localizingLabels(to: LabelLanguage("de-DE"))
        #expect(Self.text(german, layer: "get", ["name": .string("Helsinki"), "name_de": .string("Helsingfors (de)")]) == "Helsingfors (de)")
        // Nil, or back to the original, is the style as it was.
        #expect(Self.text(original.localizingLabels(to: nil), layer: "get", bilingual) == "Helsinki")
        #expect(Self.text(original, layer: "get", bilingual) == "Helsinki", "the original is not changed")
        #expect(swedish.layers.map(\.id) == original.layers.map(\.id))
    }

    @Test func traditionalChineseFallsBackToChineseThenToTheName() throws {
        let style = try Style(data: Data(Self.style.utf8)).localizingLabels(to: LabelLanguage("zh-TW"))
        #expect(Self.text(style, layer: "get", ["name": .string("Tokyo"), "name:zh": .string("东京"),
                                               "name:zh-Hant": .string("東京")]) == "東京")
        #expect(Self.text(style, layer: "get", ["name": .string("Tokyo"), "name:zh": .string("东京")]) == "东京")
        #expect(Self.text(style, layer: "get", ["name": .string("Tokyo")]) == "Tokyo")
    }
}

import Foundation
import Testing
@testable import CarWindowStyle

/// Sources and layers added to and removed from a loaded style, checked as loading checks them.
struct StyleEditingTests {
    static let base = """
    {"version": 8, "sources": {"basemap": {"type": "vector", "url": "pmtiles://x.pmtiles"}},
     "layers": [{"id": "bg", "type": "background"},
                {"id": "roads", "type": "line", "source": "basemap", "source-layer": "transportation"},
                {"id": "labels", "type": "symbol", "source": "basemap", "source-layer": "place"}]}
    """

    static func style() throws -> Style { try Style(data: Data(base.utf8)) }

    @Test func aSourceAndALayerAreAddedBelowTheLayerAsked() throws {
        var style = try Self.style()
        try style.addSource(id: "results", json: Data(#"{"type": "geojson", "attribution": "© Engine"}"#.utf8))
        try style.addLayer(json: Data(#"{"id": "dots", "type": "circle", "source": "results", "paint": {"circle-radius": 8, "circle-bogus": 1}}"#.utf8),
                           before: "labels")
        try style.addLayer(json: Data(#"{"id": "top", "type": "circle", "source": "results"}"#.utf8))
        #expect(style.sources["results"]?.type == .geojson && style.sources["results"]?.attribution == "© Engine")
        #expect(style.layers.map(\.id) == ["bg", "roads", "dots", "labels", "top"])
        #expect(style.warnings.contains { $0.message.contains("circle-bogus") })
    }

    @Test(arguments: [
        (#"{"id": "roads", "type": "line", "source": "basemap"}"#, nil as String?, "a layer \"roads\" already"),
        (#"{"id": "new", "type": "line", "source": "nope"}"#, nil, "no source \"nope\""),
        (#"{"id": "new", "type": "heatmap", "source": "basemap"}"#, nil, "not supported"),
        (#"{"id": "new", "type": "line", "source": "basemap"}"#, "nope", "no layer \"nope\""),
        (#"{"type": "line", "source": "basemap"}"#, nil, "layer.id"),
        (#"[1]"#, nil, "a layer object"),
        (#"{"id": "new", "type": "line", "source": "basemap", "paint": {"line-width": "wide"}}"#, nil, "line-width"),
    ])
    func aLayerThatCannotBeAddedIsATypedErrorAndChangesNothing(json: String, before: String?, message: String) throws {
        var style = try Self.style()
        do {
            try style.addLayer(json: Data(json.utf8), before: before)
            Issue.record("added \(json)")
        } catch {
            #expect(error.description.contains(message), "\(error)")
        }
        #expect(style.layers.map(\.id) == ["bg", "roads", "labels"])
    }

    @Test func sourcesAreCheckedAndRemovedOnlyWhenUnused() throws {
        var style = try Self.style()
        #expect(throws: StyleError.self) { try style.addSource(id: "basemap", json: Data(#"{"type": "geojson"}"#.utf8)) }
        #expect(throws: StyleError.self) { try style.addSource(id: "x", json: Data(#"{"url": "y"}"#.utf8)) }
        #expect(throws: StyleError.self) { try style.addSource(id: "x", json: Data(#"{"type": "video-wall"}"#.utf8)) }
        #expect(style.sources.keys.sorted() == ["basemap"])
        do {
            try style.removeSource(id: "basemap")
            Issue.record("removed a source layers draw from")
        } catch {
            #expect(error.description.contains("\"roads\", \"labels\""), "\(error)")
        }
        #expect(style.removeLayer(id: "roads") && style.removeLayer(id: "labels") && !style.removeLayer(id: "labels"))
        #expect(try style.removeSource(id: "basemap") && !(try style.removeSource(id: "basemap")))
    }
}

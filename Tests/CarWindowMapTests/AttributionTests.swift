import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The credit line comes from the data: OpenStreetMap always, then each source's own credit once.
@Suite struct AttributionTests {
    static func style(attributions: [String]) throws -> Style {
        let sources = attributions.enumerated().map { index, text in
            "\"s\(index)\": {\"type\": \"vector\", \"url\": \"x\", \"attribution\": \(String(reflecting: text))}"
        }.joined(separator: ", ")
        return try Style(data: Data("{\"version\": 8, \"sources\": {\(sources)}, \"layers\": []}".utf8))
    }

    @Test func creditsAreTheSourcesOwnOnceEachWithOpenStreetMapFirst() throws {
        let style = try Self.style(attributions: [
            #"<a href="https://openmaptiles.org/" target="_blank">&copy; OpenMapTiles</a> <a href="https://www.openstreetmap.org/copyright">© OpenStreetMap contributors</a>"#,
            "© Traffic Co (c) City of Helsinki",
            "© openmaptiles",
        ])
        #expect(MapAttribution.text(style: style, tiles: nil)
            == "© OpenStreetMap contributors © OpenMapTiles © Traffic Co © City of Helsinki")
        // The bundled data gives the line every frame carried before.
        let day = try Style(contentsOf: TestPaths.style("day"))
        #expect(MapAttribution.text(style: day, tiles: try PMTilesSource(url: TestPaths.tiles)) == mapAttribution)
    }

    @Test func aStyleWithoutCreditsStillCreditsOpenStreetMapAndLongOnesAreCut() throws {
        #expect(MapAttribution.text(style: try Self.style(attributions: []), tiles: nil) == "© OpenStreetMap contributors")
        let long = try Self.style(attributions: [(0..<40).map { "© Credit number \($0)" }.joined(separator: " ")])
        let line = MapAttribution.text(style: long, tiles: nil)
        #expect(line.count == MapAttribution.maximumLength && line.hasSuffix("…"))
        #expect(line.hasPrefix("© OpenStreetMap contributors © Credit number 0"))
    }

    @Test func tileMetadataCreditsAreRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attribution-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("0/0"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(#"{"name": "t", "attribution": "© Survey Office"}"#.utf8).write(to: folder.appendingPathComponent("metadata.json"))
        try Data().write(to: folder.appendingPathComponent("0/0/0.pbf"))
        let source = try FolderTileSource(url: folder)
        #expect(source.attribution == "© Survey Office")
        #expect(MapAttribution.text(style: try Self.style(attributions: []), tiles: source)
            == "© OpenStreetMap contributors © Survey Office")
        #expect(SharedTileCache(source: source).attribution == "© Survey Office")
    }
}

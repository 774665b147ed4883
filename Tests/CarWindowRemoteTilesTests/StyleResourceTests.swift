import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowRemoteTiles
@testable import CarWindowTestSupport

/// Sprites and GeoJSON named on a server, as published styles name them, brought to files
/// through the fetcher and its cache, then read by the map as its own files are.
@Suite(.enabled(if: LocalTileServer.python != nil, "needs python3 for the local tile server"))
struct StyleResourceTests {
    static let geojson = #"{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"name": "stop"}, "geometry": {"type": "Point", "coordinates": [24.94, 60.17]}}]}"#

    /// A server with the bundled sprite at /sprites/carwindow{,@2x}.{json,png} and a GeoJSON document.
    static func serverWithResources() throws -> LocalTileServer {
        let server = try LocalTileServer()
        let sprites = server.root.appendingPathComponent("sprites")
        try FileManager.default.createDirectory(at: sprites, withIntermediateDirectories: true)
        for name in ["carwindow.json", "carwindow.png", "carwindow@2x.json", "carwindow@2x.png"] {
            try FileManager.default.copyItem(at: TestPaths.assets.appendingPathComponent("sprites/\(name)"),
                                            to: sprites.appendingPathComponent(name))
        }
        try Data(geojson.utf8).write(to: server.root.appendingPathComponent("stops.geojson"))
        return server
    }

    static func style(sprite: String, data: String) throws -> Style {
        try Style(data: Data("""
            {"version": 8, "sprite": "\(sprite)",
             "sources": {"stops": {"type": "geojson", "data": "\(data)"}},
             "layers": [{"id": "stops", "type": "circle", "source": "stops"}]}
            """.utf8))
    }

    @Test func aSpriteAndGeoJSONOnAServerLoadAsTheSameFilesWouldLocally() throws {
        let server = try Self.serverWithResources()
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let remote = try Self.style(sprite: server.url("sprites/carwindow").absoluteString,
                                    data: server.url("stops.geojson").absoluteString)
        let (style, warnings) = StyleResources.fetch(for: remote, fetcher: HTTPFetcher(cache: nil), into: folder)
        #expect(warnings.isEmpty, "\(warnings)")
        let sprite = try #require(style.sprites.first?.url)
        #expect(sprite.hasPrefix(folder.path), "\(sprite)")
        for suffix in [".json", ".png", "@2x.json", "@2x.png"] {
            #expect(FileManager.default.fileExists(atPath: sprite + suffix), "no \(suffix) file")
        }

        let fetched = SpriteSheet.load(for: style, pixelRatio: 2)
        var local = try Style(contentsOf: TestPaths.style("day"))
        local.sprites = [SpriteReference(id: "default", url: TestPaths.assets.appendingPathComponent("sprites/carwindow").path)]
        let bundled = SpriteSheet.load(for: local, pixelRatio: 2)
        #expect(fetched.failures.isEmpty, "\(fetched.failures)")
        #expect(!fetched.sheet.images.isEmpty)
        #expect(Set(fetched.sheet.images.keys) == Set(bundled.sheet.images.keys))
        #expect(fetched.sheet.pixels == bundled.sheet.pixels)

        let features = MapRenderer.loadGeoJSON(for: style, engineData: [:])["stops"]
        #expect(features?.featureCount == 1)
    }

    @Test func aSpriteQueryStaysAfterTheSuffixAsMapLibreAsksForIt() throws {
        let base = try #require(URL(string: "https://tiles.example/styles/basic/sprite?key=abc"))
        #expect(StyleResources.suffixed(base, "@2x.png").absoluteString == "https://tiles.example/styles/basic/sprite@2x.png?key=abc")
        #expect(StyleResources.serverURL("sprites/local") == nil)
        #expect(StyleResources.serverURL("file:///tmp/sprite") == nil)
        #expect(StyleResources.serverURL("mapbox://sprites/x") == nil)
    }

    /// A sprite only at 1x is enough; one the server does not have, or a server that fails
    /// before anything was cached, is a warning that names it, and the style keeps its URL.
    @Test func whatCannotBeFetchedIsAWarningAndTheRestStillComes() throws {
        let server = try Self.serverWithResources()
        try FileManager.default.removeItem(at: server.root.appendingPathComponent("sprites/carwindow@2x.png"))
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let remote = try Self.style(sprite: server.url("sprites/carwindow").absoluteString,
                                    data: server.url("missing.geojson").absoluteString)
        let (style, warnings) = StyleResources.fetch(for: remote, fetcher: HTTPFetcher(cache: nil), into: folder)
        #expect(style.sprites.first?.url.hasPrefix(folder.path) == true)
        #expect(style.sources["stops"]?.dataURL == server.url("missing.geojson").absoluteString)
        #expect(warnings.count == 1 && warnings[0].contains("\"stops\"") && warnings[0].contains("404"), "\(warnings)")

        let missing = try Self.style(sprite: server.url("sprites/nothing").absoluteString,
                                     data: server.url("stops.geojson").absoluteString)
        let second = StyleResources.fetch(for: missing, fetcher: HTTPFetcher(cache: nil), into: folder)
        #expect(second.style.sprites.first?.url == server.url("sprites/nothing").absoluteString)
        #expect(second.warnings.count == 1 && second.warnings[0].contains("sprites/nothing.json"), "\(second.warnings)")
        #expect(second.warnings[0].contains("404"))
    }

    /// Fetched once into the disk cache, a sprite still comes while its server fails.
    @Test func theDiskCacheServesASpriteWhileTheServerFails() throws {
        let server = try Self.serverWithResources()
        try server.control("max_age=0")
        let cache = try HTTPDiskCache(directory: try HelsinkiFixtures.temporaryFolder())
        let folders = [try HelsinkiFixtures.temporaryFolder(), try HelsinkiFixtures.temporaryFolder()]
        defer {
            try? FileManager.default.removeItem(at: cache.directory)
            for folder in folders { try? FileManager.default.removeItem(at: folder) }
        }
        let remote = try Self.style(sprite: server.url("sprites/carwindow").absoluteString,
                                    data: server.url("stops.geojson").absoluteString)
        let first = StyleResources.fetch(for: remote, fetcher: HTTPFetcher(cache: cache), into: folders[0])
        #expect(first.warnings.isEmpty, "\(first.warnings)")
        try server.control("fail=100")
        let second = StyleResources.fetch(for: remote, fetcher: HTTPFetcher(cache: cache), into: folders[1])
        #expect(second.warnings.isEmpty, "\(second.warnings)")
        let sprite = try #require(second.style.sprites.first?.url)
        #expect(try Data(contentsOf: URL(fileURLWithPath: sprite + ".png"))
                == Data(contentsOf: TestPaths.assets.appendingPathComponent("sprites/carwindow.png")))
    }

    @Test func aStyleNamesServersOnlyForASpriteOrGeoJSONOnOne() throws {
        #expect(StyleResources.namesServers(try Self.style(sprite: "https://example.org/sprite", data: "stops.geojson")))
        #expect(StyleResources.namesServers(try Self.style(sprite: "sprites/local", data: "http://example.org/stops.geojson")))
        #expect(!StyleResources.namesServers(try Self.style(sprite: "sprites/local", data: "stops.geojson")))
        #expect(!StyleResources.namesServers(try Self.style(sprite: "file:///sprites/local", data: "ftp://example.org/stops.geojson")))
    }

    @Test func downloadsKeepTheCacheAndTheFilesUnderTheRootGiven() throws {
        let root = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let downloads = StyleResources.downloads(cacheRoot: root)
        #expect(downloads.warning == nil)
        #expect(downloads.fetcher.cache?.directory.standardizedFileURL.path == root.appendingPathComponent("http").standardizedFileURL.path)
        #expect(downloads.files.standardizedFileURL.path == root.appendingPathComponent("carwindow-style-files").standardizedFileURL.path)

        // A root that cannot be made: no cache, a warning that says so, and files in a temporary folder.
        let refused = StyleResources.downloads(cacheRoot: URL(fileURLWithPath: "/proc/carwindow-cache"))
        #expect(refused.fetcher.cache == nil)
        #expect(refused.warning?.contains("not kept") == true, "\(refused.warning ?? "no warning")")
        #expect(refused.files.path.hasPrefix(FileManager.default.temporaryDirectory.path))
    }
}

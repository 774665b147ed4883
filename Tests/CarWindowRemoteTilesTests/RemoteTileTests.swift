import Foundation
import Glibc
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowRemoteTiles
@testable import CarWindowTestSupport

/// Tests/Fixtures/tile_server.py on a free port, serving a copy of the bundled tiles: the
/// PMTiles archive, the z/x/y folder and a TileJSON naming it.
final class LocalTileServer: @unchecked Sendable {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let root: URL
    let port: Int
    private let process: Process

    init() throws {
        root = try HelsinkiFixtures.temporaryFolder()
        try FileManager.default.copyItem(at: TestPaths.tiles, to: root.appendingPathComponent("helsinki.pmtiles"))
        try FileManager.default.copyItem(at: HelsinkiFixtures.folder, to: root.appendingPathComponent("tiles"))
        let tileJSON = #"{"tilejson": "3.0.0", "tiles": ["tiles/{z}/{x}/{y}.pbf"], "minzoom": 10, "maxzoom": 14, "attribution": "© Test Server"}"#
        try Data(tileJSON.utf8).write(to: root.appendingPathComponent("tilejson.json"))
        process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.python))
        process.arguments = [TestPaths.fixtures.appendingPathComponent("tile_server.py").path, "--root", root.path, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            guard let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty else { break }
            line.append(byte)
        }
        guard let text = String(data: line, encoding: .utf8), text.hasPrefix("PORT "),
              let port = Int(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    deinit {
        // Killed and reaped directly: Process.waitUntilExit spins a run loop that a test's
        // thread may never turn.
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
        try? FileManager.default.removeItem(at: root)
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }

    /// The tile URL template of the folder, braces as they are.
    var template: String { "http://127.0.0.1:\(port)/tiles/{z}/{x}/{y}.pbf" }

    func control(_ query: String) throws { _ = try Data(contentsOf: url("_control?\(query)")) }

    struct Stats: Decodable {
        var requests: Int
        var not_modified: Int
        var ranges: Int
    }

    func stats() throws -> Stats { try JSONDecoder().decode(Stats.self, from: Data(contentsOf: url("_stats"))) }
}

@Suite(.serialized, .enabled(if: LocalTileServer.python != nil, "needs python3 for the local tile server"))
struct RemoteTileTests {
    static func temporaryCache() throws -> HTTPDiskCache {
        try HTTPDiskCache(directory: try HelsinkiFixtures.temporaryFolder())
    }

    @Test func aPMTilesArchiveOnAServerGivesTheSameTilesAsTheFile() throws {
        let server = try LocalTileServer()
        let remote = try PMTilesSource.remote(server.url("helsinki.pmtiles"), fetcher: HTTPFetcher(cache: nil))
        let local = try PMTilesSource(url: TestPaths.tiles)
        #expect(remote.name == local.name && remote.attribution == local.attribution)
        #expect(remote.minZoom == local.minZoom && remote.maxZoom == local.maxZoom)
        for tile in HelsinkiFixtures.tiles {
            #expect(try remote.data(for: tile) == local.data(for: tile), "\(tile)")
        }
        #expect(try remote.data(for: TileID(z: 14, x: 0, y: 0)) == nil)
        #expect(try server.stats().ranges >= 2)
    }

    @Test func aTileJSONAndItsTemplatesServeTheFolder() throws {
        let server = try LocalTileServer()
        let style = try Style(data: Data("""
            {"version": 8, "sources": {"base": {"type": "vector", "url": "\(server.url("tilejson.json"))"},
                                       "direct": {"type": "vector", "tiles": ["\(server.template)"], "maxzoom": 14}},
             "layers": [{"id": "roads", "type": "line", "source": "direct", "source-layer": "transportation"},
                        {"id": "water", "type": "fill", "source": "base", "source-layer": "water"}]}
            """.utf8))
        let opened = try StyleTileSources.open(for: style, fetcher: HTTPFetcher(cache: nil))
        // The first layer's source is the basemap.
        #expect(opened.basemapID == "direct" && opened.others.keys.sorted() == ["base"])
        let base = try #require(opened.others["base"] as? URLTemplateTileSource)
        #expect(base.minZoom == 10 && base.maxZoom == 14 && base.attribution == "© Test Server")
        #expect(base.templates == [server.template])
        let folder = try FolderTileSource(url: HelsinkiFixtures.folder)
        for tile in HelsinkiFixtures.tiles {
            #expect(try base.data(for: tile) == folder.data(for: tile), "\(tile)")
            #expect(try opened.basemap.data(for: tile) == folder.data(for: tile), "\(tile)")
        }
        // A tile the server lacks is a 404: no tile, no error.
        #expect(try base.data(for: TileID(z: 14, x: 1, y: 1)) == nil)
    }

    /// Fresh entries are answered from disk, even by a new fetcher (a restart); stale ones are
    /// revalidated and a 304 keeps the stored body.
    @Test func theDiskCacheAnswersFreshEntriesAndRevalidatesStaleOnes() throws {
        let server = try LocalTileServer()
        let cache = try Self.temporaryCache()
        defer { try? FileManager.default.removeItem(at: cache.directory) }
        let template = server.template
        func source() throws -> URLTemplateTileSource {
            try URLTemplateTileSource(templates: [template], minZoom: 10, maxZoom: 14, fetcher: HTTPFetcher(cache: cache))
        }
        let first = try HelsinkiFixtures.tiles.map { try source().data(for: $0) }
        let asked = try server.stats().requests
        #expect(asked == HelsinkiFixtures.tiles.count)
        let again = try HelsinkiFixtures.tiles.map { try source().data(for: $0) }
        #expect(again == first)
        #expect(try server.stats().requests == asked, "fresh entries went to the server")
        #expect(cache.usedBytes > 0)

        try server.control("max_age=0")
        let stale = try Self.temporaryCache()
        defer { try? FileManager.default.removeItem(at: stale.directory) }
        let staleSource = try URLTemplateTileSource(templates: [template], minZoom: 10, maxZoom: 14, fetcher: HTTPFetcher(cache: stale))
        let fetched = try HelsinkiFixtures.tiles.map { try staleSource.data(for: $0) }
        let revalidated = try HelsinkiFixtures.tiles.map { try staleSource.data(for: $0) }
        #expect(revalidated == fetched && fetched == first)
        #expect(try server.stats().not_modified == HelsinkiFixtures.tiles.count)
    }

    /// With the server gone, what the cache holds is still drawn; what it lacks is a clear error.
    @Test func staleEntriesAreServedWhileTheServerFails() throws {
        let server = try LocalTileServer()
        try server.control("max_age=0")
        let cache = try Self.temporaryCache()
        defer { try? FileManager.default.removeItem(at: cache.directory) }
        let source = try URLTemplateTileSource(templates: [server.template], minZoom: 10,
                                               maxZoom: 14, fetcher: HTTPFetcher(cache: cache))
        let cachedTile = HelsinkiFixtures.tiles[0], uncached = HelsinkiFixtures.tiles[1]
        let before = try source.data(for: cachedTile)
        try server.control("fail=100")
        #expect(try source.data(for: cachedTile) == before)
        do {
            _ = try source.data(for: uncached)
            Issue.record("a tile neither cached nor served was given")
        } catch {
            #expect(error.description.contains("HTTP 503"), "\(error)")
        }
    }

    @Test func serversThatCannotServeAnArchiveAreClearErrors() throws {
        let server = try LocalTileServer()
        try server.control("no_ranges=1")
        #expect {
            _ = try PMTilesSource.remote(server.url("helsinki.pmtiles"), fetcher: HTTPFetcher(cache: nil))
        } throws: { "\($0)".contains("does not serve byte ranges") }
        try server.control("no_ranges=0")
        #expect {
            _ = try PMTilesSource.remote(server.url("missing.pmtiles"), fetcher: HTTPFetcher(cache: nil))
        } throws: { "\($0)".contains("404") }

        // Replaced on the server while open: an error, not a map from two versions.
        let remote = try PMTilesSource.remote(server.url("helsinki.pmtiles"), fetcher: HTTPFetcher(cache: nil))
        try server.control("etag_salt=v2")
        #expect {
            for tile in HelsinkiFixtures.tiles { _ = try remote.data(for: tile) }
        } throws: { "\($0)".contains("changed on the server") }

        // An answer larger than allowed is refused.
        #expect {
            _ = try HTTPFetcher(cache: nil).get(server.url("helsinki.pmtiles"), limit: 1000)
        } throws: { "\($0)".contains("more than the 1000") }
        // Nobody listening.
        #expect {
            _ = try URLTemplateTileSource(templates: ["http://127.0.0.1:9/{z}/{x}/{y}.pbf"], fetcher: HTTPFetcher(cache: nil, timeout: 2))
                .data(for: HelsinkiFixtures.tiles[0])
        } throws: { "\($0)".contains("Cannot fetch http://127.0.0.1:9/") }
    }

    /// A server that accepts and never answers, and a port nobody listens on: the reason is
    /// said in words ("did not answer within 1 s"), never Foundation's
    /// "(NSURLErrorDomain error -1001.)".
    @Test func networkFailuresAreSaidInWords() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound && listen(listener, 4) == 0)
        let silent = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/{z}/{x}/{y}.pbf"
        #expect {
            _ = try URLTemplateTileSource(templates: [silent], fetcher: HTTPFetcher(cache: nil, timeout: 1)).data(for: HelsinkiFixtures.tiles[0])
        } throws: { "\($0)".contains("did not answer within 1 s") && !"\($0)".contains("NSURLErrorDomain") }
        #expect {
            _ = try URLTemplateTileSource(templates: ["http://127.0.0.1:9/{z}/{x}/{y}.pbf"], fetcher: HTTPFetcher(cache: nil, timeout: 2))
                .data(for: HelsinkiFixtures.tiles[0])
        } throws: { "\($0)".contains("refused the connection") && !"\($0)".contains("NSURLErrorDomain") }
    }

    @Test func badTemplatesAndTileJSONAreTypedErrors() throws {
        let fetcher = HTTPFetcher(cache: nil)
        #expect(throws: TileSourceError.self) { try URLTemplateTileSource(templates: ["ftp://x/{z}/{x}/{y}"], fetcher: fetcher) }
        #expect(throws: TileSourceError.self) { try URLTemplateTileSource(templates: ["http://x/{z}/{x}"], fetcher: fetcher) }
        #expect(throws: TileSourceError.self) { try URLTemplateTileSource(templates: [], fetcher: fetcher) }
        #expect(throws: TileSourceError.self) { try TileJSON(data: Data("[]".utf8), url: "x") }
        #expect(throws: TileSourceError.self) { try TileJSON(data: Data(#"{"tiles": []}"#.utf8), url: "x") }
        let clamped = try TileJSON(data: Data(#"{"tiles": ["http://a/{z}/{x}/{y}"], "minzoom": -5, "maxzoom": 1e9}"#.utf8), url: "x")
        #expect(clamped.minZoom == 0 && clamped.maxZoom == 30)
        #expect(HTTPFetcher.freshness(of: ["cache-control": "public, max-age=60"], now: 0) == 60)
        #expect(HTTPFetcher.freshness(of: ["cache-control": "no-store"], now: 0) == 0)
        #expect(HTTPFetcher.freshness(of: ["cache-control": "max-age=1e300"], now: 0) == 365 * 86_400)
        #expect(HTTPFetcher.contentRange("bytes 0-99/1000")! == (0, 1000))
        #expect(HTTPFetcher.contentRange("bytes */1000") == nil)
    }

    /// A style whose source is an archive on a server draws the same map as the file.
    @Test func aStyleDrawsFromItsOwnSourceOnAServer() async throws {
        let server = try LocalTileServer()
        let json = try String(contentsOf: TestPaths.style("day"), encoding: .utf8)
            .replacingOccurrences(of: "pmtiles://helsinki.pmtiles", with: "pmtiles://\(server.url("helsinki.pmtiles"))")
        var style = try Style(data: Data(json.utf8))
        // Its sprite lies beside the bundled style.
        style.baseURL = TestPaths.style("day")
        let opened = try StyleTileSources.open(for: style, fetcher: HTTPFetcher(cache: nil))
        let context = try await RenderContext()
        let renderer = try await MapRenderer(context: context, width: 400, height: 240, style: style, tiles: opened.basemap,
                                             sources: opened.others, fonts: try FontLibrary(directory: TestPaths.fonts),
                                             camera: Camera(center: helsinki, zoom: 15))
        _ = await renderer.renderWhenLoaded()
        let remote = await renderer.readPixels()
        await context.shutdown()
        let (localContext, localRenderer) = try await makeRenderer(camera: Camera(center: helsinki, zoom: 15))
        _ = await localRenderer.renderWhenLoaded()
        let local = await localRenderer.readPixels()
        await localContext.shutdown()
        let difference = try #require(remote.difference(from: local, tolerance: 8))
        #expect(difference.differingFraction < 0.001, "\(difference)")
    }
}

import Foundation
import Logging
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// A tile source that blocks, fails or has no tile on command, and records every read: which
/// tile, on which thread, and how many reads overlapped.
final class ScriptedTileSource: TileSource, @unchecked Sendable {
    let name = "scripted"
    let minZoom = 0
    let maxZoom = 14
    let bounds: GeoBounds? = nil

    // Everything below `condition` is guarded by it.
    private let condition = NSCondition()
    private var blocked: Set<TileID> = []
    private var failuresLeft: [TileID: Int] = [:]
    private var missing: Set<TileID> = []
    private var inFlight = 0
    private(set) var maximumInFlight = 0
    private var readLog: [TileID] = []
    private var readsInTasks = 0

    /// One labelled point, a valid tile.
    static let tileBytes: Data = {
        var feature = ProtobufWriter()
        feature.varintField(3, 1)
        feature.packedField(4, [9, 10, 10])
        return HostileTileTests.tileData([HostileTileTests.layer("poi", features: [feature])])
    }()

    func block(_ tiles: [TileID]) { locked { blocked.formUnion(tiles) } }
    func release(_ tiles: [TileID]) { locked { blocked.subtract(tiles) }; condition.broadcast() }
    func fail(_ tile: TileID, times: Int) { locked { failuresLeft[tile] = times } }
    func lack(_ tile: TileID) { locked { missing.insert(tile) } }

    var reads: [TileID] { locked { readLog } }
    /// Reads made by code running in a Swift task, that is on the cooperative pool.
    var readsOnTheCooperativePool: Int { locked { readsInTasks } }
    var peak: Int { locked { maximumInFlight } }

    /// Waits until `predicate` holds for (reads, reads in flight); false after 30 s, which only a
    /// hung loader would take: a guard, not a measurement.
    func wait(until predicate: (_ reads: [TileID], _ inFlight: Int) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(readLog, inFlight) {
            if !condition.wait(until: deadline) { return predicate(readLog, inFlight) }
        }
        return true
    }

    func data(for tile: TileID) throws(TileSourceError) -> Data? {
        condition.lock()
        inFlight += 1
        maximumInFlight = max(maximumInFlight, inFlight)
        readLog.append(tile)
        if withUnsafeCurrentTask(body: { $0 != nil }) { readsInTasks += 1 }
        condition.broadcast()
        while blocked.contains(tile) { condition.wait() }
        inFlight -= 1
        let fails = (failuresLeft[tile] ?? 0) > 0
        if fails { failuresLeft[tile]! -= 1 }
        let lacks = missing.contains(tile)
        condition.broadcast()
        condition.unlock()
        if fails { throw .unreadable(path: "scripted/\(tile)", reason: "failing on command") }
        return lacks ? nil : Self.tileBytes
    }

    @discardableResult
    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let seconds = LockedState(0.0)
    var now: Double { seconds.withLock { $0 } }
    func set(_ value: Double) { seconds.withLock { $0 = value } }
}

/// Counts `loaded` callbacks so a test can wait for a load to finish.
final class LoadSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    var callback: @Sendable () -> Void { { [semaphore] in semaphore.signal() } }
    /// False after 30 s: a guard against a hung loader, not a measurement.
    func wait() -> Bool { semaphore.wait(timeout: .now() + 30) == .success }
}

@Suite("Tile loader")
struct TileLoaderTests {
    static func tiles(_ count: Int) -> [TileID] { (0..<count).map { TileID(z: 14, x: 9300 + $0, y: 4742) } }

    static func store(_ source: any TileSource, workers: Int, clock: ManualClock = ManualClock(),
                      cacheBytes: Int = TileLayoutStore.defaultCacheBytes,
                      logger: Logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }) throws -> TileLayoutStore {
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        // One layer that draws every point as a label, so that each layout holds some bytes.
        let style = try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}}, "layers": [
              {"id": "poi", "type": "symbol", "source": "omt", "source-layer": "poi", "layout": {"text-field": "x"}}]}
            """#.utf8))
        return TileLayoutStore(source: source, builder: TileLayoutBuilder(style: style, glyphs: GlyphAtlas(library: fonts),
                                                                         fonts: fonts, sourceMaxZoom: 14),
                               cacheBytes: cacheBytes, workerCount: workers, now: { clock.now }, logger: logger)
    }

    @Test func neverMoreThanTheWorkerCountReadAtOnce() async throws {
        let source = ScriptedTileSource()
        let tiles = Self.tiles(8)
        source.block(tiles)
        let store = try Self.store(source, workers: 3)
        for tile in tiles { store.request(tile, frame: 1) }
        #expect(source.wait { _, inFlight in inFlight == 3 })
        #expect(source.reads.count == 3, "the other five wait for a worker")
        #expect(store.pendingLoads.queued == 5 && store.pendingLoads.running == 3)
        source.release(tiles)
        for tile in tiles { _ = await store.layout(tile) }
        #expect(Set(source.reads) == Set(tiles) && source.reads.count == 8, "each tile read once")
        #expect(source.peak == 3)
        #expect(source.readsOnTheCooperativePool == 0, "reads run on the loader's own threads, outside any task")
        #expect(tiles.allSatisfy { store.cachedLayout($0) != nil })
    }

    @Test func tilesTheCameraLeftAreDroppedBeforeTheyStart() async throws {
        let source = ScriptedTileSource()
        let tiles = Self.tiles(5)
        let (a, b, c, d, awaited) = (tiles[0], tiles[1], tiles[2], tiles[3], tiles[4])
        source.block([a])
        let store = try Self.store(source, workers: 1)
        for tile in [a, b, c] { store.request(tile, frame: 1) }
        #expect(source.wait { reads, _ in reads == [a] })
        // Someone waits for this one, so it is kept however old its request gets.
        let waiting = Task { await store.layout(awaited) }
        while store.pendingLoads.queued < 3 { await Task.yield() }
        // The camera moves on: frames 2 to 4 ask for a and d only.
        for frame: UInt64 in 2...4 {
            store.request(a, frame: frame)
            store.request(d, frame: frame)
        }
        source.release([a])
        _ = await store.layout(d)
        _ = await waiting.value
        #expect(source.reads == [a, awaited, d], "b and c were dropped unread")
        #expect(store.cachedLayout(b) == nil && store.cachedLayout(c) == nil)
        #expect(store.pendingLoads == (0, 0))
        // Asked for again, a dropped tile loads.
        let signal = LoadSignal()
        store.request(b, frame: 5, loaded: signal.callback)
        #expect(signal.wait())
        #expect(store.cachedLayout(b) != nil)
    }

    @Test func failedLoadsAreRetriedWithBackOff() async throws {
        let source = ScriptedTileSource()
        let tile = Self.tiles(1)[0]
        source.fail(tile, times: 9)
        let clock = ManualClock()
        let handler = CapturingLogHandler()
        let store = try Self.store(source, workers: 1, clock: clock, logger: Logger(label: "test") { _ in handler })

        let first = await store.layout(tile)
        #expect(first.buckets.isEmpty && store.cachedLayout(tile) == nil, "a failure is not cached")
        #expect(source.reads.count == 1)
        // 1 s, 2 s, 4 s ... 60 s, 60 s: each retry is made only once its delay has passed.
        var time = 0.0
        for (attempt, delay) in [1.0, 2, 4, 8, 16, 32, 60, 60, 60].enumerated() {
            clock.set(time + delay - 0.01)
            store.request(tile, frame: UInt64(attempt))
            _ = await store.layout(tile)
            #expect(source.reads.count == attempt + 1, "no read \(delay - 0.01) s after failure \(attempt + 1)")
            time += delay
            clock.set(time)
            let signal = LoadSignal()
            store.request(tile, frame: UInt64(attempt), loaded: signal.callback)
            #expect(signal.wait())
            #expect(source.reads.count == attempt + 2, "one read \(delay) s after failure \(attempt + 1)")
        }
        #expect(store.cachedLayout(tile) != nil, "the ninth retry succeeds and is cached")
        #expect(source.reads.count == 10)
        #expect(handler.warnings.count == 1, "the first failure is a warning, the retries are not: \(handler.warnings)")
        #expect(handler.warnings.first?.contains("\(tile)") == true)
    }

    @Test func aTileTheSourceLacksIsCachedAsEmpty() async throws {
        let source = ScriptedTileSource()
        let tile = Self.tiles(1)[0]
        source.lack(tile)
        let store = try Self.store(source, workers: 2)
        let layout = await store.layout(tile)
        #expect(layout.buckets.isEmpty)
        #expect(store.cachedLayout(tile) != nil)
        for frame: UInt64 in 1...5 { store.request(tile, frame: frame) }
        _ = await store.layout(tile)
        #expect(source.reads == [tile], "read once")
    }

    /// A source whose every tile is one line of 50,000 vertices: about 400 KB decoded.
    struct LargeTileSource: TileSource {
        let name = "large"
        let minZoom = 0
        let maxZoom = 14
        let bounds: GeoBounds? = nil
        static let bytes = HostileTileTests.tileData([HostileTileTests.layer(
            "roads", features: [HostileTileTests.feature(type: 2, geometry: HostileTileTests.zigzagLine(50_000))])])
        func data(for tile: TileID) throws(TileSourceError) -> Data? { Self.bytes }
    }

    @Test func theSharedCacheKeepsToItsBytes() throws {
        let cache = SharedTileCache(source: LargeTileSource(), byteCapacity: 1 << 20)
        let tiles = Self.tiles(6)
        for tile in tiles { _ = try cache.decodedTile(for: tile) }
        #expect(cache.cachedBytes <= 1 << 20)
        #expect(cache.cachedBytes >= 400_000, "the latest tiles stay")
        _ = try cache.decodedTile(for: tiles[5])
        _ = try cache.decodedTile(for: tiles[0])
        #expect(cache.statistics.hits == 1 && cache.statistics.misses == 7, "the newest was kept, the oldest evicted")
    }

    /// Short of room, the cache lets go of layouts the renderer has claimed (it holds them while
    /// it draws them), never of ones still waiting to be drawn.
    @Test func theLayoutCacheKeepsWhatIsNotYetDrawn() async throws {
        let source = ScriptedTileSource()
        let tiles = Self.tiles(7)
        let store = try Self.store(source, workers: 2, cacheBytes: 1)
        // Loaded and awaited twice, as renderWhenLoaded does, but not drawn yet: all kept.
        for tile in tiles.prefix(6) { store.request(tile, frame: 1) }
        for _ in 0..<2 {
            for tile in tiles.prefix(6) { _ = await store.layout(tile) }
        }
        #expect(tiles.prefix(6).allSatisfy { store.loader.isCached($0) }, "waiting to be drawn, so kept")
        // The renderer takes the first three; storing another lets them go.
        for tile in tiles.prefix(3) { #expect(store.cachedLayout(tile) != nil) }
        _ = await store.layout(tiles[6])
        #expect(tiles.prefix(3).allSatisfy { !store.loader.isCached($0) }, "claimed, so let go")
        #expect(tiles.suffix(4).allSatisfy { store.loader.isCached($0) })
        // Unclaimed layouts go once the camera has moved on for a few frames.
        store.request(tiles[0], frame: 10)
        _ = await store.layout(tiles[0])
        #expect(tiles[3...6].allSatisfy { !store.loader.isCached($0) })
        #expect(store.loader.isCached(tiles[0]), "the one just stored stays")
        #expect(source.reads.count == 8, "no tile was loaded twice before it was drawn")
    }

    @Test func workersEndWhenTheStoreIsReleased() async throws {
        let source = ScriptedTileSource()
        let tiles = Self.tiles(4)
        weak var loader: TileLoader?
        do {
            let store = try Self.store(source, workers: 4)
            loader = store.loader
            for tile in tiles { _ = await store.layout(tile) }
            #expect(loader != nil)
        }
        // Idle workers wake and end; each held the loader until its thread function returned.
        let deadline = Date().addingTimeInterval(30)
        while loader != nil && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(loader == nil)
    }
}

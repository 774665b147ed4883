import Foundation
import Logging
import CarWindowGeo
import CarWindowStyle
import CarWindowSystemSupport

/// Loads, decodes and lays out tiles on a fixed pool of worker threads and keeps a bounded cache
/// of the results.
///
/// - Loading reads files and decodes: blocking work, so it runs on the store's own threads, never
///   on Swift's cooperative pool, and at most ``workerCount`` loads run at once.
/// - Requests for a tile already queued or loading share one load. The renderer asks for the
///   tiles it misses every frame; a queued tile that was not asked for in the last
///   ``staleFrames`` frames (the camera moved on) is dropped before it starts.
/// - A tile the source lacks is cached as empty. A tile that fails (an unreadable file, a damaged
///   tile) is not: it is tried again when asked for after a back-off of 1 s, 2 s, 4 s and so on up
///   to ``maximumRetryDelay``, logged once as a warning and then at debug level.
///
/// - Important: Thread-safe.
final class TileLayoutStore: Sendable {
    /// Loads running at once, per store (one store per map). Each is a read, a decode and a
    /// layout; two keep a map's tiles coming without taking every core of a head unit.
    static let defaultWorkerCount = 2
    /// Bytes of laid-out tiles the cache keeps besides the tile count: eight tiles at the per-tile
    /// budget, hundreds of real ones. Only tiles already handed out (the renderer keeps its own
    /// reference while it draws them) or left unclaimed for ``staleFrames`` frames are evicted
    /// for it, so a view of many large tiles is never evicted before it is drawn.
    static let defaultCacheBytes = 512 << 20
    /// A queued tile not asked for in this many of the latest frames is dropped before it starts.
    static let staleFrames: UInt64 = 2
    /// The wait before the first retry of a failed tile; it doubles with every failure.
    static let firstRetryDelay = 1.0
    /// The longest wait between retries of a failed tile.
    static let maximumRetryDelay = 60.0

    /// The basemap and the sources bound to style sources of their own.
    let sources: BoundTileSources
    let builder: TileLayoutBuilder
    let capacity: Int
    let workerCount: Int
    /// Internal so that tests can see the workers let go of it when the store is released.
    let loader: TileLoader

    /// - Parameters:
    ///   - overlays: tile sources bound to style source ids; every other vector source draws from
    ///     `source`.
    ///   - capacity: laid-out tiles kept (at least 8).
    ///   - cacheBytes: bytes of laid-out tiles kept, as ``defaultCacheBytes`` describes.
    ///   - workerCount: loads that may run at once (at least 1).
    ///   - now: seconds on a monotonic clock, for the retry back-off; tests pass their own.
    ///   - logger: where failed loads and tiles over budget are reported.
    init(source: any TileSource, overlays: [String: any TileSource] = [:], builder: TileLayoutBuilder, capacity: Int = 128,
         cacheBytes: Int = TileLayoutStore.defaultCacheBytes, workerCount: Int = TileLayoutStore.defaultWorkerCount,
         now: @escaping @Sendable () -> Double = TileLayoutStore.monotonicSeconds,
         logger: Logger = Logger(label: "carwindow.tiles")) {
        sources = BoundTileSources(basemap: source, overlays: overlays)
        var builder = builder
        builder.boundSources = Set(overlays.keys)
        self.builder = builder
        self.capacity = max(capacity, 8)
        self.workerCount = max(workerCount, 1)
        loader = TileLoader(sources: sources, builder: builder, capacity: self.capacity, cacheBytes: cacheBytes,
                            workerCount: self.workerCount, now: now, logger: logger)
    }

    deinit {
        loader.shutDown()
    }

    /// Seconds since boot, unaffected by changes to the wall clock.
    static func monotonicSeconds() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// The basemap, which sets the zoom levels tiles are loaded at.
    var source: any TileSource { sources.basemap }

    /// The zoom of the source's tiles that cover a view at `zoom`.
    func dataZoom(for zoom: Double) -> Int {
        min(max(Int(floor(zoom)), source.minZoom), source.maxZoom)
    }

    /// The layout if it is ready; never waits. The caller is taken to keep the layout while it
    /// draws it, so the cache may let go of it when short of room.
    func cachedLayout(_ tile: TileID) -> TileLayout? {
        loader.cachedLayout(tile, claim: true)
    }

    /// Asks for `tile` in frame `frame` (frames count up): queues a load unless the tile is
    /// cached, queued, loading or waiting out a back-off. `loaded` runs on a worker thread when a
    /// load this call queued has finished, whether it succeeded or not. Never waits, and
    /// allocates only when it queues a new load.
    func request(_ tile: TileID, frame: UInt64, loaded: (@Sendable () -> Void)? = nil) {
        loader.request(tile, frame: frame, loaded: loaded)
    }

    /// The layout of `tile`, loading it if needed. A tile that fails, or is waiting out a
    /// back-off after failing, gives an empty layout.
    func layout(_ tile: TileID) async -> TileLayout {
        if let cached = loader.cachedLayout(tile, claim: false) { return cached }
        return await withCheckedContinuation { continuation in
            loader.await(tile, continuation)
        }
    }

    /// Loads waiting for a worker, and loads running; for tests and diagnostics.
    var pendingLoads: (queued: Int, running: Int) {
        loader.pendingLoads
    }

    /// Loads queued or running, and finished loads whose callbacks have not all returned: zero
    /// means no `loaded` callback is still to come. Tests in manual time wait for it.
    var loadsInFlight: Int {
        loader.loadsInFlight
    }
}

/// The queue, the cache and the workers of a ``TileLayoutStore``. Workers hold the loader, not
/// the store, so a store that is released stops its workers.
final class TileLoader: @unchecked Sendable {
    // Everything below `condition` is guarded by it.
    private let condition = NSCondition()
    private var layouts: [TileID: CachedLayout] = [:]
    private var cachedBytes = 0
    private var jobs: [TileID: Job] = [:]
    /// Tiles whose jobs wait for a worker, oldest first; entries of dropped jobs are skipped.
    private var queue: [TileID] = []
    private var queueStart = 0
    private var failures: [TileID: Failure] = [:]
    private var latestFrame: UInt64 = 0
    private var useClock: UInt64 = 0
    private var workersStarted = 0
    /// Workers waiting for a job, and wake-ups sent to them not yet taken.
    private var idleWorkers = 0
    private var wakeUps = 0
    private var running = 0
    /// Finished loads whose waiters and callbacks are being called.
    private var delivering = 0
    private var isShutDown = false

    private let sources: BoundTileSources
    private let builder: TileLayoutBuilder
    private let capacity: Int
    private let cacheBytes: Int
    private let workerCount: Int
    private let now: @Sendable () -> Double
    private let logger: Logger

    private struct CachedLayout {
        var layout: TileLayout
        var lastUse: UInt64
        var bytes: Int
        /// The latest frame when it was stored.
        var storedFrame: UInt64
        /// Whether ``cachedLayout(_:)`` has handed it out.
        var isClaimed = false
    }

    /// A requested tile, queued or loading.
    private struct Job {
        var lastAskedFrame: UInt64
        var isRunning = false
        var loaded: [@Sendable () -> Void] = []
        var waiters: [CheckedContinuation<TileLayout, Never>] = []
    }

    /// A tile whose last load failed.
    private struct Failure {
        var attempts: Int
        var retryAt: Double
    }

    /// Failed tiles remembered at most; the oldest are forgotten first, which only means a retry
    /// comes sooner.
    private static let failureCapacity = 1024

    init(sources: BoundTileSources, builder: TileLayoutBuilder, capacity: Int, cacheBytes: Int, workerCount: Int,
         now: @escaping @Sendable () -> Double, logger: Logger) {
        self.cacheBytes = cacheBytes
        self.logger = logger
        self.sources = sources
        self.builder = builder
        self.capacity = capacity
        self.workerCount = workerCount
        self.now = now
    }

    func cachedLayout(_ tile: TileID, claim: Bool) -> TileLayout? {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = layouts[tile] else { return nil }
        useClock += 1
        layouts[tile]?.lastUse = useClock
        if claim { layouts[tile]?.isClaimed = true }
        return entry.layout
    }

    /// Whether `tile` is cached, without touching it; for tests.
    func isCached(_ tile: TileID) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return layouts[tile] != nil
    }

    var loadsInFlight: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count + delivering
    }

    var pendingLoads: (queued: Int, running: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (jobs.count - running, running)
    }

    func request(_ tile: TileID, frame: UInt64, loaded: (@Sendable () -> Void)?) {
        condition.lock()
        defer { condition.unlock() }
        latestFrame = max(latestFrame, frame)
        guard !isShutDown, layouts[tile] == nil else { return }
        if let asked = jobs[tile]?.lastAskedFrame {
            if frame > asked { jobs[tile]?.lastAskedFrame = frame }
            return
        }
        if let failure = failures[tile], now() < failure.retryAt { return }
        var job = Job(lastAskedFrame: frame)
        if let loaded { job.loaded.append(loaded) }
        enqueue(tile, job)
    }

    func await(_ tile: TileID, _ continuation: CheckedContinuation<TileLayout, Never>) {
        condition.lock()
        if let cached = layouts[tile]?.layout {
            condition.unlock()
            continuation.resume(returning: cached)
            return
        }
        if isShutDown || (jobs[tile] == nil && failures[tile].map { now() < $0.retryAt } == true) {
            condition.unlock()
            continuation.resume(returning: TileLayout(tile: tile, extent: 4096, buckets: []))
            return
        }
        if jobs[tile] != nil {
            jobs[tile]?.waiters.append(continuation)
        } else {
            enqueue(tile, Job(lastAskedFrame: latestFrame, waiters: [continuation]))
        }
        condition.unlock()
    }

    func shutDown() {
        condition.lock()
        // Workers started and not yet ended: each leaves the ending census as it ends.
        if !isShutDown { Self.endingCensus.withLock { $0 += workersStarted } }
        isShutDown = true
        // Nothing awaits a store that is being released (awaiting keeps it alive); queued
        // callbacks are simply not called.
        let dropped = jobs.filter { !$0.value.isRunning }
        for tile in dropped.keys { jobs[tile] = nil }
        condition.broadcast()
        condition.unlock()
        for (tile, job) in dropped {
            for waiter in job.waiters { waiter.resume(returning: TileLayout(tile: tile, extent: 4096, buckets: [])) }
        }
    }

    /// Queues a job and makes sure a worker will take it. Called with the lock held.
    private func enqueue(_ tile: TileID, _ job: Job) {
        jobs[tile] = job
        if queueStart > 64 && queueStart * 2 > queue.count {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
        queue.append(tile)
        if idleWorkers > wakeUps {
            wakeUps += 1
            condition.signal()
        } else if workersStarted < workerCount {
            workersStarted += 1
            let thread = Thread { [self] in
                // Named from inside: on Linux a name set before start() does not reach the OS
                // thread, which would keep its creator's name in tools like top and gdb.
                Thread.current.name = "carwindow.tiles"
                work()
            }
            thread.start()
        }
        // Otherwise every worker is busy and takes the job when it finishes its own.
    }

    /// Worker threads running now, in every loader: a census for leak tests.
    package static var runningWorkers: Int { workerCensus.withLock { $0 } }
    private static let workerCensus = LockedState(0)
    /// Workers of loaders that were shut down, finishing the load in hand.
    private static let endingCensus = LockedState(0)

    /// Returns once the workers of every loader shut down so far have ended, at most `limit`
    /// from now: a host about to exit must not have them run (with the style and the tiles
    /// they hold) while the process's exit-time destructors do.
    package static func waitForEndingWorkers(upTo limit: Duration) {
        let deadline = DispatchTime.now() + .milliseconds(Int(limit / .milliseconds(1)))
        while endingCensus.withLock({ $0 }) > 0, DispatchTime.now() < deadline {
            usleep(5_000)
        }
    }

    /// A worker's loop: take the oldest job still wanted, load it, deliver it; end on shut-down.
    private func work() {
        Self.workerCensus.withLock { $0 += 1 }
        defer { Self.workerCensus.withLock { $0 -= 1 } }
        condition.lock()
        while true {
            guard let tile = nextTile() else {
                if isShutDown { break }
                idleWorkers += 1
                while wakeUps == 0 && !isShutDown { condition.wait() }
                if wakeUps > 0 { wakeUps -= 1 }
                idleWorkers -= 1
                continue
            }
            jobs[tile]?.isRunning = true
            running += 1
            condition.unlock()

            let outcome = load(tile)
            let bytes = (try? outcome.get())?.byteCount ?? 0

            condition.lock()
            running -= 1
            delivering += 1
            let job = jobs.removeValue(forKey: tile)
            let layout: TileLayout
            switch outcome {
            case .success(let loaded):
                layout = loaded
                failures[tile] = nil
                store(loaded, bytes: bytes)
            case .failure(let error):
                layout = TileLayout(tile: tile, extent: 4096, buckets: [])
                recordFailure(of: tile, error)
            }
            condition.unlock()
            for waiter in job?.waiters ?? [] { waiter.resume(returning: layout) }
            for loaded in job?.loaded ?? [] { loaded() }
            condition.lock()
            delivering -= 1
        }
        workersStarted -= 1
        Self.endingCensus.withLock { $0 -= 1 }
        condition.unlock()
    }

    /// The oldest queued tile asked for recently or awaited; older ones are dropped. Called with
    /// the lock held.
    private func nextTile() -> TileID? {
        while queueStart < queue.count {
            let tile = queue[queueStart]
            queueStart += 1
            guard let job = jobs[tile], !job.isRunning else { continue }
            if isShutDown { continue }
            let isStale = job.lastAskedFrame + TileLayoutStore.staleFrames < latestFrame
            if isStale && job.waiters.isEmpty {
                jobs[tile] = nil
                continue
            }
            return tile
        }
        queue.removeAll(keepingCapacity: true)
        queueStart = 0
        return nil
    }

    /// Reads, decodes and lays out a tile; a tile the source lacks is an empty layout.
    private func load(_ tile: TileID) -> Result<TileLayout, TileSourceError> {
        do throws(TileSourceError) {
            // Where the tiles end, an engine's GeoJSON may still have something to draw.
            guard let decoded = try sources.decodedTile(for: tile) ?? (builder.geojson.isEmpty ? nil : VectorTile(layers: []))
            else {
                return .success(TileLayout(tile: tile, extent: 4096, buckets: []))
            }
            let layout = builder.layout(tile, decoded)
            if !decoded.reductions.isEmpty || !layout.reductions.isEmpty || !layout.geojsonReductions.isEmpty {
                var cuts: [String] = []
                if !decoded.reductions.isEmpty { cuts.append("decoding: \(decoded.reductions)") }
                if !layout.geojsonReductions.isEmpty { cuts.append("GeoJSON sources: \(layout.geojsonReductions)") }
                if !layout.reductions.isEmpty { cuts.append("layout: \(layout.reductions)") }
                let limits = VectorTileLimits.standard
                logger.warning("tile \(tile) of \(sources.basemap.name) is over the per-tile budget (\(TileLayoutBudget.layoutBytes >> 20) MiB of layout; \(limits.maximumVertices) vertices, \(limits.maximumFeatures) features decoded) and is drawn simplified; \(cuts.joined(separator: "; "))")
            }
            return .success(layout)
        } catch {
            return .failure(error)
        }
    }

    /// Caches a layout, evicting the least recently used beyond the capacity or the cache's
    /// bytes (never the one just stored). Lock held.
    private func store(_ layout: TileLayout, bytes: Int) {
        useClock += 1
        let entry = CachedLayout(layout: layout, lastUse: useClock, bytes: bytes, storedFrame: latestFrame)
        if let replaced = layouts.updateValue(entry, forKey: layout.tile) {
            cachedBytes -= replaced.bytes
        }
        cachedBytes += bytes
        while layouts.count > capacity,
              let oldest = layouts.filter({ $0.key != layout.tile }).min(by: { $0.value.lastUse < $1.value.lastUse }),
              let removed = layouts.removeValue(forKey: oldest.key) {
            cachedBytes -= removed.bytes
        }
        while cachedBytes > cacheBytes,
              let oldest = layouts.filter({ candidate in
                  candidate.key != layout.tile
                      && (candidate.value.isClaimed || candidate.value.storedFrame + TileLayoutStore.staleFrames < latestFrame)
              }).min(by: { $0.value.lastUse < $1.value.lastUse }),
              let removed = layouts.removeValue(forKey: oldest.key) {
            cachedBytes -= removed.bytes
        }
    }

    /// Remembers a failure and when to try again. Lock held.
    private func recordFailure(of tile: TileID, _ error: TileSourceError) {
        let attempts = (failures[tile]?.attempts ?? 0) + 1
        let delay = min(TileLayoutStore.firstRetryDelay * pow(2, Double(min(attempts - 1, 30))),
                        TileLayoutStore.maximumRetryDelay)
        failures[tile] = Failure(attempts: attempts, retryAt: now() + delay)
        if failures.count > Self.failureCapacity,
           let oldest = failures.min(by: { $0.value.retryAt < $1.value.retryAt })?.key {
            failures[oldest] = nil
        }
        let message: Logger.Message = "tile \(tile) of \(sources.basemap.name) could not be loaded (attempt \(attempts)): \(error); trying again in \(StyleValue.format(delay)) s if it is still needed"
        if attempts == 1 { logger.warning(message) } else { logger.debug(message) }
    }
}

import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// Sessions come and go on one long-lived render context (an app that connects to head units
/// all day): each must leave no GL object, thread or file descriptor behind.
///
/// The thread and descriptor counts are the process's own, so this suite needs the process to
/// itself: `scripts/test.sh` runs the suites named `...CensusTests` alone, after the parallel run.
@Suite(.serialized) struct GLResourceLifetimeCensusTests {
    static let display = HeadUnitDisplay(size: VideoSize(width: 320, height: 192), scale: 2,
                                         preferredFramesPerSecond: 30, maximumBitrate: 200_000)

    /// Threads libdispatch and the Swift runtime start and end on their own (timer queues'
    /// workers, the cooperative pool): the whole-process count may differ by this many. A
    /// thread left per session would show as a hundred.
    static let pooledThreadTolerance = 4

    /// Waits for the encoder threads of finished streams to end (a stop lets them go; they
    /// leave a moment later), then counts.
    static func settledCensus() async -> ProcessResourceCensus {
        // A released map's tile workers finish the load in hand before they end.
        _ = await eventually {
            RenderThread.running(named: "carwindow.encode") == 0 && TileLoader.runningWorkers == 0
                && RetiredOpenH264Encoder.pendingReleases == 0
        }
        return ProcessResourceCensus.now()
    }

    @Test func thirtySessionsOnOneContextLeaveNoGLObjectsThreadsOrDescriptorsBehind() async throws {
        let context = try await RenderContext()
        let tiles = SharedTileCache(source: try openTileSource(at: TestPaths.tiles))
        let day = try Style(contentsOf: TestPaths.style("day")), night = try Style(contentsOf: TestPaths.style("night"))
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        let emptyCensus = GLObjectCensus()

        /// Opens a session, streams a few pictures, closes it; returns the GL objects it held.
        func openStreamAndClose(_ index: Int) async throws -> GLObjectCensus {
            let sink = RecordingSink()
            var configuration = ProjectionSessionConfiguration(tiles: tiles, dayStyle: day, fonts: fonts,
                                                               camera: Camera(center: helsinki, zoom: 15), makeSink: { _ in sink })
            configuration.name = "screen \(index)"
            configuration.nightStyle = night
            configuration.appearance = index.isMultiple(of: 2) ? .day : .night
            configuration.encoder = .forced(.openh264)
            let session = ProjectionSession(configuration: configuration, context: context)
            try await session.connect(display: Self.display)
            try await session.startStreaming()
            #expect(await eventually { sink.received.count >= 3 }, "session \(index) streams")
            let held = await context.liveGLObjects()
            await session.close()
            return held
        }

        // The first session brings up what a process makes once (the cooperative and dispatch
        // pools' threads, the encoder library, loggers); the census starts after it.
        let heldByOne = try await openStreamAndClose(0)
        #expect(heldByOne.programs > 0 && heldByOne.textures > 0 && heldByOne.buffers > 0,
                "a streaming session holds GL objects: \(heldByOne)")
        let glBefore = await context.liveGLObjects()
        let before = await Self.settledCensus()
        for index in 1...30 {
            _ = try await openStreamAndClose(index)
        }
        let glAfter = await context.liveGLObjects()
        let after = await Self.settledCensus()
        #expect(glBefore == emptyCensus, "after one session: \(glBefore)")
        #expect(glAfter == emptyCensus, "after 31 sessions: \(glAfter)")
        #expect(await context.strayGLReleases() == 0, "GL objects released off the render thread")
        #expect(after.fileDescriptors == before.fileDescriptors, "before: \(before)\nafter: \(after)")
        #expect(RenderThread.running(named: "carwindow.encode") == 0, "encoder threads left running")
        #expect(RenderThread.running(named: "carwindow.render") == 1, "the shared context's render thread only")
        #expect(TileLoader.runningWorkers == 0, "tile workers left running")
        #expect(abs(after.threads - before.threads) <= Self.pooledThreadTolerance, "before: \(before)\nafter: \(after)")
        print("resource census before: \(before)\nafter: \(after)")
        await context.shutdown()
    }

    @Test func aRendererReleasedAfterItsContextShutDownDeletesNothingAndRunsItsDeinit() async throws {
        let context: RenderContext
        var renderer: MapRenderer?
        do {
            let made = try await makeRenderer(width: 64, height: 48)
            (context, renderer) = made
        }
        _ = await renderer?.renderWhenLoaded()
        _ = try await renderer?.readNV12()
        let held = await context.liveGLObjects()
        #expect(held.total > 0, "\(held)")
        await context.shutdown()
        // Its deinit runs on the render thread again, where no context is current any more: the
        // names went with the context and no GL call is made.
        renderer = nil
        // Work queued on the render thread after its shutdown must still run (it used to wait
        // forever); the guard turns a hang into a failure.
        guard let left = await SessionLifecycleRaceTests.finishing(within: 60, { await context.liveGLObjects() }) else {
            Issue.record("work queued on the render thread after shutdown never ran")
            return
        }
        #expect(left == GLObjectCensus(), "names still counted after the renderer went: \(left)")
        #expect(await context.strayGLReleases() == 0)
    }

    /// A process may exit as soon as `shutdown()` returns (the CLI does). If the context were
    /// destroyed later, when the last reference goes, the driver would unload (`dlclose`) on the
    /// render thread while `exit` ran the same destructor list: a crash seen 1 run in 24 under load.
    @Test func shutdownDestroysTheContextBeforeItReturns() async throws {
        let context = try await RenderContext()
        let display = context.display.raw
        let users = EGLDisplayUse.users(of: display)
        #expect(users >= 1)
        await context.shutdown()
        #expect(EGLDisplayUse.users(of: display) == users - 1, "the context is still alive after shutdown")
        withExtendedLifetime(context) {}
    }

    /// The ledger forgets a context once it ended and its maps let go of their names, so an
    /// app that makes a context per head-unit connection all day keeps no book per context.
    @Test func endedContextsLeaveNoBooksOnceTheirMapsAreGone() async throws {
        let before = GLObjectLedger.bookCount
        for shutDownFirst in [true, false, true, false] {
            let context: RenderContext
            do {
                let (made, renderer) = try await makeRenderer(width: 64, height: 48)
                context = made
                _ = await renderer.renderWhenLoaded()
                if shutDownFirst { await context.shutdown() }
            }
            // The renderer went at the end of the block; its deinit runs on the render thread
            // before this returns.
            await context.waitForQueuedWork()
            if !shutDownFirst { await context.shutdown() }
        }
        #expect(GLObjectLedger.bookCount == before, "\(GLObjectLedger.bookCount - before) books left by 4 contexts")
    }

    /// Tiles that take their time, so a worker is inside a load when its map goes.
    struct SlowTiles: TileSource {
        let inner: any TileSource
        var name: String { inner.name }
        var minZoom: Int { inner.minZoom }
        var maxZoom: Int { inner.maxZoom }
        var bounds: GeoBounds? { inner.bounds }
        func data(for tile: TileID) throws(TileSourceError) -> Data? {
            usleep(300_000)
            return try inner.data(for: tile)
        }
    }

    /// A host may exit once the C API's context close returns: the tile workers of released
    /// maps, which finish the load in hand, must have ended by then (valgrind found one holding
    /// the style at exit).
    @Test func theWaitForEndingTileWorkersOutlastsALoadInHand() async throws {
        _ = await eventually { TileLoader.runningWorkers == 0 }
        let context = try await RenderContext()
        do {
            let renderer = try await MapRenderer(
                context: context, width: 64, height: 48, style: try Style(contentsOf: TestPaths.style("day")),
                tiles: SlowTiles(inner: try openTileSource(at: TestPaths.tiles)), fonts: try FontLibrary(directory: TestPaths.fonts),
                camera: Camera(center: helsinki, zoom: 15))
            _ = await renderer.renderFrame()
            #expect(await eventually { TileLoader.runningWorkers > 0 }, "no tile worker started")
        }
        // The renderer went at the end of the block, its workers in the middle of a load.
        await context.waitForQueuedWork()
        await context.shutdown()
        // A generous limit: a loaded machine may take long over the layout in hand.
        MapRenderer.waitForEndingTileWorkers(upTo: .seconds(60))
        #expect(TileLoader.runningWorkers == 0, "\(TileLoader.runningWorkers) tile workers still running")
    }

    @Test func aContextDroppedWithoutShutdownEndsItsThread() async throws {
        // Render threads of contexts shut down just before may still be on their way out.
        _ = await eventually { RenderThread.running(named: "carwindow.render") == 0 }
        let before = RenderThread.running(named: "carwindow.render")
        do {
            let (context, renderer) = try await makeRenderer(width: 64, height: 48)
            _ = await renderer.renderWhenLoaded()
            #expect(RenderThread.running(named: "carwindow.render") == before + 1)
            _ = context
        }
        // The renderer went first (it holds the context), then the context: its isolated deinit
        // shuts it down on its own thread, which then ends.
        #expect(await eventually { RenderThread.running(named: "carwindow.render") == before },
                "\(RenderThread.running(named: "carwindow.render") - before) render threads left running")
    }
}

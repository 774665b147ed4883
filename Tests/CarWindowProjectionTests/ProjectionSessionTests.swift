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

/// Sessions over the bundled data, with OpenH264 and llvmpipe: real frames, real encoder.
@Suite(.serialized) struct ProjectionSessionTests {
    static func streaming(_ sink: RecordingSink, context: RenderContext,
                          display: HeadUnitDisplay = SessionFixtures.display) async throws -> (ProjectionSession, EventLog) {
        let session = ProjectionSession(configuration: try SessionFixtures.configuration(sink: sink), context: context)
        let log = EventLog(session)
        try await session.connect(display: display)
        try await session.startStreaming()
        return (session, log)
    }

    /// Seconds between frames at the display's 15 fps.
    static let frameInterval = 1.0 / 15

    /// A session on `time`'s clock, streaming into `sink` (whose clock should be the same), once
    /// its first picture and the tiles it asked for are in, and 5 ms more: the engine's 10 ms
    /// steps of ``drive(_:seconds:step:time:)`` then never fall on a frame slot.
    static func streaming(_ sink: RecordingSink, context: RenderContext, time: ManualTime,
                          display: HeadUnitDisplay = SessionFixtures.display) async throws -> (ProjectionSession, EventLog) {
        let session = ProjectionSession(configuration: try SessionFixtures.configuration(sink: sink, clock: time.clock), context: context)
        time.watch(session)
        let log = EventLog(session)
        try await session.connect(display: display)
        try await session.startStreaming()
        await time.settle()
        await time.advance(by: 0.005)
        return (session, log)
    }

    /// Moves the camera a little every `step` seconds of `time` for `seconds`.
    static func drive(_ session: ProjectionSession, seconds: Double, step: Double = 0.01, time: ManualTime) async {
        var camera = await session.camera
        for _ in 0..<Int((seconds / step).rounded()) {
            camera.center.longitude += 0.00002
            camera.bearing += 0.3
            await session.setCamera(camera)
            await time.advance(by: step)
        }
    }

    /// Whether `gaps` are all `expected` seconds, to rounding.
    static func allGaps(_ gaps: [Double], are expected: Double) -> Bool {
        gaps.allSatisfy { abs($0 - expected) < 1e-6 }
    }

    @Test func statesFollowTheLifeCycleAndWrongOrderIsATypedError() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let session = ProjectionSession(configuration: try SessionFixtures.configuration(sink: sink), context: context)
        let log = EventLog(session)
        await #expect(throws: ProjectionSessionError.invalidState(operation: "start streaming", state: .disconnected)) {
            try await session.startStreaming()
        }
        try await session.connect(display: SessionFixtures.display)
        #expect(await session.stream?.encodedSize == VideoSize(width: 320, height: 192))
        try await session.startStreaming()
        #expect(await eventually { !sink.received.isEmpty })
        await session.suspend()
        try await session.resume()
        await session.stop()
        #expect(await eventually { log.states.count >= 6 })
        #expect(log.states == [.ready, .streaming, .suspended, .streaming, .stopping, .disconnected])
        #expect(sink.starts.count == 2, "a start and a resume")
        #expect(sink.received.first?.unit.isKeyframe == true)
        await session.close()
        await context.shutdown()
    }

    /// An engine and a head-unit link both iterate `events`: each gets a stream of its own with
    /// every event, not a share of one stream.
    @Test func twoConsumersOfEventsBothSeeEveryEventUntilTheSessionCloses() async throws {
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: try SessionFixtures.configuration(sink: RecordingSink()), context: context)
        func collect(_ stream: AsyncStream<ProjectionSessionEvent>) -> Task<[ProjectionSessionEvent], Never> {
            Task {
                var events: [ProjectionSessionEvent] = []
                for await event in stream { events.append(event) }
                return events
            }
        }
        let engine = collect(session.events), link = collect(session.events)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        await session.setRoute([helsinki, GeoCoordinate(latitude: .infinity, longitude: 0)])
        await session.stop()
        await session.close()
        // Both streams end with the session, so what they saw is complete.
        let seenByEngine = await engine.value, seenByLink = await link.value
        #expect(seenByEngine == seenByLink)
        let states = seenByEngine.compactMap { if case .stateChanged(_, let to) = $0 { to } else { nil } }
        #expect(states == [.ready, .streaming, .stopping, .disconnected])
        #expect(seenByEngine.contains { if case .streamStarted = $0 { true } else { false } })
        #expect(seenByEngine.contains(.warning(.routePointsDropped(dropped: 1, of: 2))))
        // A stream taken after the close ends at once.
        var late = 0
        for await _ in session.events { late += 1 }
        #expect(late == 0)
        await context.shutdown()
    }

    /// Without a sink factory and without a head-unit link there is nowhere to stream to.
    @Test func aSessionWithNoOutputRefusesToStreamWithATypedError() async throws {
        let context = try await RenderContext()
        var configuration = try SessionFixtures.configuration(sink: RecordingSink())
        configuration.makeSink = nil
        let session = ProjectionSession(configuration: configuration, context: context)
        try await session.connect(display: SessionFixtures.display)
        await #expect(throws: ProjectionSessionError.noOutput) { try await session.startStreaming() }
        #expect(await session.state == .ready)
        // An output added (as a link does) is used from the next start on, and gone once removed.
        let added = RecordingSink()
        let id = session.addOutput { _ in added }
        try await session.startStreaming()
        #expect(await eventually { !added.received.isEmpty })
        await session.stop()
        session.removeOutput(id)
        try await session.connect(display: SessionFixtures.display)
        await #expect(throws: ProjectionSessionError.noOutput) { try await session.startStreaming() }
        await session.close()
        await context.shutdown()
    }

    @Test func aHeadUnitAskingForTwoBillionFramesASecondGetsSixtyAndAWarning() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        var display = SessionFixtures.display
        display.preferredFramesPerSecond = Int(Int32.max)
        let (session, log) = try await Self.streaming(sink, context: context, display: display)
        #expect(await session.encoderSettings?.framesPerSecond == 60)
        #expect(await session.pacer.configuration.framesPerSecond == 60)
        #expect(await eventually { log.warnings.contains(.frameRateCapped(asked: Int(Int32.max), streamed: 60)) },
                "\(log.warnings)")
        #expect(log.warnings.first { if case .frameRateCapped = $0 { true } else { false } }?.description
                    .contains("2147483647 fps") == true)
        await session.close()
        await context.shutdown()
    }

    @Test func aMovingCameraStreamsFifteenFramesASecondEvenly() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await Self.streaming(sink, context: context, time: time)
        // The engine moves the camera every 10 ms, far more often than frames go out.
        await Self.drive(session, seconds: 1, time: time)
        let start = time.now
        await Self.drive(session, seconds: 2, time: time)
        let end = time.now
        let statistics = await session.statistics
        await session.stop()
        let moving = sink.received.filter { $0.time > start && $0.time <= end }
        #expect(moving.count == 30, "\(moving.count) pictures in 2 s of movement")
        // Even pacing: one frame interval between pictures, never less, never more.
        let gaps = zip(moving.dropFirst(), moving).map { $0.time - $1.time }
        #expect(Self.allGaps(gaps, are: Self.frameInterval), "gaps \(gaps)")
        // Every picture of a moving map is drawn anew: no refinement or keep-alive in between.
        #expect(statistics.framesRendered == sink.received.count)
        #expect(statistics.refinementFrames == 0 && statistics.keepAlives == 0)
        #expect(statistics.framesRendered == 46, "the first picture, then 15 a second for 3 s")
        await session.close()
        await context.shutdown()
    }

    /// A head unit whose bitrate cannot carry a moving map at its rate (320x192 at 15 fps and
    /// 40 kbit/s): the encoder's quantiser climbs, so the stream steps down to fewer pictures a
    /// second, says so, and sends at the rate it said; the bitrate holds. Turned off, the stream
    /// keeps its 15 pictures a second and says nothing.
    @Test(arguments: [true, false])
    func aBitrateThatCannotCarryTheRateLowersItAndSaysSo(adapts: Bool) async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        var configuration = try SessionFixtures.configuration(sink: sink, clock: time.clock)
        configuration.adaptsQualityToBitrate = adapts
        let session = ProjectionSession(configuration: configuration, context: context)
        time.watch(session)
        let log = EventLog(session)
        var display = SessionFixtures.display
        display.maximumBitrate = 40_000
        try await session.connect(display: display)
        try await session.startStreaming()
        await time.settle()
        await time.advance(by: 0.005)
        await Self.drive(session, seconds: 5, time: time)
        let qualities = log.all.compactMap { if case .qualityChanged(let quality) = $0 { quality } else { nil } }
        let rate = qualities.last?.framesPerSecond ?? 15
        let start = time.now
        await Self.drive(session, seconds: 2, time: time)
        let end = time.now
        let later = log.all.compactMap { if case .qualityChanged(let quality) = $0 { quality } else { nil } }
        await session.stop()
        await session.close()
        await context.shutdown()
        let moving = sink.received.filter { $0.time > start && $0.time <= end }
        let quantizers = moving.compactMap(\.unit.quantizer)
        if adapts {
            #expect(rate < 15, "qualities \(qualities)")
            // The last two seconds at most at the rate last announced (unless it moved again
            // meanwhile): the bitrate gate may hold a picture back.
            if later.count == qualities.count {
                #expect(Double(moving.count) <= 2 * rate + 1 && moving.count >= 2, "\(moving.count) pictures in 2 s at \(rate) fps")
            }
        } else {
            #expect(qualities.isEmpty && later.isEmpty)
            #expect(moving.count == 30, "\(moving.count) pictures in 2 s")
        }
        // OpenH264 reports each picture's quantiser.
        #expect(quantizers.count == moving.count && quantizers.allSatisfy { (12...51).contains($0) },
                "QP \(moving.map { $0.unit.quantizer.map(String.init) ?? "-" }), qualities \(later)")
        let bits = moving.reduce(0) { $0 + $1.unit.data.count * 8 }
        #expect(Double(bits) / 2 <= 1.2 * 40_000, "\(bits / 2) bit/s against 40 kbit/s, QP \(quantizers)")
    }

    @Test func aStillMapSendsOnlyKeepAlivesUnderOneSecondApartAfterRefinements() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await Self.streaming(sink, context: context, time: time)
        // A short movement, then stillness.
        await Self.drive(session, seconds: 0.5, time: time)
        let stoppedMoving = time.now
        let before = await session.statistics
        await time.advance(by: 3)
        let after = await session.statistics
        await session.stop()
        let received = sink.received
        // The last change is drawn at the next frame slot (and the tiles it asked for perhaps at
        // one more); after that nothing is drawn.
        let rendered = after.framesRendered
        try #require(received.count >= rendered + 3, "\(received.count) pictures sent, \(rendered) drawn")
        #expect((1...2).contains(rendered - before.framesRendered), "renders on a still map")
        #expect(received[rendered - 1].time <= stoppedMoving + 2 * Self.frameInterval + 1e-6)
        // Then three refinements one frame apart, then keep-alives every 0.5 s to the end.
        #expect(before.refinementFrames == 0 && after.refinementFrames == 3)
        #expect(after.keepAlives == received.count - rendered - 3)
        let still = Array(received[(rendered - 1)...])
        let gaps = zip(still.dropFirst(), still).map { $0.time - $1.time }
        #expect(Self.allGaps(Array(gaps.prefix(3)), are: Self.frameInterval), "refinement gaps \(gaps.prefix(3))")
        #expect(Self.allGaps(Array(gaps.dropFirst(3)), are: 0.5), "gaps between keep-alives \(gaps.dropFirst(3))")
        #expect(after.keepAlives == 5, "\(after.keepAlives) keep-alives in 3 s at 0.5 s after 0.2 s of refinements")
        #expect(time.now - received[received.count - 1].time < 0.5, "keep-alives go on to the end")
        // Keep-alives are hand-made skip pictures of a few bytes.
        let keepAliveSizes = sink.received.filter { $0.time > stoppedMoving + 1.5 }.map(\.unit.data.count)
        #expect(!keepAliveSizes.isEmpty && keepAliveSizes.allSatisfy { $0 < 64 }, "keep-alive sizes \(keepAliveSizes)")
        // Every picture decodes, without a complaint: refinements are the encoder's P pictures,
        // keep-alives skip pictures, and the encoder's pictures after them are renumbered.
        let sizes = try SessionFixtures.frameSizes(of: sink.bytes)
        #expect(sizes.count == sink.received.count)
        #expect(Set(sizes) == ["320,192"])
        let decoded = try FFmpegTool.decodeLuma(sink.bytes, width: 320, height: 192)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        await session.close()
        await context.shutdown()
    }

    @Test func movingAgainAfterKeepAlivesDecodesCleanly() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await Self.streaming(sink, context: context, time: time)
        await Self.drive(session, seconds: 0.4, time: time)
        await time.advance(by: 2.5)
        await Self.drive(session, seconds: 0.6, time: time)
        await time.advance(by: 1.5)
        await Self.drive(session, seconds: 0.4, time: time)
        await session.stop()
        #expect(await session.statistics.keepAlives >= 4)
        let decoded = try FFmpegTool.decodeLuma(sink.bytes, width: 320, height: 192)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        #expect(decoded.planes.count == 320 * 192 * sink.received.count, "every picture decodes")
        #expect(sink.received.filter(\.unit.isKeyframe).count == 1, "no IDR needed to come back from stillness")
        await session.close()
        await context.shutdown()
    }

    /// The first picture of a stream waits for the view's tiles, so the head unit's first
    /// picture is the map and not its empty background. Manual time never ends the hold here;
    /// without one, the first picture is drawn before any tile has loaded.
    @Test(arguments: [false, true])
    func theFirstPictureWaitsForTheViewsTiles(holds: Bool) async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        var configuration = try SessionFixtures.configuration(sink: sink, clock: time.clock)
        configuration.firstPictureHold = holds ? .milliseconds(500) : .zero
        let session = ProjectionSession(configuration: configuration, context: context)
        time.watch(session)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        await time.settle()
        // Long enough for the tiles that came in to be drawn, short of the refinements.
        await time.advance(by: 2 * Self.frameInterval + 0.005)
        await session.stop()
        let decoded = try FFmpegTool.decodeLuma(sink.bytes, width: 320, height: 192)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        let size = 320 * 192
        try #require(decoded.planes.count >= 2 * size, "\(decoded.planes.count / size) pictures")
        let first = decoded.planes[0..<size], last = decoded.planes[(decoded.planes.count - size)...]
        let differing = zip(first, last).filter { abs(Int($0) - Int($1)) > 24 }.count
        let share = Double(differing) / Double(size)
        if holds {
            #expect(share < 0.01, "\(Int(share * 100))% of the first picture differs from the loaded map")
            #expect(await session.statistics.framesRendered == 1, "one picture drawn, with every tile")
        } else {
            #expect(share > 0.05, "only \(share * 100)% of the unheld first picture differs from the loaded map")
        }
        await session.close()
        await context.shutdown()
    }

    @Test func resumeAndRequestsStartWithAnIDR() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await Self.streaming(sink, context: context, time: time)
        await time.advance(by: Self.frameInterval)
        #expect(sink.received.count == 2, "the first picture, and one more a frame later")
        await session.suspend()
        let suspendedAt = time.now
        await time.advance(by: 1.2)
        #expect(sink.received(after: suspendedAt).isEmpty, "nothing is sent while suspended")
        try await session.resume()
        await time.settle()
        #expect(sink.received(after: suspendedAt).count == 1, "the resumed stream's first picture goes out at once")
        #expect(sink.received(after: suspendedAt).first?.unit.isKeyframe == true)
        await time.advance(by: 0.3)
        let requested = time.now
        await session.requestIDR()
        await time.advance(by: Self.frameInterval / 2)
        // The request is drawn at once, since the last frame is more than a frame interval old.
        let afterRequest = sink.received.filter { $0.time >= requested }
        #expect(afterRequest.count == 1 && afterRequest.first?.time == requested)
        #expect(afterRequest.first?.unit.isKeyframe == true)
        await session.close()
        await context.shutdown()
    }

    /// Route progress is one picture when it moves and none when it does not; a new route
    /// starts with nothing driven.
    @Test func routeProgressDrawsOnlyWhenItMoves() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await Self.streaming(sink, context: context, time: time)
        let route = [helsinki, GeoCoordinate(latitude: 60.1710, longitude: 24.9440)]
        await session.setRoute(route)
        await time.advance(by: 1)
        let withRoute = await session.statistics.framesRendered
        await session.setRouteProgress(40)
        await time.advance(by: 1)
        let moved = await session.statistics.framesRendered
        await session.setRouteProgress(40)
        await time.advance(by: 1)
        #expect(moved == withRoute + 1, "one picture for the progress")
        #expect(await session.statistics.framesRendered == moved, "none for the same progress again")
        #expect(await session.view.overlays.routeProgress == 40)
        await session.setRoute(route.reversed())
        #expect(await session.view.overlays.routeProgress == 0, "a new route starts with nothing driven")
        #expect(log.warnings.isEmpty, "\(log.warnings)")
        await session.close()
        await context.shutdown()
    }

    @Test func aResizeRestartsTheStreamAtTheNewSize() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let (session, log) = try await Self.streaming(sink, context: context)
        #expect(await eventually { sink.received.count >= 2 })
        // The head unit's screen changes (a split screen): only the resolution is sent.
        try await session.updateDisplay(HeadUnitDisplay(size: VideoSize(width: 480, height: 320)))
        let resizedAt = SessionClock.monotonicNow
        #expect(await session.stream?.encodedSize == VideoSize(width: 240, height: 160), "scale 2 is kept")
        #expect(await eventually { sink.received(after: resizedAt).count >= 2 })
        await session.stop()
        #expect(log.all.contains { if case .resized(let stream) = $0 { stream.encodedSize.width == 240 } else { false } })
        #expect(sink.received(after: resizedAt).first?.unit.isKeyframe == true)
        let sizes = try SessionFixtures.frameSizes(of: sink.bytes)
        #expect(sizes.count == sink.received.count)
        #expect(sizes.first == "320,192" && sizes.last == "240,160")
        // The size never changes inside a run of pictures: exactly one change.
        #expect(zip(sizes, sizes.dropFirst()).filter { $0 != $1 }.count == 1)
        await session.close()
        await context.shutdown()
    }

    @Test func twoScreensStreamAtOnceFromOneContextAndTileCache() async throws {
        let context = try await RenderContext()
        let tiles = SharedTileCache(source: try openTileSource(at: TestPaths.tiles))
        let consoleSink = RecordingSink(), clusterSink = RecordingSink()
        let console = ProjectionSession(configuration: try SessionFixtures.configuration(name: "console", tiles: tiles, sink: consoleSink),
                                        context: context)
        let cluster = ProjectionSession(configuration: try SessionFixtures.configuration(name: "cluster", style: "night", tiles: tiles,
                                                                              sink: clusterSink), context: context)
        try await console.connect(display: SessionFixtures.display)
        try await cluster.connect(display: HeadUnitDisplay(size: VideoSize(width: 256, height: 128),
                                                           preferredFramesPerSecond: 15))
        try await console.startStreaming()
        try await cluster.startStreaming()
        async let consoleDrive = SessionFixtures.drive(console, until: { await console.statistics.framesRendered >= 15 })
        async let clusterDrive = SessionFixtures.drive(cluster, until: { await cluster.statistics.framesRendered >= 15 })
        let (consoleDrew, clusterDrew) = await (consoleDrive, clusterDrive)
        await console.stop()
        await cluster.stop()
        #expect(consoleDrew && clusterDrew, "both screens drew while their maps moved")
        #expect(Set(try SessionFixtures.frameSizes(of: consoleSink.bytes)) == ["320,192"])
        #expect(Set(try SessionFixtures.frameSizes(of: clusterSink.bytes)) == ["256,128"])
        // Both maps show the same place: the second one found the tiles decoded.
        #expect(tiles.statistics.hits > 0, "\(tiles.statistics)")
        await console.close()
        await cluster.close()
        await context.shutdown()
    }

    @Test func tapsOnControlsZoomAndRegionsReachTheEngine() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let (session, log) = try await Self.streaming(sink, context: context)
        #expect(await eventually { !log.hapticSets.isEmpty })
        let regions = await session.hapticRegions
        let zoomIn = try #require(regions.first { $0.id == HapticRegionSet.regionID(for: .zoomIn) })
        // Head-unit pixels are twice the rendered ones (scale 2).
        let sent = try #require(log.hapticSets.first?.first { $0.id == zoomIn.id })
        #expect(sent.rect.width == (zoomIn.rect.width * 2).rounded())
        let zoomBefore = await session.camera.zoom
        let point = zoomIn.rect.center * 2
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1000, x: point.x, y: point.y)]))
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: 1080, x: point.x, y: point.y)]))
        // The tap waits out the double-tap window (0.4 s), then the zoom animates for 0.3 s.
        #expect(await eventually { log.all.contains(.controlTapped(.zoomIn)) })
        #expect(await eventually { await session.camera.zoom > zoomBefore + 0.99 })

        // An engine region, tapped on its own.
        await session.setHapticRegions([HapticRegion(id: 7, rect: ScreenRect(x: 20, y: 100, width: 40, height: 40))])
        #expect(await eventually { log.hapticSets.last?.contains { $0.id == 7 } == true })
        let setsBefore = log.hapticSets.count
        try await Task.sleep(for: .milliseconds(700))
        #expect(log.hapticSets.count == setsBefore, "regions are sent only when they change")
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 3000, x: 80, y: 240)]))
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: 3050, x: 80, y: 240)]))
        #expect(await eventually { log.all.contains(.regionTapped(id: 7)) })
        await session.setControlsVisible(false)
        await session.setHapticRegions([])
        #expect(await eventually { log.hapticSets.last == [] }, "an empty set clears the head unit's regions")
        await session.close()
        await context.shutdown()
    }

    @Test func aPanMovesTheMapAndTellsTheEngine() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let (session, log) = try await Self.streaming(sink, context: context)
        let before = await session.camera
        var time = 5000
        func touch(_ type: TouchEvent.Kind, _ x: Double) async {
            time += 30
            await session.handleTouch(TouchEvent(type: type, touches: [.init(id: 0, timestamp: time, x: x, y: 300)]))
        }
        await touch(.begin, 300)
        for x in stride(from: 310.0, through: 500, by: 10) { await touch(.move, x) }
        await touch(.end, 500)
        #expect(await eventually { log.all.contains { if case .cameraMovedByUser = $0 { true } else { false } } })
        let after = await session.camera
        // The finger moved right by 200 head-unit pixels = 100 rendered pixels: the map follows
        // it, so the centre moves west.
        #expect(after.center.longitude < before.center.longitude)
        let metresPerPixel = 40_075_016.7 * cos(helsinki.latitude * .pi / 180) / (512 * pow(2, before.zoom))
        let moved = (before.center.longitude - after.center.longitude) / 360 * 40_075_016.7 * cos(helsinki.latitude * .pi / 180)
        #expect(abs(moved / metresPerPixel - 100) < 2, "moved \(moved / metresPerPixel) px")
        await session.close()
        await context.shutdown()
    }

    @Test func badInputIsIgnoredWithAWarningAndTheStreamGoesOn() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let (session, log) = try await Self.streaming(sink, context: context)
        #expect(await eventually { !sink.received.isEmpty })
        let camera = await session.camera
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 12, timestamp: 1, x: 10, y: 10)]))
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1, x: .nan, y: 10)]))
        await session.setCamera(Camera(center: GeoCoordinate(latitude: .nan, longitude: 24), zoom: 15))
        await session.setRoute([helsinki, GeoCoordinate(latitude: .infinity, longitude: 0)])
        await session.setVehicle(VehicleMarker(coordinate: helsinki, heading: .nan))
        await session.setRouteProgress(-5)
        await #expect(throws: ProjectionSessionError.self) {
            try await session.updateDisplay(HeadUnitDisplay(size: VideoSize(width: 0, height: 0)))
        }
        await session.selectHapticRegion(id: 123_456)
        #expect(await eventually { log.warnings.count >= 9 }, "\(log.warnings)")
        // Each warning says what was ignored, with the values that were wrong.
        let warnings = log.warnings
        #expect(warnings.filter { if case .touchIgnored = $0 { true } else { false } }.count == 2)
        #expect(warnings.contains { if case .cameraIgnored(let ignored) = $0 { ignored.center.latitude.isNaN } else { false } })
        #expect(warnings.contains(.routePointsDropped(dropped: 1, of: 2)))
        #expect(warnings.contains(.routeHidden(validPoints: 1)))
        #expect(warnings.contains(.routeProgressIgnored(metres: -5)))
        #expect(warnings.contains { if case .vehicleIgnored(let vehicle) = $0 { vehicle.heading.isNaN } else { false } })
        #expect(warnings.contains {
            if case .displayUpdateIgnored(.noMatchingResolution, let kept) = $0 {
                kept?.encodedSize == VideoSize(width: 320, height: 192)
            } else { false }
        })
        #expect(warnings.contains(.hapticSelectIgnored(regionID: 123_456)))
        #expect(await session.state == .streaming)
        #expect(await session.camera == camera)
        #expect(await session.stream?.encodedSize == VideoSize(width: 320, height: 192))
        let now = SessionClock.monotonicNow
        #expect(await eventually { !sink.received(after: now).isEmpty }, "still streaming")
        await session.close()
        await context.shutdown()
    }

    @Test func noMatchingSizeMeansNoStreamWithTheReason() async throws {
        let context = try await RenderContext()
        var configuration = try SessionFixtures.configuration(sink: RecordingSink())
        configuration.supportedSizes = SupportedSizes(landscape: .disabled, portrait: .disabled)
        let session = ProjectionSession(configuration: configuration, context: context)
        do {
            try await session.connect(display: SessionFixtures.display)
            Issue.record("connect should have thrown")
        } catch {
            guard case .noMatchingResolution(let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(reason.contains("640x384"))
        }
        #expect(await session.state == .disconnected)
        await session.close()
        await context.shutdown()
    }

    @Test func nightStyleSwitchWhileStreamingDarkensThePicture() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let (session, _) = try await Self.streaming(sink, context: context)
        await SessionFixtures.drive(session, seconds: 0.5)
        // The first picture, however long a loaded machine takes to draw it.
        #expect(await eventually { await session.snapshot() != nil })
        let day = try #require(await session.snapshot())
        await session.setAppearance(.night)
        let switched = SessionClock.monotonicNow
        #expect(await eventually { !sink.received(after: switched).isEmpty })
        try await Task.sleep(for: .milliseconds(300))
        let night = try #require(await session.snapshot())
        func meanLuma(_ image: RGBAImage) -> Double {
            var sum = 0.0
            for index in stride(from: 0, to: image.pixels.count, by: 4) {
                sum += 0.299 * Double(image.pixels[index]) + 0.587 * Double(image.pixels[index + 1])
                    + 0.114 * Double(image.pixels[index + 2])
            }
            return sum / Double(image.pixels.count / 4)
        }
        #expect(meanLuma(night) < meanLuma(day) - 40, "day \(meanLuma(day)), night \(meanLuma(night))")
        #expect(await session.state == .streaming)
        await session.close()
        await context.shutdown()
    }
}

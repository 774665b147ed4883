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

/// Numbers from outside (a head unit's touches and capabilities, an engine's calls) at their
/// worst: nothing traps, nothing off the screen becomes a tap, and no two pictures share a time.
@Suite(.serialized) struct HostileNumberTests {
    /// Values a hostile or broken peer can send where a number is expected.
    static let extremes: [Double] = [1e19, -1e19, 1e308, -1e308, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                                     Double(Float.greatestFiniteMagnitude) * 2, 9.3e18, -0.0, .leastNonzeroMagnitude, 5000, -1,
                                     .infinity, -.infinity, .nan]

    static func tap(at point: SIMD2<Double>, id: Int = 0, time: Int = 0) -> [TouchEvent] {
        [TouchEvent(type: .begin, touches: [.init(id: id, timestamp: time, x: point.x, y: point.y)]),
         TouchEvent(type: .end, touches: [.init(id: id, timestamp: time + 40, x: point.x, y: point.y)])]
    }

    /// A tap far off the screen (x = 1e19 or -1e308, as a head unit or a web page sent them)
    /// reaches no map tap, no gesture and no control: it is refused with a warning that says so,
    /// and the map still takes a real tap afterwards. A finger that slides off the edge is held
    /// there, so the camera stays finite.
    @Test func touchesOffTheScreenAreRefusedAndDragsOffTheEdgeAreHeldThere() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        // The display is 640x384 head-unit pixels at scale 2.
        for point in [SIMD2(1e19, 100), SIMD2(-1e308, 100), SIMD2(5000, 100), SIMD2(100, 1e19), SIMD2(641, 10)] {
            for event in Self.tap(at: point) { await session.handleTouch(event) }
            await time.advance(by: 0.5)
        }
        let outside = { log.warnings.filter { if case .touchIgnored(.outsideScreen) = $0 { true } else { false } } }
        #expect(await eventually { outside().count == 5 }, "\(log.warnings)")
        let refused = outside()
        #expect(refused.first?.description.contains("went down at (1e+19, 100.0), outside the 640x384 screen") == true, "\(refused)")

        // A drag that runs off the right edge to x = 1e19 pans by what is on the screen.
        let before = await session.camera
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 1, timestamp: 1000, x: 600, y: 200)]))
        await session.handleTouch(TouchEvent(type: .move, touches: [.init(id: 1, timestamp: 1050, x: 100, y: 200)]))
        await session.handleTouch(TouchEvent(type: .move, touches: [.init(id: 1, timestamp: 1100, x: 1e19, y: -1e308)]))
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 1, timestamp: 1150, x: 1e19, y: -1e308)]))
        await time.advance(by: 0.5)
        let after = await session.camera
        #expect(after.center.latitude.isFinite && after.center.longitude.isFinite && after != before, "\(after)")
        #expect(abs(after.center.longitude - before.center.longitude) < 1, "a drag across one screen moved \(after)")

        await session.close()
        await context.shutdown()
    }

    /// On the screen a touch is left as it is; a finger sliding off is held at the edge, and a
    /// NaN is left for validation to refuse.
    @Test func touchesOnTheScreenAreKeptAndSlidesOffItHeldAtTheEdge() throws {
        let tap = Self.tap(at: SIMD2(640, 0))
        #expect(try tap[0].onScreen(width: 640, height: 384) == tap[0])
        let slide = TouchEvent(type: .move, touches: [.init(id: 2, timestamps: [1, 2, 3],
                                                            points: [SIMD2(-1e308, 10), SIMD2(1e19, 1e19), SIMD2(.nan, 5)])])
        let held = try slide.onScreen(width: 640, height: 384).touches[0].points
        #expect(held[0] == SIMD2(0, 10) && held[1] == SIMD2(640, 384) && held[2].x.isNaN)
        #expect(throws: TouchEventRejection.outsideScreen(touchID: 0, x: -0.5, y: 3, width: 640, height: 384)) {
            try Self.tap(at: SIMD2(-0.5, 3))[0].onScreen(width: 640, height: 384)
        }
    }

    /// Every public entry point of a streaming session that takes numbers from outside gets
    /// the worst of them; none may trap, and the session still streams afterwards.
    @Test(arguments: [1e19, -1e19, 1e308, Double.greatestFiniteMagnitude, 9.3e18, -0.0, .infinity, .nan])
    func noNumberFromOutsideTrapsTheSession(_ value: Double) async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        // A small stream (160x96): extreme cameras draw the whole world, slow on llvmpipe.
        let small = HeadUnitDisplay(size: VideoSize(width: 640, height: 384), scale: 4, preferredFramesPerSecond: 15,
                                    maximumBitrate: 400_000)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time, display: small)
        do {
            let point = SIMD2(value, value)
            for event in Self.tap(at: point) + Self.tap(at: SIMD2(value, 10)) + Self.tap(at: SIMD2(10, value)) {
                await session.handleTouch(event)
            }
            await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1, x: 100, y: 100),
                                                                          .init(id: 1, timestamp: 1, x: 200, y: 100)]))
            await session.handleTouch(TouchEvent(type: .move, touches: [.init(id: 0, timestamp: 2, x: value, y: 100),
                                                                         .init(id: 1, timestamp: 2, x: 200, y: value)]))
            await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: 3, x: value, y: 100),
                                                                        .init(id: 1, timestamp: 3, x: 200, y: value)]))
            var camera = await session.camera
            camera.zoom = value
            camera.center = GeoCoordinate(latitude: value, longitude: value)
            camera.bearing = value
            camera.pitch = value
            await session.setCamera(camera)
            await session.setCamera(camera, transition: .animated(duration: .milliseconds(300)))
            await session.perform(.pan(SIMD2(value, value)))
            await session.setRouteProgress(value)
            await session.setManeuver(atMetres: value)
            await session.setRoute([GeoCoordinate(latitude: 60.17, longitude: 24.94), GeoCoordinate(latitude: value, longitude: value)])
            await session.showOverview(of: [GeoCoordinate(latitude: value, longitude: 24.9), GeoCoordinate(latitude: 60.1, longitude: value)],
                                       padding: value)
            await session.updateVehicle(VehicleFix(coordinate: GeoCoordinate(latitude: value, longitude: value), heading: value,
                                                   speed: value))
            await session.selectHapticRegion(id: Int(clamping: Int64(value.isFinite ? max(min(value, 9e18), -9e18) : 0)))
            // Smaller scales would stream 640x384 at zoom 0, seconds a picture on llvmpipe; the
            // scale's own extremes are the next test's.
            let display = HeadUnitDisplay(size: VideoSize(width: 640, height: 384), scale: value > 4 ? value : 4, diagonalInches: value,
                                          preferredFramesPerSecond: .max, maximumBitrate: .min)
            try? await session.updateDisplay(display)
            await time.advance(by: 0.1)
        }
        try await session.updateDisplay(small)
        let before = sink.received.count
        await ProjectionSessionTests.drive(session, seconds: 0.5, time: time)
        #expect(sink.received.count > before, "the session stopped streaming")
        await session.close()
        await context.shutdown()
    }

    /// A head unit's capability at its worst: every mode either gives a stream H.264 can carry
    /// or a reason, never a trap; a scale outside 1...10 is clamped and said.
    @Test func extremeDisplaysChooseAStreamOrSayWhyNot() throws {
        let sides = [0, 1, 2, 17, 4096, 8192, 1 << 20, 1 << 40, .max, -1, .min]
        for value in Self.extremes {
            for width in sides {
                let display = HeadUnitDisplay(size: VideoSize(width: width, height: 480), scale: value, diagonalInches: value,
                                              preferredFramesPerSecond: .max, maximumBitrate: .min,
                                              alternatives: [HeadUnitDisplay(size: VideoSize(width: 800, height: width), scale: value)])
                switch display.chooseStreamResolution() {
                case .match(let stream):
                    #expect(HeadUnitDisplay.scaleRange.contains(stream.scale))
                    #expect((2...4096).contains(stream.encodedSize.width) && (2...4096).contains(stream.encodedSize.height))
                    _ = stream.acknowledged(width: .max, height: .min)
                    _ = stream.headUnitRect(fromEncodedFrame: ScreenRect(x: value, y: value, width: value, height: value))
                case .noMatch(let reason):
                    #expect(!reason.isEmpty)
                }
            }
        }
    }

    /// A head unit's absurd scale (1e308) is streamed at the largest scale, and the session
    /// says so (`carwindow drive` prints it) instead of clamping in silence.
    @Test func anAbsurdScaleIsClampedWithAWarning() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let absurd = HeadUnitDisplay(size: VideoSize(width: 640, height: 384), scale: 1e308, preferredFramesPerSecond: 15)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time, display: absurd)
        #expect(await session.stream?.scale == 10)
        #expect(await eventually { log.warnings.contains(.scaleClamped(asked: 1e308, used: 10)) }, "\(log.warnings)")
        #expect(log.warnings.first { if case .scaleClamped = $0 { true } else { false } }?.description.contains("1e+308") == true)
        await session.close()
        await context.shutdown()
    }

    /// Drawn pictures are stamped with their pacer slot, the others with the clock when their
    /// encoding starts, which is later when the encoder was still busy: a refinement that waited
    /// a whole frame for the encoder and the next drawn picture then landed microseconds apart,
    /// and the MP4 recording refused one of them. Every picture goes through one rule: at least
    /// one frame interval after the last.
    @Test func aPictureStartedLateAndTheNextDrawnOneAreAnIntervalApart() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await time.advance(by: 1)
        // The loop decided on a picture at `slot`, but the encoder was busy until almost the
        // next slot: the refinement starts then, and the next picture is drawn for that slot.
        let slot = time.now
        await time.advance(by: ProjectionSessionTests.frameInterval - 4e-6)
        await session.resendLastPictureOfTheStream(as: .refinement)
        await session.renderAndSendOnTheStream(at: slot + ProjectionSessionTests.frameInterval)
        await session.finishEncoding()
        await time.advance(by: 1)
        let stamps = sink.received.map(\.unit.presentationTime.inSeconds)
        let gaps = zip(stamps.dropFirst(), stamps).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= ProjectionSessionTests.frameInterval - 1e-9 }, "gaps \(gaps)")
        await session.close()
        await context.shutdown()
    }
}


extension ProjectionSession {
    /// The frame loop's steps, taken by a test on the stream there is.
    func resendLastPictureOfTheStream(as kind: PictureKind) async {
        guard let live = life.stream else { return }
        await resendLastPicture(live, as: kind)
    }

    func renderAndSendOnTheStream(at now: Double) async {
        guard let live = life.stream else { return }
        await renderAndSend(live, at: now)
    }
}

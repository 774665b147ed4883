import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowMap
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// A flung map glides on and slows down; two fingers turning turn it. The numbers follow by
/// hand from the glide's closed form: released at speed v, the map travels
/// `timeConstant * (v - restingSpeed)` pixels before it rests, after `timeConstant * ln(v / restingSpeed)` seconds.
@Suite("Fling and rotate")
struct FlingAndRotateTests {
    @Test func aGlideTravelsItsClosedFormWhateverTheFrameSteps() {
        let velocity = SIMD2(600.0, -800.0)  // 1000 px/s
        var coarse = KineticPan(velocity: velocity, start: 10)
        var fine = KineticPan(velocity: velocity, start: 10)
        #expect(abs(coarse.duration - 0.5 * log(1000.0 / 20)) < 1e-12)
        var coarseSum = SIMD2<Double>.zero, fineSum = SIMD2<Double>.zero
        for time in stride(from: 10.0, through: 14, by: 1.0 / 15) { coarseSum += coarse.step(to: time) }
        for time in stride(from: 10.0, through: 14, by: 1.0 / 60) { fineSum += fine.step(to: time) }
        coarseSum += coarse.step(to: 14)
        fineSum += fine.step(to: 14)
        // 0.5 s x (1000 - 20) px/s = 490 px along (0.6, -0.8).
        let expected = SIMD2(0.6, -0.8) * 490
        #expect(abs(coarseSum.x - expected.x) < 1e-9 && abs(coarseSum.y - expected.y) < 1e-9, "\(coarseSum)")
        #expect(abs(fineSum.x - expected.x) < 1e-9 && abs(fineSum.y - expected.y) < 1e-9, "\(fineSum)")
        #expect(coarse.isFinished(at: 14) && !coarse.isFinished(at: 10 + coarse.duration - 0.01))
        #expect(coarse.step(to: 20) == .zero, "at rest it moves no more")
    }

    @Test func aGlideIsCappedAndAnAbsurdSpeedStaysFinite() {
        var fast = KineticPan(velocity: SIMD2(1e200, 0), start: 0)
        let travelled = fast.step(to: 100)
        // Capped at 4000 px/s: 0.5 x (4000 - 20).
        #expect(abs(travelled.x - 1990) < 1e-9 && travelled.y == 0, "\(travelled)")
        var slow = KineticPan(velocity: SIMD2(5, 5), start: 0)
        #expect(slow.duration == 0 && slow.step(to: 1) == .zero, "below the resting speed nothing glides")
    }

    @Test func turningTheFingersClockwiseTurnsTheMapClockwiseAroundThem() throws {
        let camera = Camera(center: GeoCoordinate(latitude: 60.17, longitude: 24.94), zoom: 15)
        let width = 400, height = 300
        let anchor = SIMD2(250.0, 120.0)
        let before = MapTransform(camera: camera, width: width, height: height)
        let right = try #require(before.coordinate(at: anchor + SIMD2(100, 0)))
        let pinned = try #require(before.coordinate(at: anchor))
        let turned = try #require(camera.rotated(by: 90, around: anchor, width: width, height: height))
        #expect(abs(turned.bearing - -90) < 1e-9, "east comes to the top: bearing \(turned.bearing)")
        let after = MapTransform(camera: turned, width: width, height: height)
        let pinnedNow = try #require(after.screenPoint(for: pinned))
        let rightNow = try #require(after.screenPoint(for: right))
        #expect(abs(pinnedNow.x - anchor.x) < 0.01 && abs(pinnedNow.y - anchor.y) < 0.01, "\(pinnedNow)")
        // Clockwise on a screen whose y runs down: what was right of the fingers is now below them.
        #expect(abs(rightNow.x - anchor.x) < 0.05 && abs(rightNow.y - (anchor.y + 100)) < 0.05, "\(rightNow)")
    }

    @Test func flingsAndRotationsBecomeMapActionsOnlyWhenGesturesMoveTheMap() {
        let gestures: [Gesture] = [.fling(velocity: SIMD2(500, 0)), .rotationChanged(degrees: 12, center: SIMD2(10, 20)),
                                   .fling(velocity: SIMD2(.infinity, 0)), .rotationChanged(degrees: .nan, center: .zero)]
        #expect(MapAction.actions(for: gestures, regions: HapticRegionSet()) ==
                [.glide(velocity: SIMD2(500, 0)), .rotate(by: 12, around: SIMD2(10, 20))])
        #expect(MapAction.actions(for: gestures, regions: HapticRegionSet(), mapGesturesEnabled: false).isEmpty)
    }

    /// Rendered pixels the map content moved between two cameras at the same zoom and bearing.
    private static func offset(from before: Camera, to after: Camera, width: Int, height: Int) throws -> SIMD2<Double> {
        let screen = try #require(MapTransform(camera: after, width: width, height: height).screenPoint(for: before.center))
        return screen - SIMD2(Double(width), Double(height)) / 2
    }

    @Test func aFlungMapGlidesToRestAndSaysWhere() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        let before = await session.camera
        // 40 head-unit px every 10 ms, lifting in stride: 4000 px/s there, 2000 rendered px/s
        // at the display's scale of 2.
        var x = 100.0, stamp = 5000
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: stamp, x: x, y: 200)]))
        for _ in 0..<10 {
            x += 40; stamp += 10
            await session.handleTouch(TouchEvent(type: .move, touches: [.init(id: 0, timestamp: stamp, x: x, y: 200)]))
        }
        x += 40; stamp += 10
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: stamp, x: x, y: 200)]))
        await time.advance(by: 0.2)
        let gliding = await session.camera
        let movesBefore = log.all.filter { if case .cameraMovedByUser = $0 { true } else { false } }.count
        // The glide lasts 0.5 x ln(2000 / 20) = 2.3 s.
        await time.advance(by: 3)
        let rested = await session.camera
        await time.advance(by: 1)
        #expect(await session.camera == rested, "at rest the map stays")
        let width = 320, height = 192
        let pan = try Self.offset(from: before, to: gliding, width: width, height: height)
        let whole = try Self.offset(from: before, to: rested, width: width, height: height)
        // The finger's 440 px = 220 rendered, then 0.5 x (2000 - 20) = 990 more.
        #expect(pan.x > 220 + 100 && pan.x < 1210, "partway: \(pan)")
        #expect(abs(whole.x - 1210) < 1 && abs(whole.y) < 1, "\(whole)")
        let moves = log.all.compactMap { if case .cameraMovedByUser(let camera) = $0 { camera } else { nil } }
        #expect(moves.count > movesBefore && moves.last == rested, "the resting camera is reported")
        await session.close()
        await context.shutdown()
    }

    @Test func aTouchStopsAGlidingMap() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        var x = 100.0, stamp = 5000
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: stamp, x: x, y: 200)]))
        for _ in 0..<6 {
            x += 40; stamp += 10
            await session.handleTouch(TouchEvent(type: .move, touches: [.init(id: 0, timestamp: stamp, x: x, y: 200)]))
        }
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: stamp + 10, x: x + 40, y: 200)]))
        await time.advance(by: 0.3)
        let moving = await session.camera
        await time.advance(by: 0.2)
        let stopped = await session.camera
        #expect(stopped != moving, "still gliding")
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: stamp + 600, x: 300, y: 300)]))
        await time.advance(by: 2)
        #expect(await session.camera == stopped, "the finger holds the map where it caught it")
        await session.close()
        await context.shutdown()
    }

    @Test func twoFingersTurningTurnTheSessionsMap() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        #expect(await session.camera.bearing == 0)
        // Around (320, 192) head-unit px with a 100 px radius: from east-west to 30 degrees clockwise.
        func fingers(_ type: TouchEvent.Kind, degrees: Double, stamp: Int) async {
            let angle = degrees * .pi / 180, r = 100.0
            await session.handleTouch(TouchEvent(type: type, touches: [
                .init(id: 0, timestamp: stamp, x: 320 - r * cos(angle), y: 192 - r * sin(angle)),
                .init(id: 1, timestamp: stamp, x: 320 + r * cos(angle), y: 192 + r * sin(angle)),
            ]))
        }
        await fingers(.begin, degrees: 0, stamp: 1000)
        await fingers(.move, degrees: 6, stamp: 1020)
        await time.advance(by: 0.2)
        #expect(await session.camera.bearing == 0, "under the threshold the map does not turn")
        await fingers(.move, degrees: 30, stamp: 1040)
        await fingers(.end, degrees: 30, stamp: 1060)
        await time.advance(by: 0.2)
        let bearing = await session.camera.bearing
        #expect(abs(bearing - -30) < 1e-6, "bearing \(bearing)")
        #expect(log.all.contains { if case .cameraMovedByUser = $0 { true } else { false } })
        await session.close()
        await context.shutdown()
    }
}

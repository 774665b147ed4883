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
@testable import CarWindowSimulation
@testable import CarWindowTestSupport

/// The simulated engine drives a real session over the bundled data, fast-forwarded, on a
/// manual clock: the same pictures on every run, however loaded the machine.
@Suite struct SimulatedDriveTests {
    @Test func aFastForwardedDriveStreamsStopsAndTapsTheControls() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        var configuration = try SessionFixtures.configuration(sink: sink, clock: time.clock)
        let tiles = SharedTileCache(source: try openTileSource(at: TestPaths.tiles))
        configuration.tiles = tiles
        let plan = try DrivePlan(route: try HelsinkiDrive.route(using: tiles))
        let session = ProjectionSession(configuration: configuration, context: context)
        time.watch(session)
        let log = EventLog(session)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        await time.settle()
        // 16x: the first light (about 15 s) lasts about a second of the session's clock; both
        // zoom taps (at 30% and 45% of the drive) fall inside the 8 s.
        let drive = SimulatedDrive(plan: plan, session: session,
                                   options: .init(speedup: 16, taps: [(0.3, .zoomIn), (0.45, .zoomOut)], maximumSeconds: 8))
        let driving = Task { await drive.run() }
        // The session's frame loop and the drive, both waiting for the clock.
        await time.manual.waitForSleepers(2)
        await time.advance(by: 8.5)
        let simulated = await driving.value
        let statistics = await session.statistics
        await session.close()
        await context.shutdown()
        print("simulated drive: \(simulated) s driven, \(statistics.framesRendered) pictures, \(statistics.refinementFrames) refinements")
        #expect(simulated > 100)
        #expect(log.all.contains(.controlTapped(.zoomIn)))
        #expect(log.all.contains(.controlTapped(.zoomOut)))
        // 8 s at 15 fps: 120 frame slots, less those the car stood still at the light (112 on
        // this clock every run; the range leaves room for a changed drive plan, not for luck).
        #expect((105...120).contains(statistics.framesRendered), "\(statistics.framesRendered) pictures in 8 s")
        // The car stood at a light: drawing paused and the picture was refined.
        #expect(statistics.refinementFrames >= 3)
        #expect(sink.received.first?.unit.isKeyframe == true)
        #expect(log.warnings.isEmpty, "\(log.warnings)")
    }
}

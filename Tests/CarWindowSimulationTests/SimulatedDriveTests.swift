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

/// The simulated engine drives a real session over the bundled data, fast-forwarded.
@Suite struct SimulatedDriveTests {
    @Test func aFastForwardedDriveStreamsStopsAndTapsTheControls() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        var configuration = try SessionFixtures.configuration(sink: sink)
        let tiles = SharedTileCache(source: try openTileSource(at: TestPaths.tiles))
        configuration.tiles = tiles
        let plan = try DrivePlan(route: try HelsinkiDrive.route(using: tiles))
        let session = ProjectionSession(configuration: configuration, context: context)
        let log = EventLog(session)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        // 16x: the first light (about 15 s) lasts about a second of wall time; both zoom taps
        // (at 30% and 45% of the drive) fall inside the 8 s.
        let drive = SimulatedDrive(plan: plan, session: session,
                                   options: .init(speedup: 16, taps: [(0.3, .zoomIn), (0.45, .zoomOut)], maximumSeconds: 8))
        let simulated = await drive.run()
        let statistics = await session.statistics
        await session.close()
        await context.shutdown()
        #expect(simulated > 100)
        #expect(log.all.contains(.controlTapped(.zoomIn)))
        #expect(log.all.contains(.controlTapped(.zoomOut)))
        #expect(statistics.framesRendered >= 50, "\(statistics.framesRendered) pictures in 8 s")
        // The car stood at a light: drawing paused and the picture was refined.
        #expect(statistics.refinementFrames >= 3)
        #expect(sink.received.first?.unit.isKeyframe == true)
        #expect(log.warnings.isEmpty, "\(log.warnings)")
    }
}

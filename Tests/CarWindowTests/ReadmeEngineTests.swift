import Foundation
import Testing
import CarWindow
import CarWindowSDLTesting
@testable import CarWindowTestSupport

/// README's "An engine in Swift", as it is written there but for the data's paths and the head
/// unit's port: it must build against `import CarWindow` alone and stream into a head unit.
@Suite struct ReadmeEngineTests {
    struct Fix {
        var coordinate: GeoCoordinate
        var heading: Double
        var metresDriven: Double
    }

    @Test func theReadmeEngineStreamsItsMapIntoAHeadUnit() async throws {
        // A small screen (640x384 at scale 2: a 320x192 stream), so that a loaded parallel run
        // draws and encodes the first pictures quickly.
        var screen = HeadUnitSimulator.Configuration()
        screen.capability = VideoStreamingCapability(preferredResolution: ImageResolution(width: 640, height: 384),
                                                     supportedFormats: [.h264Raw], hapticSpatialDataSupported: true, scale: 2)
        let headUnit = HeadUnitSimulator(configuration: screen)
        let port = try await headUnit.start()
        let routePoints = [GeoCoordinate(latitude: 60.1699, longitude: 24.9415), GeoCoordinate(latitude: 60.1712, longitude: 24.9440)]
        let (positions, feed) = AsyncStream.makeStream(of: Fix.self)

        // README, from here:
        let context = try await RenderContext()                      // headless EGL, its own render thread
        let here = GeoCoordinate(latitude: 60.1699, longitude: 24.9415)
        let session = ProjectionSession(configuration: ProjectionSessionConfiguration(
            tiles: SharedTileCache(source: try openTileSource(at: TestPaths.tiles)),
            dayStyle: try Style(contentsOf: TestPaths.style("day")),
            fonts: try FontLibrary(directory: TestPaths.fonts),
            camera: Camera(center: here, zoom: 16, pitch: 45)), context: context)
        let link = SDLProjectionLink(session: session,
                                     connection: SDLConnection.Configuration(appName: "Navigator", appID: "navigator-1"),
                                     transport: { SDLTCPTransport(host: "127.0.0.1", port: port) })
        Task {
            await session.setRoute(routePoints)                       // the engine's route, once
            for await fix in positions {                              // and the car, as it drives
                await session.setVehicle(VehicleMarker(coordinate: fix.coordinate, heading: fix.heading))
                await session.setRouteProgress(fix.metresDriven)
            }
        }
        let running = Task { try await link.run() }                  // README: try await link.run()
        // README, to here.

        feed.yield(Fix(coordinate: here, heading: 30, metresDriven: 10))
        let received = await headUnit.wait(timeout: hangGuard) { $0.videoUnitCount >= 1 }
        #expect(received != nil, "the head unit received no video from the README's engine")
        feed.finish()
        await link.stop()
        _ = try? await running.value
        await session.close()
        await context.shutdown()
        await headUnit.stop()
    }
}

import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowMap
@testable import CarWindowProjection
@testable import CarWindowTestSupport

extension NavigationOverlayTests {
    /// Traffic set by an engine reaches the picture (the day style's dark red at the centre of a
    /// severe stretch), bad stretches are left out with a warning, and a new route clears it.
    @Test func trafficColoursTheRouteAndANewRouteClearsIt() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await session.setCamera(Camera(center: helsinki, zoom: 17))
        let east = FollowCameraTests.east
        let route = [east(-200), east(200)]
        await session.setRoute(route)
        await session.setRouteCongestion([RouteCongestion(startMetres: 150, endMetres: 250, level: .severe),
                                          RouteCongestion(startMetres: 20, endMetres: .nan, level: .heavy)])
        #expect(await eventually { log.warnings.contains(.routeCongestionDropped(dropped: 1, of: 2)) })
        #expect(await session.view.overlays.routeCongestion == [RouteCongestion(startMetres: 150, endMetres: 250, level: .severe)])
        await time.advance(by: 0.2)
        let image = try #require(await session.snapshot())
        let middle = image.pixel(x: image.width / 2, y: image.height / 2)
        #expect(middle.x > 120 && middle.y < 70 && middle.z < 90, "the severe stretch's dark red: \(middle)")

        await session.setRoute([east(-100), east(100)])
        #expect(await session.view.overlays.routeCongestion.isEmpty, "a new route has no traffic of the old one")
        await session.close()
        await context.shutdown()
    }
}

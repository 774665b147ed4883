import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The draw path's GL state cache: it never skips a change GL does not already have (a stale
/// cache draws wrong pictures), and it saves the state calls a frame used to repeat.
@Suite(.serialized) struct GLStateCacheTests {
    /// The golden views, one with a focus ring, and translucent buildings (day style at 15.3):
    /// every drawer, the route, the vehicle, the controls and the screen text. Between frames an
    /// NV12 conversion changes GL behind the cache's back, as streaming does.
    @Test(arguments: RenderingTests.views + [
        RenderingTests.View(name: "translucent buildings", camera: Camera(center: helsinki, zoom: 15.3, pitch: 50),
                            overlays: MapOverlays(focusRing: ScreenRect(x: 20, y: 20, width: 80, height: 40))),
    ])
    func skipsOnlyWhatGLAlreadyHas(_ view: RenderingTests.View) async throws {
        let (context, renderer) = try await makeRenderer(style: view.style, camera: view.camera)
        await renderer.verifyStateCacheSkips()
        await renderer.setOverlays(view.overlays)
        _ = await renderer.renderWhenLoaded()
        _ = try await renderer.readNV12()
        await renderer.renderFrame()
        let stale = await renderer.staleStateSkips
        let counts = await renderer.lastFrameStateChanges
        await context.shutdown()
        #expect(stale.isEmpty, "\(view.name): \(stale.prefix(5))")
        #expect(counts.skipped > 0 && counts.issued > 0, "\(view.name): \(counts)")
    }

    /// The scene scripts/gl-calls.sh traces. Before the cache its steady frame made 342 state
    /// calls; 94 bound vertex arrays, which draws still bind themselves and the cache does not
    /// count, and 71 of the other 248 set what the frame had already set.
    @Test func aSteadyFrameIssuesFewerStateChangesThanBeforeTheCache() async throws {
        let (context, renderer) = try await makeRenderer(
            width: 800, height: 480, camera: Camera(center: helsinki, zoom: 16, bearing: 30, pitch: 50))
        await renderer.setOverlays(MapOverlays(vehicle: VehicleMarker(coordinate: helsinki, heading: 30)))
        _ = await renderer.renderWhenLoaded()
        await renderer.renderFrame()
        let first = await renderer.lastFrameStateChanges
        await renderer.renderFrame()
        let second = await renderer.lastFrameStateChanges
        await context.shutdown()
        #expect(first == second, "an unchanged view sets the same state each frame")
        #expect(second.issued <= 248 - 71, "\(second)")
    }
}

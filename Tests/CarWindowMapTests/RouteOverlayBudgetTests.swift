import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// A route as long as a session or the C API takes, drawn zig-zagging along one street: what the
/// overlay tessellates must be bounded by what a view can show, and the driven part must still
/// end where the progress says. The checks count vertices, points and distances, never time.
@Suite("Route overlay budget")
struct RouteOverlayBudgetTests {
    static let start = GeoCoordinate(latitude: 60.1685, longitude: 24.9405)
    static let end = GeoCoordinate(latitude: 60.1950, longitude: 24.9220)

    /// `count` points along the 3 km from ``start`` to ``end``, every other one `amplitude`
    /// metres to the left and the rest to the right: no point is near the chord of its neighbours,
    /// so simplification keeps them all at street zooms.
    static func zigzag(_ count: Int, amplitude: Double = 2) -> [GeoCoordinate] {
        let metresPerDegree = 111_320.0, cosine = cos(60.18 * .pi / 180)
        let dx = (end.longitude - start.longitude) * metresPerDegree * cosine
        let dy = (end.latitude - start.latitude) * metresPerDegree
        let length = (dx * dx + dy * dy).squareRoot()
        let across = SIMD2(-dy, dx) / length
        return (0..<count).map { index in
            let t = Double(index) / Double(count - 1), side = index % 2 == 0 ? -amplitude : amplitude
            let x = dx * t + across.x * side, y = dy * t + across.y * side
            return GeoCoordinate(latitude: start.latitude + y / metresPerDegree,
                                 longitude: start.longitude + x / (metresPerDegree * cosine))
        }
    }

    static let middle = GeoCoordinate(latitude: (start.latitude + end.latitude) / 2,
                                      longitude: (start.longitude + end.longitude) / 2)

    /// Views a drive or an engine shows: the street close up, pitched and turned, the whole route,
    /// a country.
    static let cameras = [
        Camera(center: middle, zoom: 16.5), Camera(center: middle, zoom: 18, bearing: 30, pitch: 60),
        Camera(center: middle, zoom: 13), Camera(center: middle, zoom: 5),
    ]

    static func mesh(_ geometry: RouteGeometry, _ camera: Camera, width: Int = 800, height: Int = 480) -> RouteWindowMesh {
        let transform = MapTransform(camera: camera, width: width, height: height)
        return RouteWindowMesh(geometry, window: RouteWindowMesh.window(around: RouteWindowMesh.viewBox(transform)),
                               zoom: camera.zoom)
    }

    /// Before, the whole route was tessellated: about 15 vertices a point of a zig-zag, 1.5
    /// million for 100,000 points and 15 million for a million, drawn every frame.
    @Test(arguments: [100_000, 1_000_000])
    func aZigZagRouteTessellatesABoundedMesh(count: Int) {
        let geometry = RouteGeometry(Self.zigzag(count))
        for camera in Self.cameras {
            for (width, height) in [(800, 480), (1920, 1080)] {
                let mesh = Self.mesh(geometry, camera, width: width, height: height)
                let vertices = mesh.tessellation.vertices.count
                print("\(count) points at zoom \(camera.zoom), pitch \(camera.pitch), \(width)x\(height): "
                      + "\(mesh.pointIndices.count) drawn, \(vertices) vertices, \(mesh.simplificationWork) distances")
                #expect(vertices > 0 && vertices < 100_000, "\(vertices) vertices at \(camera)")
                #expect(mesh.pointIndices.count <= RouteWindowMesh.drawnPointLimit)
                #expect(mesh.simplificationWork <= (GeoJSONData.maximumSplitDepth + 1) * RouteWindowMesh.simplifiedPointLimit)
            }
        }
    }

    /// What the old overlay made of the 100,000-point zig-zag: the figure the bound above replaces.
    @Test func theWholeZigZagWouldTakeOverAMillionVertices() {
        let geometry = RouteGeometry(Self.zigzag(100_000))
        var whole = LineTessellation()
        let origin = geometry.world[0]
        whole.addLine(geometry.world.map { point in
            let local = (point - origin) * RouteWindowMesh.unitsPerWorld
            return SIMD2(Float(local.x), Float(local.y))
        }, join: .round, cap: .round)
        print("the whole 100,000-point zig-zag tessellated: \(whole.vertices.count) vertices, \(whole.indices.count) indices")
        #expect(whole.vertices.count > 1_000_000)
    }

    /// A route with curves and wiggles the simplification drops at an overview zoom: the driven
    /// part still ends where the progress says, within the simplification's tolerance.
    @Test(arguments: [13.0, 16.5])
    func theProgressSplitLandsAtItsMetresOnASimplifiedRoute(zoom: Double) throws {
        let route = (0..<20_000).map { index in
            let t = Double(index) / 19_999
            // A long bend with 30 cm waves, and a zig-zag stretch in the middle.
            let wiggle = 0.3e-5 * sin(Double(index) * 0.05)
            let zig = (9_000..<11_000).contains(index) ? (index % 2 == 0 ? 4e-5 : -4e-5) : 0
            return GeoCoordinate(latitude: 60.16 + 0.03 * t + 0.004 * sin(t * 9) + wiggle,
                                 longitude: 24.90 + 0.06 * t + zig)
        }
        let geometry = RouteGeometry(route)
        let camera = Camera(center: route[10_000], zoom: zoom)
        let mesh = Self.mesh(geometry, camera)
        print("zoom \(zoom): \(mesh.pointIndices.count) of 20,000 points drawn")
        #expect(mesh.pointIndices.count < RouteWindowMesh.drawnPointLimit, "simplified, not thinned")
        let pixelsPerWorld = MapTransform.tileSize * exp2(zoom)
        // The tolerance is a quarter pixel a level up: an eighth of a pixel here.
        let tolerance = RouteWindowMesh.tolerancePixels / 2
        let total = geometry.totalMetres
        var checked = 0
        for fraction in [0.001, 0.1, 0.173, 0.45, 0.4999, 0.5, 0.55, 0.9, 0.999] {
            let metres = total * fraction
            let exact = geometry.worldPoint(atMetres: metres)
            let units = mesh.trimUnits(atMetres: metres, of: geometry)
            guard units.isFinite, units > 0, units < mesh.totalUnits else { continue }
            let drawn = try #require(mesh.worldPoint(atUnits: units, of: geometry))
            let miss = ((drawn - exact) * (drawn - exact)).sum().squareRoot() * pixelsPerWorld
            #expect(miss <= tolerance + 1e-6, "\(Int(metres)) m: the split is \(miss) px from the route's point")
            checked += 1
        }
        #expect(checked >= 3, "the view shows the split for \(checked) of the progresses")
    }

    /// Two points: nothing to simplify or cut, and the split is where the metres say, exactly.
    @Test func aStraightRouteSplitsExactlyAndDrawsWhole() throws {
        let route = [Self.start, GeoCoordinate(latitude: 60.1700, longitude: 24.9395)]
        let geometry = RouteGeometry(route)
        let mesh = Self.mesh(geometry, Camera(center: route[0], zoom: 16.5, bearing: 60, pitch: 40))
        #expect(mesh.pointIndices == [0, 1])
        var whole = LineTessellation()
        whole.addLine(route.map { coordinate in
            let local = (WebMercator.project(coordinate) - mesh.origin) * RouteWindowMesh.unitsPerWorld
            return SIMD2(Float(local.x), Float(local.y))
        }, join: .round, cap: .round)
        #expect(mesh.tessellation.vertices == whole.vertices && mesh.tessellation.indices == whole.indices)
        let length = geometry.totalMetres
        for metres in [length * 0.25, length * 0.5, length * 0.8] {
            let units = mesh.trimUnits(atMetres: metres, of: geometry)
            #expect(abs(units / mesh.totalUnits - metres / length) < 1e-6)
        }
        #expect(mesh.trimUnits(atMetres: 0, of: geometry) == 0)
        #expect(mesh.trimUnits(atMetres: length * 2, of: geometry) == mesh.totalUnits)
    }

    /// A window serves the view until the view leaves it or zooms a level past it; a view away
    /// from the route gets an empty mesh, not the route.
    @Test func aWindowServesUntilTheViewLeavesIt() {
        let geometry = RouteGeometry(Self.zigzag(10_000))
        let camera = Camera(center: Self.middle, zoom: 16)
        let transform = MapTransform(camera: camera, width: 800, height: 480)
        let mesh = Self.mesh(geometry, camera)
        #expect(mesh.serves(view: RouteWindowMesh.viewBox(transform), zoom: 16.9))
        #expect(!mesh.serves(view: RouteWindowMesh.viewBox(transform), zoom: 17.1))
        var moved = camera
        moved.center = GeoCoordinate(latitude: Self.middle.latitude + 0.02, longitude: Self.middle.longitude + 0.05)
        let away = MapTransform(camera: moved, width: 800, height: 480)
        #expect(!mesh.serves(view: RouteWindowMesh.viewBox(away), zoom: 16))
        #expect(Self.mesh(geometry, moved).tessellation.vertices.isEmpty)
    }

    /// A million-point route through the renderer: the first frame with it prepares it (what a
    /// closing session may wait for), later frames draw the bounded mesh, and a camera a view
    /// away makes a new one. The figures are printed, not judged.
    @Test func aMillionPointRouteRendersFrames() async throws {
        let route = Self.zigzag(1_000_000)
        let (context, renderer) = try await makeRenderer(camera: Camera(center: Self.middle, zoom: 16.5, pitch: 45))
        _ = await renderer.renderWhenLoaded()
        await renderer.setOverlays(MapOverlays(route: route, routeProgress: 1_500))
        let first = await renderer.renderFrame().issueTime
        var times: [Duration] = []
        for step in 0..<5 {
            var camera = await renderer.camera
            camera.center = GeoCoordinate(latitude: camera.center.latitude + 0.0002 * Double(step), longitude: camera.center.longitude)
            await renderer.setCamera(camera)
            await renderer.loadTiles()
            times.append(await renderer.renderFrame().issueTime)
        }
        print("a million-point route: its first frame issued in \(first), then \(times)")
        await context.shutdown()
    }
}

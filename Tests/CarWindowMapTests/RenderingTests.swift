import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Frames drawn on llvmpipe against committed PNGs.
///
/// Tolerance: a pixel differs when a channel is more than 12/255 apart, and a view passes
/// while at most 0.5% of its pixels differ. Repeated renders here are identical, so this leaves
/// room for other LLVM and Mesa versions' rounding of anti-aliased edges, while a changed colour,
/// a missing layer or a moved label breaks it (see `comparisonCatchesAChangedStyle`).
/// Run with CARWINDOW_UPDATE_GOLDEN=1 to rewrite the PNGs after an intended change.
@Suite(.serialized) struct RenderingTests {
    static let channelTolerance = 12
    static let allowedDifferingFraction = 0.005

    struct View: Sendable, CustomStringConvertible {
        var name: String
        var style = "day"
        var camera: Camera
        var overlays = MapOverlays()
        var description: String { name }
    }

    static let route = [
        GeoCoordinate(latitude: 60.16860, longitude: 24.93800), GeoCoordinate(latitude: 60.16950, longitude: 24.94020),
        GeoCoordinate(latitude: 60.17030, longitude: 24.94120), GeoCoordinate(latitude: 60.17120, longitude: 24.94330),
    ]

    static let views: [View] = [
        View(name: "flat", camera: Camera(center: helsinki, zoom: 16)),
        View(name: "pitched", camera: Camera(center: helsinki, zoom: 16, bearing: 30, pitch: 45)),
        View(name: "rotated", camera: Camera(center: helsinki, zoom: 15.3, bearing: -40)),
        View(name: "night", style: "night", camera: Camera(center: helsinki, zoom: 16.5, bearing: 20, pitch: 50)),
        View(name: "route", camera: Camera(center: route[1], zoom: 16.5, bearing: 60, pitch: 40),
             overlays: MapOverlays(route: route, vehicle: VehicleMarker(coordinate: route[1], heading: 60))),
    ]

    static func render(_ view: View, styleOverride: Style? = nil) async throws -> RGBAImage {
        let (context, renderer) = try await makeRenderer(style: view.style, camera: view.camera)
        if let styleOverride { await renderer.setStyle(styleOverride) }
        await renderer.setOverlays(view.overlays)
        _ = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        await context.shutdown()
        return image
    }

    @Test(arguments: views)
    func viewMatchesGolden(_ view: View) async throws {
        let image = try await Self.render(view)
        let file = TestPaths.golden.appendingPathComponent("\(view.name).png")
        if ProcessInfo.processInfo.environment["CARWINDOW_UPDATE_GOLDEN"] == "1" {
            try image.writePNG(to: file)
            return
        }
        let golden = try RGBAImage(contentsOfPNG: file)
        let difference = try #require(image.difference(from: golden, tolerance: Self.channelTolerance))
        if difference.differingFraction > Self.allowedDifferingFraction {
            let actual = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-\(view.name)-actual.png")
            try? image.writePNG(to: actual)
            Issue.record("\(view.name): \(difference); the frame drawn is at \(actual.path)")
        }
    }

    /// The comparison must fail when something visible changes: the same view with primary
    /// roads a little redder is over the tolerance.
    @Test func comparisonCatchesAChangedStyle() async throws {
        let view = Self.views[0]
        var json = try String(contentsOf: TestPaths.style("day"), encoding: .utf8)
        let primary = try #require(json.range(of: "#fbcf7e"))
        json.replaceSubrange(primary, with: "#fbaf8e")
        let changed = try Style(data: Data(json.utf8))
        let image = try await Self.render(view, styleOverride: changed)
        let golden = try RGBAImage(contentsOfPNG: TestPaths.golden.appendingPathComponent("flat.png"))
        let difference = try #require(image.difference(from: golden, tolerance: Self.channelTolerance))
        #expect(difference.differingFraction > Self.allowedDifferingFraction, "\(difference)")
    }

    /// The driven part of a route is cut off as it is drawn: the whole route with the progress
    /// at the car looks like the remaining route drawn from the car (what engines sent before),
    /// within the golden tolerance; the progress hides something; past the end hides it all.
    @Test func aRouteTrimmedAtTheCarLooksLikeTheRemainingRoute() async throws {
        // The day style without its layer for the driven part, which this is about hiding.
        var style = try Style(contentsOf: TestPaths.style("day"))
        style.layers.removeAll { $0.id == "route-driven" }
        let car = VehicleMarker(coordinate: Self.route[1], heading: 60)
        var view = Self.views[4]
        let driven = Self.route[0].metres(to: Self.route[1])
        view.overlays = MapOverlays(route: Self.route, routeProgress: driven, vehicle: car)
        let trimmed = try await Self.render(view, styleOverride: style)
        view.overlays = MapOverlays(route: Array(Self.route[1...]), vehicle: car)
        let remaining = try await Self.render(view, styleOverride: style)
        view.overlays = MapOverlays(route: Self.route, vehicle: car)
        let whole = try await Self.render(view, styleOverride: style)
        view.overlays = MapOverlays(route: Self.route, routeProgress: 1_000_000, vehicle: car)
        let pastTheEnd = try await Self.render(view, styleOverride: style)
        view.overlays = MapOverlays(vehicle: car)
        let none = try await Self.render(view, styleOverride: style)

        let likeRemaining = try #require(trimmed.difference(from: remaining, tolerance: Self.channelTolerance))
        print("route trimmed at \(Int(driven)) m: against the remaining route \(likeRemaining); "
              + "against the whole route \(String(describing: trimmed.difference(from: whole, tolerance: Self.channelTolerance)))")
        #expect(likeRemaining.differingFraction <= Self.allowedDifferingFraction, "\(likeRemaining)")
        let hidden = try #require(trimmed.difference(from: whole, tolerance: Self.channelTolerance))
        #expect(hidden.differingFraction > Self.allowedDifferingFraction, "the driven \(Int(driven)) m still drawn: \(hidden)")
        #expect(pastTheEnd.pixels == none.pixels, "a route driven to its end is not drawn")
    }

    /// Traffic along the route: the stretch between the second and third points is severe, so
    /// the style's dark red shows at its middle and the route's blue at the middle of the
    /// stretch after it; without traffic the same spot is blue. Probed pixel by pixel at the
    /// route's centre line, with a 40-level tolerance on each channel.
    @Test func congestionColoursItsStretchOfTheRoute() async throws {
        let route = Self.route
        let start = route[0].metres(to: route[1]), end = start + route[1].metres(to: route[2])
        var view = View(name: "congestion", camera: Camera(center: route[2], zoom: 15.5))
        view.overlays = MapOverlays(route: route)
        let plain = try await Self.render(view)
        view.overlays.routeCongestion = RouteCongestion.normalized([
            RouteCongestion(startMetres: start, endMetres: end, level: .severe)]).kept
        let busy = try await Self.render(view)
        let transform = MapTransform(camera: view.camera, width: busy.width, height: busy.height)
        func probe(_ a: GeoCoordinate, _ b: GeoCoordinate) throws -> (x: Int, y: Int) {
            let middle = GeoCoordinate(latitude: (a.latitude + b.latitude) / 2, longitude: (a.longitude + b.longitude) / 2)
            let point = try #require(transform.screenPoint(for: middle))
            try #require(point.x >= 0 && point.y >= 0 && point.x < Double(busy.width) && point.y < Double(busy.height))
            return (Int(point.x), Int(point.y))
        }
        func near(_ pixel: SIMD4<UInt8>, _ hex: (Int, Int, Int)) -> Bool {
            abs(Int(pixel.x) - hex.0) <= 40 && abs(Int(pixel.y) - hex.1) <= 40 && abs(Int(pixel.z) - hex.2) <= 40
        }
        let severe = (0xa3, 0x18, 0x2f), blue = (0x3f, 0x99, 0xff)
        let congested = try probe(route[1], route[2]), free = try probe(route[2], route[3])
        #expect(near(busy.pixel(x: congested.x, y: congested.y), severe), "\(busy.pixel(x: congested.x, y: congested.y))")
        #expect(near(plain.pixel(x: congested.x, y: congested.y), blue), "\(plain.pixel(x: congested.x, y: congested.y))")
        #expect(near(busy.pixel(x: free.x, y: free.y), blue), "\(busy.pixel(x: free.x, y: free.y))")
    }

    /// A `line-gradient` on the route's layer colours it by the share of the route: red at the
    /// start, blue at the destination, a mix half way; traffic from `line-color` gives way to
    /// it. Probed at the centre line as above, 40 levels a channel.
    @Test func aLineGradientColoursTheRouteByItsProgress() async throws {
        let route = Self.route
        var style = try Style(contentsOf: TestPaths.style("day"))
        let gradient = try Style(data: Data("""
            {"version": 8, "sources": {"carwindow-route": {"type": "geojson", "data": {"type": "FeatureCollection", "features": []}}},
             "layers": [{"id": "route", "type": "line", "source": "carwindow-route",
                         "paint": {"line-width": 12, "line-gradient": ["interpolate", ["linear"], ["line-progress"],
                                                                       0, "#ff0000", 1, "#0000ff"]}}]}
            """.utf8))
        #expect(gradient.warnings.isEmpty, "\(gradient.warnings)")
        let index = try #require(style.layers.firstIndex { $0.id == "route" })
        style.layers[index].paint = gradient.layers[0].paint
        let middle = GeoCoordinate(latitude: (route[0].latitude + route[3].latitude) / 2,
                                   longitude: (route[0].longitude + route[3].longitude) / 2)
        var view = View(name: "gradient", camera: Camera(center: middle, zoom: 14.6))
        view.overlays = MapOverlays(route: route)
        // Severe traffic over the whole route: the gradient still shows.
        view.overlays.routeCongestion = RouteCongestion.normalized([
            RouteCongestion(startMetres: 0, endMetres: 10_000, level: .severe)]).kept
        let image = try await Self.render(view, styleOverride: style)
        let transform = MapTransform(camera: view.camera, width: image.width, height: image.height)
        let lengths = zip(route, route.dropFirst()).map { $0.metres(to: $1) }
        let total = lengths.reduce(0, +)
        /// The pixel at `share` of the route's length, with the colour the gradient gives there.
        func probe(_ share: Double) throws -> (pixel: SIMD4<UInt8>, expected: (Int, Int, Int)) {
            var left = share * total, segment = 0
            while segment < lengths.count - 1, left > lengths[segment] { left -= lengths[segment]; segment += 1 }
            let a = route[segment], b = route[segment + 1], t = left / lengths[segment]
            let point = try #require(transform.screenPoint(for: GeoCoordinate(
                latitude: a.latitude + (b.latitude - a.latitude) * t, longitude: a.longitude + (b.longitude - a.longitude) * t)))
            try #require(point.x >= 0 && point.y >= 0 && point.x < Double(image.width) && point.y < Double(image.height))
            return (image.pixel(x: Int(point.x), y: Int(point.y)), (Int(255 * (1 - share)), 0, Int(255 * share)))
        }
        for share in [0.1, 0.5, 0.9] {
            let (pixel, expected) = try probe(share)
            #expect(abs(Int(pixel.x) - expected.0) <= 40 && Int(pixel.y) <= 40 && abs(Int(pixel.z) - expected.2) <= 40,
                    "at \(share) of the route: \(pixel), expected about \(expected)")
        }
    }

    @Test func congestionStretchesAreSortedClippedMergedAndChecked() {
        let stretches = [
            RouteCongestion(startMetres: 300, endMetres: 400, level: .heavy),
            RouteCongestion(startMetres: -50, endMetres: 100, level: .low),
            RouteCongestion(startMetres: 100, endMetres: 200, level: .low),
            RouteCongestion(startMetres: 150, endMetres: 350, level: .severe),
            RouteCongestion(startMetres: .nan, endMetres: 10, level: .heavy),
            RouteCongestion(startMetres: 500, endMetres: 450, level: .heavy),
            RouteCongestion(startMetres: 0, endMetres: .infinity, level: .heavy),
        ]
        let (kept, dropped) = RouteCongestion.normalized(stretches)
        #expect(dropped == 3)
        #expect(kept == [RouteCongestion(startMetres: 0, endMetres: 200, level: .low),
                         RouteCongestion(startMetres: 200, endMetres: 350, level: .severe),
                         RouteCongestion(startMetres: 350, endMetres: 400, level: .heavy)])
        let many = (0..<(RouteCongestion.maximumCount + 5)).map {
            RouteCongestion(startMetres: Double($0), endMetres: Double($0) + 1, level: $0 % 2 == 0 ? .heavy : .low)
        }
        let capped = RouteCongestion.normalized(many)
        #expect(capped.kept.count == RouteCongestion.maximumCount && capped.dropped == 5)
    }

    /// The style draws the route: its layer for the driven part shows that part in its own
    /// colour, and a style without route layers gets the built-in look.
    @Test func theStylesRouteLayersDrawTheDrivenPartAndTheRest() async throws {
        let car = VehicleMarker(coordinate: Self.route[1], heading: 60)
        var view = Self.views[4]
        view.overlays = MapOverlays(route: Self.route, routeProgress: Self.route[0].metres(to: Self.route[1]), vehicle: car)
        let styled = try await Self.render(view)
        var plain = try Style(contentsOf: TestPaths.style("day"))
        plain.layers.removeAll { $0.source == "carwindow-route" }
        let builtIn = try await Self.render(view, styleOverride: plain)
        // On the driven part a little behind the car: the style's grey there, the map without it.
        let middle = GeoCoordinate(latitude: Self.route[0].latitude * 0.15 + Self.route[1].latitude * 0.85,
                                   longitude: Self.route[0].longitude * 0.15 + Self.route[1].longitude * 0.85)
        let point = try #require(MapTransform(camera: view.camera, width: styled.width, height: styled.height)
            .screenPoint(for: middle))
        try #require(point.x >= 0 && point.y >= 0 && point.x < Double(styled.width) && point.y < Double(styled.height),
                     "\(point) is off the \(styled.width)x\(styled.height) picture")
        func isDrivenGrey(_ image: RGBAImage) -> Bool {
            let p = image.pixel(x: Int(point.x), y: Int(point.y))
            let (r, g, b) = (Int(p.x), Int(p.y), Int(p.z))
            return abs(r - 0x9a) < 30 && abs(g - 0xa4) < 30 && abs(b - 0xb1) < 30 && b > r
        }
        #expect(isDrivenGrey(styled))
        #expect(!isDrivenGrey(builtIn))
        let difference = try #require(styled.difference(from: builtIn, tolerance: Self.channelTolerance))
        #expect(difference.differingFraction > Self.allowedDifferingFraction, "\(difference)")
    }

    /// `fill-translate` moves buildings by its pixels at any zoom; anchored to the viewport it
    /// stays on the screen's axes when the map turns.
    @Test func translatedFillsMoveByTheirPixels() async throws {
        func buildings(_ translate: String, anchor: String = "map") throws -> Style {
            try Style(data: Data("""
            {"version": 8, "sources": {"openmaptiles": {"type": "vector", "url": "pmtiles://helsinki.pmtiles"}},
             "layers": [{"id": "bg", "type": "background", "paint": {"background-color": "#ffffff"}},
                        {"id": "b", "type": "fill", "source": "openmaptiles", "source-layer": "building",
                         "paint": {"fill-color": "#000000", "fill-antialias": false, "fill-translate": \(translate),
                                   "fill-translate-anchor": "\(anchor)"}}]}
            """.utf8))
        }
        func render(_ style: Style, bearing: Double = 0) async throws -> RGBAImage {
            try await renderOnce(style, camera: Camera(center: helsinki, zoom: 16, bearing: bearing))
        }
        /// Pixels whose darkness differs between `a` at (x, y) and `b` at (x + dx, y + dy).
        func mismatches(_ a: RGBAImage, _ b: RGBAImage, dx: Int, dy: Int) -> Int {
            var count = 0
            for y in 20..<(a.height - 20) {
                for x in 20..<(a.width - 20) where (a.pixel(x: x, y: y).x < 128) != (b.pixel(x: x + dx, y: y + dy).x < 128) {
                    count += 1
                }
            }
            return count
        }
        let plain = try await render(try buildings("[0, 0]"))
        let moved = try await render(try buildings("[8, -4]"))
        let pixels = (plain.width - 40) * (plain.height - 40)
        #expect(mismatches(plain, plain, dx: 8, dy: -4) > pixels / 20, "the view must have buildings to move")
        #expect(mismatches(plain, moved, dx: 8, dy: -4) < pixels / 200)
        // Turned 90 degrees: 8 px to the right of the screen is 8 px south on the map.
        let viewport = try await render(try buildings("[8, 0]", anchor: "viewport"), bearing: 90)
        let mapSouth = try await render(try buildings("[0, 8]"), bearing: 90)
        #expect(mismatches(viewport, mapSouth, dx: 0, dy: 0) < pixels / 200)
        #expect(mismatches(viewport, try await render(try buildings("[8, 0]"), bearing: 90), dx: 0, dy: 0) > pixels / 100)
    }

    @Test func framesHaveTheAttributionAndControls() async throws {
        let (context, renderer) = try await makeRenderer(width: 640, height: 360)
        let controls = await renderer.controls
        #expect(controls.map(\.id) == [1, 2, 3])
        #expect(controls.allSatisfy { $0.rect.x + $0.rect.width <= 640 && $0.rect.y + $0.rect.height <= 360 })
        await renderer.setOverlays(MapOverlays(showsControls: false))
        #expect(await renderer.controls.isEmpty)
        await context.shutdown()
    }

    @Test(arguments: [(1, 1), (854, 480), (1920, 1080), (333, 777)])
    func anySizeRenders(width: Int, height: Int) async throws {
        let (context, renderer) = try await makeRenderer(width: width, height: height)
        let report = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        #expect(image.width == width && image.height == height)
        #expect(report.tilesDrawn > 0)
        await context.shutdown()
    }

    @Test func impossibleSizesAreTypedErrors() async throws {
        let context = try await RenderContext()
        let source = try openTileSource(at: TestPaths.tiles)
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        let style = try Style(contentsOf: TestPaths.style("day"))
        for (width, height) in [(0, 480), (800, -1), (100_000, 10)] {
            await #expect(throws: MapRenderError.self) {
                _ = try await MapRenderer(context: context, width: width, height: height, style: style, tiles: source,
                                          fonts: fonts, camera: Camera(center: helsinki, zoom: 16))
            }
        }
        await context.shutdown()
    }

    @Test func glWorkRunsOnTheRenderThread() async throws {
        let (context, renderer) = try await makeRenderer()
        #expect(await renderer.isOnRenderThread())
        #expect(!context.thread.isCurrent)
        await context.shutdown()
    }

    @Test func theContextReportsItsPlatform() async throws {
        let context = try await RenderContext()
        #expect(!context.info.renderer.isEmpty)
        #expect(context.info.version.contains("OpenGL ES 3"))
        await context.shutdown()
    }

    @Test func forcingAMissingPlatformListsWhatWasTried() async throws {
        // No machine CI runs on has a render node, so forcing GBM fails with the reason.
        guard !FileManager.default.fileExists(atPath: "/dev/dri") else { return }
        await #expect {
            _ = try await RenderContext(platform: .gbm)
        } throws: { error in
            guard case GLSetupError.noUsablePlatform(let attempts) = error else { return false }
            return attempts.map(\.platform) == [.gbm] && attempts[0].failure.contains("renderD")
        }
    }
}

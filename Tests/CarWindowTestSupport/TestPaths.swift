import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowMap

/// Paths of the package's own files, found from this source file (tests never read ../shared).
enum TestPaths {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let assets = packageRoot.appendingPathComponent("assets")
    static let tiles = assets.appendingPathComponent("helsinki.pmtiles")
    static let fonts = assets.appendingPathComponent("fonts")
    static func style(_ name: String) -> URL { assets.appendingPathComponent("styles/\(name).json") }
    /// Test data shared by the test targets, outside every target's sources.
    static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures")
    static let golden = packageRoot.appendingPathComponent("Tests/Golden")
}

/// Central Helsinki, inside the bundled data.
let helsinki = GeoCoordinate(latitude: 60.1699, longitude: 24.9415)

/// A renderer over the bundled data on a fresh context; the caller shuts the context down.
func makeRenderer(style: String = "day", width: Int = 400, height: Int = 240,
                  camera: Camera = Camera(center: helsinki, zoom: 16),
                  on givenContext: RenderContext? = nil) async throws -> (RenderContext, MapRenderer) {
    let context: RenderContext
    if let givenContext { context = givenContext } else { context = try await RenderContext() }
    let renderer = try await MapRenderer(
        context: context, width: width, height: height, style: try Style(contentsOf: TestPaths.style(style)),
        tiles: try openTileSource(at: TestPaths.tiles), fonts: try FontLibrary(directory: TestPaths.fonts),
        camera: camera)
    return (context, renderer)
}

/// One picture of `style` over the bundled data without controls, once its tiles are loaded,
/// on a context of its own.
func renderOnce(_ style: Style, camera: Camera) async throws -> RGBAImage {
    let (context, renderer) = try await makeRenderer(camera: camera)
    await renderer.setStyle(style)
    await renderer.setOverlays(MapOverlays(showsControls: false))
    _ = await renderer.renderWhenLoaded()
    let image = await renderer.readPixels()
    await context.shutdown()
    return image
}

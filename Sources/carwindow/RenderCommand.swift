import ArgumentParser
import CarWindow
import Foundation

/// `carwindow render`: one frame to a PNG.
struct RenderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render", abstract: "Renders one view of the map to a PNG file.")

    @Option(help: "Tile source: .pmtiles, .mbtiles or a z/x/y folder (default: the bundled Helsinki tiles).")
    var tiles: String?
    @Option(help: "MapLibre style JSON, or 'day' / 'night' for the bundled styles.")
    var style = "day"
    @Option(help: "Latitude of the centre.") var lat = 60.1699
    @Option(help: "Longitude of the centre.") var lon = 24.9415
    @Option(help: "Zoom level (MapLibre's, 512-pixel tiles).") var zoom = 16.0
    @Option(help: "Degrees clockwise from north that point up.") var bearing = 0.0
    @Option(help: "Camera tilt in degrees, 0-60.") var pitch = 0.0
    @Option(help: "Image size as WIDTHxHEIGHT.") var size = "800x480"
    @Option(help: "Output PNG path.") var out = "map.png"
    @Option(help: "Frames to draw for timing (the PNG shows the last).") var frames = 1
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?
    @Flag(help: "Hide the zoom and recenter buttons.") var noControls = false
    @Option(help: "Draw a vehicle at this heading (degrees) at the centre.") var vehicleHeading: Double?

    func run() async throws {
        let (width, height) = try parseSize(size)
        let setup = try await MapSetup(tiles: tiles, style: style, width: width, height: height, platform: platform,
                                       camera: Camera(center: GeoCoordinate(latitude: lat, longitude: lon), zoom: zoom,
                                                      bearing: bearing, pitch: pitch))
        print(setup.context.info)
        var overlays = MapOverlays(showsControls: !noControls)
        if let vehicleHeading {
            overlays.vehicle = VehicleMarker(coordinate: GeoCoordinate(latitude: lat, longitude: lon), heading: vehicleHeading)
        }
        await setup.renderer.setOverlays(overlays)
        let first = await setup.renderer.renderWhenLoaded()
        await setup.renderer.finish()
        var times: [Double] = []
        var issue = 0.0
        for _ in 1..<max(frames, 1) {
            let start = DispatchTime.now().uptimeNanoseconds
            issue += await setup.renderer.renderFrame().encodeMilliseconds
            await setup.renderer.finish()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        let image = await setup.renderer.readPixels()
        try image.writePNG(to: URL(fileURLWithPath: out))
        if times.isEmpty {
            print(String(format: "first frame (tiles loaded): %.2f ms to issue, %d tiles, %d labels", first.encodeMilliseconds,
                         first.tilesDrawn, first.labels))
        } else {
            let sorted = times.sorted()
            print(String(format: "%d frames: %.2f ms per frame (median %.2f, draw and finish; %.2f ms issuing), %d tiles, %d labels",
                         times.count, times.reduce(0, +) / Double(times.count), sorted[sorted.count / 2],
                         issue / Double(times.count), first.tilesDrawn, first.labels))
        }
        print("wrote \(out) (\(width)x\(height))")
        await setup.context.shutdown()
    }
}

/// Parses "800x480".
func parseSize(_ text: String) throws -> (Int, Int) {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0,
          width <= 8192, height <= 8192 else {
        throw ValidationError("--size must be WIDTHxHEIGHT with each side 1...8192, like 800x480; got '\(text)'")
    }
    return (width, height)
}

/// The context, style, tiles and renderer every command starts from.
struct MapSetup {
    let context: RenderContext
    let renderer: MapRenderer

    init(tiles: String?, style: String, width: Int, height: Int, platform: String?, camera: Camera) async throws {
        let tileURL = tiles.map { URL(fileURLWithPath: $0) } ?? Assets.tiles
        let styleURL = ["day", "night"].contains(style) ? Assets.style(style) : URL(fileURLWithPath: style)
        let source = try openTileSource(at: tileURL)
        let parsedStyle = try Style(contentsOf: styleURL)
        for warning in parsedStyle.warnings { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
        let fonts = try FontLibrary(directory: Assets.fonts)
        var forced: EGLPlatform?
        if let platform {
            guard let value = EGLPlatform(rawValue: platform) else {
                throw ValidationError("--platform must be gbm, device or surfaceless; got '\(platform)'")
            }
            forced = value
        }
        context = try await RenderContext(platform: forced)
        renderer = try await MapRenderer(context: context, width: width, height: height, style: parsedStyle,
                                         tiles: source, fonts: fonts, camera: camera)
    }
}

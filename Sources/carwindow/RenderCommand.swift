import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc
import Logging
import SystemPackage

/// `carwindow render`: one frame to a PNG.
struct RenderCommand: AsyncParsableCommand {
    // Coordinates and angles are read unconditionally, so "--bearing -40" is a value and not an
    // unknown option "-40".
    static let configuration = CommandConfiguration(
        commandName: "render", abstract: "Renders one view of the map to a PNG file.",
        discussion: """
        The PNG is written under a temporary name beside --out and renamed into place when \
        complete, so a reader never sees half a picture and two renders to one path never mix.
        """)

    @Option(help: "Tile source: .pmtiles, .mbtiles or a z/x/y folder (default: the sources the style names, local or on servers; the bundled Helsinki tiles for day and night).")
    var tiles: String?
    @Option(help: "MapLibre style JSON, or 'day' / 'night' for the bundled styles.")
    var style = "day"
    @Option(name: .customLong("source"),
            help: "A tile source of its own for one of the style's vector sources, as ID=PATH (.pmtiles, .mbtiles or a z/x/y folder); repeatable. The style's other vector sources draw from --tiles.")
    var sources: [String] = []
    @Option(parsing: .unconditional, help: "Latitude of the centre, -85.0511-85.0511 (Web Mercator's limit).") var lat = 60.1699
    @Option(parsing: .unconditional, help: "Longitude of the centre, -180-180.") var lon = 24.9415
    @Option(help: "Zoom level 0-22 (MapLibre's, 512-pixel tiles).") var zoom = 16.0
    @Option(parsing: .unconditional, help: "Degrees clockwise from north that point up, -360-360.") var bearing = 0.0
    @Option(help: "Camera tilt in degrees, 0-60.") var pitch = 0.0
    @Option(help: "Image size as WIDTHxHEIGHT (each side 1-8192).") var size = "800x480"
    @Option(help: "Output PNG path (its folder must exist).") var out = "map.png"
    @Option(help: "Frames to draw for timing, 1-10000 (the PNG shows the last).") var frames = 1
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?
    @Flag(help: "Hide the zoom and recenter buttons.") var noControls = false
    @Option(help: "Show labels in this language where the data has names in it (name:sv...), e.g. sv, SV-SE, zh-TW; the style's own names elsewhere.")
    var labelLanguage: String?
    @Option(parsing: .unconditional, help: "Draw a vehicle at this heading (degrees, -360-360) at the centre.") var vehicleHeading: Double?

    func validate() throws {
        _ = try parseSize(size)
        try OptionCheck.number(lat, "--lat", in: -Camera.maximumLatitude...Camera.maximumLatitude, unit: " degrees")
        try OptionCheck.number(lon, "--lon", in: -180...180, unit: " degrees")
        try OptionCheck.number(zoom, "--zoom", in: 0...Camera.maximumZoom)
        try OptionCheck.number(bearing, "--bearing", in: -360...360, unit: " degrees")
        try OptionCheck.number(pitch, "--pitch", in: 0...Camera.maximumPitch, unit: " degrees")
        try OptionCheck.integer(frames, "--frames", in: 1...10_000)
        try OptionCheck.number(vehicleHeading, "--vehicle-heading", in: -360...360, unit: " degrees")
        _ = try eglPlatform(platform)
        _ = try parseSourceBindings(sources)
        _ = try OptionCheck.labelLanguage(labelLanguage)
    }

    func run() async throws {
        try await runCommand {
            let (width, height) = try parseSize(size)
            let outURL = URL(fileURLWithPath: out)
            try outputFolder(for: outURL, option: "--out", createIfMissing: false)
            let setup = try await MapSetup(tiles: tiles, sources: sources, style: style,
                                           labelLanguage: try OptionCheck.labelLanguage(labelLanguage),
                                           width: width, height: height, platform: platform,
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
                issue += await setup.renderer.renderFrame().issueTime.inMilliseconds
                await setup.renderer.finish()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            let image = await setup.renderer.readPixels()
            await setup.context.shutdown()
            try Self.writeWhole(image, to: outURL)
            if times.isEmpty {
                print(String(format: "first frame (tiles loaded): %.2f ms to issue, %d tiles, %d labels", first.issueTime.inMilliseconds,
                             first.tilesDrawn, first.labels))
            } else {
                let sorted = times.sorted()
                print(String(format: "%d frames: %.2f ms per frame (median %.2f, draw and finish; %.2f ms issuing), %d tiles, %d labels",
                             times.count, times.reduce(0, +) / Double(times.count), sorted[sorted.count / 2],
                             issue / Double(times.count), first.tilesDrawn, first.labels))
            }
            print("wrote \(out) (\(width)x\(height))")
            return 0
        }
    }

    /// Writes the PNG beside `url` under a temporary name, then renames it into place.
    static func writeWhole(_ image: RGBAImage, to url: URL) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).partial")
        do {
            try image.writePNG(to: temporary)
        } catch {
            unlink(temporary.path)
            throw error
        }
        guard rename(temporary.path, url.path) == 0 else {
            let error = Errno(rawValue: errno)
            unlink(temporary.path)
            throw CommandFailure(description: "cannot put the PNG at \(url.path): \(error.nameAndText); choose another path",
                                 exitStatus: ExitStatus.cannotCreate)
        }
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

/// The tiles, style and fonts a command draws with, checked and opened.
struct MapData {
    let tiles: any TileSource
    /// Tile sources bound to the style's vector source ids by `--source`.
    let sources: [String: any TileSource]
    let style: Style
    let fonts: FontLibrary

    init(tiles: String?, sources bindings: [String] = [], style: String, labelLanguage: LabelLanguage? = nil) throws {
        let tileURL = try tiles.map {
            try inputFile($0, option: "--tiles", kind: "a .pmtiles or .mbtiles file or a z/x/y tile folder", folderAllowed: true)
        }
        let isBundledStyle = ["day", "night"].contains(style)
        let styleURL = try isBundledStyle
            ? Assets.style(style) : inputFile(style, option: "--style", kind: "a MapLibre style JSON file, or day or night")
        var sources: [String: any TileSource] = [:]
        for (id, path) in try parseSourceBindings(bindings) {
            let url = try inputFile(path, option: "--source \(id)", kind: "a .pmtiles or .mbtiles file or a z/x/y tile folder",
                                    folderAllowed: true)
            sources[id] = try openTileSource(at: url)
        }
        // Warnings are printed here, once; the style's own logger would print each again.
        var style = try Style(contentsOf: styleURL, logger: Logger(label: "carwindow.style") { _ in SwiftLogNoOpLogHandler() })
        for warning in style.warnings { Console.warning("\(warning)") }
        // Another style's sprites, GeoJSON and tiles may be on servers: fetched through the disk cache.
        var fetcher: HTTPFetcher?
        if !isBundledStyle {
            let downloads = StyleResources.downloads(cacheRoot: nil)
            if let warning = downloads.warning { Console.warning(warning) }
            let fetched = StyleResources.fetch(for: style, fetcher: downloads.fetcher, into: downloads.files)
            for warning in fetched.warnings { Console.warning(warning) }
            style = fetched.style
            fetcher = downloads.fetcher
        }
        self.style = style.localizingLabels(to: labelLanguage)
        if let tileURL {
            self.tiles = try openTileSource(at: tileURL)
        } else if let fetcher {
            // Another style draws from the sources it names, local or on servers, unless they
            // cannot be opened: then the bundled tiles, with a warning.
            do {
                let opened = try StyleTileSources.open(for: self.style, fetcher: fetcher, given: sources)
                self.tiles = opened.basemap
                sources = opened.others
            } catch {
                Console.warning("\(error); drawing the bundled Helsinki tiles instead")
                self.tiles = try openTileSource(at: Assets.tiles)
            }
        } else {
            self.tiles = try openTileSource(at: Assets.tiles)
        }
        self.sources = sources
        fonts = try FontLibrary(directory: Assets.fonts)
    }
}

/// The context, style, tiles and renderer the render command starts from.
struct MapSetup {
    let context: RenderContext
    let renderer: MapRenderer

    init(tiles: String?, sources: [String], style: String, labelLanguage: LabelLanguage? = nil, width: Int, height: Int,
         platform: String?, camera: Camera) async throws {
        let data = try MapData(tiles: tiles, sources: sources, style: style, labelLanguage: labelLanguage)
        let context = try await RenderContext(platform: try eglPlatform(platform))
        do {
            renderer = try await MapRenderer(context: context, width: width, height: height, style: data.style,
                                             tiles: data.tiles, sources: data.sources, fonts: data.fonts, camera: camera)
        } catch {
            // The render thread and its GL context end before the process does: exiting with them
            // alive lets the driver's threads run into its own static destructors.
            await context.shutdown()
            throw error
        }
        self.context = context
    }
}

/// `--source` values as (style source id, path) pairs, each id once.
func parseSourceBindings(_ values: [String]) throws -> [(id: String, path: String)] {
    var bindings: [(id: String, path: String)] = []
    for value in values {
        guard let equals = value.firstIndex(of: "="), equals != value.startIndex,
              value.index(after: equals) != value.endIndex else {
            throw ValidationError("--source must be ID=PATH, the style's source id and a tile file or folder, like traffic=traffic.pmtiles; got '\(value)'")
        }
        let id = String(value[..<equals]), path = String(value[value.index(after: equals)...])
        guard !bindings.contains(where: { $0.id == id }) else {
            throw ValidationError("--source \(id)= is given twice; give each of the style's sources one tile source")
        }
        bindings.append((id: id, path: path))
    }
    return bindings
}

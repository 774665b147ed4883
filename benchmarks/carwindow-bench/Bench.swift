import ArgumentParser
import CarWindow
import Foundation

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carwindow-bench",
        abstract: "Measures CarWindow's renderer against MapLibre Native on the same style, path and views.")

    @Flag(help: "Fewer frames, for CI: under a minute.") var quick = false
    @Option(help: "Folder of MapLibre glyph PBFs (<fontstack>/<range>.pbf); default $CARWINDOW_GLYPHS. Without it the MapLibre Native side is skipped.")
    var glyphs: String?
    @Option(help: "Python with mapli and pmtiles installed, for the MapLibre Native side.") var python = "python3"
    @Option(help: "Where results (JSON, PNGs) go.") var outDir = "benchmarks/results"
    @Option(help: "Sizes to measure.") var sizes = "800x480,1280x720,1920x1080"
    @Option(help: "Sections to run: render, encode (comma-separated).") var only = "render,encode"

    func run() async throws {
        let root = packageRoot()
        let out = URL(fileURLWithPath: outDir, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let glyphFolder = glyphs ?? ProcessInfo.processInfo.environment["CARWINDOW_GLYPHS"]
        let peer = glyphFolder.map { MapLibrePeer(python: python, glyphs: $0, root: root, out: out) }
        let frames = quick ? 15 : 60
        let context = try await RenderContext()
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; \(context.info)")
        var results: [String: Any] = ["gl": context.info.description, "cores": ProcessInfo.processInfo.activeProcessorCount]

        let sections = Set(only.split(separator: ",").map(String.init))
        if sections.contains("encode") {
            results["encode"] = try await EncodeBenchmark(context: context, root: root, out: out, peer: peer,
                                                          quick: quick, sizes: try parsedSizes()).run()
        }
        guard sections.contains("render") else {
            await context.shutdown()
            try writeResults(results, to: out)
            return
        }

        // Render time along a pitched path.
        var table: [[String]] = [["size", "CarWindow ms/frame (p50, p99)", "MapLibre Native ms/frame", "ratio"]]
        var renderResults: [[String: Any]] = []
        for (width, height) in try parsedSizes() {
            let path = CameraPath.helsinki(frames: frames)
            let renderer = try await Self.makeRenderer(context: context, root: root, style: "day", width: width, height: height,
                                                  camera: path[0])
            await renderer.setOverlays(MapOverlays(showsControls: false))
            for camera in path { await renderer.setCamera(camera); _ = await renderer.renderWhenLoaded() }
            await renderer.finish()
            var times: [Double] = []
            for camera in path {
                await renderer.setCamera(camera)
                let start = DispatchTime.now().uptimeNanoseconds
                await renderer.renderFrame()
                await renderer.finish()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            if ProcessInfo.processInfo.environment["CARWINDOW_BENCH_VERBOSE"] != nil {
                print("\(width)x\(height) frame ms:", times.map { String(format: "%.1f", $0) }.joined(separator: " "))
            }
            let ours = Summary(times)
            var entry: [String: Any] = ["size": "\(width)x\(height)", "frames": frames, "carwindow_ms": ours.json]
            var peerText = "skipped (no glyphs)", ratioText = "-"
            if let peer {
                let peerTimes = try peer.timePath(path, width: width, height: height, style: root.appendingPathComponent("assets/styles/day.json"))
                let theirs = Summary(peerTimes.map(\.total))
                let png = Summary(peerTimes.compactMap(\.png))
                entry["maplibre_ms"] = theirs.json
                entry["maplibre_png_ms_upper_bound"] = png.json
                entry["ratio"] = ours.mean / theirs.mean
                peerText = String(format: "%.2f (PNG share <= %.2f)", theirs.mean, png.mean)
                ratioText = String(format: "%.2f", ours.mean / theirs.mean)
            }
            table.append(["\(width)x\(height)", String(format: "%.2f (%.2f, %.2f)", ours.mean, ours.p50, ours.p99), peerText, ratioText])
            renderResults.append(entry)
        }
        results["render"] = renderResults
        printTable(table)

        // Visual agreement. MapLibre draws fill-extrusion walls even when looking straight down;
        // CarWindow draws buildings flat there, as a navigation map should. So pitch-0 views are
        // also compared with MapLibre given the same style minus its extrusion layers, and both
        // figures are reported.
        if let peer {
            var ssimTable: [[String]] = [["view", "SSIM", "SSIM, MapLibre flat buildings at pitch 0"]]
            var raw: [Double] = [], matched: [Double] = []
            var ssimResults: [[String: Any]] = []
            for view in AgreementView.all {
                let renderer = try await Self.makeRenderer(context: context, root: root, style: view.style, width: 800, height: 480,
                                                      camera: view.camera)
                await renderer.setOverlays(MapOverlays(showsControls: false))
                _ = await renderer.renderWhenLoaded()
                let ours = await renderer.readPixels()
                try ours.writePNG(to: out.appendingPathComponent("\(view.name)-carwindow.png"))
                let styleURL = root.appendingPathComponent("assets/styles/\(view.style).json")
                let theirs = try peer.render(view, style: styleURL, suffix: "maplibre")
                let ssim = ours.structuralSimilarity(to: theirs) ?? 0
                var flatSSIM = ssim
                if view.camera.pitch == 0 {
                    let flatStyle = try withoutExtrusions(styleURL, in: out)
                    let flatTheirs = try peer.render(view, style: flatStyle, suffix: "maplibre-flat")
                    flatSSIM = ours.structuralSimilarity(to: flatTheirs) ?? 0
                }
                raw.append(ssim)
                matched.append(flatSSIM)
                ssimResults.append(["view": view.name, "ssim": ssim, "ssim_flat_buildings_at_pitch_0": flatSSIM])
                ssimTable.append([view.name, String(format: "%.4f", ssim),
                                  view.camera.pitch == 0 ? String(format: "%.4f", flatSSIM) : "(same)"])
            }
            let rawMean = raw.reduce(0, +) / Double(max(raw.count, 1))
            let matchedMean = matched.reduce(0, +) / Double(max(matched.count, 1))
            ssimTable.append(["mean", String(format: "%.4f", rawMean), String(format: "%.4f", matchedMean)])
            results["ssim"] = ssimResults
            results["ssim_mean"] = rawMean
            results["ssim_mean_flat_buildings_at_pitch_0"] = matchedMean
            printTable(ssimTable)
        }
        await context.shutdown()
        try writeResults(results, to: out)
    }

    private func parsedSizes() throws -> [(Int, Int)] {
        try sizes.split(separator: ",").map { size in
            let parts = size.split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2 else { throw ValidationError("bad size \(size)") }
            return (parts[0], parts[1])
        }
    }

    private func writeResults(_ results: [String: Any], to out: URL) throws {
        let json = try JSONSerialization.data(withJSONObject: results, options: [.prettyPrinted, .sortedKeys])
        try json.write(to: out.appendingPathComponent("results.json"))
        print("results: \(out.appendingPathComponent("results.json").path)")
    }

    private func packageRoot() -> URL {
        var directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        for _ in 0..<6 where !FileManager.default.fileExists(atPath: directory.appendingPathComponent("assets/helsinki.pmtiles").path) {
            directory.deleteLastPathComponent()
        }
        return directory
    }

    static func makeRenderer(context: RenderContext, root: URL, style: String, width: Int, height: Int,
                              camera: Camera) async throws -> MapRenderer {
        try await MapRenderer(
            context: context, width: width, height: height,
            style: try Style(contentsOf: root.appendingPathComponent("assets/styles/\(style).json")),
            tiles: try openTileSource(at: root.appendingPathComponent("assets/helsinki.pmtiles")),
            fonts: try FontLibrary(directory: root.appendingPathComponent("assets/fonts")), camera: camera)
    }
}

/// A copy of the style with its fill-extrusion layers hidden.
func withoutExtrusions(_ style: URL, in folder: URL) throws -> URL {
    guard var json = try JSONSerialization.jsonObject(with: Data(contentsOf: style)) as? [String: Any],
          let layers = json["layers"] as? [[String: Any]] else { throw ValidationError("cannot read \(style.path)") }
    json["layers"] = layers.map { layer -> [String: Any] in
        guard layer["type"] as? String == "fill-extrusion" else { return layer }
        var hidden = layer
        var layout = layer["layout"] as? [String: Any] ?? [:]
        layout["visibility"] = "none"
        hidden["layout"] = layout
        return hidden
    }
    let file = folder.appendingPathComponent(style.deletingPathExtension().lastPathComponent + "-flat-buildings.json")
    try JSONSerialization.data(withJSONObject: json).write(to: file)
    return file
}

/// Mean and percentiles of milliseconds.
struct Summary {
    var mean = 0.0, p50 = 0.0, p99 = 0.0

    init(_ values: [Double]) {
        guard !values.isEmpty else { return }
        let sorted = values.sorted()
        mean = values.reduce(0, +) / Double(values.count)
        p50 = sorted[sorted.count / 2]
        p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    var json: [String: Double] { ["mean": mean, "p50": p50, "p99": p99] }
}

func printTable(_ rows: [[String]]) {
    let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
    for (index, row) in rows.enumerated() {
        print(zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: " | "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-")) }
    }
    print()
}

/// The fixed pitched drive across central Helsinki every run measures.
enum CameraPath {
    static func helsinki(frames: Int) -> [Camera] {
        let start = GeoCoordinate(latitude: 60.1668, longitude: 24.9385)
        let end = GeoCoordinate(latitude: 60.1745, longitude: 24.9495)
        return (0..<frames).map { i in
            let t = Double(i) / Double(max(frames - 1, 1))
            return Camera(center: GeoCoordinate(latitude: start.latitude + (end.latitude - start.latitude) * t,
                                                longitude: start.longitude + (end.longitude - start.longitude) * t),
                          zoom: 16, bearing: 20 + 40 * t, pitch: 50)
        }
    }
}

/// Views both renderers draw for the SSIM comparison.
struct AgreementView {
    var name: String
    var style: String
    var camera: Camera

    static let all: [AgreementView] = [
        AgreementView(name: "day-flat-z15", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1705, longitude: 24.9440), zoom: 15)),
        AgreementView(name: "day-flat-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16)),
        AgreementView(name: "day-rotated-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1720, longitude: 24.9460), zoom: 16, bearing: -40)),
        AgreementView(name: "day-pitched-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16, bearing: 30, pitch: 45)),
        AgreementView(name: "day-pitched-z17", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1690, longitude: 24.9450), zoom: 17, bearing: 60, pitch: 55)),
        AgreementView(name: "night-flat-z16", style: "night", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16)),
        AgreementView(name: "night-pitched-z16", style: "night", camera: Camera(center: GeoCoordinate(latitude: 60.1720, longitude: 24.9440), zoom: 16, bearing: -30, pitch: 50)),
    ]
}

/// MapLibre Native through scripts/maplibre_render.py (mapli from PyPI), in the same run.
struct MapLibrePeer {
    var python: String
    var glyphs: String
    var root: URL
    var out: URL

    struct Timing { var total: Double; var png: Double? }

    /// MapLibre Native -> PNG -> ffmpeg libx264 along `path`; returns frames per second and the
    /// folder holding the stream (peer.h264) and the rendered PNGs.
    func pipeToX264(_ path: [Camera], width: Int, height: Int, bitrate: Int, fps: Double, style: URL) throws -> (fps: Double, folder: URL) {
        let folder = out.appendingPathComponent("peer-\(width)x\(height)")
        let views = path.enumerated().map { index, camera in
            viewJSON(name: String(format: "frame-%04d", index), camera: camera, width: width, height: height)
        }
        let lines = try run(views: views, style: style, folder: folder,
                            extra: ["--pipe-h264", folder.appendingPathComponent("peer.h264").path,
                                    "--bitrate", String(bitrate), "--fps", String(fps)])
        return (lines.first?["fps"] as? Double ?? 0, folder)
    }

    func timePath(_ path: [Camera], width: Int, height: Int, style: URL) throws -> [Timing] {
        let views = path.enumerated().map { index, camera in
            viewJSON(name: String(format: "path-%03d", index), camera: camera, width: width, height: height)
        }
        let lines = try run(views: views, style: style, folder: out.appendingPathComponent("maplibre-path"))
        return lines.map { Timing(total: $0["ms_per_frame"] as? Double ?? 0, png: $0["ms_png"] as? Double) }
    }

    func render(_ view: AgreementView, style: URL, suffix: String) throws -> RGBAImage {
        let folder = out.appendingPathComponent(suffix + "-views")
        _ = try run(views: [viewJSON(name: view.name, camera: view.camera, width: 800, height: 480)], style: style,
                    folder: folder)
        let file = folder.appendingPathComponent("\(view.name).png")
        let image = try RGBAImage(contentsOfPNG: file)
        let copy = out.appendingPathComponent("\(view.name)-\(suffix).png")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: file, to: copy)
        return image
    }

    private func viewJSON(name: String, camera: Camera, width: Int, height: Int) -> [String: Any] {
        ["name": name, "lat": camera.center.latitude, "lon": camera.center.longitude, "zoom": camera.zoom,
         "bearing": camera.bearing, "pitch": camera.pitch, "width": width, "height": height]
    }

    private func run(views: [[String: Any]], style: URL, folder: URL, extra: [String] = []) throws -> [[String: Any]] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let viewsFile = folder.appendingPathComponent("views.json")
        try JSONSerialization.data(withJSONObject: views).write(to: viewsFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, root.appendingPathComponent("scripts/maplibre_render.py").path,
                             "--style", style.path, "--tiles", root.appendingPathComponent("assets/helsinki.pmtiles").path,
                             "--views", viewsFile.path, "--out-dir", folder.path, "--glyphs", glyphs, "--repeat", "1"] + extra
        var environment = ProcessInfo.processInfo.environment
        environment["EGL_PLATFORM"] = environment["EGL_PLATFORM"] ?? "surfaceless"
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("MapLibre Native run failed (exit \(process.terminationStatus)); is mapli installed for \(python)?")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

import CarWindow
import CarWindowMap
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// MapLibre Native through scripts/maplibre_render.py (mapli from PyPI), in the same run.
struct MapLibrePeer: Sendable {
    var python: String
    var glyphs: String
    var root: URL
    var out: URL

    struct Timing: Sendable { var total: Double; var png: Double? }

    /// nil and the reason when the peer cannot run here: no mapli for `python`, or an unusable
    /// glyph folder. Without a glyph folder it writes one from the bundled fonts (`fonts`) into
    /// `out`, so a machine with only the bundle runs the peer. Without ffmpeg it still renders
    /// (the render and agreement sections); only its libx264 pipe, in the encode section, needs ffmpeg.
    static func probe(python: String, glyphs: String?, fonts: URL, root: URL, out: URL) -> (MapLibrePeer?, String?) {
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent("scripts/maplibre_render.py").path) else {
            return (nil, "MapLibre Native peer skipped: scripts/maplibre_render.py is not under \(root.path)")
        }
        guard (try? runTool(python, ["-c", "import mapli, pmtiles"]).status) == 0 else {
            return (nil, "MapLibre Native peer skipped: \(python) cannot import mapli and pmtiles (see benchmarks/README.md)")
        }
        if let glyphs, !glyphs.isEmpty {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: glyphs, isDirectory: &isFolder), isFolder.boolValue else {
                return (nil, "MapLibre Native peer skipped: glyph folder \(glyphs) does not exist")
            }
            return (MapLibrePeer(python: python, glyphs: glyphs, root: root, out: out), nil)
        }
        let written = out.appendingPathComponent("peer-glyphs", isDirectory: true)
        do {
            try? FileManager.default.removeItem(at: written)
            let start = DispatchTime.now().uptimeNanoseconds
            let files = try MapLibreGlyphExport.write(try FontLibrary(directory: fonts), to: written)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            print(String(format: "  MapLibre Native peer: %d glyph ranges written from %@ to %@ in %.1f s",
                         files, fonts.path, written.path, seconds))
        } catch {
            return (nil, "MapLibre Native peer skipped: no glyph folder given, and writing one from \(fonts.path) failed: \(error)")
        }
        return (MapLibrePeer(python: python, glyphs: written.path, root: root, out: out), nil)
    }

    /// MapLibre Native -> PNG -> ffmpeg libx264 along `path`; returns frames per second and the
    /// folder holding the stream (peer.h264) and the rendered PNGs.
    func pipeToX264(_ path: [Camera], size: FrameSize, bitrate: Int, fps: Double, style: URL) throws -> (fps: Double, folder: URL) {
        let folder = out.appendingPathComponent("peer-\(size)")
        let views = path.enumerated().map { index, camera in
            viewJSON(name: String(format: "frame-%04d", index), camera: camera, size: size)
        }
        let lines = try run(views: views, style: style, folder: folder,
                            extra: ["--pipe-h264", folder.appendingPathComponent("peer.h264").path,
                                    "--bitrate", String(bitrate), "--fps", String(fps)])
        return (lines.first?["fps"] as? Double ?? .nan, folder)
    }

    func timePath(_ path: [Camera], size: FrameSize, style: URL) throws -> [Timing] {
        let views = path.enumerated().map { index, camera in
            viewJSON(name: String(format: "path-%03d", index), camera: camera, size: size)
        }
        let lines = try run(views: views, style: style, folder: out.appendingPathComponent("maplibre-path"))
        return lines.map { Timing(total: $0["ms_per_frame"] as? Double ?? .nan, png: $0["ms_png"] as? Double) }
    }

    func render(_ view: AgreementView, style: URL, suffix: String) throws -> RGBAImage {
        let folder = out.appendingPathComponent(suffix + "-views")
        _ = try run(views: [viewJSON(name: view.name, camera: view.camera, size: FrameSize(width: 800, height: 480))],
                    style: style, folder: folder)
        let file = folder.appendingPathComponent("\(view.name).png")
        let image = try RGBAImage(contentsOfPNG: file)
        let copy = out.appendingPathComponent("\(view.name)-\(suffix).png")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: file, to: copy)
        return image
    }

    private func viewJSON(name: String, camera: Camera, size: FrameSize) -> [String: Any] {
        ["name": name, "lat": camera.center.latitude, "lon": camera.center.longitude, "zoom": camera.zoom,
         "bearing": camera.bearing, "pitch": camera.pitch, "width": size.width, "height": size.height]
    }

    private func run(views: [[String: Any]], style: URL, folder: URL, extra: [String] = []) throws -> [[String: Any]] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let viewsFile = folder.appendingPathComponent("views.json")
        try JSONSerialization.data(withJSONObject: views).write(to: viewsFile)
        var environment = ProcessInfo.processInfo.environment
        environment["EGL_PLATFORM"] = environment["EGL_PLATFORM"] ?? "surfaceless"
        let (status, output) = try runTool(
            python, [root.appendingPathComponent("scripts/maplibre_render.py").path,
                     "--style", style.path, "--tiles", root.appendingPathComponent("assets/helsinki.pmtiles").path,
                     "--views", viewsFile.path, "--out-dir", folder.path, "--glyphs", glyphs, "--repeat", "1"] + extra,
            environment: environment, quietErrors: false)
        guard status == 0 else {
            throw BenchError("MapLibre Native run failed (exit \(status)); is mapli installed for \(python)?")
        }
        return output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
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

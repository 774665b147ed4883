import ArgumentParser
import CarWindow
import Foundation

/// `carwindow encode`: a camera path across the map to an Annex-B H.264 file.
struct EncodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "Renders a camera path and writes it as an H.264 Annex-B stream (plays in ffplay).")

    @Option(help: "Tile source (default: the bundled Helsinki tiles).") var tiles: String?
    @Option(help: "MapLibre style JSON, or 'day' / 'night'.") var style = "day"
    @Option(help: "Frame size WIDTHxHEIGHT (even sides).") var size = "800x480"
    @Option(help: "Frames to encode.") var frames = 150
    @Option(help: "Frames per second.") var fps = 15.0
    @Option(help: "Target bitrate in bits per second.") var bitrate = 600_000
    @Option(help: "Rate control: cbr or vbr.") var rateControl = "cbr"
    @Option(help: "Encoder: auto, vaapi or openh264 (default: $CARWINDOW_ENCODER or auto).") var encoder = "auto"
    @Option(help: "An IDR every N frames (default: only the first).") var idrEvery: Int?
    @Flag(help: "Full-range samples instead of BT.601 limited range.") var fullRange = false
    @Option(help: "Encoder threads.") var threads = 1
    @Option(help: "Output .h264 path.") var out = "map.h264"
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?

    func run() async throws {
        let (width, height) = try parseSize(size)
        guard let rate = RateControl(rawValue: rateControl) else { throw ValidationError("--rate-control is cbr or vbr") }
        let choice: EncoderChoice
        switch encoder {
        case "auto": choice = .automatic
        case let name: 
            guard let backend = EncoderBackend(rawValue: name) else {
                throw ValidationError("--encoder is auto, vaapi or openh264; got '\(name)'")
            }
            choice = .forced(backend)
        }
        let settings = EncoderSettings(width: width, height: height, framesPerSecond: fps, bitrate: bitrate,
                                       rateControl: rate, idrInterval: idrEvery, fullRange: fullRange, threads: threads)
        try settings.validate()
        let path = DemoPath.helsinki(frames: max(frames, 1))
        let setup = try await MapSetup(tiles: tiles, style: style, width: width, height: height, platform: platform,
                                       camera: path[0])
        print(setup.context.info)
        let stage = try await EncoderStage(settings: settings, choice: choice)
        print("encoder: \(stage.backend), \(width)x\(height) at \(fps) fps, \(bitrate) bit/s \(rate)")
        guard FileManager.default.createFile(atPath: out, contents: nil),
              let file = FileHandle(forWritingAtPath: out) else {
            throw ValidationError("cannot write \(out): check that its folder exists and is writable")
        }
        let writer = AnnexBWriter(file: file)
        let vehicle = VehicleMarker(coordinate: path[0].center, heading: path[0].bearing)
        let report = try await EncodePipeline(renderer: setup.renderer, encoder: stage).run(
            cameras: path, overlays: MapOverlays(vehicle: vehicle)) { unit in try writer.write(unit) }
        _ = try await stage.finish()
        try file.close()
        let seconds = Double(report.frames) / fps
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        print(String(format: "frames %d (%d IDR), bytes %d, mean bitrate %.0f bit/s (target %d)", report.frames,
                     report.keyframes, report.bytes, Double(report.bytes * 8) / seconds, bitrate))
        print(String(format: "render+convert %.2f ms/frame, encode %.2f ms/frame (%@), pipeline %.1f fps, latency p50 %.1f ms",
                     mean(report.renderMilliseconds), mean(report.encodeMilliseconds), stage.backend.rawValue,
                     report.framesPerSecond, report.latencyMilliseconds.sorted()[report.latencyMilliseconds.count / 2]))
        print("wrote \(out)")
        await setup.context.shutdown()
    }
}

/// Appends access units to a file as they come.
final class AnnexBWriter: @unchecked Sendable {
    // Only the pipeline's output closure calls it, one access unit at a time.
    private let file: FileHandle
    init(file: FileHandle) { self.file = file }
    func write(_ unit: AccessUnit) throws { try file.write(contentsOf: unit.data) }
}

/// A drive-like camera path across the bundled Helsinki data: heading-up, pitched, turning.
enum DemoPath {
    static func helsinki(frames: Int) -> [Camera] {
        let waypoints = [GeoCoordinate(latitude: 60.1668, longitude: 24.9385), GeoCoordinate(latitude: 60.1700, longitude: 24.9420),
                         GeoCoordinate(latitude: 60.1712, longitude: 24.9475), GeoCoordinate(latitude: 60.1745, longitude: 24.9495)]
        return (0..<frames).map { i in
            let t = Double(i) / Double(max(frames - 1, 1)) * Double(waypoints.count - 1)
            let leg = min(Int(t), waypoints.count - 2)
            let f = t - Double(leg)
            let a = waypoints[leg], b = waypoints[leg + 1]
            let heading = atan2((b.longitude - a.longitude) * cos(a.latitude * .pi / 180), b.latitude - a.latitude) * 180 / .pi
            return Camera(center: GeoCoordinate(latitude: a.latitude + (b.latitude - a.latitude) * f,
                                                longitude: a.longitude + (b.longitude - a.longitude) * f),
                          zoom: 16.5, bearing: heading, pitch: 45)
        }
    }
}

import ArgumentParser
import CarWindow
import Foundation
import Glibc

/// `carwindow encode`: a camera path across the map to an Annex-B H.264 file.
struct EncodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "Renders a camera path and writes it as an H.264 Annex-B stream (plays in ffplay).",
        discussion: """
        Ctrl-C (SIGINT), SIGTERM or SIGHUP stop after the access unit being written: the file ends \
        on a whole picture and the exit status is 130, 143 or 129. A write that fails (a full disk) \
        cuts the file back to its last whole picture and exits with 74; an output another process \
        writes, or whose folder is missing, exits with 73.
        """)

    @Option(help: "Tile source (default: the bundled Helsinki tiles).") var tiles: String?
    @Option(help: "MapLibre style JSON, or 'day' / 'night'.") var style = "day"
    @Option(help: "Frame size WIDTHxHEIGHT (even sides, within H.264 level 5.1).") var size = "800x480"
    @Option(help: "Frames to encode (1-100000).") var frames = 150
    @Option(help: "Frames per second (0.1-240).") var fps = 15.0
    @Option(help: "Target bitrate in bits per second (1000-200000000).") var bitrate = 600_000
    @Option(help: "Rate control: cbr or vbr.") var rateControl = "cbr"
    @Option(help: "Encoder: auto, vaapi or openh264 (default: $CARWINDOW_ENCODER or auto).") var encoder = "auto"
    @Option(help: "An IDR every N frames, 1-100000 (default: only the first).") var idrEvery: Int?
    @Flag(help: "Full-range samples instead of BT.601 limited range.") var fullRange = false
    @Option(help: "Encoder threads (1-16).") var threads = 1
    @Option(help: "Output .h264 path (its folder must exist).") var out = "map.h264"
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?

    func validate() throws {
        _ = try parseSize(size)
        try OptionCheck.integer(frames, "--frames", in: 1...100_000)
        try OptionCheck.number(fps, "--fps", in: 0.1...240, unit: " frames per second")
        try OptionCheck.integer(bitrate, "--bitrate", in: 1_000...200_000_000, unit: " bit/s")
        try OptionCheck.integer(idrEvery, "--idr-every", in: 1...100_000, unit: " frames")
        try OptionCheck.integer(threads, "--threads", in: 1...16)
        guard RateControl(rawValue: rateControl) != nil else {
            throw ValidationError("--rate-control is cbr or vbr; got '\(rateControl)'")
        }
        _ = try encoderChoice(encoder)
        _ = try eglPlatform(platform)
        do {
            try encoderSettings().validate()
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func encoderSettings() throws -> EncoderSettings {
        let (width, height) = try parseSize(size)
        return EncoderSettings(width: width, height: height, framesPerSecond: fps, bitrate: bitrate,
                               rateControl: RateControl(rawValue: rateControl) ?? .cbr, idrInterval: idrEvery,
                               fullRange: fullRange, threads: threads)
    }

    func run() async throws {
        let signals = StopSignals.install()
        try await runCommand { try await encode(signals: signals) }
    }

    private func encode(signals: StopSignals) async throws -> Int32 {
        let settings = try encoderSettings()
        let (width, height, rate) = (settings.width, settings.height, settings.rateControl)
        let choice = try encoderChoice(encoder)
        let outURL = URL(fileURLWithPath: out)
        try outputFolder(for: outURL, option: "--out", createIfMissing: false)
        let writer = AnnexBWriter(sink: try AnnexBFileSink(url: outURL), signals: signals)
        let path = DemoPath.helsinki(frames: frames)
        let setup: MapSetup
        let stage: EncoderStage
        do {
            setup = try await MapSetup(tiles: tiles, style: style, width: width, height: height, platform: platform,
                                       camera: path[0])
            stage = try await EncoderStage(settings: settings, choice: choice)
        } catch {
            writer.close()
            throw error
        }
        print(setup.context.info)
        print("encoder: \(stage.backend), \(width)x\(height) at \(fps) fps, \(bitrate) bit/s \(rate)")
        let vehicle = VehicleMarker(coordinate: path[0].center, heading: path[0].bearing)
        let report: PipelineReport
        do {
            report = try await EncodePipeline(renderer: setup.renderer, encoder: stage).run(
                cameras: path, overlays: MapOverlays(vehicle: vehicle)) { unit in try writer.write(unit) }
        } catch {
            _ = try? await stage.finish()
            writer.close()
            await setup.context.shutdown()
            guard error is AnnexBWriter.Stopped, let status = signals.exitStatus else { throw error }
            print("stopped by \(StopSignals.name(signals.received ?? SIGINT)) after \(writer.units) frames")
            print("wrote \(out) (\(writer.units) frames, \(writer.bytes) bytes)")
            return status
        }
        _ = try await stage.finish()
        writer.close()
        let seconds = Double(report.frames) / fps
        func milliseconds(_ values: [Duration]) -> [Double] { values.map(\.inMilliseconds) }
        func mean(_ values: [Duration]) -> Double {
            values.isEmpty ? 0 : milliseconds(values).reduce(0, +) / Double(values.count)
        }
        let latencies = milliseconds(report.latencies).sorted()
        print(String(format: "frames %d (%d IDR), bytes %d, mean bitrate %.0f bit/s (target %d)", report.frames,
                     report.keyframes, report.bytes, Double(report.bytes * 8) / seconds, bitrate))
        print(String(format: "render+convert %.2f ms/frame, encode %.2f ms/frame (%@), pipeline %.1f fps, latency p50 %.1f ms",
                     mean(report.renderTimes), mean(report.encodeTimes), stage.backend.rawValue,
                     report.framesPerSecond, latencies.isEmpty ? 0 : latencies[latencies.count / 2]))
        print("wrote \(out)")
        await setup.context.shutdown()
        return signals.exitStatus ?? 0
    }
}

/// Appends access units to the file as they come, and ends the pipeline on a stop signal.
final class AnnexBWriter: @unchecked Sendable {
    /// Thrown into the pipeline to end it after a whole access unit.
    struct Stopped: Error {}

    // Only the pipeline's output closure calls it, one access unit at a time; the command
    // reads the counts and closes it after the pipeline has returned.
    private let sink: AnnexBFileSink
    private let signals: StopSignals
    private(set) var units = 0
    private(set) var bytes = 0

    init(sink: AnnexBFileSink, signals: StopSignals) {
        self.sink = sink
        self.signals = signals
    }

    func write(_ unit: AccessUnit) throws {
        try sink.write(unit)
        units += 1
        bytes += unit.data.count
        if signals.received != nil { throw Stopped() }
    }

    func close() { sink.close() }
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

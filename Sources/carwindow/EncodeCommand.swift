import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
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
    @Option(help: "Show labels in this language where the data has names in it (name:sv...), e.g. sv, SV-SE, zh-TW; the style's own names elsewhere.")
    var labelLanguage: String?
    @Option(name: .customLong("source"),
            help: "A tile source of its own for one of the style's vector sources, as ID=PATH; repeatable. The style's other vector sources draw from --tiles.")
    var sources: [String] = []
    @Option(help: "Frame size WIDTHxHEIGHT (even sides, within H.264 level 5.1).") var size = "800x480"
    @Option(help: "Frames to encode (1-100000).") var frames = 150
    @Option(help: "Frames per second (0.1-240).") var fps = 15.0
    @Option(help: "Target bitrate in bits per second (1000-200000000).") var bitrate = 600_000
    @Option(help: "Rate control: cbr or vbr.") var rateControl = "cbr"
    @Option(help: "Encoder: auto, vaapi or openh264 (default: $CARWINDOW_ENCODER or auto).") var encoder = "auto"
    @Option(help: "An IDR every N frames, 1-100000 (default: only the first).") var idrEvery: Int?
    @Flag(help: "Full-range samples instead of BT.601 limited range.") var fullRange = false
    @Option(help: "Software encoder threads, one slice each: auto (from the cores and the size) or 1-16.") var threads = "auto"
    @Option(help: "Output .h264 path (its folder must exist).") var out = "map.h264"
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?

    func validate() throws {
        _ = try parseSize(size)
        _ = try OptionCheck.labelLanguage(labelLanguage)
        try OptionCheck.integer(frames, "--frames", in: 1...100_000)
        try OptionCheck.number(fps, "--fps", in: 0.1...240, unit: " frames per second")
        try OptionCheck.integer(bitrate, "--bitrate", in: 1_000...200_000_000, unit: " bit/s")
        try OptionCheck.integer(idrEvery, "--idr-every", in: 1...100_000, unit: " frames")
        _ = try OptionCheck.encoderThreads(threads, "--threads")
        guard RateControl(rawValue: rateControl) != nil else {
            throw ValidationError("--rate-control is cbr or vbr; got '\(rateControl)'")
        }
        _ = try encoderChoice(encoder)
        _ = try parseSourceBindings(sources)
        _ = try eglPlatform(platform)
        do {
            try encoderSettings().validate()
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func encoderSettings() throws -> EncoderSettings {
        let (width, height) = try parseSize(size)
        let threads = try OptionCheck.encoderThreads(threads, "--threads")
        return EncoderSettings(width: width, height: height, framesPerSecond: fps, bitrate: bitrate,
                               rateControl: RateControl(rawValue: rateControl) ?? .cbr, idrInterval: idrEvery,
                               fullRange: fullRange, threads: threads)
    }

    func run() async throws {
        let signals = StopSignals.install()
        try await runCommand { try await encode(signals: signals) }
    }

    /// Plays the camera path through a projection session (the loop engines run), one picture
    /// per camera and as fast as it goes, into the file.
    private func encode(signals: StopSignals) async throws -> Int32 {
        let settings = try encoderSettings()
        let (width, height, rate) = (settings.width, settings.height, settings.rateControl)
        let choice = try encoderChoice(encoder)
        let outURL = URL(fileURLWithPath: out)
        try outputFolder(for: outURL, option: "--out", createIfMissing: false)
        let file = PreparedOutput(try AnnexBFileSink(url: outURL))
        let path = DemoPath.helsinki(frames: frames)
        let map: MapData
        let context: RenderContext
        do {
            map = try MapData(tiles: tiles, sources: sources, style: style, labelLanguage: try OptionCheck.labelLanguage(labelLanguage))
            context = try await RenderContext(platform: try eglPlatform(platform))
        } catch {
            file.closeUnused()
            throw error
        }
        print(context.info)
        var configuration = ProjectionSessionConfiguration(tiles: map.tiles, dayStyle: map.style, fonts: map.fonts,
                                                           camera: path[0], makeSink: file.factory)
        configuration.sources = map.sources
        configuration.name = "encode"
        configuration.encoder = choice
        configuration.encoderSettings = settings
        configuration.showsControls = false
        configuration.refinementFrames = 0
        let session = ProjectionSession(configuration: configuration, context: context)
        let events = session.events
        let failures = Task {
            var first: ProjectionSessionError?
            for await event in events {
                if case .error(let error) = event, first == nil { first = error }
            }
            return first
        }
        let sent: Int
        let wall: Double
        do {
            try await session.connect(display: HeadUnitDisplay(size: VideoSize(width: width, height: height)))
            await session.setVehicle(VehicleMarker(coordinate: path[0].center, heading: path[0].bearing))
            await session.preloadTiles(along: path)
            // A stop signal ends the stream after the access unit being written.
            signals.onStop { _ in Task { await session.stop() } }
            let start = DispatchTime.now().uptimeNanoseconds
            sent = try await session.startStreaming(playing: path)
            wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } catch {
            await session.close()
            file.closeUnused()
            await context.shutdown()
            // A stop signal before the stream began ends the command as a stop, not a failure.
            if let status = signals.exitStatus {
                print("stopped by \(StopSignals.name(signals.received ?? SIGINT)) before the first frame")
                return status
            }
            throw error
        }
        let statistics = await session.statistics
        print("encoder: \(await session.encoderBackend?.rawValue ?? "none"), \(width)x\(height) at \(fps) fps, \(bitrate) bit/s \(rate)")
        await session.close()
        let failure = await failures.value
        await context.shutdown()
        OpenH264Encoder.waitForReleasedEncoders()
        if let status = signals.exitStatus {
            print("stopped by \(StopSignals.name(signals.received ?? SIGINT)) after \(sent) frames")
            print("wrote \(out) (\(sent) frames, \(statistics.bytesSent) bytes)")
            return status
        }
        guard sent == path.count else {
            // A picture that did not reach the file is lost work: never a success.
            if let failure { throw failure }
            throw CommandFailure(description: "only \(sent) of \(path.count) frames reached \(out)", exitStatus: ExitStatus.ioError)
        }
        let seconds = Double(sent) / fps
        func mean(_ values: [Duration]) -> Double {
            values.isEmpty ? 0 : values.map(\.inMilliseconds).reduce(0, +) / Double(values.count)
        }
        let latencies = statistics.latencies.map(\.inMilliseconds).sorted()
        print(String(format: "frames %d (%d IDR), bytes %d, mean bitrate %.0f bit/s (target %d)", sent,
                     statistics.idrFrames, statistics.bytesSent, Double(statistics.bytesSent * 8) / seconds, bitrate))
        print(String(format: "render+convert %.2f ms/frame, encode %.2f ms/frame, session %.1f fps, latency p50 %.1f ms",
                     mean(statistics.renderTimes), mean(statistics.encodeTimes), Double(sent) / wall,
                     latencies.isEmpty ? 0 : latencies[latencies.count / 2]))
        print("wrote \(out)")
        return 0
    }
}

/// The file opened before anything is drawn (so a bad path fails at once), handed to the
/// session's first stream; closed here if no stream took it.
final class PreparedOutput: Sendable {
    private let prepared: LockedState<(any VideoSink)?>

    init(_ sink: sending any VideoSink) { prepared = LockedState(sink) }

    var factory: VideoSinkFactory {
        { [prepared] _ throws(SinkError) in
            let taken = prepared.withLock { sink -> (any VideoSink)? in
                let taken = sink
                sink = nil
                return taken
            }
            guard let taken else { throw .allOutputsFailed(count: 1) }
            return taken
        }
    }

    func closeUnused() {
        prepared.withLock { sink in
            sink?.close()
            sink = nil
        }
    }
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

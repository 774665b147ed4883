import ArgumentParser
import CarWindow
import Foundation
import Glibc
import Synchronization

/// `carwindow drive`: a simulated drive through the map, streamed by a projection session.
struct DriveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drive",
        abstract: "Drives a simulated car along a route and streams the map as H.264, drawing only when it moves.",
        discussion: """
        Without --route the car drives through the bundled Helsinki data, on a route computed on the
        roads of its transportation layer, stopping at lights. The stream goes to out/drive.h264 and
        out/drive.mp4 (real timing: still periods last as long as they did), and optionally live to
        an RTP receiver.
        """)

    @Option(help: "Tile source (default: the bundled Helsinki tiles).") var tiles: String?
    @Option(help: "A GeoJSON LineString (or Feature/FeatureCollection with one) to drive instead of the computed route.")
    var route: String?
    @Option(help: "Head unit screen size WIDTHxHEIGHT.") var size = "800x480"
    @Option(help: "Head unit display scale (1-10): the stream is the screen size divided by it.") var scale = 1.0
    @Option(help: "Head unit's preferred frames per second.") var fps = 15
    @Option(help: "Head unit's maximum bitrate in kbit/s.") var maxBitrate = 600
    @Option(help: "Simulated seconds per second.") var speed = 2.0
    @Option(help: "Stop after this many seconds even if the car has not arrived.") var maxSeconds: Double?
    @Option(help: "Annex-B output; an .mp4 with real timestamps is written beside it.") var out = "out/drive.h264"
    @Flag(help: "Do not write the .mp4.") var noMP4 = false
    @Option(help: "Also stream RTP to HOST:PORT (an .sdp file for ffplay/VLC is written beside the output).")
    var rtp: String?
    @Option(help: "Stream into a SmartDeviceLink head unit at HOST:PORT (SDL Core: 12345; or carwindow headunit).")
    var sdl: String?
    @Flag(help: "Night style.") var night = false
    @Option(help: "Encoder: auto, vaapi or openh264 (default: $CARWINDOW_ENCODER or auto).") var encoder = "auto"
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?

    func run() async throws {
        let (screenWidth, screenHeight) = try parseSize(size)
        let choice = try encoderChoice(encoder)
        let outURL = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: outURL.deletingLastPathComponent(), withIntermediateDirectories: true)

        let source = SharedTileCache(source: try openTileSource(at: tiles.map { URL(fileURLWithPath: $0) } ?? Assets.tiles))
        let drivingRoute: DrivingRoute
        if let route {
            drivingRoute = try DrivingRoute(geoJSONContentsOf: URL(fileURLWithPath: route))
        } else {
            guard tiles == nil else {
                throw ValidationError("with --tiles, give --route (a GeoJSON line): the computed route is for the bundled Helsinki data")
            }
            let started = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
            drivingRoute = try HelsinkiDrive.route(using: source)
            say(String(format: "route: %.2f km on the roads of the transportation layer, computed in %.0f ms",
                         drivingRoute.length / 1000, (Double(DispatchTime.now().uptimeNanoseconds) / 1e9 - started) * 1000))
        }
        let plan = try DrivePlan(route: drivingRoute)
        say(String(format: "drive: %.0f s simulated (%d stops), shown at %.1fx", plan.duration, plan.stops.count, speed))

        let context = try await RenderContext(platform: try eglPlatform(platform))
        say(context.info.description)
        let fonts = try FontLibrary(directory: Assets.fonts)
        let connection = try sdl.map { try Self.sdlConnection(to: $0) }
        let makeSink = try sinkFactory(outURL: outURL, connection: connection)
        let configuration = ProjectionSessionConfiguration(
            name: "drive", tiles: source, dayStyle: try Style(contentsOf: Assets.style("day")),
            nightStyle: try Style(contentsOf: Assets.style("night")), appearance: night ? .night : .day, fonts: fonts,
            encoder: choice, camera: Camera(center: plan.state(at: 0).coordinate, zoom: 17, pitch: 45),
            makeSink: makeSink)
        let session = ProjectionSession(configuration: configuration, context: context)
        let capability = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: screenWidth, height: screenHeight), maxBitrate: maxBitrate,
            supportedFormats: [.h264Raw, .h264RTP], hapticSpatialDataSupported: true, scale: scale, preferredFPS: fps)
        let drive = SimulatedDrive(plan: plan, session: session,
                                   options: SimulatedDrive.Options(speedup: speed, maximumSeconds: maxSeconds))
        let cpuBefore = ProcessCPU.seconds
        var link: SDLProjectionLink?
        let background: Task<Void, any Error>
        if let connection {
            // The head unit decides: its capability sets the size, its HMI level starts the video.
            let made = SDLProjectionLink(session: session, connection: connection)
            link = made
            let failure = LinkFailure()
            background = Task {
                do {
                    try await made.run { event in await Self.handle(event, drive: drive) }
                } catch {
                    failure.error = error
                    throw error
                }
            }
            say("connecting to the head unit at \(sdl ?? "")")
            let deadline = Date().addingTimeInterval(30)
            while await session.state != .streaming {
                if Date() > deadline {
                    await made.stop()
                    throw ValidationError("the head unit at \(sdl ?? "") did not let the app stream within 30 s (HMI level, capability or video service refused)")
                }
                if let error = failure.error { throw error }
                try await Task.sleep(for: .milliseconds(100))
            }
        } else {
            background = Task { for await event in session.events { await Self.handle(event, drive: drive) } }
            try await session.connect(capability: capability)
            try await session.startStreaming()
        }
        if let stream = await session.stream, let settings = await session.encoderSettings {
            say("stream: \(stream.encodedSize) (screen \(stream.displaySize), scale \(stream.scale)), "
                  + "\(Int(settings.framesPerSecond)) fps, \(settings.bitrate / 1000) kbit/s")
        }
        let driven = await drive.run { progress in
            let line = String(format: "\r%5.0f/%.0f s  %4.2f/%.2f km  %3.0f km/h%@  drawn %d  sent %d  keep-alives %d  %4.0f kbit/s ",
                              progress.simulatedSeconds, progress.totalSeconds, progress.distance / 1000,
                              progress.length / 1000, progress.speed * 3.6, progress.isStopped ? " (stopped)" : "          ",
                              progress.statistics.framesRendered, progress.statistics.framesSent,
                              progress.statistics.keepAlives, Self.recentKilobits(progress.statistics))
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        // A last still moment: the picture sharpens and keep-alives follow.
        try await Task.sleep(for: .seconds(1.5))
        let statistics = await session.statistics
        let settings = await session.encoderSettings
        if let link {
            await link.stop()
            _ = await background.result
        }
        await session.close()
        background.cancel()
        let cpu = ProcessCPU.seconds - cpuBefore
        await context.shutdown()
        say("")
        DriveSummary(statistics: statistics, framesPerSecond: settings?.framesPerSecond ?? Double(fps),
                     bitrate: settings?.bitrate ?? maxBitrate * 1000, cpuSeconds: cpu, simulatedSeconds: driven).report()
        say("wrote \(out)" + (noMP4 ? "" : " and \(Self.mp4Path(for: outURL).path)"))
    }

    /// The file sinks, plus RTP when asked.
    func sinkFactory(outURL: URL, connection: SDLConnection?) throws -> VideoSinkFactory {
        let writeMP4 = !noMP4
        let mp4URL = Self.mp4Path(for: outURL)
        var rtpTarget: (host: String, port: Int)?
        if let rtp {
            let parts = rtp.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else {
                throw ValidationError("--rtp must be HOST:PORT, like 127.0.0.1:5004; got '\(rtp)'")
            }
            rtpTarget = (String(parts[0]), port)
            let sdpURL = outURL.deletingPathExtension().appendingPathExtension("sdp")
            try RTPUDPSink.sdp(host: String(parts[0]), port: port).write(to: sdpURL, atomically: true, encoding: .utf8)
            say("RTP to \(rtp); watch with: ffplay -protocol_whitelist file,udp,rtp \(sdpURL.path)")
        }
        let target = rtpTarget
        return { _ throws(SinkError) in
            var sinks: [any VideoSink] = [try AnnexBFileSink(url: outURL)]
            if writeMP4 { sinks.append(try MP4FileSink(url: mp4URL)) }
            if let target { sinks.append(try RTPUDPSink(host: target.host, port: target.port)) }
            if let connection { sinks.append(SDLVideoSink(connection: connection)) }
            return TeeSink(sinks)
        }
    }

    static func mp4Path(for url: URL) -> URL { url.deletingPathExtension().appendingPathExtension("mp4") }

    /// The engine's side of the events: control taps change its zoom; warnings are shown.
    static func handle(_ event: ProjectionSessionEvent, drive: SimulatedDrive) async {
        switch event {
        case .controlTapped(let control):
            await drive.controlTapped(control)
        case .resized(let stream):
            say("\nthe head unit resized the stream to \(stream.encodedSize)")
        case .warning(let text):
            FileHandle.standardError.write(Data("\nwarning: \(text)\n".utf8))
        case .error(let error):
            FileHandle.standardError.write(Data("\nerror: \(error)\n".utf8))
        default:
            break
        }
    }

    /// A connection to the head unit at "HOST:PORT".
    static func sdlConnection(to address: String) throws -> SDLConnection {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else {
            throw ValidationError("--sdl must be HOST:PORT, like 127.0.0.1:12345; got '\(address)'")
        }
        let host = String(parts[0])
        return SDLConnection(
            configuration: SDLConnection.Configuration(appName: "CarWindow", appID: "carwindow-drive", videoCandidates: [],
                                                       startsVideoAutomatically: false),
            transport: { SDLTCPTransport(host: host, port: port) })
    }

    /// Kilobits per second over the last whole second.
    static func recentKilobits(_ statistics: ProjectionSessionStatistics) -> Double {
        let seconds = statistics.bytesPerSecond
        guard seconds.count >= 2 else { return 0 }
        return Double(seconds[seconds.count - 2]) * 8 / 1000
    }
}

/// The figures a drive ends with.
struct DriveSummary {
    var statistics: ProjectionSessionStatistics
    var framesPerSecond: Double
    var bitrate: Int
    var cpuSeconds: Double
    var simulatedSeconds: Double

    func report() {
        let s = statistics
        let seconds = max(s.streamingSeconds, 1e-9)
        let windows = s.bytesPerSecond.dropLast().map { Double($0) * 8 / 1000 }
        let meanKilobits = Double(s.bytesSent) * 8 / 1000 / seconds
        let fixedRateFrames = Int(seconds * framesPerSecond)
        func percentile(_ values: [Double], _ p: Double) -> Double {
            guard !values.isEmpty else { return 0 }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
        }
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        let renderMs = mean(s.renderMilliseconds), encodeMs = mean(s.encodeMilliseconds)
        // Whole seconds in which something was drawn, the last (partial) one left out.
        let movingSeconds = s.framesRenderedPerSecond.dropLast().filter { $0 > 0 }.map(Double.init)
        let movingFramesPerSecond = percentile(movingSeconds, 0.5)
        // What a capturer drawing and encoding every frame slot would have spent, from our own
        // per-frame costs: an estimate, not a measurement of such a capturer. Ours is measured.
        let fixedRateWork = Double(fixedRateFrames) * (renderMs + encodeMs) / 1000
        let ourWork = (s.renderMilliseconds.reduce(0, +) + s.encodeMilliseconds.reduce(0, +)) / 1000
        say(String(format: """
            summary: %.0f s streamed (%.0f s simulated)
              frames rendered %d, frames sent %d (refinements %d, keep-alives %d, IDR %d)
              a fixed-rate capturer at %.0f fps would have sent %d: %.0f%% fewer pictures drawn
              bitrate mean %.0f kbit/s, max %.0f kbit/s over 1 s windows (target %d kbit/s)
              fps while moving %.1f (median of 1 s windows with movement); latency change -> sent p50 %.1f ms, p99 %.1f ms
              render %.1f ms, encode %.1f ms per picture; process CPU %.1f s (%.0f%% of one core)
              render+encode work %.1f s against an estimated %.1f s at a fixed rate
            """,
            seconds, simulatedSeconds, s.framesRendered, s.framesSent, s.refinementFrames, s.keepAlives, s.idrFrames,
            framesPerSecond, fixedRateFrames, fixedRateFrames > 0 ? 100 * (1 - Double(s.framesRendered) / Double(fixedRateFrames)) : 0,
            meanKilobits, windows.max() ?? meanKilobits, bitrate / 1000,
            movingFramesPerSecond, percentile(s.latencyMilliseconds, 0.5), percentile(s.latencyMilliseconds, 0.99),
            renderMs, encodeMs, cpuSeconds, 100 * cpuSeconds / seconds, ourWork, fixedRateWork))
    }
}

/// CPU time this process has used, user and system.
enum ProcessCPU {
    static var seconds: Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// `auto`, `vaapi` or `openh264`.
func encoderChoice(_ name: String) throws -> EncoderChoice {
    if name == "auto" { return .automatic }
    guard let backend = EncoderBackend(rawValue: name) else {
        throw ValidationError("--encoder is auto, vaapi or openh264; got '\(name)'")
    }
    return .forced(backend)
}

/// The EGL platform a --platform option names, or nil for the automatic choice.
func eglPlatform(_ name: String?) throws -> EGLPlatform? {
    guard let name else { return nil }
    guard let platform = EGLPlatform(rawValue: name) else {
        throw ValidationError("--platform must be gbm, device or surfaceless; got '\(name)'")
    }
    return platform
}

/// Where the link's task leaves the error that ended it, for the waiting command to see.
final class LinkFailure: Sendable {
    private let stored = Mutex<(any Error)?>(nil)
    var error: (any Error)? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

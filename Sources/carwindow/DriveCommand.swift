import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSinks
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc

/// `carwindow drive`: a simulated drive through the map, streamed by a projection session.
struct DriveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drive",
        abstract: "Drives a simulated car along a route and streams the map as H.264, drawing only when it moves.",
        discussion: """
        Without --route the car drives through the bundled Helsinki data, on a route computed on the \
        roads of its transportation layer, stopping at lights. The stream goes to out/drive.h264 and \
        out/drive.mp4 (real timing: still periods last as long as they did), and optionally live to \
        an RTP receiver.

        Ctrl-C (SIGINT), SIGTERM or SIGHUP stop the drive: the files are finished (the MP4 gets its \
        index), the summary is printed and the exit status is 130, 143 or 129; a second signal \
        exits at once. The outputs fail independently: a full disk ends the recordings (each \
        ending on a whole picture, and still playable) while the stream to the head unit goes on. \
        Exit status: 0 when every output was written; 74 when an output failed while writing; \
        73 when an output cannot be created (missing folder, or another process writes it); \
        66 when an input file is missing; 64 for a bad option.
        """)

    static let defaultOut = "out/drive.h264"

    @Option(help: "Tile source (default: the bundled Helsinki tiles).") var tiles: String?
    @Option(help: "A GeoJSON LineString (or Feature/FeatureCollection with one) to drive instead of the computed route.")
    var route: String?
    @Option(help: "Head unit screen size WIDTHxHEIGHT (each side 1-8192).") var size = "800x480"
    @Option(help: "Head unit display scale (1-10): the stream is the screen size divided by it.") var scale = 1.0
    @Option(help: "Head unit's preferred frames per second (1-60).") var fps = 15
    @Option(help: "Head unit's maximum bitrate in kbit/s (1-200000).") var maxBitrate = 600
    @Option(help: "Simulated seconds per second (0.1-1000).") var speed = 2.0
    @Option(help: "Stop after this many seconds even if the car has not arrived (0.1-604800).") var maxSeconds: Double?
    @Option(help: """
        Annex-B output; an .mp4 with real timestamps is written beside it (default: \(Self.defaultOut), \
        its folder created when missing; the folder of a path you give must exist).
        """)
    var out: String?
    @Flag(help: "Do not write the .mp4.") var noMP4 = false
    @Option(help: "Also stream RTP to HOST:PORT (an .sdp file for ffplay/VLC is written beside the output).")
    var rtp: String?
    @Option(help: "Also serve the drive as a web page on http://127.0.0.1:PORT (0: a free port): the video as a head unit would show it, touches by mouse, HMI level, resize, day/night and navigation keys. Not with --sdl (use carwindow headunit --web there).")
    var web: Int?
    @Option(help: "With --rtp: seconds between the IDRs that let a player join late, 0.5-600, or 0 for none (default: 2). A receiver's RTCP PLI or FIR asks for one at once.")
    var rtpIdrInterval = 2.0
    @Option(help: "Stream into a SmartDeviceLink head unit at HOST:PORT (SDL Core: 12345; or carwindow headunit).")
    var sdl: String?
    @Option(help: "With --sdl: the app's certificate (PEM; a chain may follow it) for protected video, TLS inside SmartDeviceLink, as production head units require.")
    var certificate: String?
    @Option(help: "With --certificate: the app's private key (PEM, not passphrase-protected).") var key: String?
    @Option(help: "With --certificate: required (never stream in the clear) or preferred (stream in the clear, with a warning, when the head unit has no security layer). Default: required.")
    var protection = "required"
    @Flag(help: "Night style.") var night = false
    @Option(help: "Show labels in this language where the data has names in it (name:sv...), e.g. sv, SV-SE, zh-TW; the style's own names elsewhere. With --sdl the head unit's language decides until this is given.")
    var labelLanguage: String?
    @Flag(help: "Hand the session one position fix a second and let its follow camera move the car and the map between fixes (as an engine with GNSS would).")
    var follow = false
    @Option(help: "Encoder: auto, vaapi or openh264 (default: $CARWINDOW_ENCODER or auto).") var encoder = "auto"
    @Option(help: "OpenH264's threads, one slice of each picture apiece: auto (from the cores and the size) or 1-16.")
    var encoderThreads = "auto"
    @Option(help: "Force an EGL platform: gbm, device or surfaceless.") var platform: String?

    func validate() throws {
        let (width, height) = try parseSize(size)
        _ = try OptionCheck.labelLanguage(labelLanguage)
        try OptionCheck.number(scale, "--scale", in: HeadUnitDisplay.scaleRange)
        // The screen is the head unit's; without one, nobody else would say why it cannot stream.
        let screen = HeadUnitDisplay(size: VideoSize(width: width, height: height), scale: scale)
        if case .noMatch(let reason) = screen.chooseStreamResolution() {
            throw ValidationError("--size \(size) at --scale \(OptionCheck.text(scale)) gives no stream H.264 can carry (\(reason)); give a screen such as 800x480")
        }
        try OptionCheck.integer(fps, "--fps", in: 1...60, unit: " frames per second")
        try OptionCheck.integer(maxBitrate, "--max-bitrate", in: 1...200_000, unit: " kbit/s")
        try OptionCheck.number(speed, "--speed", in: 0.1...1000, unit: " simulated seconds per second")
        try OptionCheck.number(maxSeconds, "--max-seconds", in: 0.1...604_800, unit: " seconds")
        _ = try encoderChoice(encoder)
        _ = try OptionCheck.encoderThreads(encoderThreads, "--encoder-threads")
        _ = try eglPlatform(platform)
        _ = try rtpTarget()
        try OptionCheck.integer(web, "--web", in: 0...65535)
        if web != nil, sdl != nil {
            throw ValidationError("--web shows a drive without a head unit; with --sdl, give the head unit the page: carwindow headunit --web PORT")
        }
        if rtpIdrInterval != 0 { try OptionCheck.number(rtpIdrInterval, "--rtp-idr-interval", in: 0.5...600, unit: " seconds (or 0)") }
        if let sdl { _ = try Self.hostAndPort(sdl, option: "--sdl", example: "127.0.0.1:12345") }
        _ = try protectionPolicy()
        if (certificate == nil) != (key == nil) {
            throw ValidationError("--certificate and --key go together: give the app's certificate and its private key, both PEM files")
        }
        if certificate != nil, sdl == nil {
            throw ValidationError("--certificate protects the video to a head unit: give --sdl HOST:PORT too")
        }
        if tiles != nil, route == nil {
            throw ValidationError("with --tiles, give --route (a GeoJSON line): the computed route is for the bundled Helsinki data")
        }
        let outURL = URL(fileURLWithPath: out ?? Self.defaultOut)
        guard !outURL.lastPathComponent.isEmpty, !(out ?? "").hasSuffix("/") else {
            throw ValidationError("--out must name a file, like out/drive.h264; got '\(out ?? "")'")
        }
        let others = (noMP4 ? [] : [Self.mp4Path(for: outURL)]) + (rtp == nil ? [] : [Self.sdpPath(for: outURL)])
        if let clash = others.first(where: { $0.standardizedFileURL.path == outURL.standardizedFileURL.path }) {
            throw ValidationError("--out \(outURL.path) is also the \(clash.pathExtension) file written beside it; give the Annex-B file another extension, like .h264")
        }
    }

    /// `--protection`'s policy.
    func protectionPolicy() throws -> SDLProtectionPolicy {
        switch protection {
        case "required": return .required
        case "preferred": return .preferred
        default: throw ValidationError("--protection is required or preferred; got '\(protection)'")
        }
    }

    /// The security layer for `--certificate` and `--key`: OpenSSL with them, for every make.
    func securityConfiguration() throws -> SDLSecurityConfiguration? {
        guard let certificate, let key else { return nil }
        let certificateFile = try inputFile(certificate, option: "--certificate", kind: "the app's certificate (PEM)")
        let keyFile = try inputFile(key, option: "--key", kind: "the app's private key (PEM)")
        let policy = try protectionPolicy()
        do throws(SDLSecurityError) {
            let library = try OpenSSLSecurityLibrary(certificateFile: certificateFile.path, privateKeyFile: keyFile.path)
            return SDLSecurityConfiguration(libraries: [library], policy: policy)
        } catch {
            throw CommandFailure(description: "--certificate \(certificate) / --key \(key): \(error.message)",
                                 exitStatus: ExitStatus.dataError)
        }
    }

    func run() async throws {
        let signals = StopSignals.install()
        try await runCommand { try await drive(signals: signals) }
    }

    /// The drive; returns the exit status (a signal's, 74 when an output failed, else 0).
    private func drive(signals: StopSignals) async throws -> Int32 {
        let (screenWidth, screenHeight) = try parseSize(size)
        let choice = try encoderChoice(encoder)
        let threads = try OptionCheck.encoderThreads(encoderThreads, "--encoder-threads")
        let outURL = URL(fileURLWithPath: out ?? Self.defaultOut)
        try outputFolder(for: outURL, option: "--out", createIfMissing: out == nil)
        let tilesURL = try tiles.map {
            try inputFile($0, option: "--tiles", kind: "a .pmtiles or .mbtiles file or a z/x/y tile folder", folderAllowed: true)
        } ?? Assets.tiles
        let routeURL = try route.map { try inputFile($0, option: "--route", kind: "a GeoJSON file with a LineString") }
        let headUnit = try sdl.map { try Self.hostAndPort($0, option: "--sdl", example: "127.0.0.1:12345") }
        let rtpTarget = try rtpTarget()
        let page = try web.map { try WebHeadUnit(port: $0) }
        var ownSinks: (@Sendable () -> [any VideoSink])?
        if let page { ownSinks = { [WebPageSink(page: page)] } }
        let outputs = try RecordingOutputs(annexB: outURL, mp4: noMP4 ? nil : Self.mp4Path(for: outURL), rtp: rtpTarget,
                                           sdp: rtpTarget == nil ? nil : Self.sdpPath(for: outURL),
                                           rtpKeyframeInterval: rtpIdrInterval == 0 ? nil : .milliseconds(rtpIdrInterval * 1000),
                                           makeOwnSinks: ownSinks,
                                           newMP4File: { say("the stream started again: the MP4 goes on in \($0.path)") })
        if let rtp { say("RTP to \(rtp); watch with: ffplay -protocol_whitelist file,udp,rtp \(Self.sdpPath(for: outURL).path)") }

        // From here on the outputs exist: every way out finishes them.
        var context: RenderContext?
        do {
            let source = SharedTileCache(source: try openTileSource(at: tilesURL))
            let drivingRoute: DrivingRoute
            if let routeURL {
                drivingRoute = try DrivingRoute(geoJSONContentsOf: routeURL)
            } else {
                let started = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
                drivingRoute = try HelsinkiDrive.route(using: source)
                say(String(format: "route: %.2f km on the roads of the transportation layer, computed in %.0f ms",
                           drivingRoute.length / 1000, (Double(DispatchTime.now().uptimeNanoseconds) / 1e9 - started) * 1000))
            }
            let plan = try DrivePlan(route: drivingRoute)
            say(String(format: "drive: %.0f s simulated (%d stops), shown at %.1fx", plan.duration, plan.stops.count, speed))
            if let status = signals.exitStatus {
                outputs.closeUnused()
                say("stopped before the drive began")
                return status
            }
            let made = try await RenderContext(platform: try eglPlatform(platform))
            context = made
            say(made.info.description)
            var configuration = ProjectionSessionConfiguration(
                tiles: source, dayStyle: try Style(contentsOf: Assets.style("day")), fonts: try FontLibrary(directory: Assets.fonts),
                camera: Camera(center: plan.state(at: 0).coordinate, zoom: 17, pitch: 45), makeSink: { _ throws(SinkError) in try outputs.makeSink() })
            configuration.name = "drive"
            configuration.nightStyle = try Style(contentsOf: Assets.style("night"))
            configuration.appearance = night ? .night : .day
            configuration.encoder = choice
            configuration.encoderThreads = threads
            let session = ProjectionSession(configuration: configuration, context: made)
            if let language = try OptionCheck.labelLanguage(labelLanguage) { await session.setLabelLanguage(language) }
            // Without a head unit the screen is the options' (--max-bitrate is in kbit/s).
            let display = HeadUnitDisplay(size: VideoSize(width: screenWidth, height: screenHeight), scale: scale,
                                          preferredFramesPerSecond: fps, maximumBitrate: maxBitrate * 1000)
            let status = try await stream(session: session, display: display, plan: plan, headUnit: headUnit,
                                          outputs: outputs, page: page, signals: signals)
            await made.shutdown()
            OpenH264Encoder.waitForReleasedEncoders()
            return status
        } catch {
            outputs.closeUnused()
            await context?.shutdown()
            throw error
        }
    }

    /// Streams the drive until the car arrives, --max-seconds, a signal, or the session stopping
    /// by itself (every output failed, the head unit gone for good); then finishes every output
    /// and prints the summary.
    private func stream(session: ProjectionSession, display: HeadUnitDisplay, plan: DrivePlan,
                        headUnit: (host: String, port: Int)?, outputs: RecordingOutputs, page: WebHeadUnit?,
                        signals: StopSignals) async throws -> Int32 {
        // Before each turn the head unit plays a chime, as guidance would speak (once the link is up).
        let announcer = TurnAnnouncer()
        var driveOptions = SimulatedDrive.Options(speedup: speed, maximumSeconds: maxSeconds, followsWithFixes: follow)
        if headUnit != nil {
            driveOptions.announceTurn = { _ in await announcer.announce() }
        }
        if headUnit != nil || page != nil {
            // The head unit's (or the page's) user taps the controls; the drive's own simulated
            // taps would hide them.
            driveOptions.taps = []
        }
        let drive = SimulatedDrive(plan: plan, session: session, options: driveOptions)
        let stopper = DriveStopper()
        signals.onStop { _ in stopper.stop() }
        let cpuBefore = ProcessCPU.seconds
        var link: SDLProjectionLink?
        let background: Task<Void, any Error>
        var startFailure: (any Error)?
        let linkOutcome = LinkOutcome()
        // Taken before anything starts, so that no event is missed; it ends when the session is closed.
        let events = session.events
        let handling = Task {
            for await event in events { await Self.handle(event, drive: drive, stopper: headUnit == nil ? stopper : nil) }
        }
        // The page plays the head unit: its controls act on the session, its view follows it.
        var pageTasks: [Task<Void, Never>] = []
        if let page {
            say("web page: http://127.0.0.1:\(page.port)/")
            let level = LockedState(SDLHMILevel.full)
            pageTasks = [
                Task { for await control in page.requests { await WebDrive.apply(control, to: session, level: level) } },
                Task {
                    while !Task.isCancelled {
                        page.publish(state: await WebDrive.stateJSON(session, level: level.withLock { $0 }))
                        try? await Task.sleep(for: .milliseconds(250))
                    }
                },
            ]
        }
        defer { for task in pageTasks { task.cancel() } }
        if let headUnit {
            // The head unit decides: its capability sets the size, its HMI level starts the video.
            // The link adds the head unit to the session's outputs, beside the recordings.
            let made = SDLProjectionLink(session: session, connection: SDLConnection.Configuration(appName: "CarWindow",
                                                                                                   appID: "carwindow-drive",
                                                                                                   security: try securityConfiguration()),
                                         transport: { SDLTCPTransport(host: headUnit.host, port: headUnit.port) })
            link = made
            // The user's choice wins over the head unit's language.
            if labelLanguage != nil { await made.setFollowsHeadUnitLanguage(false) }
            announcer.player = made.prompts
            let linkNews = made.connection.events
            pageTasks.append(Task {
                for await event in linkNews {
                    if case .serviceProtected(let service) = event { say("head unit: the \(service) service is protected") }
                }
            })
            background = Task {
                // The link ends for good when it stops or reconnecting gave up; a reconnect does not.
                // What ended it is recorded before the stop, so whoever sees the stop can read it.
                defer { stopper.stop() }
                do {
                    try await made.run()
                    linkOutcome.end(with: nil)
                } catch {
                    linkOutcome.end(with: error)
                    throw error
                }
            }
            say("connecting to the head unit at \(sdl ?? "")")
            startFailure = await Self.waitForStreaming(session: session, link: made, outcome: linkOutcome,
                                                      headUnit: sdl ?? "", stopper: stopper, signals: signals)
        } else {
            background = Task {}
            do {
                try await session.connect(display: display)
                try await session.startStreaming()
            } catch {
                startFailure = error
            }
        }
        var driven = 0.0
        if startFailure == nil, !stopper.isStopped {
            if let stream = await session.stream, let settings = await session.encoderSettings {
                say("stream: \(stream.encodedSize) (screen \(stream.displaySize), scale \(stream.scale)), "
                    + "\(Int(settings.framesPerSecond)) fps, \(settings.bitrate / 1000) kbit/s")
            }
            let driving = Task {
                let driven = await drive.run { progress in Console.progress(Self.progressLine(progress)) }
                // A last still moment: the picture sharpens and keep-alives follow.
                try? await Task.sleep(for: .seconds(1.5))
                return driven
            }
            stopper.whenStopped { driving.cancel() }
            driven = await driving.value
            Console.endProgressLine()
        }
        // A link that ended by itself before the drive did lost the head unit for good: the
        // drive did not reach it, whatever the recordings hold.
        var linkLost: CommandFailure?
        if let link, startFailure == nil, signals.received == nil, let ending = linkOutcome.ending {
            let lastDisconnection = await link.lastDisconnection
            linkLost = Self.headUnitLost(ending.error ?? lastDisconnection, headUnit: sdl ?? "", beforeStreaming: false)
        }
        let statistics = await session.statistics
        let settings = await session.encoderSettings
        if let link { await link.stop() }
        // The one call that stops the stream and finishes every output (the MP4 gets its index).
        await session.close()
        _ = await background.result
        await handling.value
        outputs.closeUnused()
        if let startFailure { throw startFailure }
        let cpu = ProcessCPU.seconds - cpuBefore
        if let number = signals.received { say("stopped by \(StopSignals.name(number))") }
        DriveSummary(statistics: statistics, framesPerSecond: settings?.framesPerSecond ?? Double(fps),
                     bitrate: settings?.bitrate ?? maxBitrate * 1000, cpuSeconds: cpu, simulatedSeconds: driven).report()
        if headUnit != nil { say(announcer.summary) }
        for line in outputs.report() { say(line) }
        if let status = signals.exitStatus { return status }
        if let linkLost {
            Console.error(linkLost.description)
            return linkLost.exitStatus
        }
        return outputs.failures.isEmpty ? 0 : ExitStatus.ioError
    }

    /// Waits until the session streams into the head unit; returns why it never will, or nil
    /// once it streams or a signal stopped the drive. Every way the link can end before the
    /// first picture (refused connection, refused registration, a head unit that answers
    /// garbage or nothing, every size refused, a screen the session cannot draw) is a failure
    /// with its reason, never a quiet end.
    private static func waitForStreaming(session: ProjectionSession, link: SDLProjectionLink, outcome: LinkOutcome,
                                         headUnit: String, stopper: DriveStopper, signals: StopSignals) async -> (any Error)? {
        let deadline = ContinuousClock.now + .seconds(30)
        while await session.state != .streaming {
            if signals.received != nil { return nil }
            if let ending = outcome.ending {
                let lastDisconnection = await link.lastDisconnection
                return headUnitLost(ending.error ?? lastDisconnection, headUnit: headUnit, beforeStreaming: true)
            }
            if let refused = await link.videoFailure {
                return CommandFailure(description: "head unit at \(headUnit): " + SDLProjectionLink.noVideoMessage(refused),
                                      exitStatus: ExitStatus.unavailable)
            }
            if let unusable = await link.displayFailure {
                return CommandFailure(description: "the head unit at \(headUnit) offers a screen the app cannot stream: \(unusable)",
                                      exitStatus: ExitStatus.unavailable)
            }
            if stopper.isStopped {
                // Stopped by the session itself (every output failed) before the link ended.
                return CommandFailure(description: "the drive stopped before the head unit at \(headUnit) let the app stream",
                                      exitStatus: ExitStatus.unavailable)
            }
            if ContinuousClock.now > deadline {
                return CommandFailure(
                    description: "the head unit at \(headUnit) did not let the app stream within 30 s (HMI level, capability or video service refused); check that it runs and shows the app",
                    exitStatus: ExitStatus.unavailable)
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// The line for a link to the head unit that ended by itself, with what ended it.
    static func headUnitLost(_ error: (any Error)?, headUnit: String, beforeStreaming: Bool) -> CommandFailure {
        let what = beforeStreaming ? "the app never streamed into the head unit at \(headUnit)"
                                   : "the head unit at \(headUnit) was lost before the drive ended"
        let why = error.map { ": \(explain($0).0)" } ?? ": it closed the connection"
        return CommandFailure(description: what + why + "; check that it runs and accepts the app", exitStatus: ExitStatus.unavailable)
    }

    static func progressLine(_ progress: SimulatedDrive.Progress) -> String {
        String(format: "%5.0f/%.0f s  %4.2f/%.2f km  %3.0f km/h%@  drawn %d  sent %d  keep-alives %d  %4.0f kbit/s ",
               progress.simulatedSeconds, progress.totalSeconds, progress.distance / 1000,
               progress.length / 1000, progress.speed * 3.6, progress.isStopped ? " (stopped)" : "          ",
               progress.statistics.framesRendered, progress.statistics.framesSent,
               progress.statistics.keepAlives, recentKilobits(progress.statistics))
    }

    /// --rtp as host and port.
    func rtpTarget() throws -> (host: String, port: Int)? {
        try rtp.map { try Self.hostAndPort($0, option: "--rtp", example: "127.0.0.1:5004") }
    }

    static func hostAndPort(_ text: String, option: String, example: String) throws -> (host: String, port: Int) {
        // The last colon separates the port, so a bracketed IPv6 address works too.
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (1...65535).contains(port) else {
            throw ValidationError("\(option) must be HOST:PORT with the port in 1...65535, like \(example); got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else {
            throw ValidationError("\(option) must be HOST:PORT with a host, like \(example); got '\(text)'")
        }
        return (host, port)
    }

    static func mp4Path(for url: URL) -> URL { url.deletingPathExtension().appendingPathExtension("mp4") }
    static func sdpPath(for url: URL) -> URL { url.deletingPathExtension().appendingPathExtension("sdp") }

    /// The engine's side of the events: control taps change its zoom; warnings are shown; the
    /// session stopping by itself ends the drive when `stopper` is given (without a head unit,
    /// where nothing would start it again).
    static func handle(_ event: ProjectionSessionEvent, drive: SimulatedDrive, stopper: DriveStopper?) async {
        switch event {
        case .controlTapped(let control):
            say("control tapped: \(control)")
            await drive.controlTapped(control)
        case .commandPerformed(let command):
            say("map command: \(command)")
        case .focusChanged(let region):
            say("focus: " + (region.map { "region \($0)" } ?? "none"))
        case .regionTapped(let id):
            say("region tapped: \(id)")
        case .mapTapped(let point, _):
            // Formatted, not converted: Int(_:) traps on a value beyond its range.
            say(String(format: "map tapped at (%.0f, %.0f)", point.x, point.y))
        case .resized(let stream):
            say("the head unit resized the stream to \(stream.encodedSize)")
        case .qualityChanged(let quality):
            say("the bitrate carries \(quality)")
        case .warning(let warning):
            Console.warning(warning.description)
        case .error(.noMatchingResolution):
            // No stream for the screen: the drive ends with that reason itself, said once.
            break
        case .error(let error):
            Console.error("\(error)")
        case .stateChanged(_, to: .disconnected):
            stopper?.stop()
        default:
            break
        }
    }

    /// Kilobits per second over the last whole second.
    static func recentKilobits(_ statistics: ProjectionSessionStatistics) -> Double {
        let seconds = statistics.bytesPerSecond
        guard seconds.count >= 2 else { return 0 }
        return Double(seconds[seconds.count - 2]) * 8 / 1000
    }
}

/// Ends a drive once: on a signal, or when the session stops by itself.
final class DriveStopper: Sendable {
    private struct State {
        var stopped = false
        var actions: [@Sendable () -> Void] = []
    }
    private let state = LockedState(State())

    var isStopped: Bool { state.withLock { $0.stopped } }

    func stop() {
        let actions = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.stopped else { return [] }
            state.stopped = true
            defer { state.actions = [] }
            return state.actions
        }
        for action in actions { action() }
    }

    /// Runs `action` on the stop, at once when it already happened.
    func whenStopped(_ action: @escaping @Sendable () -> Void) {
        let stopped = state.withLock { state in
            if !state.stopped { state.actions.append(action) }
            return state.stopped
        }
        if stopped { action() }
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
        let seconds = max(s.streamingTime.inSeconds, 1e-9)
        let windows = s.bytesPerSecond.dropLast().map { Double($0) * 8 / 1000 }
        let meanKilobits = Double(s.bytesSent) * 8 / 1000 / seconds
        let fixedRateFrames = Int(seconds * framesPerSecond)
        func percentile(_ values: [Double], _ p: Double) -> Double {
            guard !values.isEmpty else { return 0 }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
        }
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        let renderTimes = s.renderTimes.map(\.inMilliseconds), encodeTimes = s.encodeTimes.map(\.inMilliseconds)
        let latencies = s.latencies.map(\.inMilliseconds)
        let renderMs = mean(renderTimes), encodeMs = mean(encodeTimes)
        // Whole seconds in which something was drawn, the last (partial) one left out.
        let movingSeconds = s.framesRenderedPerSecond.dropLast().filter { $0 > 0 }.map(Double.init)
        let movingFramesPerSecond = percentile(movingSeconds, 0.5)
        // What a capturer drawing and encoding every frame slot would have spent, from our own
        // per-frame costs: an estimate, not a measurement of such a capturer. Ours is measured.
        let fixedRateWork = Double(fixedRateFrames) * (renderMs + encodeMs) / 1000
        let ourWork = (renderTimes.reduce(0, +) + encodeTimes.reduce(0, +)) / 1000
        say(String(format: """
            summary: %.0f s streamed (%.0f s simulated)
              frames rendered %d, frames sent %d (refinements %d, keep-alives %d, IDR %d)
              a fixed-rate capturer at %.0f fps would have sent %d: %.0f%% fewer pictures drawn
              bitrate mean %.0f kbit/s, max %.0f kbit/s over 1 s windows (target %d kbit/s)
              fps while moving %.1f (median of 1 s windows with movement); latency change -> sent p50 %.1f ms, p99 %.1f ms
              render %.1f ms, encode %.1f ms per picture; process CPU %.1f s%@
              render+encode work %.1f s against an estimated %.1f s at a fixed rate
            """,
            seconds, simulatedSeconds, s.framesRendered, s.framesSent, s.refinementFrames, s.keepAlives, s.idrFrames,
            framesPerSecond, fixedRateFrames, fixedRateFrames > 0 ? 100 * (1 - Double(s.framesRendered) / Double(fixedRateFrames)) : 0,
            meanKilobits, windows.max() ?? meanKilobits, bitrate / 1000,
            movingFramesPerSecond, percentile(latencies, 0.5), percentile(latencies, 0.99),
            renderMs, encodeMs, cpuSeconds,
            // A share of no streaming time means nothing.
            s.streamingTime.inSeconds >= 1 ? String(format: " (%.0f%% of one core)", 100 * cpuSeconds / seconds) : "",
            ourWork, fixedRateWork))
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

/// Plays a chime on the head unit before each turn and counts how each ended.
final class TurnAnnouncer: Sendable {
    private let state = LockedState<(player: SDLPromptPlayer?, outcomes: [String: Int])>((nil, [:]))
    private static let chime = AudioPrompt.chime()

    var player: SDLPromptPlayer? {
        get { state.withLock { $0.player } }
        set { state.withLock { $0.player = newValue } }
    }

    func announce() async {
        guard let player else { return }
        let outcome = await player.play(Self.chime)
        let key: String
        switch outcome {
        case .played: key = "played"
        case .notAudible: key = "not audible"
        case .interrupted: key = "interrupted"
        case .dropped: key = "dropped"
        }
        state.withLock { $0.outcomes[key, default: 0] += 1 }
    }

    /// `voice prompts: 3 played, 1 not audible`.
    var summary: String {
        let outcomes = state.withLock { $0.outcomes }
        guard !outcomes.isEmpty else { return "voice prompts: none (no turn announced)" }
        return "voice prompts: " + outcomes.sorted { $0.key > $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
    }
}

/// How the link's task ended, recorded before it stops the drive, so that whoever sees the
/// stop can read why: nil while it runs, then the error that ended it (nil error: it ended
/// without one, reconnecting having given up).
final class LinkOutcome: Sendable {
    struct Ending: Sendable {
        var error: (any Error)?
    }
    private let stored = LockedState<Ending?>(nil)

    var ending: Ending? { stored.withLock { $0 } }

    func end(with error: (any Error)?) {
        stored.withLock { $0 = $0 ?? Ending(error: error) }
    }
}

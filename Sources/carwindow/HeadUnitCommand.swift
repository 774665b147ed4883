import ArgumentParser
import CarWindow
import CarWindowH264
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc

/// `carwindow headunit`: the in-repo SmartDeviceLink head unit, to stream into without a car.
struct HeadUnitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "headunit",
        abstract: "Runs a simulated SmartDeviceLink head unit on TCP that records the video it receives.",
        discussion: """
        It accepts one app at a time (protocol v5), answers RegisterAppInterface and \
        GetSystemCapability with the capability given by the options, grants HMI level FULL, writes \
        the received H.264 to --out, shows the haptic rectangles it receives, and taps the app's \
        zoom-in button (--tap-after seconds after the video starts) with an OnTouchEvent. \
        Pair it with: carwindow drive --sdl 127.0.0.1:PORT

        Ctrl-C (SIGINT), SIGTERM or SIGHUP close the recording and exit with 130, 143 or 129. A \
        recording that fails (a full disk) ends on its last whole access unit while the head unit \
        goes on; the exit status is then 74.
        """)

    static let defaultOut = "out/received.h264"

    @Option(help: "TCP port to listen on, 0-65535 (SDL Core uses 12345; 0 picks a free one).") var port = 12345
    @Option(help: """
        Where the received video goes, Annex-B (default: \(Self.defaultOut), its folder created when \
        missing; the folder of a path you give must exist).
        """)
    var out: String?
    @Option(help: "Screen size WIDTHxHEIGHT offered to the app (each side 1-8192).") var size = "800x480"
    @Option(help: "Display scale offered (1-10).") var scale = 1.0
    @Option(help: "Preferred frames per second offered (1-60).") var fps = 15
    @Option(help: "Maximum bitrate offered, kbit/s (1-200000).") var maxBitrate = 600
    @Flag(help: "Say haptic spatial data is not supported.") var noHaptics = false
    @Option(help: "Seconds after the video starts to tap the app's zoom-in button, or --tap-region (0: never).") var tapAfter = 5.0
    @Option(help: "The id of the app's haptic rectangle that --tap-after taps (default: the map's zoom-in button).")
    var tapRegion: Int?
    @Option(help: "Quit after this many seconds (default: when the app leaves).") var seconds: Double?
    @Option(help: "Refuse a video size WIDTHxHEIGHT with a NAK (repeatable): the app must try its next size.")
    var nak: [String] = []
    @Option(help: "Another screen mode offered, WIDTHxHEIGHT or WIDTHxHEIGHT@SCALE (repeatable): the nested modes of the capability.")
    var also: [String] = []
    @Flag(help: "Say the screen takes no touches (with --no-haptics the app then draws its own focus).") var noTouch = false
    @Option(help: "Press a head-unit button (NAV_ZOOM_IN, TUNEDOWN, OK ...) this many seconds after the video starts, as NAME@SECONDS (repeatable; only buttons the app subscribed to reach it).")
    var press: [String] = []
    @Option(help: "Where the received voice-prompt audio goes, raw PCM (default: received-audio.pcm beside --out).")
    var audioOut: String?
    @Option(help: "Seconds after the video starts to resize the screen (see --resize-to).") var resizeAfter: Double?
    @Option(help: "The new screen size WIDTHxHEIGHT for --resize-after.") var resizeTo = "640x384"
    @Option(help: "Seconds after the video starts to change the maximum bitrate (see --bitrate-to); the size stays.")
    var bitrateAfter: Double?
    @Option(help: "The new maximum bitrate in kbit/s for --bitrate-after (1-200000).") var bitrateTo = 300
    @Option(help: "Seconds after the video starts to send the app to the background (HMI BACKGROUND, NOT_STREAMABLE).")
    var backgroundAfter: Double?
    @Option(help: "Seconds the app stays in the background before FULL again.") var backgroundFor = 3.0
    @Flag(help: "Be a slow head unit: read 1 KiB every 2 ms with small socket buffers.") var slow = false
    @Option(help: "Seconds after the video starts to drop the connection (the app reconnects).") var dropAfter: Double?
    @Option(help: "Refuse the app's registration with this result code (DISALLOWED, say), as a head unit whose policy does not know the app.")
    var refuseRegistration: String?
    @Option(help: "Also serve the head unit as a web page on http://127.0.0.1:PORT (0: a free port): the video, its haptic rectangles, touches by mouse and the head unit's controls. The head unit then runs until Ctrl-C, across apps.")
    var web: Int?
    @Flag(help: "Run SDL's security layer as a head unit built with it does (the TLS client): the app's protected StartService gets a handshake and an ACK with the E bit, its encrypted frames are decrypted.")
    var protected = false
    @Flag(help: "With --protected: speak DTLS 1.2 (SDL Core's shipped setting) instead of TLS.") var dtls = false
    @Option(help: "With --protected: CA certificates (PEM) the app's certificate must chain to; verifies the app.")
    var ca: String?
    @Option(help: "With --protected: services started only protected (SDL Core's ForceProtectedService), comma-separated: video, audio. Default: video.")
    var forceProtected = "video"

    /// `800x380@1.5` as width, height and scale (1 when left out).
    func parseMode(_ text: String) throws -> (Int, Int, Double) {
        let parts = text.split(separator: "@", maxSplits: 1).map(String.init)
        let usage = "--also takes WIDTHxHEIGHT or WIDTHxHEIGHT@SCALE with each side 1-8192 and the scale in 1-10, like 800x380@1.5; got '\(text)'"
        guard let first = parts.first, let (width, height) = try? parseSize(first) else { throw ValidationError(usage) }
        guard parts.count == 2 else { return (width, height, 1) }
        guard let modeScale = Double(parts[1]), HeadUnitDisplay.scaleRange.contains(modeScale) else {
            throw ValidationError(usage)
        }
        return (width, height, modeScale)
    }

    /// `NAV_ZOOM_IN@8` as the button and the seconds.
    func parsePress(_ text: String) throws -> (button: SDLButtonName, seconds: Double) {
        let parts = text.split(separator: "@", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].count <= 64, let at = Double(parts[1]), at.isFinite,
              (0...86_400).contains(at) else {
            throw ValidationError("--press takes NAME@SECONDS with 0-86400 seconds, like NAV_ZOOM_IN@8; got '\(text)'")
        }
        return (SDLButtonName(rawValue: parts[0]), at)
    }

    func validate() throws {
        try OptionCheck.integer(port, "--port", in: 0...65535)
        _ = try parseSize(size)
        try OptionCheck.number(scale, "--scale", in: HeadUnitDisplay.scaleRange)
        try OptionCheck.integer(fps, "--fps", in: 1...60, unit: " frames per second")
        try OptionCheck.integer(maxBitrate, "--max-bitrate", in: 1...200_000, unit: " kbit/s")
        try OptionCheck.number(tapAfter, "--tap-after", in: 0...86_400, unit: " seconds")
        try OptionCheck.number(tapRegion.map(Double.init), "--tap-region", in: 0...2_000_000_000)
        try OptionCheck.number(seconds, "--seconds", in: 0.1...604_800, unit: " seconds")
        for size in nak { _ = try parseSize(size) }
        for mode in also { _ = try parseMode(mode) }
        for entry in press { _ = try parsePress(entry) }
        try OptionCheck.number(resizeAfter, "--resize-after", in: 0...86_400, unit: " seconds")
        _ = try parseSize(resizeTo)
        try OptionCheck.number(bitrateAfter, "--bitrate-after", in: 0...86_400, unit: " seconds")
        try OptionCheck.integer(bitrateTo, "--bitrate-to", in: 1...200_000, unit: " kbit/s")
        try OptionCheck.number(backgroundAfter, "--background-after", in: 0...86_400, unit: " seconds")
        try OptionCheck.number(backgroundFor, "--background-for", in: 0...86_400, unit: " seconds")
        try OptionCheck.number(dropAfter, "--drop-after", in: 0...86_400, unit: " seconds")
        try OptionCheck.integer(web, "--web", in: 0...65535)
        _ = try forcedServices()
        if !protected, dtls || ca != nil {
            throw ValidationError("--dtls and --ca set up the security layer: give --protected too")
        }
    }

    /// `--force-protected`'s services.
    func forcedServices() throws -> Set<SDLServiceType> {
        var services = Set<SDLServiceType>()
        for name in forceProtected.split(separator: ",", omittingEmptySubsequences: true) {
            switch name.trimmingCharacters(in: .whitespaces) {
            case "video": services.insert(.video)
            case "audio": services.insert(.audio)
            case "none": break
            default: throw ValidationError("--force-protected lists video, audio or none; got '\(name)'")
            }
        }
        return services
    }

    func run() async throws {
        let signals = StopSignals.install()
        try await runCommand { try await serve(signals: signals) }
    }

    /// Runs the head unit until the app leaves, --seconds or a signal; returns the exit status.
    private func serve(signals: StopSignals) async throws -> Int32 {
        let (width, height) = try parseSize(size)
        let outURL = URL(fileURLWithPath: out ?? Self.defaultOut)
        try outputFolder(for: outURL, option: "--out", createIfMissing: out == nil)
        var configuration = HeadUnitSimulator.Configuration()
        configuration.port = port
        configuration.videoOutputPath = outURL.path
        configuration.capability = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: width, height: height), maxBitrate: maxBitrate,
            supportedFormats: [.h264Raw, .h264RTP], hapticSpatialDataSupported: !noHaptics, scale: scale,
            preferredFPS: fps)
        configuration.capability.additionalVideoStreamingCapabilities = try also.isEmpty ? nil : also.map {
            let (modeWidth, modeHeight, modeScale) = try parseMode($0)
            return VideoStreamingCapability(preferredResolution: ImageResolution(width: modeWidth, height: modeHeight), scale: modeScale)
        }
        if protected {
            var security = HeadUnitSimulator.Security(transport: dtls ? .dtls : .tls, forceProtected: try forcedServices())
            if let ca {
                let file = try inputFile(ca, option: "--ca", kind: "CA certificates (PEM)")
                do {
                    security.trustedCAsPEM = try InputFile.read(file.path, limit: 1 << 20)
                } catch {
                    throw CommandFailure(description: "--ca \(ca): \(error)", exitStatus: ExitStatus.noInput)
                }
                security.verifyApp = true
            }
            configuration.security = security
        }
        configuration.touchAvailable = !noTouch
        configuration.refusesRegistration = refuseRegistration
        configuration.buttons += [.ok, .seekLeft, .seekRight, .tuneUp, .tuneDown]
        let presses = try press.map(parsePress)
        var pressed = Set<Int>()
        for size in nak {
            let (nakWidth, nakHeight) = try parseSize(size)
            configuration.rejectedResolutions.insert(ImageResolution(width: nakWidth, height: nakHeight))
        }
        if slow {
            configuration.readChunkSize = 1024
            configuration.readDelay = .milliseconds(2)
            configuration.receiveBufferSize = 8192
        }
        let resizeTarget = try parseSize(resizeTo)
        let page = try web.map { try WebHeadUnit(port: $0) }
        if let page {
            // The head unit gets bytes only: an IDR is a unit holding a NAL unit of type 5.
            configuration.videoUnitObserver = { unit in
                page.publish(videoUnit: unit, isKeyframe: NALUnit.ranges(in: unit).contains { unit[$0.lowerBound] & 0x1F == 5 })
            }
        }
        let display = LockedState((width: width, height: height))
        let simulator = HeadUnitSimulator(configuration: configuration)
        let listening = try await simulator.start()
        if let failure = await simulator.snapshot().videoOutputFailure {
            await simulator.stop()
            throw failure
        }
        say("head unit listening on 127.0.0.1:\(listening) (\(width)x\(height), scale \(scale), \(fps) fps, \(maxBitrate) kbit/s)")
        if let security = configuration.security {
            let forced = security.forceProtected.map(\.description).sorted().joined(separator: ", ")
            say("security layer: \(security.transport == .dtls ? "DTLS" : "TLS"), "
                + (security.verifyApp ? "verifying the app's certificate" : "not verifying the app's certificate")
                + (forced.isEmpty ? "" : ", \(forced) only protected"))
        }
        say("stream into it with: carwindow drive --sdl 127.0.0.1:\(listening)")
        let controls = page.map { page in
            say("web head unit: http://127.0.0.1:\(page.port)/")
            return Task { for await control in page.requests { await Self.apply(control, to: simulator, display: display) } }
        }
        defer { controls?.cancel() }

        let start = Date()
        var videoSince: Date?
        var tapped = false
        var reportedHaptics = 0
        var sawApp = false
        var resized = false, foregrounded = false, dropped = false, rateChanged = false
        var backgrounded: Date?
        var lastVideo: SDLVideoServiceParameters?
        var reportedOutputFailure = false
        var reportedSecurityErrors = 0, reportedHandshakes = 0
        // Like SDL Core, the head unit closes the app (NONE) after refusing a size; its driver
        // opens it again a moment later, and the app tries its next size.
        var refusalsSeen = 0
        var reopenAt: Date?
        while signals.received == nil {
            try await Task.sleep(for: .milliseconds(250))
            let snapshot = await simulator.snapshot()
            if let failure = snapshot.videoOutputFailure, !reportedOutputFailure {
                reportedOutputFailure = true
                Console.error("\(failure); the head unit goes on without recording")
            }
            if let name = snapshot.registeredAppName, !sawApp {
                sawApp = true
                say("app registered: \(name) (\(snapshot.appHMITypes.joined(separator: ",")))")
            }
            if let video = snapshot.video, videoSince == nil {
                videoSince = Date()
                lastVideo = video
                say("video service started: \(video.resolution) \(video.format)")
            }
            if snapshot.handshakes > reportedHandshakes {
                reportedHandshakes = snapshot.handshakes
                say("security: handshake with the app finished (\(snapshot.securityProtocol ?? "TLS")); protected: "
                    + snapshot.protectedServices.map(\.description).sorted().joined(separator: ", "))
            }
            if snapshot.securityErrorsSent.count > reportedSecurityErrors {
                for error in snapshot.securityErrorsSent[reportedSecurityErrors...] { say("security: refused the app: \(error)") }
                reportedSecurityErrors = snapshot.securityErrorsSent.count
            }
            if snapshot.hapticData.count > reportedHaptics, let latest = snapshot.hapticData.last {
                reportedHaptics = snapshot.hapticData.count
                say("haptic rectangles (\(latest.count)): " + latest.map { "#\($0.id) \($0.rect)" }.joined(separator: " "))
            }
            if let since = videoSince, !tapped, tapAfter > 0, Date().timeIntervalSince(since) >= tapAfter,
               let target = snapshot.hapticData.last?.first(where: { $0.id == (tapRegion ?? HapticRegionSet.regionID(for: .zoomIn)) }) {
                tapped = true
                let point = target.rect.center, now = Int(Date().timeIntervalSince1970 * 1000) & 0x3FFF_FFFF
                try? await simulator.sendTouch(SDLTouchEvent(type: .begin, touches: [.init(id: 0, timestamp: now, x: point.x, y: point.y)]))
                try? await simulator.sendTouch(SDLTouchEvent(type: .end, touches: [.init(id: 0, timestamp: now + 70, x: point.x, y: point.y)]))
                // The rectangle is the app's: Int(_:) would trap on a NaN or a huge one.
                say(tapRegion.map { String(format: "tapped region #%d at (%.0f, %.0f)", $0, point.x, point.y) }
                    ?? String(format: "tapped zoom in at (%.0f, %.0f)", point.x, point.y))
            }
            if let since = videoSince {
                let elapsed = Date().timeIntervalSince(since)
                if let resizeAfter, !resized, elapsed >= resizeAfter {
                    resized = true
                    say("resizing the screen to \(resizeTo)")
                    display.withLock { $0 = (resizeTarget.0, resizeTarget.1) }
                    try? await simulator.sendCapabilityUpdate(VideoStreamingCapability(
                        preferredResolution: ImageResolution(width: resizeTarget.0, height: resizeTarget.1)))
                }
                if let bitrateAfter, !rateChanged, elapsed >= bitrateAfter {
                    rateChanged = true
                    say("changing the maximum bitrate to \(bitrateTo) kbit/s")
                    // An update carries what changed; the app keeps the rest of the capability.
                    try? await simulator.sendCapabilityUpdate(VideoStreamingCapability(maxBitrate: bitrateTo))
                }
                if let backgroundAfter, backgrounded == nil, elapsed >= backgroundAfter {
                    backgrounded = Date()
                    say("HMI BACKGROUND, NOT_STREAMABLE")
                    try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .background, videoStreamingState: .notStreamable))
                }
                if let since = backgrounded, !foregrounded, Date().timeIntervalSince(since) >= backgroundFor {
                    foregrounded = true
                    say("HMI FULL, STREAMABLE")
                    try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, audioStreamingState: "AUDIBLE",
                                                                   videoStreamingState: .streamable))
                }
                for (index, entry) in presses.enumerated() where !pressed.contains(index) && elapsed >= entry.seconds {
                    pressed.insert(index)
                    let delivered = (try? await simulator.pressButton(entry.button)) ?? false
                    say(delivered ? "pressed \(entry.button)" : "pressed \(entry.button): the app did not subscribe to it")
                }
                if let dropAfter, !dropped, elapsed >= dropAfter {
                    dropped = true
                    say("dropping the connection")
                    await simulator.dropConnection()
                }
            }
            let refusals = snapshot.videoRequests.filter { !$0.accepted }.count
            if refusals > refusalsSeen {
                refusalsSeen = refusals
                if snapshot.hmiStatus?.hmiLevel == SDLHMILevel.none, let refused = snapshot.videoRequests.last(where: { !$0.accepted }) {
                    say("refused \(refused.candidate); the app is closed (NONE), as SDL Core does, and opened again in 1 s")
                    reopenAt = Date().addingTimeInterval(1)
                }
            }
            if let at = reopenAt, Date() >= at {
                reopenAt = nil
                try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, audioStreamingState: "AUDIBLE",
                                                               videoStreamingState: .streamable))
            }
            if let video = snapshot.video, video != lastVideo {
                lastVideo = video
                if videoSince != nil { say("video service: \(video.resolution) \(video.format)") }
            }
            Console.progress(String(format: "received %d access units", snapshot.videoUnitCount))
            page?.publish(state: Self.stateJSON(snapshot, display: display.withLock { $0 }))
            if page == nil, sawApp, snapshot.unregistered || (!snapshot.isConnected && !dropped) {
                say("app left after \(snapshot.videoUnitCount) access units")
                break
            }
            if let seconds, Date().timeIntervalSince(start) >= seconds { break }
        }
        await simulator.stop()
        let snapshot = await simulator.snapshot()
        if let number = signals.received { say("stopped by \(StopSignals.name(number)) after \(snapshot.videoUnitCount) access units") }
        if let failure = snapshot.videoOutputFailure {
            say("FAILED: \(failure)")
            return signals.exitStatus ?? ExitStatus.ioError
        }
        say("wrote \(outURL.path)")
        if !snapshot.audio.isEmpty {
            let audioURL = URL(fileURLWithPath: audioOut ?? outURL.deletingLastPathComponent().appendingPathComponent("received-audio.pcm").path)
            do {
                try Data(snapshot.audio).write(to: audioURL)
                say("wrote \(audioURL.path): \(snapshot.audio.count) bytes of voice prompts, \(configuration.pcmSamplingRate) \(configuration.pcmBitsPerSample) mono PCM")
            } catch {
                Console.error("the voice-prompt audio could not be written to \(audioURL.path): \(error.localizedDescription)")
                return signals.exitStatus ?? ExitStatus.ioError
            }
        }
        return signals.exitStatus ?? 0
    }

    /// Carries out one control of the web page.
    static func apply(_ control: WebControl, to simulator: HeadUnitSimulator,
                      display: LockedState<(width: Int, height: Int)>) async {
        switch control {
        case .level(let level):
            let visible = level == .full || level == .limited
            say("web: HMI \(level.rawValue)")
            try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: level, audioStreamingState: visible ? "AUDIBLE" : "NOT_AUDIBLE",
                                                           videoStreamingState: visible ? .streamable : .notStreamable))
        case .resize(let width, let height):
            say("web: resizing the screen to \(width)x\(height)")
            display.withLock { $0 = (width, height) }
            try? await simulator.sendCapabilityUpdate(VideoStreamingCapability(
                preferredResolution: ImageResolution(width: width, height: height)))
        case .refuse(let width, let height):
            say("web: refusing \(width)x\(height) from now on")
            await simulator.refuse(ImageResolution(width: width, height: height))
        case .ambientLight(let night):
            let sent = (try? await simulator.sendAmbientLight(night ? .night : .day)) ?? false
            say("web: ambient light \(night ? "night" : "day")" + (sent ? "" : " (the app did not subscribe to the head lamps)"))
        case .button(let name):
            let delivered = (try? await simulator.pressButton(name)) ?? false
            say(delivered ? "web: pressed \(name)" : "web: pressed \(name): the app did not subscribe to it")
        case .touch(let event):
            try? await simulator.sendTouch(event)
        }
    }

    /// The head unit's state for the web page, as JSON.
    static func stateJSON(_ snapshot: HeadUnitSimulator.Snapshot, display: (width: Int, height: Int)) -> String {
        var state: [String: Any] = [
            "connected": snapshot.isConnected,
            "units": snapshot.videoUnitCount,
            "display": ["width": display.width, "height": display.height],
            // The app's rectangles: one that JSON cannot carry (NaN, infinite) would blank the
            // whole state, so it is left out.
            "regions": (snapshot.hapticData.last ?? []).filter {
                [$0.rect.x, $0.rect.y, $0.rect.width, $0.rect.height].allSatisfy(\.isFinite)
            }.map {
                ["id": $0.id, "x": $0.rect.x, "y": $0.rect.y, "width": $0.rect.width, "height": $0.rect.height]
            },
        ]
        if let level = snapshot.hmiStatus?.hmiLevel { state["level"] = level.rawValue }
        if let app = snapshot.registeredAppName { state["app"] = app }
        if let video = snapshot.video { state["video"] = ["width": video.resolution.width, "height": video.resolution.height] }
        guard let data = try? JSONSerialization.data(withJSONObject: state), let text = String(data: data, encoding: .utf8) else {
            return "{}"
        }
        return text
    }
}


import ArgumentParser
import CarWindow
import Foundation
import Glibc

/// `carwindow headunit`: the in-repo SmartDeviceLink head unit, to stream into without a car.
struct HeadUnitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "headunit",
        abstract: "Runs a simulated SmartDeviceLink head unit on TCP that records the video it receives.",
        discussion: """
        It accepts one app at a time (protocol v5), answers RegisterAppInterface and
        GetSystemCapability with the capability given by the options, grants HMI level FULL, writes
        the received H.264 to --out, shows the haptic rectangles it receives, and taps the app's
        zoom-in button (--tap-after seconds after the video starts) with an OnTouchEvent.
        Pair it with: carwindow drive --sdl 127.0.0.1:PORT
        """)

    @Option(help: "TCP port to listen on (SDL Core uses 12345; 0 picks a free one).") var port = 12345
    @Option(help: "Where the received video goes (Annex-B).") var out = "out/received.h264"
    @Option(help: "Screen size WIDTHxHEIGHT offered to the app.") var size = "800x480"
    @Option(help: "Display scale offered (1-10).") var scale = 1.0
    @Option(help: "Preferred frames per second offered.") var fps = 15
    @Option(help: "Maximum bitrate offered, kbit/s.") var maxBitrate = 600
    @Flag(help: "Say haptic spatial data is not supported.") var noHaptics = false
    @Option(help: "Seconds after the video starts to tap the app's zoom-in button (0: never).") var tapAfter = 5.0
    @Option(help: "Quit after this many seconds (default: when the app leaves).") var seconds: Double?
    @Option(help: "Refuse a video size WIDTHxHEIGHT with a NAK (repeatable): the app must try its next size.")
    var nak: [String] = []
    @Option(help: "Seconds after the video starts to resize the screen (see --resize-to).") var resizeAfter: Double?
    @Option(help: "The new screen size WIDTHxHEIGHT for --resize-after.") var resizeTo = "640x384"
    @Option(help: "Seconds after the video starts to send the app to the background (HMI BACKGROUND, NOT_STREAMABLE).")
    var backgroundAfter: Double?
    @Option(help: "Seconds the app stays in the background before FULL again.") var backgroundFor = 3.0
    @Flag(help: "Be a slow head unit: read 1 KiB every 2 ms with small socket buffers.") var slow = false
    @Option(help: "Seconds after the video starts to drop the connection (the app reconnects).") var dropAfter: Double?

    func run() async throws {
        let (width, height) = try parseSize(size)
        let outURL = URL(fileURLWithPath: out)
        try FileManager.default.createDirectory(at: outURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = HeadUnitSimulator.Configuration()
        configuration.port = port
        configuration.videoOutputPath = outURL.path
        configuration.capability = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: width, height: height), maxBitrate: maxBitrate,
            supportedFormats: [.h264Raw, .h264RTP], hapticSpatialDataSupported: !noHaptics, scale: scale,
            preferredFPS: fps)
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
        let simulator = HeadUnitSimulator(configuration: configuration)
        let listening = try await simulator.start()
        say("head unit listening on 127.0.0.1:\(listening) (\(width)x\(height), scale \(scale), \(fps) fps, \(maxBitrate) kbit/s)")
        say("stream into it with: carwindow drive --sdl 127.0.0.1:\(listening)")

        let start = Date()
        var videoSince: Date?
        var tapped = false
        var reportedHaptics = 0
        var sawApp = false
        var resized = false, foregrounded = false, dropped = false
        var backgrounded: Date?
        var lastVideo: SDLVideoServiceParameters?
        while true {
            try await Task.sleep(for: .milliseconds(250))
            let snapshot = await simulator.snapshot()
            if let name = snapshot.registeredAppName, !sawApp {
                sawApp = true
                say("\napp registered: \(name) (\(snapshot.appHMITypes.joined(separator: ",")))")
            }
            if let video = snapshot.video, videoSince == nil {
                videoSince = Date()
                lastVideo = video
                say("video service started: \(video.resolution) \(video.format)")
            }
            if snapshot.hapticData.count > reportedHaptics, let latest = snapshot.hapticData.last {
                reportedHaptics = snapshot.hapticData.count
                say("\nhaptic rectangles (\(latest.count)): " + latest.map { "#\($0.id) \($0.rect)" }.joined(separator: " "))
            }
            if let since = videoSince, !tapped, tapAfter > 0, Date().timeIntervalSince(since) >= tapAfter,
               let zoomIn = snapshot.hapticData.last?.first(where: { $0.id == HapticRegionSet.regionID(for: .zoomIn) }) {
                tapped = true
                let point = zoomIn.rect.center, now = Int(Date().timeIntervalSince1970 * 1000) & 0x3FFF_FFFF
                try? await simulator.sendTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: now, x: point.x, y: point.y)]))
                try? await simulator.sendTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: now + 70, x: point.x, y: point.y)]))
                say("\ntapped zoom in at (\(Int(point.x)), \(Int(point.y)))")
            }
            if let since = videoSince {
                let elapsed = Date().timeIntervalSince(since)
                if let resizeAfter, !resized, elapsed >= resizeAfter {
                    resized = true
                    say("\nresizing the screen to \(resizeTo)")
                    try? await simulator.sendCapabilityUpdate(VideoStreamingCapability(
                        preferredResolution: ImageResolution(width: resizeTarget.0, height: resizeTarget.1)))
                }
                if let backgroundAfter, backgrounded == nil, elapsed >= backgroundAfter {
                    backgrounded = Date()
                    say("\nHMI BACKGROUND, NOT_STREAMABLE")
                    try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .background, videoStreamingState: .notStreamable))
                }
                if let since = backgrounded, !foregrounded, Date().timeIntervalSince(since) >= backgroundFor {
                    foregrounded = true
                    say("\nHMI FULL, STREAMABLE")
                    try? await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
                }
                if let dropAfter, !dropped, elapsed >= dropAfter {
                    dropped = true
                    say("\ndropping the connection")
                    await simulator.dropConnection()
                }
            }
            if let video = snapshot.video, video != lastVideo {
                lastVideo = video
                if videoSince != nil { say("\nvideo service: \(video.resolution) \(video.format)") }
            }
            let line = String(format: "\rreceived %d access units", snapshot.videoUnitCount)
            FileHandle.standardOutput.write(Data(line.utf8))
            if sawApp, snapshot.unregistered || (!snapshot.isConnected && !dropped) {
                say("\napp left after \(snapshot.videoUnitCount) access units")
                break
            }
            if let seconds, Date().timeIntervalSince(start) >= seconds { break }
        }
        await simulator.stop()
        say("wrote \(out)")
    }
}


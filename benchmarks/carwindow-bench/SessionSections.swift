import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// Counts what a session sends, with arrival times, and throws nothing away it need not keep.
final class CountingSink: VideoSink, Sendable {
    private struct State {
        var bytes = 0
        var units = 0
        var times: [Double] = []
        var sizes: [Int] = []
        var stream: [UInt8] = []
    }
    private let state = LockedState(State())
    /// Whether it keeps the bytes themselves, for a decoder.
    private let keepsStream: Bool

    init(keepsStream: Bool = false) {
        self.keepsStream = keepsStream
    }

    func write(_ unit: AccessUnit) throws(SinkError) {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        state.withLock { state in
            state.bytes += unit.data.count
            state.units += 1
            if state.times.count < 1_000_000 {
                state.times.append(now)
                state.sizes.append(unit.data.count)
            }
            if keepsStream { state.stream += unit.data }
        }
    }

    func close() {}

    var bytes: Int { state.withLock { $0.bytes } }
    var units: Int { state.withLock { $0.units } }
    /// Arrival times, seconds on the monotonic clock.
    var times: [Double] { state.withLock { $0.times } }
    /// Bytes of each access unit, in order.
    var sizes: [Int] { state.withLock { $0.sizes } }
    var stream: [UInt8] { state.withLock { $0.stream } }

    /// Returns once more than `count` units arrived; throws after 30 s without them (a stalled
    /// session fails the section instead of hanging the run). Arrival times are recorded by
    /// `write`, so the polling interval adds nothing to measured latencies.
    func waitForUnits(above count: Int) async throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
        while units <= count {
            guard DispatchTime.now().uptimeNanoseconds < deadline else {
                throw BenchError("the session sent no access unit within 30 s (\(units) so far): it stalled or stopped streaming")
            }
            try await Task.sleep(for: .microseconds(200))
        }
    }
}

extension BenchContext {
    /// A session over the bundled data drawing into `sink` (nil: only into a head-unit link's output).
    func makeSession(size: FrameSize, sink: (@Sendable () -> any VideoSink)?, drawsEveryFrame: Bool = false,
                     tiles: (any TileSource)? = nil, camera: Camera) throws -> ProjectionSession {
        var configuration = ProjectionSessionConfiguration(
            tiles: try tiles ?? openTileSource(at: self.tiles), dayStyle: try Style(contentsOf: style("day")),
            fonts: try FontLibrary(directory: assets.appendingPathComponent("fonts")), camera: camera,
            makeSink: sink.map { sink -> VideoSinkFactory in { _ in sink() } })
        configuration.name = "bench"
        configuration.encoder = .forced(.openh264)
        configuration.encoderThreads = encoderThreads
        configuration.drawsEveryFrame = drawsEveryFrame
        return ProjectionSession(configuration: configuration, context: render)
    }

    /// A session that encodes with exactly `settings`, draws no controls and sends no
    /// refinements: what the encode benchmarks measure.
    func makeEncodingSession(size: FrameSize, settings: EncoderSettings, sink: CountingSink,
                             camera: Camera) throws -> ProjectionSession {
        var configuration = ProjectionSessionConfiguration(
            tiles: try openTileSource(at: tiles), dayStyle: try Style(contentsOf: style("day")),
            fonts: try FontLibrary(directory: assets.appendingPathComponent("fonts")), camera: camera,
            makeSink: { _ in sink })
        configuration.name = "bench-encode"
        // VA-API where a render node offers it, as engines get by default.
        configuration.encoder = .automatic
        configuration.encoderSettings = settings
        configuration.showsControls = false
        configuration.refinementFrames = 0
        return ProjectionSession(configuration: configuration, context: render)
    }

    /// A head unit's capability for `size` at `fps`, with `kilobits` a second (default: 600
    /// kbit/s scaled with the area from 800x480).
    static func capability(_ size: FrameSize, fps: Int = 15, kilobits: Int? = nil) -> VideoStreamingCapability {
        VideoStreamingCapability(preferredResolution: ImageResolution(width: size.width, height: size.height),
                                 maxBitrate: kilobits ?? 600 * size.width * size.height / (800 * 480), supportedFormats: [.h264Raw],
                                 hapticSpatialDataSupported: true, scale: 1, preferredFPS: fps)
    }

    /// ``capability(_:fps:kilobits:)`` as a session takes it without a head unit.
    static func display(_ size: FrameSize, fps: Int = 15, kilobits: Int? = nil) -> HeadUnitDisplay {
        capability(size, fps: fps, kilobits: kilobits).headUnitDisplay
    }
}

/// A still map: what a session costs when nothing moves (keep-alives only).
struct IdleSection: BenchmarkSection {
    let name = "idle"
    let summary = "a still map: CPU and keep-alive bytes per minute (goal: < 1% of a core, < 8 kbit/s)"

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let seconds = Double(context.count(quick: 10, full: 60))
        var table = TextTable(title: "Idle: a still map for \(Int(seconds)) s after it settled",
                              header: ["size", "CPU % of a core", "kbit/s", "bytes/min", "keep-alives", "max gap s", "drawn"])
        for size in context.sizes {
            let sink = CountingSink()
            let session = try context.makeSession(size: size, sink: { sink },
                                                  camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415),
                                                                 zoom: 16, pitch: 45))
            try await session.connect(display: BenchContext.display(size))
            try await session.startStreaming()
            // Let the tiles arrive, the picture refine and the encoder settle at its idle rate.
            try await Task.sleep(for: .seconds(3))
            let before = await session.statistics, bytesBefore = sink.bytes, unitsBefore = sink.units
            let cpuStart = CPUTimes.now()
            try await Task.sleep(for: .seconds(seconds))
            let cpuEnd = CPUTimes.now()
            let after = await session.statistics
            let bytes = sink.bytes - bytesBefore
            let times = Array(sink.times.dropFirst(unitsBefore))
            await session.close()
            let wall = cpuEnd.wall - cpuStart.wall
            let cpuPercent = (cpuEnd.process - cpuStart.process) / wall * 100
            let kilobits = Double(bytes) * 8 / wall / 1000
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            let maxGap = gaps.max() ?? wall
            let drawn = after.framesRendered - before.framesRendered
            var entry = CaseResult(label: size.description)
            entry.add("idle_cpu_percent", cpuPercent, "% of one core", better: .lower)
            entry.add("idle_kilobits_per_second", kilobits, "kbit/s", better: .lower)
            entry.add("idle_bytes_per_minute", Double(bytes) / wall * 60, "bytes", better: .lower)
            entry.add("keep_alives", Double(after.keepAlives - before.keepAlives), "pictures")
            entry.add("max_keep_alive_gap", maxGap, "s", better: .lower)
            entry.add("pictures_drawn", Double(drawn), "pictures", better: .lower)
            result.cases.append(entry)
            table.rows.append([size.description, String(format: "%.2f", cpuPercent), String(format: "%.2f", kilobits),
                               "\(Int(Double(bytes) / wall * 60))", "\(after.keepAlives - before.keepAlives)",
                               String(format: "%.2f", maxGap), "\(drawn)"])
            result.checks.append(.goal(maxGap < 1, "idle \(size): keep-alives < 1 s apart",
                                         String(format: "largest gap %.2f s", maxGap)))
            result.checks.append(.expect(drawn == 0, "idle \(size): nothing drawn on a still map", "\(drawn) pictures drawn"))
            result.checks.append(.expect(kilobits < 8, "idle \(size): under 8 kbit/s", String(format: "%.2f kbit/s", kilobits)))
        }
        result.notes.append("CPU is the whole process's user+system time over the idle window (all threads), as a percentage of one core; the goal is under 1%.")
        result.tables.append(table)
        return result
    }
}

/// The simulated drive twice: drawing on change (the session) and drawing every frame slot (what
/// the reference capturers do), with the same route, speed and encoder.
struct DriveSection: BenchmarkSection {
    let name = "drive"
    let summary = "the simulated drive: pictures and CPU when drawing on change against drawing every frame"

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        // Quick: 20 s at 8x reaches the first two lights; full: 60 s at 4x drives to the third.
        let seconds = Double(context.count(quick: 20, full: 60))
        let speedup = Double(context.count(quick: 8, full: 4))
        let tiles = SharedTileCache(source: try openTileSource(at: context.tiles))
        let plan = try DrivePlan(route: try HelsinkiDrive.route(using: tiles))
        var table = TextTable(title: "Drive: \(Int(seconds)) s of the Helsinki drive at \(Int(speedup))x, 15 fps",
                              header: ["size", "mode", "drawn", "sent", "keep-alives", "CPU s", "kbit/s mean", "kbit/s max",
                                       "latency p50/p99 ms"])
        for size in context.sizes {
            var entry = CaseResult(label: size.description)
            var cpu: [Bool: Double] = [:]
            var drawn: [Bool: Int] = [:]
            for everyFrame in [false, true] {
                let sink = CountingSink()
                let session = try context.makeSession(size: size, sink: { sink }, drawsEveryFrame: everyFrame, tiles: tiles,
                                                      camera: Camera(center: plan.state(at: 0).coordinate, zoom: 17, pitch: 45))
                try await session.connect(display: BenchContext.display(size))
                try await session.startStreaming()
                let drive = SimulatedDrive(plan: plan, session: session,
                                           options: .init(speedup: speedup, maximumSeconds: seconds))
                let start = CPUTimes.now()
                await drive.run()
                let end = CPUTimes.now()
                let statistics = await session.statistics
                await session.close()
                let mode = everyFrame ? "every_frame" : "on_change"
                let windows = statistics.bytesPerSecond.dropLast().map { Double($0) * 8 / 1000 }
                let mean = Double(statistics.bytesSent) * 8 / 1000 / max(statistics.streamingTime.inSeconds, 1e-9)
                let latency = Summary(milliseconds: statistics.latencies)
                cpu[everyFrame] = end.process - start.process
                drawn[everyFrame] = statistics.framesRendered
                entry.add("\(mode)_pictures_drawn", Double(statistics.framesRendered), "pictures", better: .lower)
                entry.add("\(mode)_pictures_sent", Double(statistics.framesSent), "pictures")
                entry.add("\(mode)_keep_alives", Double(statistics.keepAlives), "pictures")
                entry.add("\(mode)_cpu_seconds", end.process - start.process, "s", better: .lower)
                entry.add("\(mode)_kilobits_mean", mean, "kbit/s")
                entry.add("\(mode)_kilobits_max_window", windows.max() ?? mean, "kbit/s")
                entry.add("\(mode)_latency_p50", latency.p50, "ms", better: .lower)
                entry.add("\(mode)_latency_p99", latency.p99, "ms", better: .lower)
                table.rows.append([size.description, everyFrame ? "every frame" : "on change", "\(statistics.framesRendered)",
                                   "\(statistics.framesSent)", "\(statistics.keepAlives)",
                                   String(format: "%.1f", end.process - start.process), String(format: "%.0f", mean),
                                   String(format: "%.0f", windows.max() ?? mean),
                                   String(format: "%.0f/%.0f", latency.p50, latency.p99)])
                entry.series.append(Series(name: "\(mode)_kilobits_per_second", unit: "kbit/s", values: windows))
            }
            var chart = LineChart(title: "Bitrate per 1 s window along the drive (\(size))", xLabel: "seconds", yLabel: "kbit/s")
            for (index, series) in entry.series.enumerated() {
                let label = series.name.hasPrefix("every_frame") ? "every frame" : "on change"
                chart.lines.append(.init(name: label, points: series.values.enumerated().map { (Double($0.offset), $0.element) },
                                         color: LineChart.palette[index % LineChart.palette.count]))
            }
            result.chartDocuments.append((name: "drive-bitrate-\(size)", svg: chart.svg()))
            let saved = 1 - (cpu[false] ?? 0) / max(cpu[true] ?? 1, 1e-9)
            let fewer = 1 - Double(drawn[false] ?? 0) / Double(max(drawn[true] ?? 1, 1))
            entry.add("cpu_saved", saved * 100, "%", better: .higher)
            entry.add("pictures_drawn_saved", fewer * 100, "%", better: .higher)
            result.cases.append(entry)
            result.checks.append(.expect((drawn[false] ?? 0) < (drawn[true] ?? 0),
                                         "drive \(size): drawing on change draws fewer pictures",
                                         "\(drawn[false] ?? 0) against \(drawn[true] ?? 0)"))
        }
        result.tables.append(table)
        result.notes.append("Both modes drive the same plan for the same wall time; stops at lights are where drawing on change saves.")
        return result
    }
}

/// RSS over a 30-minute simulated drive run fast (30x), repeating the round trip.
struct MemorySection: BenchmarkSection {
    let name = "memory"
    let summary = "RSS over a 30-minute simulated drive at 30x (full mode only)"
    var runsInQuickMode: Bool { false }

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let size = context.sizes.first ?? FrameSize(width: 800, height: 480)
        let tiles = SharedTileCache(source: try openTileSource(at: context.tiles))
        let trip = try HelsinkiDrive.roundTrip(using: tiles)
        var route = trip
        while route.length < 18_000 { route = route.appending(trip) }
        let plan = try DrivePlan(route: route)
        let speedup = 30.0
        let simulated = min(plan.duration, context.quick ? 300 : 1800)
        let sink = CountingSink()
        let session = try context.makeSession(size: size, sink: { sink }, tiles: tiles,
                                              camera: Camera(center: plan.state(at: 0).coordinate, zoom: 17, pitch: 45))
        try await session.connect(display: BenchContext.display(size))
        try await session.startStreaming()
        let sampler = ProcessSampler(intervalMilliseconds: 250)
        sampler.start()
        let drive = SimulatedDrive(plan: plan, session: session,
                                   options: .init(speedup: speedup, maximumSeconds: simulated / speedup))
        await drive.run()
        let samples = sampler.stop()
        let statistics = await session.statistics
        await session.close()
        var entry = CaseResult(label: size.description)
        entry.add("simulated_minutes", simulated / 60, "min")
        entry.add("pictures_drawn", Double(statistics.framesRendered), "pictures")
        if let growth = MemoryGrowth(samples, warmUpSeconds: 10) {
            entry.add("rss_after_warm_up", growth.rssAfterWarmUpMiB, "MiB")
            entry.add("rss_at_end", growth.rssAtEndMiB, "MiB")
            entry.add("rss_growth", growth.growthMiB, "MiB", better: .lower)
            entry.add("rss_slope", growth.slopeMiBPerHour, "MiB per wall hour", better: .lower)
            result.tables.append(TextTable(title: "Memory over \(Int(simulated / 60)) simulated minutes at \(Int(speedup))x",
                                           header: ["size", "RSS after warm-up MiB", "at end MiB", "growth MiB", "slope MiB/h"],
                                           rows: [[size.description, String(format: "%.1f", growth.rssAfterWarmUpMiB),
                                                   String(format: "%.1f", growth.rssAtEndMiB), String(format: "%.1f", growth.growthMiB),
                                                   String(format: "%.1f", growth.slopeMiBPerHour)]]))
            result.checks.append(.expect(growth.growthMiB < 64, "memory: RSS grows less than 64 MiB after warm-up",
                                         String(format: "%.1f MiB", growth.growthMiB)))
        }
        entry.series.append(Series(name: "rss", unit: "MiB", values: samples.map { Double($0.rssBytes) / 1_048_576 }))
        result.cases.append(entry)
        var chart = LineChart(title: "RSS over the simulated drive (\(size))", xLabel: "wall seconds", yLabel: "MiB")
        chart.lines.append(.init(name: "RSS", points: samples.map { ($0.seconds, Double($0.rssBytes) / 1_048_576) },
                                 color: LineChart.palette[0]))
        result.chartDocuments.append((name: "memory-rss", svg: chart.svg()))
        return result
    }
}

/// A moving map through the SmartDeviceLink link to the in-repo head unit on loopback, against
/// the same session writing to a file.
struct LinkSection: BenchmarkSection {
    let name = "link"
    let summary = "frames per second and latency through the SDL link on loopback, against a file"

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let seconds = Double(context.count(quick: 5, full: 20))
        var table = TextTable(title: "SDL link on loopback against a file, camera moving for \(Int(seconds)) s at up to 30 fps",
                              header: ["size", "sink", "pictures sent/s", "received/s", "latency p50/p99 ms"])
        for size in context.sizes {
            var entry = CaseResult(label: size.description)
            for (viaLink, protected) in [(false, false), (true, false), (true, true)] {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-bench-\(UUID().uuidString).h264")
                defer { try? FileManager.default.removeItem(at: file) }
                var simulator: HeadUnitSimulator?
                var port = 0
                if viaLink {
                    var configuration = HeadUnitSimulator.Configuration()
                    configuration.capability = BenchContext.capability(size, fps: 30)
                    if protected { configuration.security = HeadUnitSimulator.Security(transport: .tls, forceProtected: [.video]) }
                    let made = HeadUnitSimulator(configuration: configuration)
                    port = try await made.start()
                    simulator = made
                }
                // Through the link the head unit is the session's only output.
                var makeSink: (@Sendable () -> any VideoSink)?
                if !viaLink {
                    makeSink = {
                        if let fileSink = try? AnnexBFileSink(url: file) { return fileSink }
                        return CountingSink()
                    }
                }
                let session = try context.makeSession(
                    size: size, sink: makeSink,
                    camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16, pitch: 45))
                var link: SDLProjectionLink?
                var running: Task<Void, any Error>?
                if viaLink {
                    let made = SDLProjectionLink(
                        session: session,
                        connection: SDLConnection.Configuration(
                            appName: "CarWindow Bench", appID: "carwindow-bench", reconnect: .never,
                            security: protected ? SDLSecurityConfiguration(libraries: [
                                try OpenSSLSecurityLibrary(certificatePEM: ThrowAwayIdentity.certificatePEM,
                                                           privateKeyPEM: ThrowAwayIdentity.privateKeyPEM)]) : nil),
                        transport: { [port] in SDLTCPTransport(host: "127.0.0.1", port: port) })
                    link = made
                    running = Task { try await made.run() }
                    let deadline = Date().addingTimeInterval(10)
                    while await session.state != .streaming, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
                } else {
                    try await session.connect(display: BenchContext.display(size, fps: 30))
                    try await session.startStreaming()
                }
                let start = Date()
                var camera = await session.camera
                while Date().timeIntervalSince(start) < seconds {
                    camera.bearing += 0.5
                    await session.setCamera(camera)
                    try await Task.sleep(for: .milliseconds(10))
                }
                let wall = Date().timeIntervalSince(start)
                let statistics = await session.statistics
                let received = await simulator?.snapshot().videoUnitCount ?? statistics.framesSent
                if let link { await link.stop(); _ = await running?.result }
                await session.close()
                await simulator?.stop()
                let label = protected ? "sdl_protected" : viaLink ? "sdl" : "file"
                let latency = Summary(milliseconds: statistics.latencies)
                entry.add("\(label)_pictures_per_second", Double(statistics.framesSent) / wall, "fps", better: .higher)
                entry.add("\(label)_received_per_second", Double(received) / wall, "fps", better: .higher)
                entry.add("\(label)_latency_p50", latency.p50, "ms", better: .lower)
                entry.add("\(label)_latency_p99", latency.p99, "ms", better: .lower)
                table.rows.append([size.description, protected ? "SDL link, protected (TLS 1.3)" : viaLink ? "SDL link (loopback)" : "Annex-B file",
                                   String(format: "%.1f", Double(statistics.framesSent) / wall),
                                   String(format: "%.1f", Double(received) / wall),
                                   String(format: "%.0f/%.0f", latency.p50, latency.p99)])
                if viaLink {
                    result.checks.append(.expect(received > 0, "link \(size): the head unit received \(protected ? "protected " : "")video",
                                                 "\(received) units"))
                }
            }
            result.cases.append(entry)
        }
        result.tables.append(table)
        result.notes.append("Latency runs from a camera change to the access unit leaving the session (file write or the link's send queue).")
        return result
    }
}

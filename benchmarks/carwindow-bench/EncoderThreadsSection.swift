import CarWindow
import CarWindowSystemSupport
import Foundation

/// OpenH264 with one thread against several, on the same drawn pictures: encoder time per
/// picture, bitrate per 1 s window (the window governor must hold with slices as without) and
/// Y-PSNR of the decoded stream. The pictures are the encode section's path, drawn once and
/// played forward then back, encoded at 15 fps and the encode section's bitrate.
struct EncoderThreadsSection: BenchmarkSection {
    let name = "threads"
    let summary = "OpenH264 threads: encoder ms per picture, bitrate windows and Y-PSNR, 1 thread against several"

    static let framesPerSecond = 15.0
    /// Issue 29's goals: 2 threads at 1080p take at most this share of one thread's time here (2 cores) ...
    static let speedGoal = 0.75
    /// ... lose at most this much Y-PSNR ...
    static let psnrGoal = 0.3
    /// ... and every thread count holds the windows as one thread does.
    static let windowsGoal = (shareWithin: 0.95, maxRatio: 1.2)

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let cores = ProcessorCores.available
        let drawn = context.count(quick: 75, full: 150)
        let path = CameraPath.helsinki(frames: drawn)
        var table = TextTable(title: "OpenH264 threads (one slice each) on \(drawn * 2) pictures at 15 fps, \(cores) cores; automatic picks the marked count",
                              header: ["size", "threads", "encoder ms mean / p99", "x one thread",
                                       "kbit/s mean / max window (target)", "windows within 10%", "max window / target", "Y-PSNR dB"])
        if context.ffmpeg == nil { result.notes.append("ffmpeg not found: streams not decoded, Y-PSNR not measured") }

        for size in context.sizes {
            let bitrate = EncodeSection.bitrate(for: size)
            let frames = try await drawFrames(context, size: size, path: path)
            let references = context.ffmpeg == nil ? [] : frames.map(visibleLuma)
            let automatic = EncoderThreads.automatic.count(width: size.width, height: size.height)
            let counts = Array(Set([1, 2, 4, 8].filter { $0 <= cores } + [automatic])).sorted()
            var single: (milliseconds: Double, psnr: Double)?

            for count in counts {
                let settings = EncoderSettings(width: size.width, height: size.height, framesPerSecond: Self.framesPerSecond,
                                               bitrate: bitrate, threads: .fixed(count))
                let encoder = try OpenH264Encoder(settings: settings)
                var times: [Double] = [], sizes: [Int] = [], stream: [UInt8] = []
                for (index, frame) in frames.enumerated() {
                    let start = DispatchTime.now().uptimeNanoseconds
                    let unit = try encoder.encode(frame, presentationTime: .seconds(Double(index) / Self.framesPerSecond),
                                                  forceIDR: false)
                    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                    sizes.append(unit.data.count)
                    stream += unit.data
                }
                let milliseconds = Summary(times)
                let windows = BitrateWindows(accessUnitBytes: sizes, framesPerSecond: Self.framesPerSecond, target: Double(bitrate))
                let maxRatio = windows.maxWindow / Double(bitrate)
                var psnr = Double.nan
                if let ffmpeg = context.ffmpeg {
                    let decoded = try decodeLuma(stream, width: size.width, height: size.height, ffmpeg: ffmpeg)
                    result.checks.append(.expect(decoded.count == frames.count, "threads \(size) x\(count): ffmpeg decodes every frame",
                                                 "\(decoded.count) of \(frames.count) frames decoded"))
                    psnr = meanPSNR(decoded, references)
                }
                if count == 1 { single = (milliseconds.mean, psnr) }
                let speed = single.map { milliseconds.mean / $0.milliseconds } ?? .nan

                var entry = CaseResult(label: "\(size) x\(count)")
                entry.add("threads", Double(count), "threads")
                entry.add("automatic", count == automatic ? 1 : 0, "bool")
                entry.add("encoder_ms_mean", milliseconds.mean, "ms", better: .lower)
                entry.add("encoder_ms_p99", milliseconds.p99, "ms", better: .lower)
                entry.add("time_ratio_to_one_thread", speed, "ratio", better: .lower)
                entry.add("bitrate_mean", windows.mean, "bit/s")
                entry.add("bitrate_max_window_ratio", maxRatio, "ratio", better: .lower)
                entry.add("bitrate_windows_within_10_percent", windows.withinTolerance * 100, "%", better: .higher)
                if psnr.isFinite { entry.add("y_psnr", psnr, "dB", better: .higher) }
                entry.series.append(Series(name: "bitrate_windows", unit: "bit/s", values: windows.windows))
                entry.series.append(Series(name: "encoder_ms", unit: "ms", values: times))
                result.cases.append(entry)

                table.rows.append([
                    size.description, count == automatic ? "\(count) (automatic)" : "\(count)",
                    "\(formatted(milliseconds.mean)) / \(formatted(milliseconds.p99))", formatted(speed),
                    "\(formatted(windows.mean / 1000, "%.0f")) / \(formatted(windows.maxWindow / 1000, "%.0f")) (\(bitrate / 1000))",
                    "\(formatted(windows.withinTolerance * 100, "%.0f"))% of \(windows.windows.count)",
                    formatted(maxRatio), psnr.isFinite ? formatted(psnr) : "-",
                ])
                result.checks.append(.goal(windows.withinTolerance >= Self.windowsGoal.shareWithin && maxRatio <= Self.windowsGoal.maxRatio,
                                           "threads \(size) x\(count): \(Int(Self.windowsGoal.shareWithin * 100))% of windows within ±10%, none above \(Self.windowsGoal.maxRatio)x",
                                           "\(formatted(windows.withinTolerance * 100, "%.0f"))%, largest \(formatted(maxRatio))x"))
                if count == 2, size == FrameSize(width: 1920, height: 1080), let single {
                    result.checks.append(.goal(speed <= Self.speedGoal, "threads \(size): 2 threads take <= \(Self.speedGoal)x one thread's time",
                                               "\(formatted(speed))x (\(formatted(milliseconds.mean)) against \(formatted(single.milliseconds)) ms)"))
                }
                if count > 1, let single, psnr.isFinite, single.psnr.isFinite {
                    result.checks.append(.goal(single.psnr - psnr <= Self.psnrGoal,
                                               "threads \(size) x\(count): Y-PSNR within \(Self.psnrGoal) dB of one thread",
                                               "\(formatted(psnr)) against \(formatted(single.psnr)) dB"))
                }
            }
        }
        result.tables.append(table)
        result.notes.append("Encoder time is the encode call alone (OpenH264 and the chroma split), with nothing else running; in a session the renderer shares the cores. Several threads give a different stream each run (the threads share one rate control), so figures of x2 and up vary a little between runs.")
        return result
    }

    /// The path drawn once, then played back to its start: twice the pictures for the windows.
    private func drawFrames(_ context: BenchContext, size: FrameSize, path: [Camera]) async throws -> [NV12Frame] {
        let renderer = try await context.makeRenderer(size: size, camera: path[0])
        await renderer.setOverlays(MapOverlays(showsControls: false))
        var frames: [NV12Frame] = []
        for camera in path {
            await renderer.setCamera(camera)
            _ = await renderer.renderWhenLoaded()
            frames.append(try await renderer.readNV12())
        }
        return frames + frames.reversed()
    }
}

import CarWindow
import CarWindowSystemSupport
import Foundation

/// Bitrate adherence of a projection session as a head unit sees it: the camera moves every
/// frame at the negotiated rate, stops, and moves again, and every whole second of motion is
/// counted against the head unit's bitrate, including the first seconds after each stop.
struct AdherenceSection: BenchmarkSection {
    let name = "adherence"
    let summary = "bitrate per 1 s window while moving, stops included (goal: 95% within ±10%, none above 1.2x)"

    static let framesPerSecond = 15
    /// The goal of issue 12 and the margins CI's quick run checks with: the quick run has about
    /// a dozen windows, so one window off is 8%; CI machines run other jobs beside it.
    static let tolerance = 0.10
    static let goalShareWithin = 0.95
    static let goalMaxRatio = 1.2
    static let checkedShareWithin = 0.8
    static let checkedMaxRatio = 1.3

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        // Moving and still periods, in seconds.
        let periods: [(moving: Bool, seconds: Int)] = context.quick
            ? [(true, 5), (false, 3), (true, 5), (false, 3), (true, 4)]
            : [(true, 10), (false, 5), (true, 10), (false, 5), (true, 10), (false, 5), (true, 10)]
        var table = TextTable(title: "Bitrate while moving, with stops: "
                                  + periods.map { "\($0.moving ? "move" : "stop") \($0.seconds) s" }.joined(separator: ", "),
                              header: ["size", "backend", "windows", "within ±10%", "max window / target", "min window / target",
                                       "kbit/s per window (target)"])
        for size in context.sizes {
            let sink = CountingSink()
            let path = CameraPath.helsinki(frames: periods.filter(\.moving).map(\.seconds).reduce(0, +) * Self.framesPerSecond)
            let session = try context.makeSession(size: size, sink: { sink }, camera: path[0])
            try await session.connect(display: BenchContext.display(size, fps: Self.framesPerSecond))
            await session.preloadTiles(along: path)
            try await session.startStreaming()
            let target = Double(await session.encoderSettings?.bitrate ?? 0)
            let backend = await session.encoderBackend?.rawValue ?? "none"
            var camera = 0
            var movingSpans: [(start: Double, end: Double)] = []
            for period in periods {
                let start = now()
                if period.moving {
                    // One new camera per frame slot, on an even clock.
                    for tick in 0..<(period.seconds * Self.framesPerSecond) {
                        let due = start + Double(tick) / Double(Self.framesPerSecond)
                        let wait = due - now()
                        if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
                        await session.setCamera(path[min(camera, path.count - 1)])
                        camera += 1
                    }
                    let end = start + Double(period.seconds)
                    let wait = end - now()
                    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
                    movingSpans.append((start, end))
                } else {
                    try await Task.sleep(for: .seconds(Double(period.seconds)))
                }
            }
            await session.close()

            // Whole seconds of each moving span, from the moment it started.
            let times = sink.times, sizes = sink.sizes
            var windows: [Double] = []
            for span in movingSpans {
                var second = span.start
                while second + 1 <= span.end + 1e-6 {
                    let bits = zip(times, sizes).filter { $0.0 >= second && $0.0 < second + 1 }.map { $0.1 * 8 }.reduce(0, +)
                    windows.append(Double(bits))
                    second += 1
                }
            }
            let ratios = windows.map { $0 / max(target, 1) }
            let within = ratios.isEmpty ? .nan : Double(ratios.filter { abs($0 - 1) <= Self.tolerance }.count) / Double(ratios.count)
            let maxRatio = ratios.max() ?? .nan, minRatio = ratios.min() ?? .nan
            var entry = CaseResult(label: size.description)
            entry.add("target_bitrate", target, "bit/s")
            entry.add("windows", Double(windows.count), "windows")
            entry.add("windows_within_10_percent", within * 100, "%", better: .higher)
            entry.add("max_window_ratio", maxRatio, "ratio", better: .lower)
            entry.add("min_window_ratio", minRatio, "ratio", better: .higher)
            entry.series.append(Series(name: "moving_windows", unit: "bit/s", values: windows))
            result.cases.append(entry)
            table.rows.append([size.description, backend, "\(windows.count)", formatted(within * 100, "%.0f%%"),
                               formatted(maxRatio, "%.2f"), formatted(minRatio, "%.2f"),
                               windows.map { formatted($0 / 1000, "%.0f") }.joined(separator: " ") + " (\(Int(target / 1000)))"])
            let share = context.quick ? Self.checkedShareWithin : Self.goalShareWithin
            let ceiling = context.quick ? Self.checkedMaxRatio : Self.goalMaxRatio
            result.checks.append(.expect(within >= share, "adherence \(size): \(Int(share * 100))% of moving windows within ±10%",
                                         "\(formatted(within * 100, "%.0f"))% of \(windows.count)"))
            result.checks.append(.expect(maxRatio <= ceiling, "adherence \(size): no moving window above \(ceiling)x the target",
                                         "largest \(formatted(maxRatio, "%.2f"))x"))
        }
        result.tables.append(table)
        result.notes.append("Windows are whole seconds from the start of each moving period; the first holds the stream's IDR, and the first after each stop follows refinements and keep-alives. Goal: \(Int(Self.goalShareWithin * 100))% within ±10%, none above \(Self.goalMaxRatio)x; the quick run checks \(Int(Self.checkedShareWithin * 100))% and \(Self.checkedMaxRatio)x.")
        return result
    }

    private func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

import Foundation

/// `--self-check`: asserts the harness's pure helpers (percentiles, bitrate windows, PSNR, memory
/// growth, tick choice, SVG output) and the sampler on known inputs. The bench target cannot be
/// tested from the test targets (it is an executable target), so CI runs this instead.
enum SelfCheck {
    static func run() -> Bool {
        var failures: [String] = []
        func expect(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }
        func close(_ a: Double?, _ b: Double, _ tolerance: Double = 1e-9) -> Bool { a.map { abs($0 - b) <= tolerance } ?? false }

        // Percentiles: nearest rank.
        let hundred = (1...100).map(Double.init).shuffled()
        expect(close(percentile(hundred, 0.5), 50), "p50 of 1...100 is 50")
        expect(close(percentile(hundred, 0.99), 99), "p99 of 1...100 is 99")
        expect(close(percentile(Array(hundred.prefix(1)), 0.99), hundred[0]), "p99 of one value is that value")
        expect(percentile([], 0.5) == nil, "no percentile of nothing")
        expect(close(percentile([3, 1, 2], 0.99), 3), "p99 of three values is the largest")
        let summary = Summary([2, 4, 6, 8])
        expect(close(summary.mean, 5) && close(summary.p50, 4) && close(summary.max, 8), "summary of 2,4,6,8")
        expect(Summary([]).mean.isNaN, "empty summary is NaN, so the harness flags it")

        // Bitrate windows: 46 frames of 5000 bytes at 15 fps = 3 whole windows of 600 kbit/s.
        let steady = BitrateWindows(accessUnitBytes: Array(repeating: 5000, count: 46), framesPerSecond: 15, target: 600_000)
        expect(steady.windows.count == 3, "46 frames at 15 fps make 3 whole windows")
        expect(steady.windows.allSatisfy { close($0, 600_000) }, "5000 B x 15 frames = 600 kbit/s per window")
        expect(close(steady.mean, 600_000) && close(steady.withinTolerance, 1), "steady stream is on target")
        // One window at double rate, two on target: 1 of 3 windows off, max window 1.2 Mbit/s.
        let burst = BitrateWindows(accessUnitBytes: Array(repeating: 10_000, count: 15) + Array(repeating: 5000, count: 30),
                                   framesPerSecond: 15, target: 600_000)
        expect(close(burst.maxWindow, 1_200_000) && close(burst.withinTolerance, 2.0 / 3.0), "burst window is counted off target")
        expect(close(burst.mean, 800_000), "mean over all frames: 1.2 M + 0.6 M + 0.6 M over 3 s")
        let fractional = BitrateWindows(accessUnitBytes: Array(repeating: 1000, count: 30), framesPerSecond: 29.97, target: 239_760)
        expect(fractional.windows.count == 1 && close(fractional.windows[0], 239_760, 1e-6), "29.97 fps windows scale to one second")

        // PSNR: identical planes -> 99 dB; every sample off by one -> MSE 1 -> 48.13 dB.
        expect(close(meanPSNR([[10, 20]], [[10, 20]]), 99), "identical planes are 99 dB")
        expect(close(meanPSNR([[11, 21, 31]], [[10, 20, 30]]), 10 * log10(255.0 * 255.0), 1e-9), "off by one is 48.13 dB")
        expect(meanPSNR([], []).isNaN, "PSNR of nothing is NaN")

        // Memory growth: 100 MiB flat for 60 s, then +1 MiB per minute for 10 minutes.
        let mib = 1_048_576
        let samples = (0...660).map { second -> ProcessSampler.Sample in
            let growth = second > 60 ? Double(second - 60) / 60 : 0
            return ProcessSampler.Sample(seconds: Double(second), rssBytes: 100 * mib + Int(growth * Double(mib)), cpuSeconds: 0)
        }
        let growth = MemoryGrowth(samples, warmUpSeconds: 60)
        expect(close(growth?.slopeMiBPerHour, 60, 1e-3), "slope of 1 MiB/min is 60 MiB/h")
        expect(close(growth?.growthMiB, 10, 1e-3) && close(growth?.rssAfterWarmUpMiB, 100, 1e-9), "growth after warm-up is 10 MiB")
        expect(MemoryGrowth(Array(samples.prefix(1)), warmUpSeconds: 0) == nil, "one sample gives no growth")

        // Ticks and labels.
        expect(niceTicks(0, 97) == [0, 20, 40, 60, 80, 100], "ticks 0...97: \(niceTicks(0, 97))")
        expect(niceTicks(0.013, 0.087) == [0, 0.02, 0.04, 0.06, 0.08, 0.1], "ticks 0.013...0.087: \(niceTicks(0.013, 0.087))")
        expect(niceTicks(5, 5).count >= 2, "a flat range still has an axis")
        expect(tickLabel(0.04, step: 0.02) == "0.04" && tickLabel(600, step: 100) == "600" && tickLabel(-0.0, step: 1) == "0",
               "tick labels")

        // SVG: well-formed enough (balanced tags), legend, escaping, tick labels.
        var chart = LineChart(title: "a < b & c", xLabel: "seconds", yLabel: "kbit/s")
        chart.lines.append(.init(name: "CarWindow", points: windowSteps([600_000, 640_000], scale: 0.001), color: "#1f77b4"))
        chart.lines.append(.init(name: "target", points: [(0, 600), (2, 600)], color: "#333", dash: "6 4"))
        chart.lines.append(.init(name: "", points: [(0, 510), (2, 510)], color: "#999"))
        let svg = chart.svg()
        expect(svg.hasPrefix("<?xml") && svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""), "SVG header")
        expect(svg.contains("a &lt; b &amp; c") && !svg.contains("a < b"), "SVG escapes the title")
        expect(svg.contains(">CarWindow</text>") && svg.contains(">target</text>"), "SVG legend names the lines")
        expect(svg.components(separatedBy: "<polyline").count - 1 == 3, "one polyline per line")
        expect(svg.contains(">800</text>") && svg.contains(">0</text>") && svg.contains(">2.0</text>"), "SVG tick labels")
        expect(balancedTags(svg), "SVG tags balance")
        expect(cdfPoints([2, 1]).map(\.y) == [0, 0.5, 0.5, 1], "CDF steps")

        // The sampler: a few samples of a positive RSS, growing time, and an idempotent stop.
        let sampler = ProcessSampler(intervalMilliseconds: 20, capacity: 16)
        sampler.start()
        Thread.sleep(forTimeInterval: 0.5)
        let taken = sampler.stop()
        expect(taken.count >= 5 && taken.count <= 16, "sampler kept 5...16 samples with capacity 16: \(taken.count)")
        expect(taken.allSatisfy { $0.rssBytes > 0 }, "sampler reads a positive RSS")
        expect(zip(taken, taken.dropFirst()).allSatisfy { $0.seconds <= $1.seconds }, "samples are in time order")
        expect((taken.last?.seconds ?? 0) >= 0.45, "decimation still spans the whole run: \(taken.last?.seconds ?? 0) s")
        expect(sampler.stop() == taken, "a second stop returns the same samples")
        expect(ProcessStatus.read().peakRSSBytes > 0, "VmHWM is readable")

        if failures.isEmpty {
            print("self-check: all passed")
        } else {
            print("self-check: \(failures.count) failed:")
            failures.forEach { print("  FAIL \($0)") }
        }
        return failures.isEmpty
    }

    /// Whether every opening element has its closing one, in order.
    private static func balancedTags(_ svg: String) -> Bool {
        var stack: [Substring] = []
        var rest = svg[...]
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { return false }
            let tag = rest[rest.index(after: open)..<close]
            rest = rest[rest.index(after: close)...]
            if tag.hasPrefix("?") || tag.hasSuffix("/") { continue }
            let name = tag.split(separator: " ").first ?? ""
            if name.hasPrefix("/") {
                guard stack.popLast() == name.dropFirst() else { return false }
            } else {
                stack.append(name)
            }
        }
        return stack.isEmpty
    }
}

import Foundation
import CarWindowVideoCore

/// Nearest-rank percentile (`fraction` in 0...1) of unsorted values; nil for no values.
/// Nearest rank is used because runs have tens of frames: p99 of 60 frames is the slowest frame,
/// not an interpolation between the two slowest.
func percentile(_ values: [Double], _ fraction: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(max(rank, 1), sorted.count) - 1]
}

/// Mean and percentiles of a sample (milliseconds in practice).
struct Summary: Sendable {
    var count = 0
    var mean = Double.nan, p50 = Double.nan, p99 = Double.nan, min = Double.nan, max = Double.nan

    init(_ values: [Double]) {
        guard !values.isEmpty else { return }
        count = values.count
        mean = values.reduce(0, +) / Double(values.count)
        p50 = percentile(values, 0.5) ?? .nan
        p99 = percentile(values, 0.99) ?? .nan
        min = values.min() ?? .nan
        max = values.max() ?? .nan
    }

    /// The summary of `durations` in milliseconds.
    init(milliseconds durations: [Duration]) {
        self.init(durations.map(\.inMilliseconds))
    }
}

/// Achieved bitrate against a target over whole 1 s windows of frames.
struct BitrateWindows: Sendable {
    /// Bits per second of each whole window; a trailing part-window is left out, as its rate
    /// would be measured over less than a second.
    var windows: [Double]
    /// Over every frame: total bits / (frames / fps).
    var mean: Double
    var maxWindow: Double
    /// Share of windows within `tolerance` of the target, 0...1.
    var withinTolerance: Double
    var target: Double
    var tolerance: Double

    init(accessUnitBytes: [Int], framesPerSecond: Double, target: Double, tolerance: Double = 0.10) {
        let perWindow = Swift.max(Int(framesPerSecond.rounded()), 1)
        let whole = accessUnitBytes.count / perWindow
        windows = (0..<whole).map { index in
            let slice = accessUnitBytes[(index * perWindow)..<((index + 1) * perWindow)]
            // Bits in perWindow frames, scaled to one second when fps is not a whole number.
            return Double(slice.reduce(0, +) * 8) * framesPerSecond / Double(perWindow)
        }
        let totalBits = Double(accessUnitBytes.reduce(0, +) * 8)
        mean = accessUnitBytes.isEmpty ? .nan : totalBits * framesPerSecond / Double(accessUnitBytes.count)
        maxWindow = windows.max() ?? .nan
        withinTolerance = windows.isEmpty ? .nan
            : Double(windows.filter { abs($0 - target) <= tolerance * target }.count) / Double(windows.count)
        self.target = target
        self.tolerance = tolerance
    }
}

/// Mean PSNR in dB of 8-bit planes against their references; identical planes count as 99 dB.
func meanPSNR(_ decoded: [[UInt8]], _ references: [[UInt8]]) -> Double {
    let values = zip(decoded, references).map { a, b -> Double in
        var sum = 0.0
        let count = min(a.count, b.count)
        for i in 0..<count { let d = Double(a[i]) - Double(b[i]); sum += d * d }
        let mse = sum / Double(max(count, 1))
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
    return values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
}

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// CPU time and memory of this process around one section.
struct ProcessUsage: Codable, Sendable {
    /// (user + system CPU seconds) / wall seconds x 100; above 100 when several threads work.
    var cpuPercent: Double
    /// The same for waited-for child processes (MapLibre Native, ffmpeg) over the same wall time.
    var childrenCPUPercent: Double
    /// Highest resident set during the section (VmHWM, reset before it when the kernel allows).
    var peakRSSMiB: Double
    /// Whether the peak was reset before the section; if not, it is the process-wide peak so far.
    var peakRSSIsPerSection: Bool
    var rssAtEndMiB: Double

    /// Runs `body` and measures it.
    static func measure<T>(_ body: () async throws -> T) async rethrows -> (T, ProcessUsage, wallSeconds: Double) {
        let reset = ProcessStatus.resetPeakRSS()
        let start = CPUTimes.now()
        let result = try await body()
        let end = CPUTimes.now()
        let wall = end.wall - start.wall
        let status = ProcessStatus.read()
        let usage = ProcessUsage(
            cpuPercent: wall > 0 ? (end.process - start.process) / wall * 100 : .nan,
            childrenCPUPercent: wall > 0 ? (end.children - start.children) / wall * 100 : .nan,
            peakRSSMiB: Double(status.peakRSSBytes) / 1_048_576, peakRSSIsPerSection: reset,
            rssAtEndMiB: Double(status.rssBytes) / 1_048_576)
        return (result, usage, wall)
    }
}

/// Wall clock and CPU seconds of this process and its children.
struct CPUTimes: Sendable {
    var wall: Double, process: Double, children: Double

    static func now() -> CPUTimes {
        var mine = rusage(), theirs = rusage()
        _ = getrusage(RUSAGE_SELF.rawValue, &mine)
        _ = getrusage(RUSAGE_CHILDREN.rawValue, &theirs)
        func seconds(_ usage: rusage) -> Double {
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        }
        return CPUTimes(wall: Double(DispatchTime.now().uptimeNanoseconds) / 1e9, process: seconds(mine),
                        children: seconds(theirs))
    }
}

/// /proc/self/status figures.
enum ProcessStatus {
    struct Memory { var rssBytes: Int; var peakRSSBytes: Int }

    static func read() -> Memory {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func kilobytes(_ key: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return Memory(rssBytes: kilobytes("VmRSS"), peakRSSBytes: kilobytes("VmHWM"))
    }

    /// Resets VmHWM to the current RSS (writing 5 to clear_refs, Linux 4.0+); false when refused.
    static func resetPeakRSS() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return write(descriptor, "5", 1) == 1
    }
}

/// Samples this process's resident set size (and CPU seconds) every `interval` on a thread of
/// its own, into a buffer allocated up front, so sampling a 30-minute drive allocates nothing
/// while it runs. When the buffer is full, every other sample is dropped and the interval
/// doubles, so any run length fits and still spans the whole run.
///
/// ```swift
/// let sampler = ProcessSampler(intervalMilliseconds: 250)
/// sampler.start()
/// ... drive for 30 minutes ...
/// let samples = sampler.stop()
/// let growth = MemoryGrowth(samples, warmUpSeconds: 60)   // growthMiB, slopeMiBPerHour
/// ```
final class ProcessSampler: @unchecked Sendable {
    /// One reading; `seconds` counts from `start()`.
    struct Sample: Codable, Sendable, Equatable {
        var seconds: Double
        var rssBytes: Int
        /// User + system CPU seconds of the process so far.
        var cpuSeconds: Double
    }

    private let condition = NSCondition()
    private var samples: [Sample]
    private let capacity: Int
    private var interval: Double
    private var running = false
    private var thread: Thread?
    private var finished = true

    /// - Parameters:
    ///   - intervalMilliseconds: time between samples, at least 1.
    ///   - capacity: samples kept before decimating (at least 16); 40 000 covers 30 minutes at
    ///     50 ms and costs under 1 MiB.
    init(intervalMilliseconds: Int = 100, capacity: Int = 40_000) {
        interval = Double(max(intervalMilliseconds, 1)) / 1000
        self.capacity = max(capacity, 16)
        samples = []
        samples.reserveCapacity(self.capacity)
    }

    /// Starts sampling (the first sample is taken at once); a second call while running does nothing.
    func start() {
        condition.lock()
        defer { condition.unlock() }
        guard !running, finished else { return }
        running = true
        finished = false
        samples.removeAll(keepingCapacity: true)
        let thread = Thread { [self] in loop() }
        thread.name = "carwindow.bench.sampler"
        thread.start()
        self.thread = thread
    }

    /// Stops sampling, waits for the thread, takes a last sample and returns them all in order.
    func stop() -> [Sample] {
        condition.lock()
        defer { condition.unlock() }
        guard running else { return samples }
        running = false
        condition.broadcast()
        while !finished { condition.wait() }
        return samples
    }

    private func loop() {
        let origin = DispatchTime.now().uptimeNanoseconds
        let pageSize = max(sysconf(Int32(_SC_PAGESIZE)), 1)
        condition.lock()
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let sample = Sample(seconds: Double(now - origin) / 1e9, rssBytes: Self.residentPages() * pageSize,
                                cpuSeconds: CPUTimes.now().process)
            if samples.count == capacity {
                // Keep every other sample: the buffer never grows and still spans the run.
                var kept = 0
                for index in stride(from: 0, to: samples.count, by: 2) { samples[kept] = samples[index]; kept += 1 }
                samples.removeLast(samples.count - kept)
                interval *= 2
            }
            samples.append(sample)
            if !running { break }
            _ = condition.wait(until: Date(timeIntervalSinceNow: interval))
            if !running {
                // One last reading at stop time, so growth covers the whole run.
                continue
            }
        }
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Resident pages from /proc/self/statm (second field), read into a stack buffer.
    private static func residentPages() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int in
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            guard count > 0 else { return 0 }
            var field = 0, value = 0
            for byte in buffer.prefix(count) {
                if byte == UInt8(ascii: " ") {
                    if field == 1 { return value }
                    field += 1
                    value = 0
                } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                }
            }
            return field == 1 ? value : 0
        }
    }
}

/// How much the resident set grew after warming up.
struct MemoryGrowth: Codable, Sendable {
    /// RSS of the first sample at or after the warm-up.
    var rssAfterWarmUpMiB: Double
    var rssAtEndMiB: Double
    /// End minus after-warm-up.
    var growthMiB: Double
    /// Least-squares slope of RSS over time after the warm-up, MiB per hour.
    var slopeMiBPerHour: Double
    var warmUpSeconds: Double
    var samplesAfterWarmUp: Int

    /// nil when fewer than two samples lie at or after `warmUpSeconds`.
    init?(_ samples: [ProcessSampler.Sample], warmUpSeconds: Double) {
        let steady = samples.filter { $0.seconds >= warmUpSeconds }
        guard steady.count >= 2, let first = steady.first, let last = steady.last else { return nil }
        let mib = 1_048_576.0
        let xs = steady.map(\.seconds), ys = steady.map { Double($0.rssBytes) / mib }
        let meanX = xs.reduce(0, +) / Double(xs.count), meanY = ys.reduce(0, +) / Double(ys.count)
        var covariance = 0.0, variance = 0.0
        for (x, y) in zip(xs, ys) { covariance += (x - meanX) * (y - meanY); variance += (x - meanX) * (x - meanX) }
        rssAfterWarmUpMiB = Double(first.rssBytes) / mib
        rssAtEndMiB = Double(last.rssBytes) / mib
        growthMiB = rssAtEndMiB - rssAfterWarmUpMiB
        slopeMiBPerHour = variance > 0 ? covariance / variance * 3600 : 0
        self.warmUpSeconds = warmUpSeconds
        samplesAfterWarmUp = steady.count
    }
}

/// RSS over the whole run, as results.json reports it. No growth figure: sections build and drop
/// renderers of different sizes, so a slope over a mixed run means nothing; a long drive section
/// reports ``MemoryGrowth`` of its own samples.
struct MemorySummary: Codable, Sendable {
    var samples: Int
    var intervalMilliseconds: Int
    var rssMinMiB: Double
    var rssMaxMiB: Double
    var rssAtEndMiB: Double
}

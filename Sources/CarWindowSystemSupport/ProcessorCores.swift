import Glibc

/// The processor cores this process may run on.
package enum ProcessorCores {
    /// Cores in the process's affinity list (what `taskset` or a container's cpuset allows, as
    /// /proc/self/status says: Glibc's module leaves `sched_getaffinity` out), else the online
    /// cores; at least 1.
    package static var available: Int {
        if let status = try? InputFile.read("/proc/self/status", limit: 1 << 16),
           let allowed = allowedCount(inStatus: String(decoding: status, as: UTF8.self)) {
            return allowed
        }
        return max(sysconf(Int32(_SC_NPROCESSORS_ONLN)), 1)
    }

    /// More cores than any machine has: a longer range is not a real list.
    static let mostCores = 1 << 16

    /// The cores in a status file's `Cpus_allowed_list` line (`0-3,8,10-11`), or nil without one.
    package static func allowedCount(inStatus status: String) -> Int? {
        let prefix = "Cpus_allowed_list:"
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        var count = 0
        let list = line.dropFirst(prefix.count).filter { !$0.isWhitespace }
        for range in list.split(separator: ",") {
            let ends = range.split(separator: "-").map { Int($0) }
            switch ends.count {
            case 1:
                guard ends[0] != nil else { return nil }
                count += 1
            case 2:
                guard let low = ends[0], let high = ends[1], high >= low, high - low < Self.mostCores else { return nil }
                count += high - low + 1
            default:
                return nil
            }
        }
        return count > 0 ? count : nil
    }
}

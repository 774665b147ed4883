import Foundation

/// The threads and open file descriptors of this process, read from `/proc/self` (Linux), for
/// tests that check that work leaves nothing running or open behind.
package struct ProcessResourceCensus: Sendable, Equatable, CustomStringConvertible {
    /// Threads of the process.
    package var threads: Int
    /// Threads per name, as the kernel keeps it (15 bytes), for messages only: the system
    /// renames some threads (ours included), so count render and encoder threads with
    /// ``RenderThread/running(named:)`` instead.
    package var threadsByName: [String: Int]
    /// Open file descriptors, the one reading `/proc/self/fd` included.
    package var fileDescriptors: Int

    /// The process as it is now.
    package static func now() -> ProcessResourceCensus {
        let files = FileManager.default
        let tasks = (try? files.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var names: [String: Int] = [:]
        for task in tasks {
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines) ?? "?"
            names[name, default: 0] += 1
        }
        let descriptors = (try? files.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0
        return ProcessResourceCensus(threads: tasks.count, threadsByName: names, fileDescriptors: descriptors)
    }

    package var description: String {
        let names = threadsByName.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "\(threads) threads (\(names)), \(fileDescriptors) file descriptors"
    }
}

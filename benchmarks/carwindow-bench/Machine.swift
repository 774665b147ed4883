import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What the figures were measured on.
struct MachineDescription: Codable, Sendable {
    var cores: Int
    var cpuModel: String
    var memoryMiB: Int
    var kernel: String
    var os: String
    var glVendor: String
    var glRenderer: String
    var glVersion: String
    var eglPlatform: String
    var eglDevice: String?
    /// llvmpipe, softpipe, SwiftShader: figures are CPU figures then.
    var softwareRenderer: Bool
    var encoderBackend: String
    /// The compiler the harness was built with.
    var swiftVersion: String
    var gitCommit: String?

    static func describe(_ info: GLInfo, root: URL) -> MachineDescription {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }.map { $0.trimmingCharacters(in: .whitespaces) }
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let memoryKiB = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: &names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let osRelease = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let os = osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "unknown"
        let backend = (try? makeVideoEncoder(EncoderSettings(width: 800, height: 480)))?.backend.rawValue ?? "none"
        return MachineDescription(
            cores: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model ?? "unknown",
            memoryMiB: memoryKiB / 1024, kernel: "\(release) \(machine)", os: os,
            glVendor: info.vendor, glRenderer: info.renderer, glVersion: info.version, eglPlatform: "\(info.platform)",
            eglDevice: info.device, softwareRenderer: info.isSoftwareRenderer, encoderBackend: backend,
            swiftVersion: compilerVersion, gitCommit: currentGitCommit(root: root))
    }

    var lines: [String] {
        ["\(cores) cores, \(cpuModel), \(memoryMiB) MiB, \(os), kernel \(kernel)",
         "GL: \(glVendor), \(glRenderer), \(glVersion); EGL platform \(eglPlatform)\(eglDevice.map { " (\($0))" } ?? "")"
            + (softwareRenderer ? " [software renderer]" : ""),
         "encoder backend: \(encoderBackend); built with Swift \(swiftVersion); commit \(gitCommit ?? "unknown")"]
    }
}

/// The Swift compiler version the harness was built with, from compile-time conditions.
private var compilerVersion: String {
    #if compiler(>=6.5)
    return ">= 6.5"
    #elseif compiler(>=6.4)
    return "6.4"
    #elseif compiler(>=6.3)
    return "6.3"
    #elseif compiler(>=6.2)
    return "6.2"
    #else
    return "< 6.2"
    #endif
}

/// $CARWINDOW_BENCH_COMMIT (set by a bundle's run script), else `git rev-parse` in the root.
private func currentGitCommit(root: URL) -> String? {
    if let commit = ProcessInfo.processInfo.environment["CARWINDOW_BENCH_COMMIT"], !commit.isEmpty { return commit }
    guard findExecutable("git") != nil,
          let head = try? runTool("git", ["-C", root.path, "rev-parse", "--short=12", "HEAD"]).output,
          !head.isEmpty else { return nil }
    let dirty = (try? runTool("git", ["-C", root.path, "status", "--porcelain", "--untracked-files=no"]).output) ?? ""
    return head + (dirty.isEmpty ? "" : "+dirty")
}

/// The full path of an executable on $PATH, or nil.
func findExecutable(_ name: String) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Runs a tool to completion; returns its exit status and trimmed standard output.
@discardableResult
func runTool(_ tool: String, _ arguments: [String], environment: [String: String]? = nil,
             quietErrors: Bool = true) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    if quietErrors { process.standardError = FileHandle.nullDevice }
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

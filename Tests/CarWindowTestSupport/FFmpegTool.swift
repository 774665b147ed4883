import Foundation

/// Runs ffmpeg/ffprobe (Debian's ffmpeg 5.1, installed by .ci) as the independent H.264 parser
/// and decoder. Output goes to files, not pipes: trace_headers prints megabytes to stderr.
enum FFmpegTool {
    static func path(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            .split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"]
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let isAvailable = path("ffmpeg") != nil && path("ffprobe") != nil

    struct Result {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> Result {
        let directory = FileManager.default.temporaryDirectory
        let token = UUID().uuidString
        let outURL = directory.appendingPathComponent("cw-\(token).out")
        let errURL = directory.appendingPathComponent("cw-\(token).err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path(tool) ?? "/usr/bin/\(tool)")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: try Data(contentsOf: outURL),
                      stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// Writes `bytes` to a temporary .h264 file for the duration of `body`.
    static func withStreamFile<T>(_ bytes: [UInt8], _ body: (String) throws -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cw-\(UUID().uuidString).h264")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url.path)
    }

    /// An H.264 elementary stream from ffmpeg's test source through libx264 with `x264Arguments`.
    static func x264Stream(size: String, frames: Int, _ x264Arguments: [String]) throws -> [UInt8] {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cw-\(UUID().uuidString).h264")
        defer { try? FileManager.default.removeItem(at: url) }
        let result = try run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                                        "-i", "testsrc=size=\(size):rate=15", "-frames:v", "\(frames)",
                                        "-pix_fmt", "yuv420p", "-c:v", "libx264"] + x264Arguments + ["-f", "h264", url.path])
        guard result.status == 0 else { throw FFmpegFailure(message: result.stderr) }
        return [UInt8](try Data(contentsOf: url))
    }

    /// The headers trace_headers prints, in order: title ("Sequence Parameter Set", ...) and
    /// its (field, value) lines. The first pass over extradata is dropped when packets repeat it.
    static func traceHeaders(_ stream: [UInt8]) throws -> [(title: String, fields: [(String, Int)])] {
        let result = try withStreamFile(stream) { path in
            try run("ffmpeg", ["-hide_banner", "-i", path, "-c", "copy", "-bsf:v", "trace_headers", "-f", "null", "-"])
        }
        guard result.status == 0 else { throw FFmpegFailure(message: result.stderr) }
        var sections: [(title: String, fields: [(String, Int)])] = []
        var inExtradata = false
        for line in result.stderr.split(separator: "\n") {
            guard line.hasPrefix("[trace_headers"), let close = line.firstIndex(of: "]") else { continue }
            let body = line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)
            let words = body.split(separator: " ", omittingEmptySubsequences: true)
            if words.count >= 5, Int(words[0]) != nil, words[words.count - 2] == "=", let value = Int(words[words.count - 1]) {
                if !inExtradata, !sections.isEmpty { sections[sections.count - 1].fields.append((String(words[1]), value)) }
            } else if body == "Extradata" {
                inExtradata = true
            } else if body.hasPrefix("Packet:") {
                inExtradata = false
            } else if !inExtradata, !body.contains(":") {
                sections.append((body, []))
            }
        }
        return sections
    }

    /// ffprobe's first video stream as a dictionary.
    static func probe(_ stream: [UInt8]) throws -> [String: Any] {
        let result = try withStreamFile(stream) { path in
            try run("ffprobe", ["-v", "error", "-show_streams", "-of", "json", path])
        }
        guard result.status == 0,
              let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
              let streams = json["streams"] as? [[String: Any]], let first = streams.first else {
            throw FFmpegFailure(message: "ffprobe: \(result.stderr)")
        }
        return first
    }

    /// Decodes to the luma planes of every picture, concatenated, and whatever ffmpeg complained
    /// about. The decoder's own 4:2:0 format is kept: converting would rescale the samples.
    static func decodeLuma(_ stream: [UInt8], width: Int, height: Int) throws -> (planes: Data, errors: String) {
        let result = try withStreamFile(stream) { path in
            try run("ffmpeg", ["-hide_banner", "-v", "error", "-i", path, "-f", "rawvideo", "-"])
        }
        guard result.status == 0 else { throw FFmpegFailure(message: result.stderr) }
        let lumaSize = width * height
        let frameSize = lumaSize * 3 / 2
        var planes = Data()
        var offset = 0
        while offset + frameSize <= result.stdout.count {
            planes.append(result.stdout[offset..<offset + lumaSize])
            offset += frameSize
        }
        return (planes, result.stderr)
    }
}

extension FFmpegTool {
    /// Decodes to RGB pictures (3 bytes a pixel, top row first) and whatever ffmpeg complained
    /// about: ffmpeg's own YUV to RGB conversion checks the colours a stream carries.
    static func decodeRGB(_ stream: [UInt8], width: Int, height: Int) throws -> (pictures: [[UInt8]], errors: String) {
        let result = try withStreamFile(stream) { path in
            try run("ffmpeg", ["-hide_banner", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        }
        guard result.status == 0 else { throw FFmpegFailure(message: result.stderr) }
        let size = width * height * 3
        let bytes = [UInt8](result.stdout)
        let pictures = stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<$0 + size]) }
        return (pictures, result.stderr)
    }
}

struct FFmpegFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { "ffmpeg failed: \(message)" }
}

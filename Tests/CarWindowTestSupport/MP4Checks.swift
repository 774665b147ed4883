import Foundation
import CarWindowVideoCore
import CarWindowH264
import CarWindowSinks

/// MP4 files made and examined independently of the sink: real OpenH264 streams, ffprobe and
/// ffmpeg as the readers, and a box walker of its own. Used by the sink, session and CLI tests.
enum MP4Checks {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-mp4-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A real OpenH264 stream of map-like pictures; `times` are the presentation times.
    static func encode(width: Int, height: Int, times: [Double], idrInterval: Int? = nil,
                       firstFrame: Int = 0) throws -> [AccessUnit] {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: width, height: height, idrInterval: idrInterval))
        var units: [AccessUnit] = []
        for (index, time) in times.enumerated() {
            let frame = MapLikeFrames.frame(width: width, height: height, index: firstFrame + index)
            units.append(try encoder.encode(frame, presentationTime: .seconds(time), forceIDR: false))
        }
        return units + (try encoder.flush())
    }

    /// Times like a projection session's: runs of 1/15 s while the map moves, 0.5 s keep-alives
    /// while it stands still, one 1/30 s step; starting at `start`.
    static func irregularTimes(count: Int, start: Double) -> [Double] {
        let steps = [1.0 / 15, 1.0 / 15, 0.5, 1.0 / 30, 1.0 / 15, 0.5, 0.5]
        var times = [start]
        while times.count < count { times.append(times[times.count - 1] + steps[times.count % steps.count]) }
        return times
    }

    static func writeFile(_ units: [AccessUnit], in directory: URL, name: String = "out.mp4") throws -> URL {
        let url = directory.appendingPathComponent(name)
        let sink = try MP4FileSink(url: url)
        for unit in units { try sink.write(unit) }
        sink.close()
        return url
    }

    static func ffprobeJSON(_ arguments: [String], file: URL) throws -> [String: Any] {
        let result = try FFmpegTool.run("ffprobe", ["-v", "error", "-of", "json"] + arguments + [file.path])
        guard result.status == 0, let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw FFmpegFailure(message: "ffprobe: \(result.stderr)")
        }
        return json
    }

    /// Every decoded frame's time and size, as ffprobe reports them after decoding.
    static func probedFrames(_ file: URL) throws -> [(time: Double, width: Int, height: Int)] {
        let json = try ffprobeJSON(["-select_streams", "v:0", "-show_entries", "frame=pts_time,width,height"], file: file)
        guard let frames = json["frames"] as? [[String: Any]] else { throw FFmpegFailure(message: "ffprobe: no frames in \(json)") }
        return try frames.map { frame in
            guard let time = (frame["pts_time"] as? String).flatMap(Double.init), let width = frame["width"] as? Int,
                  let height = frame["height"] as? Int else { throw FFmpegFailure(message: "ffprobe: frame \(frame)") }
            return (time, width, height)
        }
    }

    /// ffmpeg decodes the whole file; what it says at level error is returned (empty when clean).
    /// Frames pass through with their own times in the file's time base: by default the output
    /// side rounds times to 1/(guessed frame rate), and pictures 1/30 s apart collide there.
    static func decodeErrors(_ file: URL) throws -> String {
        let result = try FFmpegTool.run("ffmpeg", ["-hide_banner", "-v", "error", "-i", file.path,
                                                   "-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "null", "-"])
        return result.status == 0 ? result.stderr : "exit \(result.status): \(result.stderr)"
    }

    /// A box walker written from ISO/IEC 14496-12 independently of the sink's writer: the body of
    /// the first box along `path`, each step searched among the children of the previous.
    static func box(_ path: [String], in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        var region = bytes[...]
        for (depth, type) in path.enumerated() {
            var position = region.startIndex
            var found: ArraySlice<UInt8>?
            while position + 8 <= region.endIndex {
                var size = region[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
                let name = String(decoding: region[position + 4..<position + 8], as: UTF8.self)
                var header = 8
                if size == 1, position + 16 <= region.endIndex {
                    size = region[position + 8..<position + 16].reduce(0) { $0 << 8 | Int($1) }
                    header = 16
                }
                guard size >= header, position + size <= region.endIndex else { return nil }
                if name == type {
                    found = region[position + header..<position + size]
                    break
                }
                position += size
            }
            guard var body = found else { return nil }
            // Containers inside stsd start after a full-box header and an entry count.
            if type == "stsd" && depth < path.count - 1 { body = body.dropFirst(8) }
            // avc1 children follow the 78-byte visual sample entry.
            if type == "avc1" && depth < path.count - 1 { body = body.dropFirst(78) }
            region = body
        }
        return region
    }

    static func uint32s(_ body: ArraySlice<UInt8>) -> [UInt32] {
        stride(from: body.startIndex, to: body.endIndex - 3, by: 4).map { index in
            body[index..<index + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }
    }

    static let sampleTable = ["moov", "trak", "mdia", "minf", "stbl"]
}

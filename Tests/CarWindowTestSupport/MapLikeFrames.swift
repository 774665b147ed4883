import Foundation
import CarWindowVideoCore

/// Deterministic pictures that look like a map to an encoder: a light background, dark road
/// bands, small high-contrast "label" stripes, coloured areas, all scrolling diagonally.
enum MapLikeFrames {
    /// `texture` adds a fixed, scrolling grain of that amplitude (like hillshading) so that the
    /// picture needs more bits than a low target allows.
    static func frame(width: Int, height: Int, index: Int, texture: Int = 0) -> NV12Frame {
        var frame = NV12Frame(width: width, height: height)
        let stride = frame.codedWidth
        let scrollX = index * 3, scrollY = index * 2
        for y in 0..<height {
            let mapY = y + scrollY
            for x in 0..<width {
                let mapX = x + scrollX
                var value: UInt8 = 222  // land
                if (mapX / 97 + mapY / 83) % 5 == 0 { value = 200 }  // parks and blocks
                let road = (mapX + 2 * mapY) % 181
                if road < 9 { value = road < 2 || road > 6 ? 120 : 245 }  // a road with casing
                if (mapY % 120) < 4 || (mapX % 150) < 3 { value = 170 }  // minor streets
                let label = (mapX / 60 + mapY / 40) % 7 == 3
                if label, (14..<24).contains(mapY % 40), (mapX % 60) < 48, (mapX % 4) < 2 { value = 40 }  // text-like
                if texture > 0 {
                    var hash = UInt32(truncatingIfNeeded: mapX &* 73_856_093 ^ mapY &* 19_349_663)
                    hash = (hash ^ (hash >> 13)) &* 0x5BD1_E995
                    let grain = Int(hash >> 24) % (2 * texture + 1) - texture
                    value = UInt8(clamping: Int(value) + grain)
                }
                frame.luma[y * stride + x] = value
            }
        }
        for y in 0..<(height / 2) {
            for x in 0..<(width / 2) {
                let mapX = 2 * x + scrollX, mapY = 2 * y + scrollY
                let park = (mapX / 97 + mapY / 83) % 5 == 0
                let water = (mapX / 211 + mapY / 157) % 4 == 1
                let offset = y * stride + 2 * x
                frame.chroma[offset] = water ? 160 : park ? 110 : 128
                frame.chroma[offset + 1] = water ? 100 : park ? 115 : 130
            }
        }
        return frame
    }

    /// PSNR over the visible luma; `decoded` is tightly packed at the visible width.
    static func lumaPSNR(original: NV12Frame, decoded: ArraySlice<UInt8>) -> Double {
        var squared = 0.0
        let base = decoded.startIndex
        for y in 0..<original.height {
            for x in 0..<original.width {
                let difference = Double(original.luma[y * original.codedWidth + x]) - Double(decoded[base + y * original.width + x])
                squared += difference * difference
            }
        }
        let mse = squared / Double(original.width * original.height)
        return mse == 0 ? 100 : 10 * log10(255 * 255 / mse)
    }
}

/// An Annex-B stream in a temporary file, examined with FFmpeg's tools.
final class TemporaryStream {
    let url: URL

    init(_ bytes: [UInt8]) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-\(UUID().uuidString).h264")
        try Data(bytes).write(to: url)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func probedSize() throws -> (width: Int, height: Int) {
        let text = try Self.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0",
                                                     "-show_entries", "stream=width,height", "-of", "csv=p=0", url.path])
        let parts = String(decoding: text, as: UTF8.self).split(whereSeparator: { $0 == "," || $0.isNewline }).compactMap { Int($0) }
        return (parts.first ?? 0, parts.dropFirst().first ?? 0)
    }

    /// Every decoded frame's luma, tightly packed at the size ffmpeg decodes to.
    func decodedLuma(width: Int, height: Int) throws -> [ArraySlice<UInt8>] {
        let output = url.appendingPathExtension("y")
        defer { try? FileManager.default.removeItem(at: output) }
        _ = try Self.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", url.path, "-f", "rawvideo", "-pix_fmt", "yuv420p", output.path])
        // yuv420p keeps the coded samples; "gray" would expand limited range to full range.
        let bytes = [UInt8](try Data(contentsOf: output))
        let frameSize = width * height * 3 / 2
        guard bytes.count % frameSize == 0 else {
            throw FFmpegFailure(message: "decoded \(bytes.count) bytes, not whole \(width)x\(height) frames")
        }
        return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { bytes[$0..<($0 + width * height)] }
    }

    /// FFmpeg's trace_headers dump: every syntax element of every parameter set and slice header.
    func headerTrace() throws -> String {
        String(decoding: try Self.run("/usr/bin/ffmpeg", ["-v", "trace", "-i", url.path, "-c", "copy", "-bsf:v", "trace_headers",
                                                          "-f", "null", "-"], mergeErrors: true), as: UTF8.self)
    }

    private static func run(_ tool: String, _ arguments: [String], mergeErrors: Bool = false) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = mergeErrors ? output : FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FFmpegFailure(message: "\(tool) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
        return data
    }
}

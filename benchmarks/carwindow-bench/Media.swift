import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// Access units collected from the pipeline's output callback.
final class StreamBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [UInt8] = []
    func append(_ unit: AccessUnit) { lock.withLock { stored += unit.data } }
    var bytes: [UInt8] { lock.withLock { stored } }
}

/// The visible luma of a frame, without the coded padding.
func visibleLuma(_ frame: NV12Frame) -> [UInt8] {
    var luma = [UInt8]()
    luma.reserveCapacity(frame.width * frame.height)
    for row in 0..<frame.height {
        luma += frame.luma[(row * frame.codedWidth)..<(row * frame.codedWidth + frame.width)]
    }
    return luma
}

/// BT.601 limited-range luma, as ffmpeg's RGB -> yuv420p conversion makes it.
func limitedRangeLuma(_ image: RGBAImage) -> [UInt8] {
    (0..<(image.width * image.height)).map { i in
        let r = Double(image.pixels[i * 4]), g = Double(image.pixels[i * 4 + 1]), b = Double(image.pixels[i * 4 + 2])
        return UInt8(min(max((16 + (0.299 * r + 0.587 * g + 0.114 * b) * 219 / 255).rounded(), 0), 255))
    }
}

/// Decodes an Annex-B stream with ffmpeg into luma planes, one per decoded frame.
func decodeLuma(_ stream: [UInt8], width: Int, height: Int, ffmpeg: String) throws -> [[UInt8]] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let input = directory.appendingPathComponent("in.h264"), output = directory.appendingPathComponent("out.yuv")
    try Data(stream).write(to: input)
    // yuv420p keeps the samples as coded; "gray" would stretch limited range to full range.
    let (status, _) = try runTool(ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-f", "h264", "-i", input.path,
                                           "-f", "rawvideo", "-pix_fmt", "yuv420p", output.path])
    guard status == 0 else { throw BenchError("ffmpeg could not decode the \(width)x\(height) stream (exit \(status))") }
    let bytes = try [UInt8](Data(contentsOf: output))
    let size = width * height, frameSize = size * 3 / 2
    return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { Array(bytes[$0..<($0 + size)]) }
}

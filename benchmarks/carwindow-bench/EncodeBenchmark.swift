import ArgumentParser
import CarWindow
import Foundation

/// End-to-end H.264 figures: render -> NV12 -> encode pipelined, encoder-only throughput,
/// latency, bitrate against target, Y-PSNR; and the peer pipeline a user would build today
/// (MapLibre Native -> PNG -> ffmpeg libx264 ultrafast zerolatency) at the same bitrate.
struct EncodeBenchmark {
    let context: RenderContext
    let root: URL
    let out: URL
    let peer: MapLibrePeer?
    let quick: Bool
    let sizes: [(Int, Int)]

    static func bitrate(width: Int, height: Int) -> Int {
        // SmartDeviceLink's 600 kbit/s at 800x480, scaled with the pixel count.
        Int(600_000 * Double(width * height) / (800 * 480))
    }

    func run() async throws -> [[String: Any]] {
        let frames = quick ? 30 : 90
        let fps = 15.0
        let path = CameraPath.helsinki(frames: frames)
        var rows: [[String]] = [["size", "CarWindow fps", "encoder ms", "bitrate (target)", "Y-PSNR", "peer fps", "peer Y-PSNR", "fps ratio"]]
        var results: [[String: Any]] = []
        for (width, height) in sizes {
            let bitrate = Self.bitrate(width: width, height: height)
            let settings = EncoderSettings(width: width, height: height, framesPerSecond: fps, bitrate: bitrate)
            let renderer = try await Bench.makeRenderer(context: context, root: root, style: "day", width: width,
                                                        height: height, camera: path[0])
            await renderer.setOverlays(MapOverlays(showsControls: false))

            // Pipelined run, timed.
            let stage = try await EncoderStage(settings: settings)
            let stream = StreamBuffer()
            let report = try await EncodePipeline(renderer: renderer, encoder: stage).run(cameras: path) { stream.append($0) }
            _ = try await stage.finish()
            let seconds = Double(report.frames) / fps
            let achieved = Double(report.bytes * 8) / seconds

            // The same frames again, read synchronously, as the PSNR reference and for the
            // encoder-only and unpipelined latency figures.
            var references: [NV12Frame] = []
            for camera in path {
                await renderer.setCamera(camera)
                await renderer.renderFrame()
                references.append(try await renderer.readNV12())
            }
            let decoded = try decodeLuma(stream.bytes, width: width, height: height)
            let psnr = meanPSNR(decoded, references.map(visibleLuma))

            let encoder = try makeVideoEncoder(settings)
            let encodeStart = DispatchTime.now().uptimeNanoseconds
            for (index, frame) in references.enumerated() {
                _ = try encoder.encode(frame, presentationTime: Double(index) / fps, forceIDR: index == 0)
            }
            let encoderMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - encodeStart) / 1e6 / Double(references.count)

            var entry: [String: Any] = [
                "size": "\(width)x\(height)", "frames": frames, "backend": stage.backend.rawValue,
                "pipeline_fps": report.framesPerSecond, "encoder_ms": encoderMilliseconds,
                "target_bitrate": bitrate, "achieved_bitrate": achieved, "y_psnr": psnr,
                "pipeline_latency_ms": Summary(report.latencyMilliseconds).json,
                "bitrate_windows": oneSecondWindows(report.accessUnitBytes, fps: fps),
            ]
            if width == 800 && height == 480 {
                entry["latency_ms"] = try await unpipelinedLatency(renderer: renderer, settings: settings, path: path).json
            }
            var peerFPS = "-", peerPSNR = "-", ratio = "-"
            if let peer {
                let (fps, folder) = try peer.pipeToX264(path, width: width, height: height, bitrate: bitrate, fps: fps,
                                                        style: root.appendingPathComponent("assets/styles/day.json"))
                let peerStream = try [UInt8](Data(contentsOf: folder.appendingPathComponent("peer.h264")))
                let peerDecoded = try decodeLuma(peerStream, width: width, height: height)
                let peerReferences = try path.indices.map { index in
                    try limitedRangeLuma(RGBAImage(contentsOfPNG: folder.appendingPathComponent(String(format: "frame-%04d.png", index))))
                }
                let peerQuality = meanPSNR(peerDecoded, peerReferences)
                entry["peer_fps"] = fps
                entry["peer_y_psnr"] = peerQuality
                entry["fps_ratio"] = report.framesPerSecond / fps
                peerFPS = String(format: "%.1f", fps)
                peerPSNR = String(format: "%.2f dB", peerQuality)
                ratio = String(format: "%.2f", report.framesPerSecond / fps)
            }
            rows.append(["\(width)x\(height)", String(format: "%.1f", report.framesPerSecond),
                         String(format: "%.2f", encoderMilliseconds),
                         String(format: "%.0fk (%dk)", achieved / 1000, bitrate / 1000), String(format: "%.2f dB", psnr),
                         peerFPS, peerPSNR, ratio])
            results.append(entry)
        }
        printTable(rows)
        if let latency = results.first(where: { $0["latency_ms"] != nil })?["latency_ms"] as? [String: Double] {
            print(String(format: "latency at 800x480, camera change to access unit (unpipelined): p50 %.2f ms, p99 %.2f ms\n",
                         latency["p50"] ?? 0, latency["p99"] ?? 0))
        }
        return results
    }

    /// Camera change -> access unit ready, one frame at a time: draw, convert, read back, encode.
    private func unpipelinedLatency(renderer: MapRenderer, settings: EncoderSettings, path: [Camera]) async throws -> Summary {
        let encoder = try makeVideoEncoder(settings)
        var latencies: [Double] = []
        for (index, camera) in path.enumerated() {
            let start = DispatchTime.now().uptimeNanoseconds
            await renderer.setCamera(camera)
            await renderer.renderFrame()
            let frame = try await renderer.readNV12()
            _ = try encoder.encode(frame, presentationTime: Double(index) / settings.framesPerSecond, forceIDR: index == 0)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        return Summary(Array(latencies.dropFirst()))
    }

    private func oneSecondWindows(_ bytes: [Int], fps: Double) -> [Double] {
        let perWindow = max(Int(fps.rounded()), 1)
        return stride(from: 0, to: bytes.count, by: perWindow).map { start in
            Double(bytes[start..<min(start + perWindow, bytes.count)].reduce(0, +) * 8)
        }
    }
}

/// Access units collected from the pipeline.
final class StreamBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [UInt8] = []
    func append(_ unit: AccessUnit) { lock.withLock { stored += unit.data } }
    var bytes: [UInt8] { lock.withLock { stored } }
}

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

func meanPSNR(_ decoded: [[UInt8]], _ references: [[UInt8]]) -> Double {
    let values = zip(decoded, references).map { a, b -> Double in
        var sum = 0.0
        for i in 0..<min(a.count, b.count) { let d = Double(a[i]) - Double(b[i]); sum += d * d }
        let mse = sum / Double(max(a.count, 1))
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }
    return values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
}

/// Decodes an Annex-B stream with ffmpeg into luma planes.
func decodeLuma(_ stream: [UInt8], width: Int, height: Int) throws -> [[UInt8]] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let input = directory.appendingPathComponent("in.h264"), output = directory.appendingPathComponent("out.gray")
    try Data(stream).write(to: input)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "h264", "-i", input.path,
                         "-f", "rawvideo", "-pix_fmt", "yuv420p", output.path]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ValidationError("ffmpeg could not decode the stream") }
    // yuv420p keeps the samples as coded; "gray" would stretch limited range to full range.
    let bytes = try [UInt8](Data(contentsOf: output))
    let size = width * height, frameSize = size * 3 / 2
    return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map { Array(bytes[$0..<($0 + size)]) }
}

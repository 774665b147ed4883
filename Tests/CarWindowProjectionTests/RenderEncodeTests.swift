import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// Rendered map frames through NV12 and the software encoder, alone and in a session playing a
/// camera script, decoded by ffmpeg.
@Suite(.serialized) struct RenderEncodeTests {
    /// A short drive along Kaivokatu.
    static func path(_ count: Int) -> [Camera] {
        (0..<count).map { i in
            Camera(center: GeoCoordinate(latitude: 60.1690 + Double(i) * 0.00004, longitude: 24.9405 + Double(i) * 0.00008),
                   zoom: 16.5, bearing: 55 + Double(i) * 0.5, pitch: 45)
        }
    }

    /// Every decoded frame against the luma we rendered, at 800x480 and 600 kbit/s.
    ///
    /// Measured on llvmpipe with OpenH264 (CAMERA_VIDEO_REAL_TIME, CBR): the IDR 39.8 dB, the P
    /// frames of this moving, pitched path settle at 27.8-30 dB (40 kbit a frame), mean 29.8 dB.
    /// The thresholds leave about 3 dB of margin below those figures.
    @Test func renderedFramesSurviveEncodingAndDecoding() async throws {
        let (context, renderer) = try await makeRenderer(width: 800, height: 480, camera: Self.path(1)[0])
        let settings = EncoderSettings(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        let encoder = try OpenH264Encoder(settings: settings)
        var stream: [UInt8] = []
        var references: [[UInt8]] = []
        for (index, camera) in Self.path(20).enumerated() {
            await renderer.setCamera(camera)
            _ = await renderer.renderWhenLoaded()
            let frame = try await renderer.readNV12()
            references.append(visibleLuma(frame))
            let unit = try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: index == 0)
            #expect(unit.isKeyframe == (index == 0))
            stream += unit.data
        }
        await context.shutdown()

        let decoded = try FFmpeg.decodeLuma(stream, width: 800, height: 480)
        #expect(decoded.count == references.count)
        let psnr = zip(decoded, references).map { lumaPSNR($0, $1) }
        let mean = psnr.reduce(0, +) / Double(psnr.count)
        #expect(mean > 26.5, "mean Y-PSNR \(mean) dB; per frame \(psnr)")
        #expect(psnr.min()! > 25, "worst Y-PSNR \(psnr.min()!) dB")
        let probe = try FFmpeg.probe(stream)
        #expect(probe["profile"] == "Constrained Baseline")
        #expect(probe["width"] == "800" && probe["height"] == "480")
        #expect(probe["has_b_frames"] == "0")
    }

    /// A session playing a camera script (what `carwindow encode` and the benchmark run) sends
    /// one picture per camera, in order, each showing its own camera: the readback collected one
    /// picture behind and the encoder working one picture behind never shift or repeat one.
    @Test func aScriptedSessionSendsEveryCameraOnceInOrder() async throws {
        let cameras = Self.path(24)
        let (context, renderer) = try await makeRenderer(width: 854, height: 480, camera: cameras[0])
        await renderer.setOverlays(MapOverlays(showsControls: false))
        var references: [[UInt8]] = []
        for camera in cameras {
            await renderer.setCamera(camera)
            _ = await renderer.renderWhenLoaded()
            references.append(visibleLuma(try await renderer.readNV12()))
        }
        let sink = RecordingSink()
        var configuration = try SessionFixtures.configuration(sink: sink)
        configuration.showsControls = false
        configuration.encoderSettings = EncoderSettings(width: 854, height: 480, framesPerSecond: 15, bitrate: 1_200_000)
        let session = ProjectionSession(configuration: configuration, context: context)
        try await session.connect(display: HeadUnitDisplay(size: VideoSize(width: 854, height: 480)))
        await session.preloadTiles(along: cameras)
        let sent = try await session.startStreaming(playing: cameras, forceIDR: [12])
        await session.close()
        await context.shutdown()

        let units = sink.received.map(\.unit)
        #expect(sent == 24 && units.count == 24)
        #expect(units.map(\.frameNumber) == Array(0..<24))
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0, 12])
        // Presentation times step by the stream's frame interval, however fast the pictures came.
        let times = units.map { $0.presentationTime.inSeconds }
        #expect(zip(times.dropFirst(), times).allSatisfy { abs($0 - $1 - 1.0 / 15) < 1e-6 }, "\(times)")
        let stream = units.flatMap(\.data)
        let decoded = try FFmpeg.decodeLuma(stream, width: 854, height: 480)
        #expect(decoded.count == 24)
        // Each decoded picture is closest to its own camera's rendering: a picture shifted by one
        // would match its neighbour better.
        for (index, picture) in decoded.enumerated() {
            let own = lumaPSNR(picture, references[index])
            #expect(own > 25, "picture \(index): \(own) dB")
            for neighbour in [index - 1, index + 1] where references.indices.contains(neighbour) {
                #expect(own > lumaPSNR(picture, references[neighbour]), "picture \(index) looks like camera \(neighbour)")
            }
        }
        // Decoding can start at the second IDR.
        let tail = units.dropFirst(12).flatMap(\.data)
        #expect(try FFmpeg.decodeLuma(tail, width: 854, height: 480).count == 12)
        #expect(try FFmpeg.probe(stream)["width"] == "854")
    }

    /// A session over the bundled data recording into a sink, with no refinements, so that
    /// only drawn pictures and keep-alives reach the sink.
    static func sessionWithoutRefinements() async throws -> (RecordingSink, RenderContext, ProjectionSession) {
        let sink = RecordingSink()
        var configuration = try SessionFixtures.configuration(sink: sink)
        configuration.refinementFrames = 0
        let context = try await RenderContext()
        return (sink, context, ProjectionSession(configuration: configuration, context: context))
    }

    /// After a script the session paces again: the next change is one more picture, later in
    /// presentation time than the script's last, and a script on a session that is not
    /// streaming is refused.
    @Test func aSessionPacesAgainAfterAScript() async throws {
        let (sink, context, session) = try await Self.sessionWithoutRefinements()
        await #expect(throws: ProjectionSessionError.self) { _ = try await session.play(Self.path(2)) }
        try await session.connect(display: SessionFixtures.display)
        let sent = try await session.startStreaming(playing: Self.path(5))
        #expect(sent == 5)
        #expect(await session.statistics.framesRendered == 5)
        var camera = Self.path(6)[5]
        camera.zoom = 14
        await session.setCamera(camera)
        #expect(await eventually { await session.statistics.framesRendered == 6 })
        await session.close()
        await context.shutdown()
        let times = sink.received.map(\.unit.presentationTime)
        #expect(zip(times.dropFirst(), times).allSatisfy { $0 > $1 }, "\(times)")
        #expect(try FFmpeg.decodeLuma(sink.bytes, width: 320, height: 192).count == sink.received.count)
    }

    /// A suspend in the middle of a script ends it: play returns what was sent, and nothing
    /// more reaches the sink.
    @Test func aSuspendEndsAScript() async throws {
        let (sink, context, session) = try await Self.sessionWithoutRefinements()
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        #expect(await eventually { !sink.received.isEmpty })
        let before = sink.received.count
        let playing = Task { try await session.play(Self.path(400)) }
        #expect(await eventually { sink.received.count >= before + 3 })
        await session.suspend()
        let atSuspend = sink.received.count
        let sent = try await playing.value
        // What play counted reached the sink before the suspend (a keep-alive may have too).
        #expect(sent >= 3 && sent < 400)
        #expect(sent <= atSuspend - before, "play counted \(sent), the sink got \(atSuspend - before)")
        // The frame loop sleeps while suspended: give it a chance to send, which it must not take.
        try await Task.sleep(for: .milliseconds(200))
        #expect(sink.received.count == atSuspend)
        await session.close()
        await context.shutdown()
    }

    @Test func badSettingsAreTypedErrors() {
        for settings in [EncoderSettings(width: 0, height: 0), EncoderSettings(width: 801, height: 480),
                         EncoderSettings(width: 800, height: 480, bitrate: 0),
                         EncoderSettings(width: 800, height: 480, framesPerSecond: 0),
                         EncoderSettings(width: 8192, height: 8192)] {
            #expect(throws: EncoderError.self) { try settings.validate() }
            #expect(throws: EncoderError.self) { _ = try makeVideoEncoder(settings, choice: .forced(.openh264)) }
        }
    }

    func visibleLuma(_ frame: NV12Frame) -> [UInt8] {
        var luma = [UInt8]()
        luma.reserveCapacity(frame.width * frame.height)
        for row in 0..<frame.height {
            luma += frame.luma[(row * frame.codedWidth)..<(row * frame.codedWidth + frame.width)]
        }
        return luma
    }
}

/// Access units gathered from the pipeline's output closure.
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [AccessUnit] = []
    func append(_ unit: AccessUnit) { lock.withLock { stored.append(unit) } }
    var units: [AccessUnit] { lock.withLock { stored } }
}

/// Y-PSNR in dB of two equally sized 8-bit planes.
func lumaPSNR(_ a: [UInt8], _ b: [UInt8]) -> Double {
    var sum = 0.0
    for i in 0..<min(a.count, b.count) {
        let d = Double(a[i]) - Double(b[i])
        sum += d * d
    }
    let mse = sum / Double(max(min(a.count, b.count), 1))
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

/// ffmpeg and ffprobe as the independent decoder of every stream the tests make.
enum FFmpeg {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static func run(_ arguments: [String], input: [UInt8]) throws -> (stdout: Data, stderr: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-ffmpeg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("in.h264")
        try Data(input).write(to: file)
        // Outputs go to files: two pipes could fill up and stall ffmpeg.
        let outFile = directory.appendingPathComponent("out"), errFile = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments.map { $0 == "IN" ? file.path : $0 }
        process.standardOutput = try FileHandle(forWritingTo: outFile)
        process.standardError = try FileHandle(forWritingTo: errFile)
        try process.run()
        process.waitUntilExit()
        let stderr = String(decoding: (try? Data(contentsOf: errFile)) ?? Data(), as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.first ?? "") exited \(process.terminationStatus): \(stderr.suffix(2000))")
        }
        return (try Data(contentsOf: outFile), stderr)
    }

    /// Decodes an Annex-B stream into one luma plane per frame, failing on any decode error.
    static func decodeLuma(_ stream: [UInt8], width: Int, height: Int) throws -> [[UInt8]] {
        let (data, _) = try run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-xerror", "-f", "h264", "-i", "IN",
                                 "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"], input: stream)
        // yuv420p keeps the samples as coded; "gray" would stretch limited range to full range.
        let bytes = [UInt8](data), size = width * height, frameSize = size * 3 / 2
        guard bytes.count % frameSize == 0 else { throw Failure(description: "decoded \(bytes.count) bytes, not whole \(width)x\(height) frames") }
        return stride(from: 0, to: bytes.count, by: frameSize).map { Array(bytes[$0..<($0 + size)]) }
    }

    /// ffprobe's stream fields (profile, width, height, has_b_frames, ...).
    static func probe(_ stream: [UInt8]) throws -> [String: String] {
        let (data, _) = try run(["ffprobe", "-hide_banner", "-loglevel", "error", "-f", "h264", "-show_streams", "IN"], input: stream)
        var fields: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }
}

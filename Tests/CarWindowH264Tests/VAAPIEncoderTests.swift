import CVA
import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowTestSupport

/// Whether this machine can run the device tests; probed once.
enum VAAPITestSupport {
    static let probe = VAAPIEncoder.probe()
    static var hasH264Encoder: Bool {
        if case .success(let capabilities) = probe { return capabilities.canEncodeH264 }
        return false
    }
    static var ffprobeAvailable: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/ffprobe") }
    /// The device `CARWINDOW_VAAPI_DEVICE` names instead of `/dev/dri/renderD*` (the test driver's
    /// `/dev/null` under `scripts/va-test-driver.sh check`), if any.
    static var namedDevice: String? {
        ProcessInfo.processInfo.environment[VAAPIEncoder.deviceEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }
    /// Whether the encoder runs on the project's test driver, which has no GPU memory to export.
    static var onTestDriver: Bool {
        if case .success(let capabilities) = probe { return capabilities.driverVendor.hasPrefix("CarWindow VA-API test driver") }
        return false
    }
}

@Suite("VA-API encoder")
struct VAAPIEncoderTests {
    // MARK: Without a device

    @Test("Device tests report whether they ran")
    func reportsDeviceAvailability() {
        if VAAPITestSupport.hasH264Encoder {
            print("VA-API H.264 encoder present: device tests run")
        } else {
            print("skipped: no VA-API H.264 encoder (\(VAAPITestSupport.probe))")
        }
    }

    @Test("Probing without /dev/dri fails with a typed error naming the missing device",
          .enabled(if: !FileManager.default.fileExists(atPath: "/dev/dri") && VAAPITestSupport.namedDevice == nil,
                   "this machine has /dev/dri, or CARWINDOW_VAAPI_DEVICE names a device: the device tests cover it"))
    func probeWithoutDevice() throws {
        let result = VAAPIEncoder.probe()
        guard case .failure(.backendUnavailable(.vaapi, let reason)) = result else {
            Issue.record("expected backendUnavailable, got \(result)")
            return
        }
        #expect(reason.contains("/dev/dri"))
        #expect(throws: EncoderError.self) { try VAAPIEncoder(settings: EncoderSettings(width: 800, height: 480)) }
    }

    @Test("A named render node that does not exist is named in the error")
    func probeNamedMissingNode() {
        let node = "/dev/dri/renderD999-carwindow-test"
        guard case .failure(.backendUnavailable(.vaapi, let reason)) = VAAPIEncoder.probe(renderNode: node) else {
            Issue.record("probing \(node) should fail")
            return
        }
        #expect(reason.contains(node))
        #expect(reason.contains("No such file"))
    }

    @Test("Invalid settings are refused before any device is opened")
    func invalidSettings() {
        #expect(throws: EncoderError.invalidSettings("size 801x480 must be even in both directions for 4:2:0")) {
            try VAAPIEncoder(settings: EncoderSettings(width: 801, height: 480), renderNode: "/nonexistent")
        }
    }

    @Test("VAStatus codes read as their macro names and libva's sentences")
    func statusNames() {
        // Sentences printed by a C program calling vaErrorStr from libva 2.17.
        let profile = VAStatusError(function: "vaCreateConfig", status: VAStatus(VA_STATUS_ERROR_UNSUPPORTED_PROFILE))
        #expect(profile.symbolicName == "VA_STATUS_ERROR_UNSUPPORTED_PROFILE")
        #expect(profile.message == "the requested VAProfile is not supported")
        #expect(profile.description == "vaCreateConfig failed: the requested VAProfile is not supported (VA_STATUS_ERROR_UNSUPPORTED_PROFILE)")
        #expect(VAStatusError.symbolicName(of: VAStatus(VA_STATUS_ERROR_TIMEDOUT)) == "VA_STATUS_ERROR_TIMEDOUT")
        #expect(VAStatusError.symbolicName(of: VAStatus(bitPattern: 0xffff_ffff)) == "VA_STATUS_ERROR_UNKNOWN")
        #expect(VAStatusError.symbolicName(of: 0x7777) == "VA status 0x7777")
        #expect(profile.duringSetup == .backendUnavailable(.vaapi, profile.description))
        #expect(profile.duringEncoding == .encodeFailed(.vaapi, profile.description))
    }

    @Test("Misc parameter buffers put the type first and the payload at C's offsets")
    func miscParameterPacking() throws {
        // Offsets and sizes printed by a C program with offsetof/sizeof on libva 2.17's va.h:
        // data[] at 4; RateControl 60 bytes (bits_per_second 0, target_percentage 4, window_size 8,
        // rc_flags 24); FrameRate 24 bytes; HRD 24 bytes (initial_buffer_fullness 0, buffer_size 4).
        #expect(VAMiscParameter.payloadOffset == 4)
        let settings = EncoderSettings(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        let plan = try #require(VARateControlPlan.make(settings: settings, supportedModes: UInt32(VA_RC_CBR), preferVBR: false))
        func word(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
            bytes[offset..<offset + 4].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        }
        let rate = plan.rateControlBuffer
        #expect(rate.count == 4 + 60)
        #expect(word(rate, 0) == VAEncMiscParameterTypeRateControl.rawValue)
        #expect(word(rate, 4) == 600_000)
        #expect(word(rate, 8) == 100)
        #expect(word(rate, 12) == 67)  // 1000 ms / 15 fps, rounded
        #expect(word(rate, 4 + 24) == 2)  // disable_frame_skip is bit 1 of rc_flags
        let frameRate = plan.frameRateBuffer
        #expect(frameRate.count == 4 + 24)
        #expect(word(frameRate, 0) == VAEncMiscParameterTypeFrameRate.rawValue)
        #expect(word(frameRate, 4) == 1000 << 16 | 15_000)
        let hrd = plan.hrdBuffer
        #expect(hrd.count == 4 + 24)
        #expect(word(hrd, 0) == VAEncMiscParameterTypeHRD.rawValue)
        #expect(word(hrd, 4) == 40_000)  // fullness: one frame of bits, 600000 / 15
        #expect(word(hrd, 8) == 40_000)  // buffer size
    }

    @Test("Frame rates pack into 16-bit numerator and denominator")
    func frameRatePacking() {
        #expect(VARateControlPlan.packFrameRate(15) == 1000 << 16 | 15_000)
        #expect(VARateControlPlan.packFrameRate(29.97) == 1000 << 16 | 29_970)
        #expect(VARateControlPlan.packFrameRate(120) == 100 << 16 | 12_000)
        #expect(VARateControlPlan.packFrameRate(240) == 100 << 16 | 24_000)
    }

    @Test("Rate-control mode follows settings, driver and Intel's preference for VBR")
    func rateControlChoice() throws {
        let both = UInt32(VA_RC_CBR | VA_RC_VBR)
        let cbr = EncoderSettings(width: 800, height: 480)
        var vbr = cbr
        vbr.rateControl = .vbr
        let mesa = try #require(VARateControlPlan.make(settings: cbr, supportedModes: both, preferVBR: false))
        #expect(mesa.mode == UInt32(VA_RC_CBR) && mesa.targetPercentage == 100)
        let intel = try #require(VARateControlPlan.make(settings: cbr, supportedModes: both, preferVBR: true))
        #expect(intel.mode == UInt32(VA_RC_VBR) && intel.targetPercentage == 100)
        let asked = try #require(VARateControlPlan.make(settings: vbr, supportedModes: both, preferVBR: false))
        #expect(asked.mode == UInt32(VA_RC_VBR) && asked.targetPercentage == 80)
        let onlyCBR = try #require(VARateControlPlan.make(settings: vbr, supportedModes: UInt32(VA_RC_CBR), preferVBR: true))
        #expect(onlyCBR.mode == UInt32(VA_RC_CBR))
        #expect(VARateControlPlan.make(settings: cbr, supportedModes: UInt32(VA_RC_CQP), preferVBR: false) == nil)
    }

    @Test("Low-delay GOP: IDR first, P pictures referencing the previous one, POC twice the distance")
    func gopSequence() {
        var gop = LowDelayGOP(idrInterval: nil, log2MaxFrameNum: 16)
        let first = gop.next(forceIDR: false)
        #expect(first == .init(isIDR: true, frameNum: 0, pictureOrderCount: 0, idrPicId: 0, reconstructionSlot: 0, reference: nil))
        var previous = first
        for index in 1..<10 {
            let picture = gop.next(forceIDR: false)
            #expect(!picture.isIDR)
            #expect(picture.frameNum == index)
            #expect(picture.pictureOrderCount == 2 * index)
            #expect(picture.reconstructionSlot == 1 - previous.reconstructionSlot)
            #expect(picture.reference == .init(slot: previous.reconstructionSlot, frameNum: previous.frameNum,
                                               pictureOrderCount: previous.pictureOrderCount))
            previous = picture
        }
        let forced = gop.next(forceIDR: true)
        #expect(forced.isIDR && forced.frameNum == 0 && forced.pictureOrderCount == 0 && forced.idrPicId == 1)
        #expect(forced.reconstructionSlot == 1 - previous.reconstructionSlot && forced.reference == nil)
        let after = gop.next(forceIDR: false)
        #expect(!after.isIDR && after.frameNum == 1 && after.pictureOrderCount == 2 && after.reference?.slot == forced.reconstructionSlot)
        #expect(gop.picturesCoded == 12)
    }

    @Test("Low-delay GOP: IDR interval, frame_num wrap, idr_pic_id wrap and restart after failure")
    func gopIntervalsAndWraps() {
        var periodic = LowDelayGOP(idrInterval: 5, log2MaxFrameNum: 16)
        let kinds = (0..<12).map { _ in periodic.next(forceIDR: false).isIDR }
        #expect(kinds == [true, false, false, false, false, true, false, false, false, false, true, false])

        // log2_max_frame_num 4: frame_num counts 0...15 then wraps, POC keeps growing.
        var wrapping = LowDelayGOP(idrInterval: nil, log2MaxFrameNum: 4)
        let pictures = (0..<18).map { _ in wrapping.next(forceIDR: false) }
        #expect(pictures.map(\.frameNum) == Array(0..<16) + [0, 1])
        #expect(pictures[17].pictureOrderCount == 34)
        #expect(pictures[16].reference?.frameNum == 15)

        var ids = LowDelayGOP(idrInterval: 1, log2MaxFrameNum: 16)
        var lastID = -1
        for _ in 0..<65_537 { lastID = ids.next(forceIDR: false).idrPicId }
        #expect(lastID == 0)  // 65,537th IDR wraps idr_pic_id to 0

        var failing = LowDelayGOP(idrInterval: nil, log2MaxFrameNum: 16)
        _ = failing.next(forceIDR: false)
        _ = failing.next(forceIDR: false)
        failing.restartAfterFailure()
        #expect(failing.next(forceIDR: false).isIDR)

        var bounded = LowDelayGOP(idrInterval: nil, log2MaxFrameNum: 16, maximumPicturesBetweenIDRs: 3)
        #expect((0..<7).map { _ in bounded.next(forceIDR: false).isIDR } == [true, false, false, true, false, false, true])
    }

    @Test("Coded segment walker concatenates a fabricated list and rejects broken ones")
    func codedSegments() throws {
        let payloads: [[UInt8]] = [[0, 0, 0, 1, 0x67, 1], [], [0, 0, 1, 0x65, 9, 9]]
        let data = payloads.map { bytes -> UnsafeMutableRawPointer in
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            pointer.copyMemory(from: bytes, byteCount: bytes.count)
            return pointer
        }
        let segments = UnsafeMutablePointer<VACodedBufferSegment>.allocate(capacity: 3)
        defer {
            segments.deallocate()
            data.forEach { $0.deallocate() }
        }
        for index in 0..<3 {
            var segment = VACodedBufferSegment()
            segment.size = UInt32(payloads[index].count)
            segment.buf = data[index]
            segment.next = index < 2 ? UnsafeMutableRawPointer(segments + index + 1) : nil
            (segments + index).initialize(to: segment)
        }
        var output: [UInt8] = [0xaa]
        let count = try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &output, limit: 100)
        #expect(count == 3)
        #expect(output == [0xaa] + payloads.joined())
        #expect(NALUnit.types(in: output) == [7, 5])

        #expect(throws: CodedSegmentError.tooLarge(limit: 8)) {
            var bytes: [UInt8] = []
            try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &bytes, limit: 8)
        }
        var empty: [UInt8] = []
        #expect(try VACodedSegments.append(from: nil, into: &empty, limit: 10) == 0)

        segments[2].status = UInt32(VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK)
        #expect(throws: CodedSegmentError.overflow(status: 0x200)) {
            var bytes: [UInt8] = []
            try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &bytes, limit: 100)
        }
        segments[2].status = 0
        segments[2].next = UnsafeMutableRawPointer(segments)  // a loop
        #expect(throws: CodedSegmentError.tooLarge(limit: 1000)) {
            var bytes: [UInt8] = []
            try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &bytes, limit: 1000)
        }
        #expect(throws: CodedSegmentError.tooManySegments(VACodedSegments.maximumSegments)) {
            var bytes: [UInt8] = []
            try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &bytes, limit: .max)
        }
        segments[2].next = nil
        segments[1].size = 4
        segments[1].buf = nil
        #expect(throws: CodedSegmentError.missingData(segment: 1, size: 4)) {
            var bytes: [UInt8] = []
            try VACodedSegments.append(from: UnsafeRawPointer(segments), into: &bytes, limit: 100)
        }
    }

    // Typed-throws closures given to withUnsafe*Bytes crash Swift 6.3's IR generation; these
    // helpers pass the error out as a Result instead.
    static func copy(_ frame: NV12Frame, layout: NV12ImageLayout, into bytes: inout [UInt8]) throws(EncoderError) {
        let result = bytes.withUnsafeMutableBytes { raw -> Result<Void, EncoderError> in
            do throws(EncoderError) {
                try layout.copy(frame, into: raw)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    static func planes(from bytes: [UInt8]) throws(EncoderError) -> DMABufPlanes {
        let result = bytes.withUnsafeBytes { raw -> Result<DMABufPlanes, EncoderError> in
            do throws(EncoderError) {
                return .success(try DMABufPlanes(descriptorBytes: raw))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    @Test("NV12 upload respects the image's pitches and offsets, and refuses layouts too small")
    func nv12Upload() throws {
        var frame = NV12Frame(width: 30, height: 14)  // coded 32x16
        for index in frame.luma.indices { frame.luma[index] = UInt8(index % 251) }
        for index in frame.chroma.indices { frame.chroma[index] = UInt8((index * 7) % 253) }
        let layout = NV12ImageLayout(lumaOffset: 16, lumaPitch: 64, chromaOffset: 16 + 64 * 16 + 32, chromaPitch: 48,
                                     totalBytes: 16 + 64 * 16 + 32 + 48 * 8)
        var image = [UInt8](repeating: 0xee, count: layout.totalBytes)
        try Self.copy(frame, layout: layout, into: &image)
        for row in 0..<16 {
            #expect(Array(image[16 + row * 64..<16 + row * 64 + 32]) == Array(frame.luma[row * 32..<row * 32 + 32]))
            #expect(image[16 + row * 64 + 32] == 0xee)  // padding untouched
        }
        for row in 0..<8 {
            let start = layout.chromaOffset + row * 48
            #expect(Array(image[start..<start + 32]) == Array(frame.chroma[row * 32..<row * 32 + 32]))
        }
        // The last chroma row needs 32 bytes from chromaOffset + 7 * 48; one byte fewer must fail.
        var short = layout
        short.totalBytes = layout.chromaOffset + 7 * 48 + 31
        var small = [UInt8](repeating: 0, count: short.totalBytes)
        #expect(throws: EncoderError.self) {
            try Self.copy(frame, layout: short, into: &small)
        }
        var narrow = layout
        narrow.lumaPitch = 31
        #expect(throws: EncoderError.self) {
            try Self.copy(frame, layout: narrow, into: &image)
        }
    }

    @Test("Exported surface descriptors are read at C's offsets into R8 and GR88 planes")
    func exportedDescriptor() throws {
        // Sizes and offsets printed by a C program on libva 2.17's va_drmcommon.h: 312 bytes,
        // objects at 16 (16 each), num_layers at 80, layers at 84 (56 each).
        #expect(MemoryLayout<VADRMPRIMESurfaceDescriptor>.size == DMABufPlanes.DescriptorLayout.size)
        var bytes = [UInt8](repeating: 0, count: 312)
        func put<T>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { bytes.replaceSubrange(offset..<offset + $0.count, with: $0) }
        }
        put(UInt32(1280), at: 4); put(UInt32(720), at: 8); put(UInt32(1), at: 12)
        put(Int32(-1), at: 16); put(UInt64(0x0100_0000_0000_0002), at: 24)  // fd, modifier (I915 Y-tiled)
        put(UInt32(2), at: 80)
        put(DRMFormat.r8, at: 84); put(UInt32(1), at: 88); put(UInt32(0), at: 92); put(UInt32(0), at: 108); put(UInt32(1280), at: 124)
        put(DRMFormat.gr88, at: 140); put(UInt32(1), at: 144); put(UInt32(0), at: 148)
        put(UInt32(1280 * 736), at: 164); put(UInt32(1280), at: 180)
        let planes = try Self.planes(from: bytes)
        #expect(planes.luma == DMABufPlane(drmFourCC: DRMFormat.r8, width: 1280, height: 720, fileDescriptor: -1,
                                           offset: 0, pitch: 1280, modifier: 0x0100_0000_0000_0002))
        #expect(planes.chroma == DMABufPlane(drmFourCC: DRMFormat.gr88, width: 640, height: 360, fileDescriptor: -1,
                                             offset: 1280 * 736, pitch: 1280, modifier: 0x0100_0000_0000_0002))
        #expect(planes.fileDescriptors == [-1])
        put(UInt32(1), at: 80)  // one composed layer: not what we asked for
        #expect(throws: EncoderError.self) {
            try Self.planes(from: bytes)
        }
        // DRM fourccs from drm_fourcc.h: R8 = 0x20203852, GR88 = 0x38385247.
        #expect(DRMFormat.r8 == 0x2020_3852 && DRMFormat.gr88 == 0x3838_5247)
        #expect(VAFourCC.nv12 == 0x3231_564e)
    }

    // MARK: With a device (skipped without one; see reportsDeviceAvailability)

    /// A moving diagonal gradient, so P pictures have motion to code.
    static func testFrame(width: Int, height: Int, index: Int) -> NV12Frame {
        var frame = NV12Frame(width: width, height: height)
        for y in 0..<frame.codedHeight {
            for x in 0..<frame.codedWidth {
                frame.luma[y * frame.codedWidth + x] = UInt8(16 + (x + y + 4 * index) % 200)
            }
        }
        for y in 0..<frame.codedHeight / 2 {
            for x in stride(from: 0, to: frame.codedWidth, by: 2) {
                frame.chroma[y * frame.codedWidth + x] = UInt8(64 + (x + index) % 128)
                frame.chroma[y * frame.codedWidth + x + 1] = UInt8(64 + (y + index) % 128)
            }
        }
        return frame
    }

    /// Runs ffprobe on a stream and returns its key=value lines.
    static func ffprobe(_ stream: [UInt8], entries: String, extra: [String] = []) throws -> [String: [String]] {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vaapi-\(UUID().uuidString).h264")
        try Data(stream).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-f", "h264"] + extra + ["-show_entries", entries, "-of", "default=nw=1", url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var values: [String: [String]] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { values[parts[0], default: []].append(parts[1]) }
        }
        return values
    }

    // Needs a VA-API device with an H.264 encode entrypoint; this machine's lack of one is
    // printed by reportsDeviceAvailability.
    @Test("Encodes 30 frames that ffprobe decodes as constrained baseline of the right size",
          .enabled(if: VAAPITestSupport.hasH264Encoder && VAAPITestSupport.ffprobeAvailable))
    func encodesThirtyFrames() throws {
        let settings = EncoderSettings(width: 800, height: 480, framesPerSecond: 30, bitrate: 2_000_000)
        let encoder = try VAAPIEncoder(settings: settings)
        var stream: [UInt8] = []
        for index in 0..<30 {
            let unit = try encoder.encode(Self.testFrame(width: 800, height: 480, index: index),
                                          presentationTime: .seconds(Double(index) / 30), forceIDR: false)
            #expect(unit.frameNumber == index)
            #expect(unit.isKeyframe == (index == 0))
            #expect(!unit.data.isEmpty)
            stream += unit.data
        }
        #expect(try encoder.flush().isEmpty)
        let info = try Self.ffprobe(stream, entries: "stream=width,height,profile,nb_read_frames", extra: ["-count_frames"])
        #expect(info["width"] == ["800"])
        #expect(info["height"] == ["480"])
        #expect(info["profile"] == ["Constrained Baseline"])
        #expect(info["nb_read_frames"] == ["30"])
    }

    @Test("An IDR asked for comes out as a decodable key frame with SPS and PPS",
          .enabled(if: VAAPITestSupport.hasH264Encoder && VAAPITestSupport.ffprobeAvailable))
    func idrOnRequest() throws {
        let encoder = try VAAPIEncoder(settings: EncoderSettings(width: 1280, height: 720, framesPerSecond: 15))
        var stream: [UInt8] = []
        var keyframes: [Int] = []
        for index in 0..<12 {
            let unit = try encoder.encode(Self.testFrame(width: 1280, height: 720, index: index),
                                          presentationTime: .seconds(Double(index) / 15), forceIDR: index == 7)
            if unit.isKeyframe {
                keyframes.append(index)
                #expect(Array(NALUnit.types(in: unit.data).prefix(2)) == [7, 8])
            }
            stream += unit.data
        }
        #expect(keyframes == [0, 7])
        try encoder.setBitrate(300_000)
        stream += try encoder.encode(Self.testFrame(width: 1280, height: 720, index: 12), presentationTime: .seconds(0.8), forceIDR: false).data
        let info = try Self.ffprobe(stream, entries: "frame=key_frame,pict_type", extra: ["-show_frames"])
        #expect(info["key_frame"]?.count == 13)
        #expect(info["key_frame"]?.enumerated().filter { $0.element == "1" }.map(\.offset) == [0, 7])
        #expect(Set(info["pict_type"] ?? []) == ["I", "P"])
    }

    @Test("Probing reports an entrypoint, rate control and 4:2:0", .enabled(if: VAAPITestSupport.hasH264Encoder))
    func probeOnDevice() throws {
        let capabilities = try VAAPITestSupport.probe.get()
        print(capabilities)
        if let named = VAAPITestSupport.namedDevice {
            #expect(capabilities.renderNode == named)
        } else {
            #expect(capabilities.renderNode.hasPrefix("/dev/dri/renderD"))
        }
        #expect(capabilities.supportsYUV420)
        #expect(!capabilities.rateControlModes.isEmpty)
    }

    @Test("Its input surface is the encoder's zero-copy input", .enabled(if: VAAPITestSupport.hasH264Encoder))
    func offersZeroCopyInput() throws {
        let encoder = try VAAPIEncoder(settings: EncoderSettings(width: 800, height: 480))
        let input = try #require(encoder.zeroCopyInput)
        #expect(input === encoder)
    }

    @Test("The input surface exports as R8 and GR88 DMA-BUF planes",
          .enabled(if: VAAPITestSupport.hasH264Encoder && !VAAPITestSupport.onTestDriver,
                   "needs a GPU's driver: the test driver has no dma-buf to export"))
    func exportsSurface() throws {
        let encoder = try VAAPIEncoder(settings: EncoderSettings(width: 800, height: 480))
        let planes = try encoder.exportInputSurfaceForGL()
        defer { planes.closeFileDescriptors() }
        #expect(planes.luma.drmFourCC == DRMFormat.r8 && planes.chroma.drmFourCC == DRMFormat.gr88)
        #expect(planes.luma.width == 800 && planes.chroma.width == 400 && planes.chroma.height == 240)
        #expect(planes.luma.pitch >= 800 && planes.luma.fileDescriptor >= 0)
    }
}

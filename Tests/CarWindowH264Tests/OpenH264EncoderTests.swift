import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowTestSupport

/// Real encodes with OpenH264, checked by an independent decoder (FFmpeg's ffmpeg and ffprobe).
@Suite(.serialized)
struct OpenH264EncoderTests {
    // MARK: Decoding, crop and quality

    /// Y-PSNR of every decoded frame against the visible input luma.
    ///
    /// Measured (OpenH264 2.3.1, camera mode, CBR in its timestamp mode, 15 fps, 30 frames, the
    /// window governor with the first IDR started at a third of the target): worst / mean frame
    /// 800x480 at 1.5 Mbit/s 38.5 / 52.8 dB; 854x480 at 1.5 Mbit/s 38.5 / 52.4 dB; 1920x1080 at
    /// 5 Mbit/s 35.9 / 50.1 dB (the worst frame is the first IDR, coarser so that its second stays
    /// within the bitrate). The threshold, 33 dB, leaves over 2.5 dB of margin; a wrong stride,
    /// crop or range falls far below it (decoding to full-range gray by mistake gave 23.7 dB).
    @Test(arguments: [(800, 480, 1_500_000), (854, 480, 1_500_000), (1920, 1080, 5_000_000)])
    func decodesEveryFrameAtTheVisibleSize(width: Int, height: Int, bitrate: Int) throws {
        let settings = EncoderSettings(width: width, height: height, bitrate: bitrate)
        let frames = (0..<30).map { MapLikeFrames.frame(width: width, height: height, index: $0) }
        let units = try encodeAll(frames, settings: settings)
        let stream = try TemporaryStream(units.flatMap(\.data))

        let size = try stream.probedSize()
        #expect(size.width == width && size.height == height, "ffprobe sees \(size), expected the visible \(width)x\(height)")
        let decoded = try stream.decodedLuma(width: width, height: height)
        #expect(decoded.count == frames.count)
        let psnrs = zip(frames, decoded).map { MapLikeFrames.lumaPSNR(original: $0, decoded: $1) }
        let worst = psnrs.min() ?? 0
        print("OpenH264 \(width)x\(height) at \(bitrate / 1000) kbit/s: worst Y-PSNR \(String(format: "%.2f", worst)) dB, mean \(String(format: "%.2f", psnrs.reduce(0, +) / Double(max(psnrs.count, 1)))) dB, \(units.reduce(0) { $0 + $1.data.count }) bytes")
        #expect(worst >= 33, "worst Y-PSNR \(worst) dB")
    }

    /// Every IDR access unit starts with SPS, then PPS, then the IDR slice.
    @Test func everyIDRCarriesParameterSetsFirst() throws {
        let settings = EncoderSettings(width: 800, height: 480, idrInterval: 5)
        let units = try encodeAll((0..<12).map { MapLikeFrames.frame(width: 800, height: 480, index: $0) }, settings: settings)
        let keyframes = units.filter(\.isKeyframe)
        #expect(keyframes.count == 3)
        for unit in keyframes {
            let types = NALUnit.types(in: unit.data).filter { $0 != 6 }
            #expect(Array(types.prefix(3)) == [7, 8, 5], "frame \(unit.frameNumber) NAL types \(types)")
        }
        for unit in units where !unit.isKeyframe {
            #expect(!NALUnit.types(in: unit.data).contains(7))
        }
    }

    // MARK: IDR pictures

    @Test func requestedIDRComesOutAndDecodingCanStartThere() throws {
        let settings = EncoderSettings(width: 854, height: 480)
        let encoder = try OpenH264Encoder(settings: settings)
        var units: [AccessUnit] = []
        for index in 0..<30 {
            let frame = MapLikeFrames.frame(width: 854, height: 480, index: index)
            units.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: index == 17))
        }
        #expect(units[17].isKeyframe)
        #expect(NALUnit.types(in: units[17].data).contains(5))
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0, 17])

        let tail = try TemporaryStream(units[17...].flatMap(\.data))
        #expect(try tail.decodedLuma(width: 854, height: 480).count == 13)
    }

    /// Measured: OpenH264 writes only frame 0 as IDR over 60 frames.
    @Test func noPeriodicIDRByDefault() throws {
        let units = try encodeAll((0..<60).map { MapLikeFrames.frame(width: 800, height: 480, index: $0) },
                                  settings: EncoderSettings(width: 800, height: 480))
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0])
    }

    @Test func idrIntervalGivesPeriodicIDR() throws {
        let units = try encodeAll((0..<30).map { MapLikeFrames.frame(width: 800, height: 480, index: $0) },
                                  settings: EncoderSettings(width: 800, height: 480, idrInterval: 10))
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0, 10, 20])
    }

    // MARK: Rate control

    /// Measured at 800x480, 15 fps, grainy frames, mean of the last 15 frames of each phase:
    /// 2486 bytes a frame at 300 kbit/s (target 2500) and 12322 at 1500 kbit/s (target 12500),
    /// a factor of 4.96. A factor of 3 must show up. (Without grain the map is too simple to
    /// reach 1500 kbit/s: 4.6 kB a frame, which is why the grain is there.)
    /// OpenH264 takes NV12 frames only: the frame path uploads for it, never asks it for a surface.
    @Test func hasNoZeroCopyInput() throws {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 320, height: 192))
        #expect(encoder.zeroCopyInput == nil)
    }

    @Test func bitrateChangeTakesEffect() throws {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 800, height: 480, bitrate: 300_000))
        var sizes: [Int] = []
        for index in 0..<60 {
            if index == 30 { try encoder.setBitrate(1_500_000) }
            let frame = MapLikeFrames.frame(width: 800, height: 480, index: index, texture: 12)
            sizes.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: false).data.count)
        }
        let low = Double(sizes[15..<30].reduce(0, +)) / 15
        let high = Double(sizes[45..<60].reduce(0, +)) / 15
        print("OpenH264 bytes per frame: \(low) at 300 kbit/s, \(high) at 1500 kbit/s")
        #expect(encoder.settings.bitrate == 1_500_000)
        #expect(high > 3 * low, "\(low) -> \(high) bytes per frame")
    }

    /// Camera against screen-content tuning on the map-like sequence: bitrate accuracy and PSNR.
    /// Measured at 800x480, 600 kbit/s CBR, frames 15...59: camera 567 kbit/s, mean Y-PSNR 51.7 dB;
    /// screen content 201 kbit/s, 43.5 dB. Screen mode undershoots by two thirds and looks worse,
    /// so camera mode is the default. Camera mode must stay within 25 % of the target.
    @Test func cameraModeHoldsTheBitrate() throws {
        let settings = EncoderSettings(width: 800, height: 480, bitrate: 600_000)
        let frames = (0..<60).map { MapLikeFrames.frame(width: 800, height: 480, index: $0) }
        var camera = (rate: 0.0, psnr: 0.0)
        for content in [OpenH264Encoder.ContentKind.camera, .screen] {
            let encoder = try OpenH264Encoder(settings: settings, content: content)
            var units: [AccessUnit] = []
            for (index, frame) in frames.enumerated() {
                units.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: false))
            }
            // Steady state: after the first IDR has been paid off.
            let bits = Double(units[15...].reduce(0) { $0 + $1.data.count } * 8)
            let rate = bits / (Double(units.count - 15) / 15)
            let decoded = try TemporaryStream(units.flatMap(\.data)).decodedLuma(width: 800, height: 480)
            let psnrs = zip(frames, decoded).map { MapLikeFrames.lumaPSNR(original: $0, decoded: $1) }
            let meanPSNR = psnrs.reduce(0, +) / Double(max(psnrs.count, 1))
            print("OpenH264 \(content): \(Int(rate / 1000)) kbit/s for a 600 kbit/s target, mean Y-PSNR \(String(format: "%.2f", meanPSNR)) dB")
            if content == .camera { camera = (rate, meanPSNR) }
        }
        #expect(abs(camera.rate - 600_000) / 600_000 < 0.25, "camera mode spent \(camera.rate) bit/s")
    }

    /// With threads, every picture is cut into one slice per thread, ffmpeg decodes every one at
    /// about the quality one thread gives, and the window governor still holds the bitrate.
    /// Measured (map-like sequence, 800x480, 600 kbit/s): one thread 562 kbit/s, Y-PSNR mean /
    /// worst 48.9 / 33.3 dB; 3 threads 601 kbit/s, 46.8 / 31.6 dB (the first IDR, started at a
    /// lower bitrate when sliced). On real map pictures at these bits per pixel the two are
    /// within 0.5 dB (the bench's threads section); a wrong slice or plane falls below 25 dB.
    @Test func threadsSliceEveryPictureAndHoldTheBitrate() throws {
        let frames = (0..<60).map { MapLikeFrames.frame(width: 800, height: 480, index: $0) }
        var measured: [(rate: Double, meanPSNR: Double)] = []
        for threads in [1, 3] {
            let settings = EncoderSettings(width: 800, height: 480, bitrate: 600_000, threads: .fixed(threads))
            let encoder = try OpenH264Encoder(settings: settings)
            #expect(encoder.threadCount == threads)
            var units: [AccessUnit] = []
            for (index, frame) in frames.enumerated() {
                units.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: false))
            }
            for unit in units {
                let slices = NALUnit.types(in: unit.data).filter { $0 == 1 || $0 == 5 }.count
                #expect(slices == threads, "picture \(unit.frameNumber) has \(slices) slices")
            }
            let decoded = try TemporaryStream(units.flatMap(\.data)).decodedLuma(width: 800, height: 480)
            #expect(decoded.count == frames.count)
            let psnrs = zip(frames, decoded).map { MapLikeFrames.lumaPSNR(original: $0, decoded: $1) }
            let bits = Double(units[15...].reduce(0) { $0 + $1.data.count } * 8)
            measured.append((bits / (Double(units.count - 15) / 15), psnrs.reduce(0, +) / Double(max(psnrs.count, 1))))
            print("OpenH264 \(threads) threads: \(Int(measured.last!.rate / 1000)) kbit/s for 600, Y-PSNR mean \(String(format: "%.2f", measured.last!.meanPSNR)) dB, worst \(String(format: "%.2f", psnrs.min() ?? 0)) dB")
        }
        for (rate, _) in measured {
            #expect(abs(rate - 600_000) / 600_000 < 0.25, "spent \(rate) bit/s")
        }
        #expect(measured[1].meanPSNR >= measured[0].meanPSNR - 3, "3 threads \(measured[1].meanPSNR) dB, one \(measured[0].meanPSNR) dB")
    }

    /// Automatic threads: one per core, at most ``EncoderThreads/automaticLimit``, each with
    /// at least ``EncoderThreads/rowsPerThread`` macroblock rows.
    @Test func automaticThreadsFollowCoresAndSize() {
        let automatic = EncoderThreads.automatic
        #expect(automatic.count(width: 800, height: 480, cores: 1) == 1)
        #expect(automatic.count(width: 800, height: 480, cores: 2) == 2)
        #expect(automatic.count(width: 800, height: 480, cores: 16) == 3, "30 macroblock rows: 3 slices of 8 or more")
        #expect(automatic.count(width: 1920, height: 1080, cores: 16) == EncoderThreads.automaticLimit)
        #expect(automatic.count(width: 320, height: 96, cores: 16) == 1)
        #expect(EncoderThreads.fixed(5).count(width: 320, height: 96, cores: 1) == 5, "a pinned count is kept")
        let cores = ProcessorCores.available
        #expect(cores >= 1)
        #expect(automatic.count(width: 1920, height: 1080) == min(cores, EncoderThreads.automaticLimit))
    }

    @Test(arguments: [0, -1, 17])
    func threadCountsOutsideTheRangeThrow(count: Int) {
        #expect(throws: EncoderError.invalidSettings("encoder threads \(count) must be in 1...16")) {
            try OpenH264Encoder(settings: EncoderSettings(width: 800, height: 480, threads: .fixed(count)))
        }
    }

    /// The affinity list of /proc/self/status, as the kernel writes it.
    @Test func coresAreCountedFromTheAffinityList() {
        #expect(ProcessorCores.allowedCount(inStatus: "Name:\tx\nCpus_allowed_list:\t0-3,8,10-11\n") == 7)
        #expect(ProcessorCores.allowedCount(inStatus: "Cpus_allowed_list:\t5\n") == 1)
        #expect(ProcessorCores.allowedCount(inStatus: "Cpus_allowed_list:\t3-1\n") == nil)
        #expect(ProcessorCores.allowedCount(inStatus: "Cpus_allowed_list:\t\n") == nil)
        #expect(ProcessorCores.allowedCount(inStatus: "Name:\tx\n") == nil)
        #expect(ProcessorCores.allowedCount(inStatus: "Cpus_allowed_list:\t0-9223372036854775807\n") == nil)
    }

    // MARK: Settings and input

    @Test(arguments: [(0, 0), (801, 480), (8192, 8192)])
    func badSizesThrow(width: Int, height: Int) {
        #expect(throws: EncoderError.self) { try OpenH264Encoder(settings: EncoderSettings(width: width, height: height)) }
        do {
            _ = try OpenH264Encoder(settings: EncoderSettings(width: width, height: height))
        } catch {
            guard case .invalidSettings = error else { Issue.record("expected invalidSettings, got \(error)"); return }
        }
    }

    @Test func zeroBitrateAndFrameRateThrow() throws {
        for settings in [EncoderSettings(width: 800, height: 480, bitrate: 0),
                         EncoderSettings(width: 800, height: 480, framesPerSecond: 0)] {
            do {
                _ = try OpenH264Encoder(settings: settings)
                Issue.record("\(settings) was accepted")
            } catch {
                guard case .invalidSettings = error else { Issue.record("expected invalidSettings, got \(error)"); continue }
            }
        }
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 800, height: 480))
        #expect(throws: EncoderError.self) { try encoder.setBitrate(0) }
        #expect(throws: EncoderError.self) { try encoder.setFrameRate(0) }
        try encoder.setFrameRate(30)
        #expect(encoder.settings.framesPerSecond == 30)
        #expect(try encoder.flush().isEmpty)
    }

    /// The SPS states the rate the stream was opened at, whatever rate the rate control runs
    /// at when an IDR comes (a lowered quality, keep-alives): otherwise a player that times a
    /// raw stream by its SPS changes pace at each IDR.
    @Test func everySPSStatesTheStreamsOpeningRate() throws {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 320, height: 192, framesPerSecond: 15))
        let frame = NV12Frame(width: 320, height: 192)
        var rates: [UInt32] = []
        for (index, rate) in [15.0, 5, 2].enumerated() {
            try encoder.setFrameRate(rate)
            let unit = try encoder.encode(frame, presentationTime: .seconds(index), forceIDR: true)
            for range in NALUnit.ranges(in: unit.data) where NALUnitType(rawValue: unit.data[range.lowerBound]) == .sequenceParameterSet {
                let sps = try SequenceParameterSet(parsing: unit.data[range])
                rates.append(try #require(sps.vui?.timing).timeScale)
            }
        }
        #expect(rates == [30, 30, 30], "time_scale per IDR: \(rates)")
    }

    @Test func mismatchedFrameThrows() throws {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 800, height: 480))
        #expect(throws: EncoderError.self) {
            try encoder.encode(NV12Frame(width: 640, height: 480), presentationTime: .zero, forceIDR: false)
        }
        #expect(throws: EncoderError.self) {
            try encoder.encode(NV12Frame(width: 800, height: 480, fullRange: true), presentationTime: .zero, forceIDR: false)
        }
        #expect(throws: EncoderError.self) {
            try encoder.encode(NV12Frame(width: 800, height: 480), presentationTime: .seconds(-1), forceIDR: false)
        }
        var short = NV12Frame(width: 800, height: 480)
        short.chroma.removeLast()
        #expect(throws: EncoderError.self) { try encoder.encode(short, presentationTime: .zero, forceIDR: false) }
        // The encoder still works after refusing bad frames.
        let unit = try encoder.encode(NV12Frame(width: 800, height: 480), presentationTime: .zero, forceIDR: false)
        #expect(unit.isKeyframe)
    }

    // MARK: Stream headers

    /// What the interface promises of every SPS, read back with FFmpeg's trace_headers.
    ///
    /// Measured: OpenH264 2.3.1 itself already writes constraint_set0/1 = 1 (constrained
    /// baseline) and, with the VUI enabled, bitstream_restriction with max_num_reorder_frames 0 and
    /// max_dec_frame_buffering 1, so this holds with `H264StreamRewriter` as a pass-through stub
    /// and must keep holding once wip/h264bits' rewriter is merged.
    @Test func spsIsConstrainedBaselineLowDelayAndCropped() throws {
        let units = try encodeAll((0..<3).map { MapLikeFrames.frame(width: 854, height: 480, index: $0) },
                                  settings: EncoderSettings(width: 854, height: 480))
        let stream = try TemporaryStream(units.flatMap(\.data))
        let trace = try stream.headerTrace()
        #expect(traceValue("profile_idc", in: trace) == 66)
        #expect(traceValue("constraint_set0_flag", in: trace) == 1)
        #expect(traceValue("constraint_set1_flag", in: trace) == 1)
        #expect(traceValue("max_num_ref_frames", in: trace) == 1)
        #expect(traceValue("frame_crop_right_offset", in: trace) == 5, "864 coded - 854 visible = 10 luma = 5 crop units")
        #expect(traceValue("video_full_range_flag", in: trace) == 0)
        #expect(traceValue("bitstream_restriction_flag", in: trace) == 1)
        #expect(traceValue("max_num_reorder_frames", in: trace) == 0)
        #expect(traceValue("max_dec_frame_buffering", in: trace) == 1)
        #expect(traceValue("entropy_coding_mode_flag", in: trace) == 0)
        #expect(try stream.decodedLuma(width: 854, height: 480).count == 3)
    }

    // MARK: Helpers

    private func encodeAll(_ frames: [NV12Frame], settings: EncoderSettings) throws -> [AccessUnit] {
        let encoder = try OpenH264Encoder(settings: settings)
        var units: [AccessUnit] = []
        for (index, frame) in frames.enumerated() {
            units.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / settings.framesPerSecond), forceIDR: false))
        }
        units += try encoder.flush()
        return units
    }

    /// The value of the first `name = value` line of FFmpeg's trace_headers output.
    private func traceValue(_ name: String, in trace: String) -> Int? {
        for line in trace.split(separator: "\n") where line.contains(" \(name) ") {
            if let last = line.split(separator: "=").last, let value = Int(last.trimmingCharacters(in: .whitespaces)) {
                return value
            }
        }
        return nil
    }
}


import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowTestSupport
import SystemPackage

/// The MP4 file sink: real OpenH264 streams with irregular times written to MP4 and read back by
/// FFmpeg (ffprobe's frame times, packet key flags and sizes; ffmpeg decoding every picture), our
/// own boxes read back by an independent walker, and the typed errors.
@Suite struct MP4FileSinkTests {
    // MARK: Timing, keyframes, decoding

    /// 30 frames at 320x192 with IDRs at 0, 10, 20 and times from 2 s on in steps of 1/30, 1/15
    /// and 0.5 s. Expected times are the given ones less the first (the file starts at 0 s),
    /// rounded to 1/90000 s as the sink stores them; ffprobe prints six decimals, so the tolerance
    /// is 1/90000 s.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func irregularTimesAndKeyframesReachFFmpeg() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let times = MP4Checks.irregularTimes(count: 30, start: 2)
        let units = try MP4Checks.encode(width: 320, height: 192, times: times, idrInterval: 10)
        try #require(units.count == 30)
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0, 10, 20])
        let file = try MP4Checks.writeFile(units, in: directory)

        let info = try MP4Checks.ffprobeJSON(["-show_entries", "format=format_name:stream=codec_name,width,height,nb_frames"], file: file)
        let format = try #require(info["format"] as? [String: Any])
        #expect((format["format_name"] as? String)?.hasPrefix("mov,mp4") == true, "format \(String(describing: format["format_name"]))")
        let stream = try #require((info["streams"] as? [[String: Any]])?.first)
        #expect(stream["codec_name"] as? String == "h264")
        #expect(stream["width"] as? Int == 320 && stream["height"] as? Int == 192)
        #expect(stream["nb_frames"] as? String == "30")

        let frames = try MP4Checks.probedFrames(file)
        #expect(frames.count == 30)
        for (index, (frame, time)) in zip(frames, times).enumerated() {
            #expect(abs(frame.time - (time - times[0])) <= 1.0 / 90_000, "frame \(index): \(frame.time) s, given \(time - times[0]) s")
            #expect(frame.width == 320 && frame.height == 192)
        }
        let decodeErrors = try MP4Checks.decodeErrors(file)
        #expect(decodeErrors.isEmpty, "ffmpeg: \(decodeErrors)")

        // Durations come from stts (the last repeats the one before). Key flags are what ffprobe
        // makes of stss and its own H.264 parser (a mutation marking every sample sync did not
        // change them), so stss itself is checked below with the box walker.
        let packetInfo = try MP4Checks.ffprobeJSON(["-select_streams", "v:0", "-show_entries", "packet=flags,duration"], file: file)
        let packets = try #require(packetInfo["packets"] as? [[String: Any]])
        let keyPackets = packets.enumerated().filter { ($0.element["flags"] as? String)?.hasPrefix("K") == true }.map(\.offset)
        #expect(keyPackets == [0, 10, 20])
        let ticks = times.map { Int(($0 * 90_000).rounded()) }
        let expectedDurations = zip(ticks.dropFirst(), ticks).map { $0 - $1 } + [ticks[29] - ticks[28]]
        #expect(packets.compactMap { $0["duration"] as? Int } == expectedDurations)

        let bytes = [UInt8](try Data(contentsOf: file))
        let stss = try #require(MP4Checks.box(MP4Checks.sampleTable + ["stss"], in: bytes))
        #expect(MP4Checks.uint32s(stss) == [0, 3, 1, 11, 21], "version/flags, count, 1-based IDR sample numbers")
        let mdhd = try #require(MP4Checks.box(["moov", "trak", "mdia", "mdhd"], in: bytes))
        let mdhdFields = MP4Checks.uint32s(mdhd)
        #expect(mdhdFields[3] == 90_000, "timescale")
        #expect(Int(mdhdFields[4]) == ticks[29] - ticks[0] + expectedDurations[29], "duration in ticks")
    }

    /// Parameter sets live in avcC only; each sample is 4-byte length-prefixed NAL units whose
    /// payloads are exactly the slices (and SEI/AUD) of the access unit, in order.
    @Test func samplesAreLengthPrefixedWithoutParameterSets() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try MP4Checks.encode(width: 320, height: 192, times: (0..<5).map { Double($0) / 15 }, idrInterval: 3)
        let file = try MP4Checks.writeFile(units, in: directory)
        let bytes = [UInt8](try Data(contentsOf: file))

        let stsz = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stsz"], in: bytes)))
        let stco = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stco"], in: bytes)))
        try #require(stsz.count == 3 + 5 && stco.count == 3)
        #expect(stco[1] == 1, "one chunk: all samples share one description")
        var offset = Int(stco[2])
        for (index, unit) in units.enumerated() {
            let expected = NALUnit.ranges(in: unit.data).map { Array(unit.data[$0]) }.filter { ![7, 8].contains($0[0] & 0x1F) }
            let size = Int(stsz[3 + index])
            var nalUnits: [[UInt8]] = []
            var position = offset
            while position < offset + size {
                let length = bytes[position..<position + 4].reduce(0) { $0 << 8 | Int($1) }
                nalUnits.append(Array(bytes[position + 4..<position + 4 + length]))
                position += 4 + length
            }
            #expect(position == offset + size)
            #expect(nalUnits == expected, "sample \(index)")
            offset += size
        }

        let avcC = try #require(MP4Checks.box(MP4Checks.sampleTable + ["stsd", "avc1", "avcC"], in: bytes))
        let parameterSets = NALUnit.ranges(in: units[0].data).map { Array(units[0].data[$0]) }
        let sps = try #require(parameterSets.first { $0[0] & 0x1F == 7 })
        let pps = try #require(parameterSets.first { $0[0] & 0x1F == 8 })
        let expectedAVCC: [UInt8] = [1, sps[1], sps[2], sps[3], 0xFF, 0xE1, 0, UInt8(sps.count)] + sps
            + [1, 0, UInt8(pps.count)] + pps
        #expect(Array(avcC) == expectedAVCC)
        let avc1 = try #require(MP4Checks.box(MP4Checks.sampleTable + ["stsd", "avc1"], in: bytes))
        let entryStart = avc1.startIndex
        #expect(avc1[entryStart + 24..<entryStart + 28].elementsEqual([0x01, 0x40, 0x00, 0xC0]), "width 320, height 192")
    }

    /// A resize restarts the encoder at another size: the second run gets its own sample
    /// description, and ffmpeg decodes every picture of both sizes.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func resolutionChangeGetsASecondSampleDescriptionAndDecodesWholly() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let times = MP4Checks.irregularTimes(count: 24, start: 0)
        let first = try MP4Checks.encode(width: 320, height: 192, times: Array(times[..<12]))
        let second = try MP4Checks.encode(width: 256, height: 144, times: Array(times[12...]), firstFrame: 12)
        let file = try MP4Checks.writeFile(first + second, in: directory)

        let frames = try MP4Checks.probedFrames(file)
        #expect(frames.count == 24)
        #expect(frames.prefix(12).allSatisfy { $0.width == 320 && $0.height == 192 })
        #expect(frames.dropFirst(12).allSatisfy { $0.width == 256 && $0.height == 144 }, "\(frames.map { "\($0.width)x\($0.height)" })")
        for (frame, time) in zip(frames, times) { #expect(abs(frame.time - time) <= 1.0 / 90_000) }
        let decodeErrors = try MP4Checks.decodeErrors(file)
        #expect(decodeErrors.isEmpty, "ffmpeg: \(decodeErrors)")

        let bytes = [UInt8](try Data(contentsOf: file))
        let stsd = try #require(MP4Checks.box(MP4Checks.sampleTable + ["stsd"], in: bytes))
        #expect(MP4Checks.uint32s(stsd)[1] == 2, "two avc1 entries")
        let stsc = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stsc"], in: bytes)))
        #expect(stsc == [0, 2, 1, 12, 1, 2, 12, 2], "chunk 1: 12 samples of entry 1, chunk 2: 12 of entry 2")
        let stss = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stss"], in: bytes)))
        #expect(stss == [0, 2, 1, 13])
    }

    /// Past 4 GiB `mdat` takes a 64-bit size (over the reserved `free` box) and chunk offsets go
    /// to `co64`. A 4.5 GiB hole (sparse, so no disk is used) before the second chunk gets there.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func filesPastFourGibibytesUseLargeSizeAndCo64() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let times = MP4Checks.irregularTimes(count: 12, start: 0)
        let first = try MP4Checks.encode(width: 320, height: 192, times: Array(times[..<6]))
        let second = try MP4Checks.encode(width: 256, height: 144, times: Array(times[6...]), firstFrame: 6)
        let url = directory.appendingPathComponent("large.mp4")
        let sink = try MP4FileSink(url: url)
        for unit in first { try sink.write(unit) }
        let hole: UInt64 = 4_500_000_000
        sink.skipMediaData(hole)
        for unit in second { try sink.write(unit) }
        sink.close()

        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let head = [UInt8](try handle.read(upToCount: 64) ?? Data())
        // ftyp is 32 bytes (4 size, 4 type, 4 major brand, 4 minor version, 4 compatible brands).
        let ftypSize = head[0..<4].reduce(0) { $0 << 8 | Int($1) }
        #expect(ftypSize == 32)
        #expect(head[ftypSize..<ftypSize + 8].elementsEqual([0, 0, 0, 1] + Array("mdat".utf8)), "size 1: a 64-bit size follows")
        let largeSize = head[ftypSize + 8..<ftypSize + 16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let sampleBytes = (first + second).reduce(UInt64(0)) { $0 + UInt64($1.data.count) }
        #expect(largeSize > hole && largeSize < hole + sampleBytes + 16, "mdat size \(largeSize)")
        try handle.seek(toOffset: UInt64(ftypSize) + largeSize)
        let moov = [UInt8](try handle.readToEnd() ?? Data())
        let co64 = try #require(MP4Checks.box(["moov"] + MP4Checks.sampleTable.dropFirst() + ["co64"], in: moov))
        let offsets = MP4Checks.uint32s(co64)
        try #require(offsets.count == 2 + 4)
        #expect(offsets[1] == 2)
        #expect(UInt64(offsets[2]) << 32 | UInt64(offsets[3]) == UInt64(ftypSize) + 16, "first chunk right after the mdat header")
        #expect(UInt64(offsets[4]) << 32 | UInt64(offsets[5]) > hole)

        let frames = try MP4Checks.probedFrames(url)
        #expect(frames.map(\.width) == Array(repeating: 320, count: 6) + Array(repeating: 256, count: 6))
        let decodeErrors = try MP4Checks.decodeErrors(url)
        #expect(decodeErrors.isEmpty, "ffmpeg: \(decodeErrors)")
    }

    // MARK: Refusals and errors

    @Test func decreasingEqualAndTooLargeTimesAreRefusedAndWritingGoesOn() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try MP4Checks.encode(width: 320, height: 192, times: [0, 0.1, 0.2])
        let sink = try MP4FileSink(url: directory.appendingPathComponent("times.mp4"))
        try sink.write(units[0])
        try sink.write(units[1])
        // Past 2^53 ticks, and past Int64 ticks at 90 kHz.
        for time: Duration in [.seconds(0.05), .seconds(0.1), .seconds(1_000_000_000_000), .seconds(Int64.max / 2)] {
            var unit = units[2]
            unit.presentationTime = time
            #expect {
                try sink.write(unit)
            } throws: { error in
                guard case SinkError.invalidAccessUnit(let frame, _)? = error as? SinkError else { return false }
                return frame == 2
            }
        }
        try sink.write(units[2])
        sink.close()
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent("times.mp4")))
        let stts = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stts"], in: bytes)))
        #expect(stts == [0, 1, 3, 9000], "three samples of 0.1 s: the refused ones left no trace")
    }

    @Test func aPictureBeforeTheFirstIDRIsRefused() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try MP4Checks.encode(width: 320, height: 192, times: [0, 1.0 / 15])
        #expect(!units[1].isKeyframe)
        let sink = try MP4FileSink(url: directory.appendingPathComponent("p.mp4"))
        #expect {
            try sink.write(units[1])
        } throws: { error in
            guard case SinkError.invalidAccessUnit(let frame, let reason)? = error as? SinkError else { return false }
            return frame == 1 && reason.contains("IDR")
        }
        try sink.write(units[0])
        sink.close()
    }

    @Test func aMissingFolderIsENOENT() {
        let url = URL(fileURLWithPath: "/nonexistent-carwindow-\(UUID().uuidString)/out.mp4")
        #expect(throws: SinkError.cannotOpenFile(path: url.path, Errno(rawValue: ENOENT))) {
            try MP4FileSink(url: url)
        }
        #expect(throws: SinkError.self) { try MP4FileSink(url: URL(fileURLWithPath: "/tmp/x.mp4"), timescale: 0) }
    }

    @Test func writesAfterCloseThrowAndClosingTwiceIsHarmless() throws {
        let directory = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try MP4Checks.encode(width: 320, height: 192, times: [0])
        let url = directory.appendingPathComponent("closed.mp4")
        let sink = try MP4FileSink(url: url)
        try sink.write(units[0])
        sink.close()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
        sink.close()
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size)
        #expect(throws: SinkError.closed("MP4 file sink for \(url.path)")) { try sink.write(units[0]) }

        // One picture lasts 1/15 s: 6000 ticks.
        let bytes = [UInt8](try Data(contentsOf: url))
        let stts = MP4Checks.uint32s(try #require(MP4Checks.box(MP4Checks.sampleTable + ["stts"], in: bytes)))
        #expect(stts == [0, 1, 1, 6000])
    }
}

import Foundation
import Glibc
import Logging
import SystemPackage
import CarWindowVideoCore
import CarWindowH264
import CarWindowSystemSupport

/// Writes access units into an MP4 file (ISO/IEC 14496-12 and 14496-15, `avc1`) that keeps each
/// picture's own presentation time.
///
/// A projection session sends pictures only when the map moves and keep-alives about every half
/// second when it stands still, so frame durations vary from 1/30 s to 0.5 s. An Annex-B file has
/// no timestamps and plays back at a fixed rate; here every sample lasts until the next one begins.
///
/// Layout: `ftyp`, an 8-byte `free` box, then `mdat`, which grows as samples arrive (NAL units with
/// 4-byte length prefixes); ``close()`` fixes the `mdat` size (turning `free` + `mdat` into one
/// 64-bit `mdat` header past 4 GiB) and appends `moov`. A file that was never closed has its
/// pictures but no index, so players cannot open it.
///
/// - SPS and PPS NAL units go into the `avcC` sample description, not into samples (`avc1`
///   forbids relying on in-band parameter sets). AUD and SEI stay in the samples; filler data
///   (CBR padding for the wire) is dropped.
/// - A new SPS or PPS (a resize restarts the encoder at another size) opens another `avc1`
///   sample description in the same `stsd`, and `stsc` points the following chunk at it, so one
///   file holds the whole session and decoders switch at that IDR. The track header carries the
///   first size.
/// - Times are rebased so the first sample starts at 0 s; they are rounded to the timescale.
/// - Memory grows by 12 bytes per sample (size and time) plus 4 per IDR; the sample bytes go
///   straight to disk.
///
/// A recording that runs out of room still plays: the sink keeps disk space allocated past the
/// samples for its index, and when it cannot grow that room (a full disk, `ulimit -f`) or a
/// write fails, it drops the picture that did not fit, writes `moov` for the samples it has and
/// closes, throwing `SinkError.writeFailed(path:_:)` (or `SinkError.finishFailed(path:_:)`
/// when even the index could not be written). A process under a file size limit must ignore
/// `SIGXFSZ` to get the error instead of being killed.
///
/// The folder must exist: a sink that created folders would hide a mistyped path. The file is
/// locked while the sink has it open (see `SinkError.fileLocked(path:)`).
public final class MP4FileSink: VideoSink {
    /// The file being written.
    public let url: URL
    /// Ticks per second of the media and movie time scales (90 kHz as in RTP by default).
    public let timescale: Int

    /// How many different parameter-set pairs one file may describe; a session resizes rarely,
    /// so reaching this means the input is broken, and the bound keeps `stsd` small.
    public static let maximumSampleDescriptions = 1024

    private static let logger = Logger(label: "carwindow.sink")
    /// Duration of the last sample when there is no earlier one to copy: one frame at 15 fps.
    private static let lonePictureDuration = 1.0 / 15
    /// Disk space allocated ahead of need, past the room the index needs, so the space for the
    /// index grows a few times a minute rather than with every picture.
    static let allocationStep: UInt64 = 64 << 10

    /// The error that ended the sink: a write that failed, or an index that could not be written.
    public private(set) var failure: SinkError?

    private var descriptor: FileDescriptor?
    /// Where the `free` box before `mdat` begins; `mdat`'s own 8-byte header follows it.
    private let mdatRegionOffset: UInt64
    /// The end of the sample data written so far: the next sample goes here, then `moov`.
    private var endOffset: UInt64

    private var descriptions: [SampleDescription] = []
    /// Index into `descriptions` of the parameter sets in force (the last sample's).
    private var currentDescription: Int?
    private var sampleSizes: [UInt32] = []
    /// Decoding (= presentation) time of every sample in ticks, relative to the first sample.
    private var sampleTimes: [Int64] = []
    private var firstSampleTicks: Int64 = 0
    /// 1-based numbers of the IDR samples, for `stss`.
    private var syncSamples: [UInt32] = []
    private var chunks: [Chunk] = []
    /// The end of the disk space allocated so far; nil when the file is no regular file
    /// (`/dev/null`), whose writes cannot run out of room this way.
    private var allocatedEnd: UInt64?
    /// Bytes of the `avcC` parameter sets of every sample description, for the index's size.
    private var parameterSetBytes = 0

    /// One run of consecutive samples sharing one sample description.
    private struct Chunk {
        var offset: UInt64
        var sampleCount: UInt32
        /// 1-based index into `stsd`.
        var descriptionIndex: UInt32
    }

    /// The parameter sets of one `avc1` entry and what its header fields need from the SPS.
    private struct SampleDescription: Equatable {
        var sequenceParameterSets: [[UInt8]]
        var pictureParameterSets: [[UInt8]]
        var width: Int
        var height: Int
        var profileIDC: UInt8
        var profileCompatibility: UInt8
        var levelIDC: UInt8
        var chromaFormatIDC: Int
        var bitDepthLumaMinus8: Int
        var bitDepthChromaMinus8: Int
    }

    /// Creates (or empties) the file at `url` and writes the file header.
    ///
    /// `timescale` must be in 1...4294967295; 90000 represents any time to 11 µs.
    public init(url: URL, timescale: Int = 90_000) throws(SinkError) {
        guard timescale > 0, timescale <= Int(UInt32.max) else {
            throw .invalidConfiguration("MP4 timescale \(timescale) must be in 1...\(UInt32.max) ticks per second")
        }
        self.url = url
        self.timescale = timescale
        let file: FileDescriptor
        let isRegularFile: Bool
        do {
            file = try FileDescriptor.openForWriting(path: url.path, truncate: true)
            isRegularFile = try file.isRegularFile
        } catch {
            throw .opening(path: url.path, error)
        }
        var header = MP4BoxWriter()
        header.box("ftyp") { ftyp in
            ftyp.fourCC("isom")
            ftyp.uint32(0x200)
            ftyp.fourCC("isom")
            ftyp.fourCC("iso2")
            ftyp.fourCC("avc1")
            ftyp.fourCC("mp41")
        }
        mdatRegionOffset = UInt64(header.bytes.count)
        // A free box now, so a file past 4 GiB can turn free + mdat into one 16-byte mdat header.
        header.box("free") { _ in }
        header.box("mdat") { _ in }
        endOffset = UInt64(header.bytes.count)
        do {
            try file.writeWhole(header.bytes, at: 0)
            if isRegularFile {
                let end = endOffset + UInt64(Self.indexSizeBound(samples: 0, parameterSetBytes: 0, descriptions: 0)) + Self.allocationStep
                try file.allocate(from: 0, length: end)
                allocatedEnd = end
            }
        } catch {
            // An empty header is no use to anyone.
            _ = try? file.truncate(to: 0)
            try? file.close()
            throw .writeFailed(path: url.path, error)
        }
        descriptor = file
    }

    deinit { close() }

    /// Appends one access unit as one sample.
    ///
    /// Refused (nothing written, the next unit is taken as usual): a time that is not finite or
    /// not after the previous sample's, a first picture that is not an IDR, a unit without slices,
    /// an SPS that does not parse, parameter sets that cannot be described.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let descriptor else { throw .closed("MP4 file sink for \(url.path)") }
        let ticks = try timeInTicks(of: unit)

        var sequenceParameterSets: [[UInt8]] = []
        var pictureParameterSets: [[UInt8]] = []
        var sample: [UInt8] = []
        sample.reserveCapacity(unit.data.count)
        var hasSlice = false, isIDR = false
        for range in NALUnit.ranges(in: unit.data) {
            let nalUnit = unit.data[range]
            switch NALUnitType(rawValue: unit.data[range.lowerBound]) {
            case .sequenceParameterSet: sequenceParameterSets.append(Array(nalUnit))
            case .pictureParameterSet: pictureParameterSets.append(Array(nalUnit))
            case .fillerData: continue
            case let type:
                if type.isVCL { hasSlice = true }
                if type == .idrSlice { isIDR = true }
                let length = UInt32(nalUnit.count)
                for shift: UInt32 in [24, 16, 8, 0] { sample.append(UInt8(truncatingIfNeeded: length >> shift)) }
                sample += nalUnit
            }
        }
        guard hasSlice else {
            throw .invalidAccessUnit(frameNumber: unit.frameNumber, reason: "it holds no coded slice, so it is no picture")
        }
        guard !sampleSizes.isEmpty || isIDR else {
            throw .invalidAccessUnit(frameNumber: unit.frameNumber,
                                     reason: "an MP4 file must start with an IDR picture so it can be decoded from its first sample; request an IDR")
        }
        let description = try descriptionIndex(sequenceParameterSets: sequenceParameterSets,
                                               pictureParameterSets: pictureParameterSets, frameNumber: unit.frameNumber)
        guard sample.count <= Int(UInt32.max) else {
            throw .invalidAccessUnit(frameNumber: unit.frameNumber, reason: "\(sample.count) bytes do not fit an MP4 sample size")
        }

        do {
            try makeRoom(forSampleOf: sample.count, newDescription: description)
            try descriptor.writeWhole(sample, at: endOffset)
        } catch {
            // The picture that did not fit is dropped: the index covers the samples before it.
            let failure = finishFile(on: descriptor) ?? .writeFailed(path: url.path, error)
            self.failure = failure
            throw failure
        }

        let descriptionNumber: UInt32
        switch description {
        case .existing(let index):
            descriptionNumber = UInt32(index + 1)
            currentDescription = index
        case .new(let entry):
            descriptions.append(entry)
            parameterSetBytes += Self.parameterSetBytes(of: entry)
            descriptionNumber = UInt32(descriptions.count)
            currentDescription = descriptions.count - 1
        }
        if let last = chunks.last, last.descriptionIndex == descriptionNumber {
            chunks[chunks.count - 1].sampleCount += 1
        } else {
            chunks.append(Chunk(offset: endOffset, sampleCount: 1, descriptionIndex: descriptionNumber))
        }
        if sampleSizes.isEmpty { firstSampleTicks = ticks }
        sampleTimes.append(ticks - firstSampleTicks)
        sampleSizes.append(UInt32(sample.count))
        if isIDR { syncSamples.append(UInt32(clamping: sampleSizes.count)) }
        endOffset += UInt64(sample.count)
    }

    /// Leaves `count` unreferenced bytes in `mdat` (a hole, sparse on disk), so tests reach the
    /// 64-bit `mdat` size and `co64` without writing 4 GiB of pictures.
    func skipMediaData(_ count: UInt64) {
        endOffset += count
        // The hole stays a hole: room for the index is allocated from its end on.
        allocatedEnd = allocatedEnd.map { max($0, endOffset) }
    }

    /// Fixes the `mdat` size, appends the index (`moov`) and closes the file. A failure is logged
    /// and kept in ``failure``: the pictures stay on disk, but without `moov` players cannot open
    /// the file.
    public func close() {
        guard let descriptor else { return }
        if let failure = finishFile(on: descriptor) { self.failure = failure }
    }

    /// Grows the allocated space so that a sample of `size` bytes and the index after it fit.
    private func makeRoom(forSampleOf size: Int, newDescription: DescriptionChoice) throws(Errno) {
        guard let allocated = allocatedEnd, let descriptor else { return }
        var descriptions = descriptions.count, parameterSetBytes = parameterSetBytes
        if case .new(let entry) = newDescription {
            descriptions += 1
            parameterSetBytes += Self.parameterSetBytes(of: entry)
        }
        let needed = endOffset + UInt64(size)
            + UInt64(Self.indexSizeBound(samples: sampleSizes.count + 1, parameterSetBytes: parameterSetBytes, descriptions: descriptions))
        guard needed > allocated else { return }
        try descriptor.allocate(from: allocated, length: needed + Self.allocationStep - allocated)
        allocatedEnd = needed + Self.allocationStep
    }

    /// At least the size of `moov` for this many samples and sample descriptions: each sample
    /// adds at most one entry to every table (stts 8, stss 4, stsc 12, stsz 4, co64 8 bytes),
    /// each description its fixed boxes and parameter sets, and the rest is under 1 KiB.
    static func indexSizeBound(samples: Int, parameterSetBytes: Int, descriptions: Int) -> Int {
        1024 + 36 * samples + 160 * descriptions + parameterSetBytes
    }

    private static func parameterSetBytes(of description: SampleDescription) -> Int {
        (description.sequenceParameterSets + description.pictureParameterSets).reduce(0) { $0 + $1.count + 2 }
    }

    /// Writes the `mdat` size and `moov` after the last whole sample, cuts the file there and
    /// closes it; returns the error when that failed (it is logged too).
    private func finishFile(on descriptor: FileDescriptor) -> SinkError? {
        self.descriptor = nil
        defer { try? descriptor.close() }
        let mdatSize = endOffset - mdatRegionOffset - 8
        var mdatHeader = MP4BoxWriter()
        let mdatHeaderOffset: UInt64
        if mdatSize <= UInt64(UInt32.max) {
            mdatHeaderOffset = mdatRegionOffset + 8
            mdatHeader.uint32(UInt32(mdatSize))
            mdatHeader.fourCC("mdat")
        } else {
            mdatHeaderOffset = mdatRegionOffset
            mdatHeader.uint32(1)
            mdatHeader.fourCC("mdat")
            mdatHeader.uint64(endOffset - mdatRegionOffset)
        }
        let movie = movieBox()
        do {
            try descriptor.writeWhole(mdatHeader.bytes, at: mdatHeaderOffset)
            try descriptor.writeWhole(movie, at: endOffset)
            // Allocated room and any part of a failed sample go.
            if allocatedEnd != nil { try descriptor.truncate(to: endOffset + UInt64(movie.count)) }
        } catch {
            Self.logger.error("MP4 file \(url.path) is incomplete: writing its index failed: \(error.nameAndText); the \(sampleSizes.count) pictures are there but players cannot open it")
            return .finishFailed(path: url.path, error)
        }
        return nil
    }

    // MARK: Checking input

    /// The unit's presentation time in ticks, refused when it cannot follow the previous sample.
    private func timeInTicks(of unit: AccessUnit) throws(SinkError) -> Int64 {
        let time = unit.presentationTime
        let (seconds, attoseconds) = time.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: Int64(timescale))
        // |attoseconds| < 10^18, so the fraction is at most `timescale` ticks.
        let fraction = Int64((Double(attoseconds) * Double(timescale) / 1e18).rounded())
        // Past 2^53 ticks (3000 years at 90 kHz) no real recording goes; the bound keeps the sums below exact.
        guard !overflow, abs(whole) <= 9_007_199_254_740_992 else {
            throw .invalidAccessUnit(frameNumber: unit.frameNumber, reason: "presentation time \(time) is too large for the timescale \(timescale)")
        }
        let ticks = whole + fraction
        if let last = sampleTimes.last {
            let previous = last + firstSampleTicks
            guard ticks > previous else {
                throw .invalidAccessUnit(frameNumber: unit.frameNumber,
                                         reason: "presentation time \(time) is not after the previous picture's \(Double(previous) / Double(timescale)) s (at 1/\(timescale) s); times must increase")
            }
            guard ticks - previous <= Int64(UInt32.max) else {
                throw .invalidAccessUnit(frameNumber: unit.frameNumber,
                                         reason: "presentation time \(time) is \(Double(ticks - previous) / Double(timescale)) s after the previous picture, more than one MP4 sample can last; start a new file")
            }
        }
        return ticks
    }

    /// Which sample description an access unit uses: the one in force, an earlier identical one,
    /// or a new one built from the parameter sets it carries.
    private enum DescriptionChoice {
        case existing(Int)
        case new(SampleDescription)
    }

    private func descriptionIndex(sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]],
                                  frameNumber: Int) throws(SinkError) -> DescriptionChoice {
        let current = currentDescription.map { descriptions[$0] }
        if sequenceParameterSets.isEmpty && pictureParameterSets.isEmpty {
            guard let currentDescription else {
                throw .invalidAccessUnit(frameNumber: frameNumber, reason: "the first picture carries no SPS and PPS, so the file cannot describe how to decode it")
            }
            return .existing(currentDescription)
        }
        // A unit that repeats only one kind keeps the other from the description in force.
        let spsList = sequenceParameterSets.isEmpty ? current?.sequenceParameterSets ?? [] : sequenceParameterSets
        let ppsList = pictureParameterSets.isEmpty ? current?.pictureParameterSets ?? [] : pictureParameterSets
        if let current, current.sequenceParameterSets == spsList, current.pictureParameterSets == ppsList, let currentDescription {
            return .existing(currentDescription)
        }
        if let index = descriptions.firstIndex(where: { $0.sequenceParameterSets == spsList && $0.pictureParameterSets == ppsList }) {
            return .existing(index)
        }
        guard let firstSPS = spsList.first, !ppsList.isEmpty else {
            throw .invalidAccessUnit(frameNumber: frameNumber, reason: "an SPS and a PPS are both needed to describe the stream, but one is missing")
        }
        guard spsList.count <= 31, ppsList.count <= 255,
              (spsList + ppsList).allSatisfy({ $0.count <= Int(UInt16.max) }) else {
            throw .invalidAccessUnit(frameNumber: frameNumber, reason: "more than 31 SPS, 255 PPS or a parameter set over 65535 bytes do not fit avcC")
        }
        guard descriptions.count < Self.maximumSampleDescriptions else {
            throw .invalidAccessUnit(frameNumber: frameNumber, reason: "the file already has \(Self.maximumSampleDescriptions) different parameter sets; start a new file")
        }
        let sps: SequenceParameterSet
        do {
            sps = try SequenceParameterSet(parsing: firstSPS)
        } catch {
            throw .invalidAccessUnit(frameNumber: frameNumber, reason: "its SPS does not parse: \(error)")
        }
        guard firstSPS.count >= 4, (1...Int(UInt16.max)).contains(sps.visibleWidth), (1...Int(UInt16.max)).contains(sps.visibleHeight) else {
            throw .invalidAccessUnit(frameNumber: frameNumber, reason: "its SPS gives the picture size \(sps.visibleWidth)x\(sps.visibleHeight), which cannot be described")
        }
        return .new(SampleDescription(
            sequenceParameterSets: spsList, pictureParameterSets: ppsList, width: sps.visibleWidth, height: sps.visibleHeight,
            profileIDC: firstSPS[firstSPS.startIndex + 1], profileCompatibility: firstSPS[firstSPS.startIndex + 2],
            levelIDC: firstSPS[firstSPS.startIndex + 3], chromaFormatIDC: sps.chromaFormatIDC,
            bitDepthLumaMinus8: sps.bitDepthLumaMinus8, bitDepthChromaMinus8: sps.bitDepthChromaMinus8))
    }

    // MARK: The index

    /// Each sample lasts until the next begins; the last copies the one before it.
    private func sampleDurations() -> [UInt32] {
        guard !sampleTimes.isEmpty else { return [] }
        var durations: [UInt32] = []
        durations.reserveCapacity(sampleTimes.count)
        for index in 1..<sampleTimes.count {
            durations.append(UInt32(clamping: sampleTimes[index] - sampleTimes[index - 1]))
        }
        let lone = UInt32(clamping: max(1, Int((Self.lonePictureDuration * Double(timescale)).rounded())))
        durations.append(durations.last ?? lone)
        return durations
    }

    private func movieBox() -> [UInt8] {
        let durations = sampleDurations()
        let duration = durations.reduce(UInt64(0)) { $0 + UInt64($1) }
        let wide = duration > UInt64(UInt32.max)
        // Seconds since 1904-01-01, the epoch of MP4 times.
        let now = UInt64(max(0, time(nil))) + 2_082_844_800
        var writer = MP4BoxWriter()
        writer.box("moov") { moov in
            moov.fullBox("mvhd", version: wide ? 1 : 0) { mvhd in
                mvhd.times(creation: now, timescale: UInt32(timescale), duration: duration, wide: wide)
                mvhd.uint32(0x0001_0000)  // rate 1.0
                mvhd.uint16(0x0100)  // volume 1.0
                mvhd.zeros(10)
                mvhd.unityMatrix()
                mvhd.zeros(24)
                mvhd.uint32(2)  // next_track_ID
            }
            guard let first = descriptions.first else { return }
            moov.box("trak") { trak in
                trak.fullBox("tkhd", version: wide ? 1 : 0, flags: 3) { tkhd in  // enabled, in movie
                    if wide {
                        tkhd.uint64(now)
                        tkhd.uint64(now)
                        tkhd.uint32(1)
                        tkhd.zeros(4)
                        tkhd.uint64(duration)
                    } else {
                        tkhd.uint32(UInt32(truncatingIfNeeded: now))
                        tkhd.uint32(UInt32(truncatingIfNeeded: now))
                        tkhd.uint32(1)
                        tkhd.zeros(4)
                        tkhd.uint32(UInt32(duration))
                    }
                    tkhd.zeros(8)
                    tkhd.zeros(8)  // layer, alternate_group, volume 0 for video, reserved
                    tkhd.unityMatrix()
                    tkhd.uint32(UInt32(first.width) << 16)
                    tkhd.uint32(UInt32(first.height) << 16)
                }
                trak.box("mdia") { mdia in
                    mdia.fullBox("mdhd", version: wide ? 1 : 0) { mdhd in
                        mdhd.times(creation: now, timescale: UInt32(timescale), duration: duration, wide: wide)
                        mdhd.uint16(0x55C4)  // ISO 639-2 "und", 5 bits a letter
                        mdhd.uint16(0)
                    }
                    mdia.fullBox("hdlr") { hdlr in
                        hdlr.uint32(0)
                        hdlr.fourCC("vide")
                        hdlr.zeros(12)
                        hdlr.append(Array("CarWindow video".utf8) + [0])
                    }
                    mdia.box("minf") { minf in
                        minf.fullBox("vmhd", flags: 1) { vmhd in vmhd.zeros(8) }
                        minf.box("dinf") { dinf in
                            dinf.fullBox("dref") { dref in
                                dref.uint32(1)
                                dref.fullBox("url ", flags: 1) { _ in }  // data in this file
                            }
                        }
                        minf.box("stbl") { stbl in sampleTable(into: &stbl, durations: durations) }
                    }
                }
            }
        }
        return writer.bytes
    }

    private func sampleTable(into stbl: inout MP4BoxWriter, durations: [UInt32]) {
        stbl.fullBox("stsd") { stsd in
            stsd.uint32(UInt32(descriptions.count))
            for description in descriptions { Self.writeSampleEntry(description, into: &stsd) }
        }
        var timeRuns: [(count: UInt32, delta: UInt32)] = []
        for duration in durations {
            if let last = timeRuns.last, last.delta == duration {
                timeRuns[timeRuns.count - 1].count += 1
            } else {
                timeRuns.append((1, duration))
            }
        }
        stbl.fullBox("stts") { stts in
            stts.uint32(UInt32(clamping: timeRuns.count))
            for run in timeRuns {
                stts.uint32(run.count)
                stts.uint32(run.delta)
            }
        }
        stbl.fullBox("stss") { stss in
            stss.uint32(UInt32(clamping: syncSamples.count))
            for number in syncSamples { stss.uint32(number) }
        }
        stbl.fullBox("stsc") { stsc in
            var entries: [(firstChunk: UInt32, samplesPerChunk: UInt32, descriptionIndex: UInt32)] = []
            for (index, chunk) in chunks.enumerated() {
                if let last = entries.last, last.samplesPerChunk == chunk.sampleCount, last.descriptionIndex == chunk.descriptionIndex { continue }
                entries.append((UInt32(index + 1), chunk.sampleCount, chunk.descriptionIndex))
            }
            stsc.uint32(UInt32(entries.count))
            for entry in entries {
                stsc.uint32(entry.firstChunk)
                stsc.uint32(entry.samplesPerChunk)
                stsc.uint32(entry.descriptionIndex)
            }
        }
        stbl.fullBox("stsz") { stsz in
            stsz.uint32(0)  // sizes differ: one entry each
            stsz.uint32(UInt32(clamping: sampleSizes.count))
            for size in sampleSizes { stsz.uint32(size) }
        }
        if let lastChunk = chunks.last, lastChunk.offset > UInt64(UInt32.max) {
            stbl.fullBox("co64") { co64 in
                co64.uint32(UInt32(chunks.count))
                for chunk in chunks { co64.uint64(chunk.offset) }
            }
        } else {
            stbl.fullBox("stco") { stco in
                stco.uint32(UInt32(chunks.count))
                for chunk in chunks { stco.uint32(UInt32(chunk.offset)) }
            }
        }
    }

    /// One `avc1` visual sample entry with its `avcC` (ISO/IEC 14496-15 5.3.3).
    private static func writeSampleEntry(_ description: SampleDescription, into stsd: inout MP4BoxWriter) {
        stsd.box("avc1") { entry in
            entry.zeros(6)
            entry.uint16(1)  // data_reference_index
            entry.zeros(16)  // pre_defined, reserved
            entry.uint16(UInt16(description.width))
            entry.uint16(UInt16(description.height))
            entry.uint32(0x0048_0000)  // 72 dpi
            entry.uint32(0x0048_0000)
            entry.zeros(4)
            entry.uint16(1)  // frame_count
            let name = Array("CarWindow H.264".utf8)
            entry.uint8(UInt8(name.count))
            entry.append(name)
            entry.zeros(31 - name.count)
            entry.uint16(0x0018)  // depth: colour, no alpha
            entry.uint16(0xFFFF)  // pre_defined -1
            entry.box("avcC") { avcC in
                avcC.uint8(1)
                avcC.uint8(description.profileIDC)
                avcC.uint8(description.profileCompatibility)
                avcC.uint8(description.levelIDC)
                avcC.uint8(0xFC | 3)  // lengthSizeMinusOne: 4-byte lengths
                avcC.uint8(0xE0 | UInt8(description.sequenceParameterSets.count))
                for sps in description.sequenceParameterSets {
                    avcC.uint16(UInt16(sps.count))
                    avcC.append(sps)
                }
                avcC.uint8(UInt8(description.pictureParameterSets.count))
                for pps in description.pictureParameterSets {
                    avcC.uint16(UInt16(pps.count))
                    avcC.append(pps)
                }
                if [100, 110, 122, 144].contains(description.profileIDC) {
                    avcC.uint8(0xFC | UInt8(description.chromaFormatIDC & 3))
                    avcC.uint8(0xF8 | UInt8(description.bitDepthLumaMinus8 & 7))
                    avcC.uint8(0xF8 | UInt8(description.bitDepthChromaMinus8 & 7))
                    avcC.uint8(0)  // no SPS extensions
                }
            }
        }
    }
}

private extension MP4BoxWriter {
    /// creation_time, modification_time, timescale and duration of mvhd and mdhd.
    mutating func times(creation: UInt64, timescale: UInt32, duration: UInt64, wide: Bool) {
        if wide {
            uint64(creation)
            uint64(creation)
            uint32(timescale)
            uint64(duration)
        } else {
            uint32(UInt32(truncatingIfNeeded: creation))
            uint32(UInt32(truncatingIfNeeded: creation))
            uint32(timescale)
            uint32(UInt32(duration))
        }
    }
}

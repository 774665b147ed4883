import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowTestSupport

/// The fields of a parsed SPS in the order and with the names FFmpeg's trace_headers prints them
/// (FFmpeg's cbs_h264 syntax template), so a parser disagreement shows as the first differing line.
func traceFields(_ sps: SequenceParameterSet) -> [String] {
    var fields: [(String, Int)] = [("profile_idc", sps.profileIDC)]
    for (index, flag) in sps.constraintFlags.enumerated() { fields.append(("constraint_set\(index)_flag", flag ? 1 : 0)) }
    fields += [("reserved_zero_2bits", 0), ("level_idc", sps.levelIDC), ("seq_parameter_set_id", sps.id)]
    if SequenceParameterSet.highProfiles.contains(sps.profileIDC) {
        fields.append(("chroma_format_idc", sps.chromaFormatIDC))
        if sps.chromaFormatIDC == 3 { fields.append(("separate_colour_plane_flag", sps.separateColourPlane ? 1 : 0)) }
        fields += [("bit_depth_luma_minus8", sps.bitDepthLumaMinus8), ("bit_depth_chroma_minus8", sps.bitDepthChromaMinus8),
                   ("qpprime_y_zero_transform_bypass_flag", sps.qpprimeYZeroTransformBypass ? 1 : 0),
                   ("seq_scaling_matrix_present_flag", sps.scalingLists == nil ? 0 : 1)]
        fields += scalingFields(sps.scalingLists, prefix: "seq")
    }
    fields += [("log2_max_frame_num_minus4", sps.log2MaxFrameNumMinus4), ("pic_order_cnt_type", sps.picOrderCountType)]
    if sps.picOrderCountType == 0 {
        fields.append(("log2_max_pic_order_cnt_lsb_minus4", sps.log2MaxPicOrderCountLSBMinus4))
    } else if sps.picOrderCountType == 1 {
        fields += [("delta_pic_order_always_zero_flag", sps.deltaPicOrderAlwaysZero ? 1 : 0),
                   ("offset_for_non_ref_pic", sps.offsetForNonRefPic),
                   ("offset_for_top_to_bottom_field", sps.offsetForTopToBottomField),
                   ("num_ref_frames_in_pic_order_cnt_cycle", sps.offsetForRefFrame.count)]
        for (index, offset) in sps.offsetForRefFrame.enumerated() { fields.append(("offset_for_ref_frame[\(index)]", offset)) }
    }
    fields += [("max_num_ref_frames", sps.maxNumRefFrames), ("gaps_in_frame_num_allowed_flag", sps.gapsInFrameNumAllowed ? 1 : 0),
               ("pic_width_in_mbs_minus1", sps.picWidthInMBsMinus1),
               ("pic_height_in_map_units_minus1", sps.picHeightInMapUnitsMinus1),
               ("frame_mbs_only_flag", sps.frameMBsOnly ? 1 : 0)]
    if !sps.frameMBsOnly { fields.append(("mb_adaptive_frame_field_flag", sps.mbAdaptiveFrameField ? 1 : 0)) }
    fields += [("direct_8x8_inference_flag", sps.direct8x8Inference ? 1 : 0), ("frame_cropping_flag", sps.crop == nil ? 0 : 1)]
    if let crop = sps.crop {
        fields += [("frame_crop_left_offset", crop.left), ("frame_crop_right_offset", crop.right),
                   ("frame_crop_top_offset", crop.top), ("frame_crop_bottom_offset", crop.bottom)]
    }
    fields.append(("vui_parameters_present_flag", sps.vui == nil ? 0 : 1))
    if let vui = sps.vui { fields += vuiFields(vui) }
    return fields.map { "\($0.0) = \($0.1)" }
}

private func scalingFields(_ lists: [ScalingList?]?, prefix: String) -> [(String, Int)] {
    var fields: [(String, Int)] = []
    for (index, list) in (lists ?? []).enumerated() {
        fields.append(("\(prefix)_scaling_list_present_flag[\(index)]", list == nil ? 0 : 1))
        for (position, delta) in (list?.deltas ?? []).enumerated() { fields.append(("delta_scale[\(position)]", delta)) }
    }
    return fields
}

private func vuiFields(_ vui: VUIParameters) -> [(String, Int)] {
    var fields: [(String, Int)] = [("aspect_ratio_info_present_flag", vui.aspectRatio == nil ? 0 : 1)]
    if let aspect = vui.aspectRatio {
        fields.append(("aspect_ratio_idc", aspect.idc))
        if aspect.idc == 255 { fields += [("sar_width", aspect.sarWidth), ("sar_height", aspect.sarHeight)] }
    }
    fields.append(("overscan_info_present_flag", vui.overscanAppropriate == nil ? 0 : 1))
    if let overscan = vui.overscanAppropriate { fields.append(("overscan_appropriate_flag", overscan ? 1 : 0)) }
    fields.append(("video_signal_type_present_flag", vui.videoSignalType == nil ? 0 : 1))
    if let signal = vui.videoSignalType {
        fields += [("video_format", signal.videoFormat), ("video_full_range_flag", signal.fullRange ? 1 : 0),
                   ("colour_description_present_flag", signal.colourDescription == nil ? 0 : 1)]
        if let colour = signal.colourDescription {
            fields += [("colour_primaries", colour.primaries), ("transfer_characteristics", colour.transfer),
                       ("matrix_coefficients", colour.matrix)]
        }
    }
    fields.append(("chroma_loc_info_present_flag", vui.chromaSampleLocation == nil ? 0 : 1))
    if let location = vui.chromaSampleLocation {
        fields += [("chroma_sample_loc_type_top_field", location.top), ("chroma_sample_loc_type_bottom_field", location.bottom)]
    }
    fields.append(("timing_info_present_flag", vui.timing == nil ? 0 : 1))
    if let timing = vui.timing {
        fields += [("num_units_in_tick", Int(timing.numUnitsInTick)), ("time_scale", Int(timing.timeScale)),
                   ("fixed_frame_rate_flag", timing.fixedFrameRate ? 1 : 0)]
    }
    for (name, hrd) in [("nal", vui.nalHRD), ("vcl", vui.vclHRD)] {
        fields.append(("\(name)_hrd_parameters_present_flag", hrd == nil ? 0 : 1))
        guard let hrd else { continue }
        fields += [("cpb_cnt_minus1", hrd.buffers.count - 1), ("bit_rate_scale", hrd.bitRateScale), ("cpb_size_scale", hrd.cpbSizeScale)]
        for (index, buffer) in hrd.buffers.enumerated() {
            fields += [("bit_rate_value_minus1[\(index)]", Int(buffer.bitRateValueMinus1)),
                       ("cpb_size_value_minus1[\(index)]", Int(buffer.cpbSizeValueMinus1)), ("cbr_flag[\(index)]", buffer.cbr ? 1 : 0)]
        }
        fields += [("initial_cpb_removal_delay_length_minus1", hrd.initialCPBRemovalDelayLengthMinus1),
                   ("cpb_removal_delay_length_minus1", hrd.cpbRemovalDelayLengthMinus1),
                   ("dpb_output_delay_length_minus1", hrd.dpbOutputDelayLengthMinus1), ("time_offset_length", hrd.timeOffsetLength)]
    }
    if vui.nalHRD != nil || vui.vclHRD != nil { fields.append(("low_delay_hrd_flag", vui.lowDelayHRD ? 1 : 0)) }
    fields += [("pic_struct_present_flag", vui.picStructPresent ? 1 : 0), ("bitstream_restriction_flag", vui.bitstreamRestriction == nil ? 0 : 1)]
    if let restriction = vui.bitstreamRestriction {
        fields += [("motion_vectors_over_pic_boundaries_flag", restriction.motionVectorsOverPicBoundaries ? 1 : 0),
                   ("max_bytes_per_pic_denom", restriction.maxBytesPerPicDenom), ("max_bits_per_mb_denom", restriction.maxBitsPerMBDenom),
                   ("log2_max_mv_length_horizontal", restriction.log2MaxMVLengthHorizontal),
                   ("log2_max_mv_length_vertical", restriction.log2MaxMVLengthVertical),
                   ("max_num_reorder_frames", restriction.maxNumReorderFrames), ("max_dec_frame_buffering", restriction.maxDecFrameBuffering)]
    }
    return fields
}

/// The PPS fields in trace_headers order and naming.
func traceFields(_ pps: PictureParameterSet) -> [String] {
    var fields: [(String, Int)] = [
        ("pic_parameter_set_id", pps.id), ("seq_parameter_set_id", pps.spsID),
        ("entropy_coding_mode_flag", pps.entropyCodingModeCABAC ? 1 : 0),
        ("bottom_field_pic_order_in_frame_present_flag", pps.bottomFieldPicOrderInFramePresent ? 1 : 0),
        ("num_slice_groups_minus1", 0), ("num_ref_idx_l0_default_active_minus1", pps.numRefIdxL0DefaultActiveMinus1),
        ("num_ref_idx_l1_default_active_minus1", pps.numRefIdxL1DefaultActiveMinus1), ("weighted_pred_flag", pps.weightedPred ? 1 : 0),
        ("weighted_bipred_idc", pps.weightedBipredIDC), ("pic_init_qp_minus26", pps.picInitQPMinus26),
        ("pic_init_qs_minus26", pps.picInitQSMinus26), ("chroma_qp_index_offset", pps.chromaQPIndexOffset),
        ("deblocking_filter_control_present_flag", pps.deblockingFilterControlPresent ? 1 : 0),
        ("constrained_intra_pred_flag", pps.constrainedIntraPred ? 1 : 0),
        ("redundant_pic_cnt_present_flag", pps.redundantPicCountPresent ? 1 : 0),
    ]
    if let tail = pps.highProfileExtension {
        fields += [("transform_8x8_mode_flag", tail.transform8x8Mode ? 1 : 0),
                   ("pic_scaling_matrix_present_flag", tail.scalingLists == nil ? 0 : 1)]
        fields += scalingFields(tail.scalingLists, prefix: "pic")
        fields.append(("second_chroma_qp_index_offset", tail.secondChromaQPIndexOffset))
    }
    return fields.map { "\($0.0) = \($0.1)" }
}

/// A trace section's fields without the NAL header and trailing bits, as "name = value".
func payloadFields(_ section: (title: String, fields: [(String, Int)])) -> [String] {
    let framing: Set<String> = ["forbidden_zero_bit", "nal_ref_idc", "nal_unit_type", "rbsp_stop_one_bit", "rbsp_alignment_zero_bit"]
    return section.fields.filter { !framing.contains($0.0) }.map { "\($0.0) = \($0.1)" }
}

/// A stream made entirely by our code: SPS, PPS, an IDR whose macroblocks are all I_PCM (so the
/// decoded picture is known exactly), then all-skip P pictures that must repeat it.
struct HandMadeStream {
    var sps: SequenceParameterSet
    var pps: PictureParameterSet
    var headers: [SliceHeader] = []
    var bytes: [UInt8] = []

    /// The luma value every test picture carries at (x, y): varied, never 0.
    static func luma(_ x: Int, _ y: Int) -> UInt8 { UInt8(16 + (x * 3 + y * 7) % 220) }

    init(sps: SequenceParameterSet, pps: PictureParameterSet, skippedPictures: Int) {
        self.sps = sps
        self.pps = pps
        let widthInMBs = sps.picWidthInMBsMinus1 + 1
        let macroblocks = widthInMBs * (sps.picHeightInMapUnitsMinus1 + 1)
        var idr = SliceHeader.idr(idrPicID: 3, sliceQPDelta: -4)
        idr.disableDeblockingFilterIDC = 1
        var writer = BitWriter()
        idr.write(into: &writer, sps: sps, pps: pps)
        for index in 0..<macroblocks {
            writer.writeUE(25)  // mb_type I_PCM
            writer.alignToByte()
            let originX = index % widthInMBs * 16, originY = index / widthInMBs * 16
            var samples: [UInt8] = []
            for y in 0..<16 { for x in 0..<16 { samples.append(Self.luma(originX + x, originY + y)) } }
            samples += [UInt8](repeating: 128, count: 128)
            writer.writeBytes(samples)
        }
        writer.writeTrailingBits()
        var units = [sps.write(), pps.write(), NALUnit.make(type: .idrSlice, referenceIDC: 3, rbsp: writer.bytes)]
        headers.append(idr)
        for picture in 1...max(1, skippedPictures) where skippedPictures > 0 {
            var header = SliceHeader.p(frameNum: picture, picturesSinceIDR: picture, sliceQPDelta: picture)
            header.sliceAlphaC0OffsetDiv2 = -2
            header.sliceBetaOffsetDiv2 = 3
            headers.append(header)
            units.append(SliceHeader.skippedPictureNAL(header, sps: sps, pps: pps))
        }
        bytes = NALUnit.annexB(units)
    }
}

@Suite("H.264 bitstream")
struct H264BitstreamTests {
    private func bitString(_ write: (inout BitWriter) -> Void) -> String {
        var writer = BitWriter()
        write(&writer)
        let bits = writer.bytes.map { byte in
            let binary = String(byte, radix: 2)
            return String(repeating: "0", count: 8 - binary.count) + binary
        }.joined()
        return String(bits.prefix(writer.bitCount))
    }

    @Test func expGolombCodesMatchTheStandard() {
        // Table 9-2 and 9-3 of H.264.
        #expect(bitString { $0.writeUE(0 as UInt32) } == "1")
        #expect(bitString { $0.writeUE(1 as UInt32) } == "010")
        #expect(bitString { $0.writeUE(2 as UInt32) } == "011")
        #expect(bitString { $0.writeUE(3 as UInt32) } == "00100")
        #expect(bitString { $0.writeUE(8 as UInt32) } == "0001001")
        #expect(bitString { $0.writeSE(1 as Int) } == "010")
        #expect(bitString { $0.writeSE(-1 as Int) } == "011")
        #expect(bitString { $0.writeSE(2 as Int) } == "00100")
        #expect(bitString { $0.writeSE(-2 as Int) } == "00101")
        #expect(bitString { $0.writeUE(UInt32.max) } == String(repeating: "0", count: 32) + "1" + String(repeating: "0", count: 32))
        #expect(bitString { $0.writeTrailingBits() } == "10000000")
        #expect(bitString { $0.writeBits(5, count: 3); $0.writeTrailingBits() } == "10110000")
    }

    @Test func expGolombRoundTripsIncludingEdges() throws {
        var unsigned: [UInt32] = [0, 1, 2, 3, 6, 7, 254, 255, 256, 65_534, 65_535, 1 << 31, UInt32.max - 1, UInt32.max]
        var signed: [Int] = [0, 1, -1, 2, -2, 127, -128, Int(Int32.max), -Int(Int32.max)]
        var random = SplitMix64(seed: 264)
        for _ in 0..<500 {
            unsigned.append(UInt32(truncatingIfNeeded: random.next() >> UInt64.random(in: 0...63, using: &random)))
            signed.append(Int(Int32(truncatingIfNeeded: random.next() >> UInt64.random(in: 1...63, using: &random))) | 1)
        }
        var writer = BitWriter()
        for value in unsigned { writer.writeUE(value) }
        for value in signed { writer.writeSE(value) }
        writer.writeTrailingBits()
        var reader = BitReader(writer.bytes)
        for value in unsigned { #expect(try reader.readUE("ue") == value) }
        for value in signed { #expect(try reader.readSE("se") == value) }
        try reader.readTrailingBits()
        #expect(reader.bitsLeft == 0)
    }

    @Test func fixedWidthFieldsRoundTrip() throws {
        var random = SplitMix64(seed: 7)
        let fields = (0..<1000).map { _ in
            let width = Int(random.next() % 33)
            let value = width == 0 ? 0 : UInt32(truncatingIfNeeded: random.next()) >> UInt32(32 - width)
            return (width, value)
        }
        var writer = BitWriter()
        for (width, value) in fields { writer.writeBits(value, count: width) }
        #expect(writer.bitCount == fields.reduce(0) { $0 + $1.0 })
        var reader = BitReader(writer.bytes)
        for (width, value) in fields { #expect(try reader.readBits(width, "u(n)") == value) }
    }

    @Test func readerThrowsTypedErrorsInsteadOfRunningOff() {
        var empty = BitReader([])
        #expect(throws: H264BitstreamError.endOfData(field: "flag")) { try empty.readFlag("flag") }
        var truncated = BitReader([0b0000_0001])  // 7 zeros then 1: a suffix of 7 bits is missing
        #expect(throws: H264BitstreamError.endOfData(field: "ue")) { try truncated.readUE("ue") }
        var tooLong = BitReader([0, 0, 0, 0, 0, 0xFF])  // 40 leading zeros
        #expect(throws: H264BitstreamError.expGolombTooLong(field: "ue")) { try tooLong.readUE("ue") }
        var wide = BitReader([0, 0, 0, 0, 0x80, 0, 0, 0, 0x80])  // 32 zeros, 1, nonzero suffix: beyond 32 bits
        #expect(throws: H264BitstreamError.expGolombTooLong(field: "ue")) { try wide.readUE("ue") }
        var ranged = BitReader([0b0001_0000])  // ue = 7
        #expect(throws: H264BitstreamError.valueOutOfRange(field: "x", value: 7)) { try ranged.readUE("x", in: 0...3) }
        // Every prefix of a real SPS must throw, never crash.
        let sps = SequenceParameterSet.forSize(width: 854, height: 480, fps: 15, fullRange: true).write()
        for length in 0..<sps.count - 1 {
            #expect(throws: H264BitstreamError.self) { try SequenceParameterSet(parsing: sps[0..<length]) }
        }
        #expect(throws: H264BitstreamError.wrongNALUnitType(expected: 7, found: 8)) {
            try SequenceParameterSet(parsing: PictureParameterSet.baseline().write())
        }
    }

    @Test func emulationPreventionEscapesStartCodePatternsAndRoundTrips() {
        #expect(NALUnit.insertEmulationPrevention([0, 0, 0]) == [0, 0, 3, 0])
        #expect(NALUnit.insertEmulationPrevention([0, 0, 1]) == [0, 0, 3, 1])
        #expect(NALUnit.insertEmulationPrevention([0, 0, 2, 0, 0, 3]) == [0, 0, 3, 2, 0, 0, 3, 3])
        #expect(NALUnit.insertEmulationPrevention([0, 0, 4, 0, 0]) == [0, 0, 4, 0, 0, 3])
        #expect(NALUnit.insertEmulationPrevention([1, 0, 5, 0, 0, 0, 0]) == [1, 0, 5, 0, 0, 3, 0, 0, 3])
        #expect(NALUnit.removeEmulationPrevention([0, 0, 3, 1, 0, 0, 3, 0, 0, 3]) == [0, 0, 1, 0, 0, 0, 0])
        var random = SplitMix64(seed: 42)
        for _ in 0..<300 {
            let rbsp = (0..<Int(random.next() % 64)).map { _ in UInt8([0, 0, 0, 1, 2, 3, 4, 0xFF][Int(random.next() % 8)]) }
            let escaped = NALUnit.insertEmulationPrevention(rbsp)
            #expect(NALUnit.removeEmulationPrevention(escaped) == rbsp)
            for index in 0..<max(0, escaped.count - 2) {
                #expect(!(escaped[index] == 0 && escaped[index + 1] == 0 && escaped[index + 2] <= 2))
            }
        }
    }

    @Test func annexBStreamsSplitIntoUnits() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 0, 1, 0x65, 0, 0, 3, 1, 0, 0]
        let units = NALUnit.ranges(in: stream).map { Array(stream[$0]) }
        #expect(units == [[0x67, 1, 2], [0x68, 3], [0x65, 0, 0, 3, 1]])
        #expect(H264StreamRewriter.nalTypes(stream) == [.sequenceParameterSet, .pictureParameterSet, .idrSlice])
        #expect(H264StreamRewriter.containsIDR(stream))
        #expect(NALUnit.ranges(in: [1, 2, 3]).isEmpty)
        #expect(NALUnit.ranges(in: []).isEmpty)
        #expect(NALUnitType(rawValue: 12) == .fillerData && NALUnitType(rawValue: 9) == .accessUnitDelimiter)
        #expect(NALUnitType(rawValue: 20) == .other(20) && NALUnitType.other(20).rawValue == 20)
    }

    /// The allocation-free scanner splits any byte soup as a plain reading of Annex B does:
    /// every 0 0 1 starts a unit, zero bytes before a start code or at the end are not the
    /// unit's, empty units do not count.
    @Test func theNALScannerAgreesWithAPlainSplitOnRandomStreams() {
        func plainSplit(_ bytes: [UInt8]) -> [Range<Int>] {
            var starts: [Int] = []
            var index = 0
            while index + 2 < bytes.count {
                if bytes[index] == 0 && bytes[index + 1] == 0 && bytes[index + 2] == 1 {
                    starts.append(index + 3)
                    index += 3
                } else {
                    index += 1
                }
            }
            var ranges: [Range<Int>] = []
            for (number, start) in starts.enumerated() {
                var end = number + 1 < starts.count ? starts[number + 1] - 3 : bytes.count
                while end > start && bytes[end - 1] == 0 { end -= 1 }
                if start < end { ranges.append(start..<end) }
            }
            return ranges
        }
        var generator = SplitMix64(seed: 0x4E41_4C55)
        for _ in 0..<2000 {
            // Mostly zeros and ones, so start codes, runs of zeros and near misses are common.
            let stream = (0..<Int.random(in: 0...40, using: &generator)).map { _ -> UInt8 in
                let roll = Int.random(in: 0..<10, using: &generator)
                return roll < 5 ? 0 : roll < 8 ? 1 : UInt8.random(in: 2...255, using: &generator)
            }
            let scanned = Array(NALUnitRanges(stream))
            #expect(scanned == plainSplit(stream), "\(stream)")
            let mask = scanned.reduce(UInt32(0)) { $0 | 1 << UInt32(stream[$1.lowerBound] & 0x1F) }
            #expect(NALUnit.typeMask(in: stream) == mask)
        }
    }

    @Test func standardSPSCodesWholeMacroblocksAndCrops() throws {
        let hd = SequenceParameterSet.forSize(width: 1920, height: 1080, fps: 30, fullRange: false)
        #expect(hd.picWidthInMBsMinus1 == 119 && hd.picHeightInMapUnitsMinus1 == 67)
        #expect(hd.crop?.bottom == 4 && hd.crop?.right == 0)
        #expect(hd.visibleWidth == 1920 && hd.visibleHeight == 1080)
        #expect(hd.levelIDC == 40)  // 8160 MBs at 30 fps = 244800 MB/s <= level 4's 245760
        let wide = SequenceParameterSet.forSize(width: 854, height: 480, fps: 15, fullRange: true)
        #expect(wide.picWidthInMBsMinus1 == 53 && wide.crop?.right == 5 && wide.crop?.bottom == 0)
        #expect(wide.visibleWidth == 854 && wide.visibleHeight == 480)
        #expect(wide.levelIDC == 30)
        let aligned = SequenceParameterSet.forSize(width: 800, height: 480, fps: 60, fullRange: false, level: 31)
        #expect(aligned.crop == nil && aligned.levelIDC == 31)
        #expect(SequenceParameterSet.forSize(width: 1920, height: 1080, fps: 60, fullRange: false).levelIDC == 42)
        #expect(VUIParameters.TimingInfo.forFrameRate(29.97) == .init(numUnitsInTick: 1001, timeScale: 60_000, fixedFrameRate: false))
        #expect(VUIParameters.TimingInfo.forFrameRate(12.5) == .init(numUnitsInTick: 1000, timeScale: 25_000, fixedFrameRate: false))
        for sps in [hd, wide, aligned] {
            #expect(try SequenceParameterSet(parsing: sps.write()) == sps)
        }
    }

    @Test func parserRoundTripsEveryOptionalGroup() throws {
        var sps = SequenceParameterSet.forSize(width: 640, height: 360, fps: 25, fullRange: false)
        sps.profileIDC = 100
        sps.constraintFlags = [false, false, false, true, false, true]
        sps.chromaFormatIDC = 3
        sps.separateColourPlane = false
        sps.bitDepthLumaMinus8 = 2
        sps.scalingLists = [ScalingList(deltas: [0, 1, -3, -6]), nil, nil, ScalingList(deltas: [-8]), nil, nil,
                            ScalingList(deltas: Array(repeating: 1, count: 64)), nil, nil, nil, nil, nil]
        sps.picOrderCountType = 1
        sps.offsetForNonRefPic = -5
        sps.offsetForTopToBottomField = 3
        sps.offsetForRefFrame = [2, -7, 100_000]
        sps.frameMBsOnly = false
        sps.mbAdaptiveFrameField = true
        sps.vui?.aspectRatio = .init(idc: 255, sarWidth: 4, sarHeight: 3)
        sps.vui?.overscanAppropriate = true
        sps.vui?.chromaSampleLocation = (1, 2)
        var hrd = HRDParameters()
        hrd.buffers = [.init(bitRateValueMinus1: 9374, cpbSizeValueMinus1: 1 << 20, cbr: true),
                       .init(bitRateValueMinus1: 0, cpbSizeValueMinus1: 0, cbr: false)]
        sps.vui?.nalHRD = hrd
        sps.vui?.vclHRD = hrd
        sps.vui?.lowDelayHRD = true
        sps.vui?.picStructPresent = true
        #expect(try SequenceParameterSet(parsing: sps.write()) == sps)

        var pps = PictureParameterSet.baseline(initialQP: 30)
        pps.highProfileExtension = .init(transform8x8Mode: true,
                                         scalingLists: [nil, ScalingList(deltas: [4, -12]), nil, nil, nil, nil, nil, nil],
                                         secondChromaQPIndexOffset: -3)
        #expect(try PictureParameterSet(parsing: pps.write()) == pps)
        #expect(try PictureParameterSet(parsing: PictureParameterSet.baseline().write()) == PictureParameterSet.baseline())
    }

    @Test func packedSliceHeaderCountsItsBits() {
        let sps = SequenceParameterSet.forSize(width: 854, height: 480, fps: 15, fullRange: false)
        let pps = PictureParameterSet.baseline()
        let packed = SliceHeader.idr(idrPicID: 0).packedHeader(sps: sps, pps: pps)
        // Start code and NAL header, then ue(0) ue(7) ue(0) u(16) ue(0) 1+1 bits, se(0), ue(0) se(0) se(0).
        #expect(packed.bitLength == 32 + 8 + 1 + 7 + 1 + 16 + 1 + 2 + 1 + 1 + 1 + 1)
        #expect(Array(packed.bytes.prefix(5)) == [0, 0, 0, 1, 0x65])
        #expect(packed.bytes.count == (packed.bitLength + 7) / 8)
    }

    // MARK: - Checked by FFmpeg

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func ffmpegReadsOurParameterSetsAndSliceHeadersFieldByField() throws {
        let sps = SequenceParameterSet.forSize(width: 854, height: 480, fps: 15, fullRange: true)
        var pps = PictureParameterSet.baseline(initialQP: 28)
        pps.constrainedIntraPred = true
        let stream = HandMadeStream(sps: sps, pps: pps, skippedPictures: 2)
        let sections = try FFmpegTool.traceHeaders(stream.bytes)
        let spsTrace = try #require(sections.first { $0.title == "Sequence Parameter Set" })
        #expect(payloadFields(spsTrace) == traceFields(sps))
        let spsValues = Dictionary(spsTrace.fields, uniquingKeysWith: { first, _ in first })
        #expect(spsValues["profile_idc"] == 66 && spsValues["constraint_set1_flag"] == 1)
        #expect(spsValues["frame_crop_right_offset"] == 5 && spsValues["video_full_range_flag"] == 1)
        #expect(spsValues["max_num_reorder_frames"] == 0 && spsValues["max_dec_frame_buffering"] == 1)
        #expect(spsValues["colour_primaries"] == 6 && spsValues["matrix_coefficients"] == 6)
        let ppsTrace = try #require(sections.first { $0.title == "Picture Parameter Set" })
        #expect(payloadFields(ppsTrace) == traceFields(pps))

        let slices = sections.filter { $0.title == "Slice Header" }
        try #require(slices.count == 3)
        let idr = Dictionary(slices[0].fields, uniquingKeysWith: { first, _ in first })
        #expect(idr["nal_unit_type"] == 5 && idr["slice_type"] == 7 && idr["idr_pic_id"] == 3)
        #expect(idr["slice_qp_delta"] == -4 && idr["disable_deblocking_filter_idc"] == 1)
        #expect(idr["no_output_of_prior_pics_flag"] == 0 && idr["long_term_reference_flag"] == 0)
        for (index, slice) in slices.dropFirst().enumerated() {
            let fields = Dictionary(slice.fields, uniquingKeysWith: { first, _ in first })
            #expect(fields["nal_unit_type"] == 1 && fields["slice_type"] == 5 && fields["frame_num"] == index + 1)
            #expect(fields["num_ref_idx_active_override_flag"] == 0 && fields["ref_pic_list_modification_flag_l0"] == 0)
            #expect(fields["adaptive_ref_pic_marking_mode_flag"] == 0 && fields["slice_qp_delta"] == index + 1)
            #expect(fields["slice_alpha_c0_offset_div2"] == -2 && fields["slice_beta_offset_div2"] == 3)
        }
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"),
          arguments: [(854, 480, 2, true), (100, 60, 0, false), (96, 64, 2, false)])
    func ffmpegDecodesOurHandMadeStreamExactly(width: Int, height: Int, pocType: Int, fullRange: Bool) throws {
        var sps = SequenceParameterSet.forSize(width: width, height: height, fps: 15, fullRange: fullRange)
        sps.picOrderCountType = pocType
        sps.log2MaxPicOrderCountLSBMinus4 = 2
        let stream = HandMadeStream(sps: sps, pps: .baseline(), skippedPictures: 3)
        let probe = try FFmpegTool.probe(stream.bytes)
        #expect(probe["profile"] as? String == "Constrained Baseline")
        #expect(probe["width"] as? Int == width && probe["height"] as? Int == height)
        #expect(probe["has_b_frames"] as? Int == 0)
        #expect(probe["color_range"] as? String == (fullRange ? "pc" : "tv"))
        #expect(probe["color_space"] as? String == "smpte170m" && probe["color_primaries"] as? String == "smpte170m")

        let decoded = try FFmpegTool.decodeLuma(stream.bytes, width: width, height: height)
        #expect(decoded.errors.isEmpty, "ffmpeg complained: \(decoded.errors)")
        let expectedPicture = (0..<height).flatMap { y in (0..<width).map { x in HandMadeStream.luma(x, y) } }
        let planes = [UInt8](decoded.planes)
        #expect(planes.count == expectedPicture.count * 4, "an IDR and three skipped pictures")
        for picture in 0..<planes.count / expectedPicture.count {
            let plane = planes[picture * expectedPicture.count..<(picture + 1) * expectedPicture.count]
            let differing = zip(plane, expectedPicture).filter { $0 != $1 }.count
            #expect(differing == 0, "picture \(picture): \(differing) luma samples differ from the PCM samples")
        }
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func ffprobeSeesFullHDThroughTheCrop() throws {
        let sps = SequenceParameterSet.forSize(width: 1920, height: 1080, fps: 30, fullRange: false)
        let probe = try FFmpegTool.probe(HandMadeStream(sps: sps, pps: .baseline(), skippedPictures: 0).bytes)
        #expect(probe["width"] as? Int == 1920 && probe["height"] as? Int == 1080)
        #expect(probe["coded_height"] as? Int == 1088 || probe["coded_height"] as? Int == 1080)
        #expect(probe["level"] as? Int == 40)
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"),
          arguments: [
            ("baseline with NAL HRD", "854x480", ["-profile:v", "baseline", "-x264-params", "nal-hrd=vbr:vbv-maxrate=600:vbv-bufsize=600"]),
            ("high with scaling lists and colour", "320x240", ["-profile:v", "high", "-x264-params",
                "cqm4=8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23:colorprim=bt709:transfer=bt709:colormatrix=bt709:chromaloc=1:overscan=show:sar=64/45"]),
            ("main interlaced with B frames", "320x240", ["-profile:v", "main", "-flags", "+ildct", "-x264-params", "bframes=2"]),
          ])
    func parserAgreesWithTraceHeadersOnX264Streams(name: String, size: String, arguments: [String]) throws {
        let stream = try FFmpegTool.x264Stream(size: size, frames: 3, arguments)
        let sections = try FFmpegTool.traceHeaders(stream)
        let units = NALUnit.ranges(in: stream).map { stream[$0] }
        let spsUnit = try #require(units.first { NALUnitType(rawValue: $0[$0.startIndex]) == .sequenceParameterSet })
        let ppsUnit = try #require(units.first { NALUnitType(rawValue: $0[$0.startIndex]) == .pictureParameterSet })
        let sps = try SequenceParameterSet(parsing: spsUnit)
        let pps = try PictureParameterSet(parsing: ppsUnit, chromaFormatIDC: sps.chromaFormatIDC)
        let spsTrace = try #require(sections.first { $0.title == "Sequence Parameter Set" })
        let ppsTrace = try #require(sections.first { $0.title == "Picture Parameter Set" })
        #expect(payloadFields(spsTrace) == traceFields(sps), "\(name) SPS")
        #expect(payloadFields(ppsTrace) == traceFields(pps), "\(name) PPS")
        // Writing back what we parsed reproduces x264's bytes exactly.
        #expect(sps.write() == Array(spsUnit), "\(name) SPS re-encoded")
        #expect(pps.write() == Array(ppsUnit), "\(name) PPS re-encoded")
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"),
          arguments: [true, false])
    func normalizeMarksConstrainedBaselineLowDelayAndKeepsThePictures(stripVUI: Bool) throws {
        // x264's baseline stream stands in for OpenH264's (Debian's ffmpeg lacks libopenh264); the
        // stripped variant clears constraint flags and drops the VUI, as OpenH264 writes its SPS.
        var original = try FFmpegTool.x264Stream(size: "854x480", frames: 5, [
            "-profile:v", "baseline", "-x264-params", "nal-hrd=vbr:vbv-maxrate=600:vbv-bufsize=600"])
        if stripVUI {
            var units = NALUnit.ranges(in: original).map { Array(original[$0]) }
            for index in units.indices where NALUnitType(rawValue: units[index][0]) == .sequenceParameterSet {
                var sps = try SequenceParameterSet(parsing: units[index])
                sps.constraintFlags = [false, false, false, false, false, false]
                sps.vui = nil
                units[index] = sps.write()
            }
            original = NALUnit.annexB(units.filter { NALUnitType(rawValue: $0[0]) != .sei })
        }
        let normalized = try H264StreamRewriter.normalize(original, fullRange: true, framesPerSecond: 15)
        #expect(H264StreamRewriter.nalTypes(normalized) == H264StreamRewriter.nalTypes(original))
        let before = NALUnit.ranges(in: original).map { Array(original[$0]) }
        let after = NALUnit.ranges(in: normalized).map { Array(normalized[$0]) }
        for (old, new) in zip(before, after) where NALUnitType(rawValue: old[0]) != .sequenceParameterSet {
            #expect(old == new, "only SPS units change")
        }

        let sections = try FFmpegTool.traceHeaders(normalized)
        let spsTrace = try #require(sections.first { $0.title == "Sequence Parameter Set" })
        let fields = Dictionary(spsTrace.fields, uniquingKeysWith: { first, _ in first })
        #expect(fields["profile_idc"] == 66 && fields["constraint_set0_flag"] == 1 && fields["constraint_set1_flag"] == 1)
        #expect(fields["video_full_range_flag"] == 1 && fields["colour_primaries"] == 6)
        #expect(fields["transfer_characteristics"] == 6 && fields["matrix_coefficients"] == 6)
        #expect(fields["num_units_in_tick"] == 1 && fields["time_scale"] == 30)
        #expect(fields["max_num_reorder_frames"] == 0 && fields["max_dec_frame_buffering"] == 3)  // x264 keeps 3 references
        #expect(fields["frame_crop_right_offset"] == 5)
        #expect(fields["nal_hrd_parameters_present_flag"] == (stripVUI ? 0 : 1), "an existing HRD is kept")

        let probe = try FFmpegTool.probe(normalized)
        #expect(probe["profile"] as? String == "Constrained Baseline")
        #expect(probe["width"] as? Int == 854 && probe["height"] as? Int == 480)
        #expect(probe["has_b_frames"] as? Int == 0 && probe["color_range"] as? String == "pc")
        let decodedOriginal = try FFmpegTool.decodeLuma(original, width: 854, height: 480)
        let decodedNormalized = try FFmpegTool.decodeLuma(normalized, width: 854, height: 480)
        #expect(decodedNormalized.errors.isEmpty, "ffmpeg complained: \(decodedNormalized.errors)")
        #expect(decodedNormalized.planes.count == 854 * 480 * 5)
        #expect(decodedNormalized.planes == decodedOriginal.planes)
    }

    @Test func normalizeRefusesNonBaselineProfiles() throws {
        var sps = SequenceParameterSet.forSize(width: 320, height: 240, fps: 15, fullRange: false)
        sps.profileIDC = 77
        let stream = NALUnit.annexB([sps.write(), PictureParameterSet.baseline().write()])
        #expect(throws: H264BitstreamError.self) {
            try H264StreamRewriter.normalize(stream, fullRange: false, framesPerSecond: 15)
        }
    }
}

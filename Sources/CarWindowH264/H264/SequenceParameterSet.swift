/// One scaling list as coded: the delta_scale values up to and including the one that ends it
/// (nextScale 0 or all entries), so a parsed list is written back bit for bit. A list built by
/// hand must end the same way, or a decoder reads on into the next field.
struct ScalingList: Equatable, Sendable {
    /// delta_scale values in coding order.
    var deltas: [Int]

    /// Reads scaling_list() of `size` entries (16 or 64), clause 7.3.2.1.1.1.
    init(reading reader: inout BitReader, size: Int) throws(H264BitstreamError) {
        var deltas: [Int] = []
        var lastScale = 8
        var nextScale = 8
        for _ in 0..<size where nextScale != 0 {
            let delta = try reader.readSE("delta_scale", in: -128...127)
            deltas.append(delta)
            nextScale = (lastScale + delta + 256) % 256
            lastScale = nextScale == 0 ? lastScale : nextScale
        }
        self.deltas = deltas
    }

    init(deltas: [Int]) { self.deltas = deltas }

    func write(into writer: inout BitWriter) {
        for delta in deltas { writer.writeSE(delta) }
    }

    /// Reads the presence flags and lists of an SPS or PPS scaling matrix; nil marks a list not sent.
    static func readMatrix(_ reader: inout BitReader, count: Int) throws(H264BitstreamError) -> [ScalingList?] {
        var lists: [ScalingList?] = []
        for index in 0..<count {
            if try reader.readFlag("scaling_list_present_flag") {
                lists.append(try ScalingList(reading: &reader, size: index < 6 ? 16 : 64))
            } else {
                lists.append(nil)
            }
        }
        return lists
    }

    static func writeMatrix(_ lists: [ScalingList?], into writer: inout BitWriter) {
        for list in lists {
            writer.writeFlag(list != nil)
            list?.write(into: &writer)
        }
    }
}

/// hrd_parameters() (Annex E.1.2): kept whole so a rewritten SPS keeps a driver's buffer model.
struct HRDParameters: Equatable, Sendable {
    /// One coded picture buffer specification.
    struct Buffer: Equatable, Sendable {
        var bitRateValueMinus1: UInt32
        var cpbSizeValueMinus1: UInt32
        var cbr: Bool
    }

    var bitRateScale = 0
    var cpbSizeScale = 0
    /// 1...32 entries (cpb_cnt_minus1 + 1).
    var buffers: [Buffer] = []
    var initialCPBRemovalDelayLengthMinus1 = 23
    var cpbRemovalDelayLengthMinus1 = 23
    var dpbOutputDelayLengthMinus1 = 23
    var timeOffsetLength = 24

    init() {}

    init(reading reader: inout BitReader) throws(H264BitstreamError) {
        let count = try reader.readUE("cpb_cnt_minus1", in: 0...31) + 1
        bitRateScale = try reader.readInt(4, "bit_rate_scale")
        cpbSizeScale = try reader.readInt(4, "cpb_size_scale")
        for _ in 0..<count {
            let bitRate = try reader.readUE("bit_rate_value_minus1")
            let cpbSize = try reader.readUE("cpb_size_value_minus1")
            buffers.append(Buffer(bitRateValueMinus1: bitRate, cpbSizeValueMinus1: cpbSize,
                                  cbr: try reader.readFlag("cbr_flag")))
        }
        initialCPBRemovalDelayLengthMinus1 = try reader.readInt(5, "initial_cpb_removal_delay_length_minus1")
        cpbRemovalDelayLengthMinus1 = try reader.readInt(5, "cpb_removal_delay_length_minus1")
        dpbOutputDelayLengthMinus1 = try reader.readInt(5, "dpb_output_delay_length_minus1")
        timeOffsetLength = try reader.readInt(5, "time_offset_length")
    }

    func write(into writer: inout BitWriter) {
        precondition((1...32).contains(buffers.count), "an HRD has 1 to 32 buffers")
        writer.writeUE(buffers.count - 1)
        writer.writeBits(UInt32(bitRateScale), count: 4)
        writer.writeBits(UInt32(cpbSizeScale), count: 4)
        for buffer in buffers {
            writer.writeUE(buffer.bitRateValueMinus1)
            writer.writeUE(buffer.cpbSizeValueMinus1)
            writer.writeFlag(buffer.cbr)
        }
        writer.writeBits(UInt32(initialCPBRemovalDelayLengthMinus1), count: 5)
        writer.writeBits(UInt32(cpbRemovalDelayLengthMinus1), count: 5)
        writer.writeBits(UInt32(dpbOutputDelayLengthMinus1), count: 5)
        writer.writeBits(UInt32(timeOffsetLength), count: 5)
    }
}

/// vui_parameters() (Annex E.1.1). Optional groups are nil when their presence flag is 0.
struct VUIParameters: Equatable, Sendable {
    /// aspect_ratio_idc, with sar_width/sar_height when it is 255 (Extended_SAR).
    struct AspectRatio: Equatable, Sendable {
        var idc: Int
        var sarWidth = 0
        var sarHeight = 0
    }

    /// video_signal_type: how samples map to light; head units need the range to show true blacks.
    struct VideoSignalType: Equatable, Sendable {
        /// 5 = unspecified.
        var videoFormat = 5
        var fullRange = false
        /// nil when colour_description_present_flag is 0.
        var colourDescription: ColourDescription?
    }

    /// colour_primaries, transfer_characteristics, matrix_coefficients (ISO/IEC 23091-2 code points).
    struct ColourDescription: Equatable, Sendable {
        var primaries: Int
        var transfer: Int
        var matrix: Int

        /// BT.601 525-line (SMPTE 170M) for all three: what our RGB to NV12 conversion uses.
        static let bt601 = ColourDescription(primaries: 6, transfer: 6, matrix: 6)
    }

    /// timing_info: the tick is num_units_in_tick / time_scale seconds; a frame is two ticks.
    struct TimingInfo: Equatable, Sendable {
        var numUnitsInTick: UInt32
        var timeScale: UInt32
        var fixedFrameRate: Bool

        /// Timing for `framesPerSecond`: exact for whole and NTSC (x/1.001) rates, otherwise
        /// to a thousandth of a frame per second. fixed_frame_rate_flag stays 0 because our
        /// pictures are sent when the map changes, not on a fixed clock.
        static func forFrameRate(_ framesPerSecond: Double) -> TimingInfo {
            let rate = framesPerSecond.isFinite && framesPerSecond > 0 ? min(framesPerSecond, 1000) : 30
            if rate == rate.rounded() {
                return TimingInfo(numUnitsInTick: 1, timeScale: UInt32(rate * 2), fixedFrameRate: false)
            }
            let ntsc = rate * 1.001
            if abs(ntsc - ntsc.rounded()) < 1e-3 {
                return TimingInfo(numUnitsInTick: 1001, timeScale: UInt32(ntsc.rounded() * 2000), fixedFrameRate: false)
            }
            return TimingInfo(numUnitsInTick: 1000, timeScale: UInt32((rate * 2000).rounded()), fixedFrameRate: false)
        }
    }

    /// bitstream_restriction: what tells a decoder it may output each picture at once.
    struct BitstreamRestriction: Equatable, Sendable {
        var motionVectorsOverPicBoundaries = true
        /// 2 and 1 are the values a decoder infers when the group is absent.
        var maxBytesPerPicDenom = 2
        var maxBitsPerMBDenom = 1
        /// 15 is the largest the current standard allows (vectors of up to ±2048 quarter pixels... and beyond).
        var log2MaxMVLengthHorizontal = 15
        var log2MaxMVLengthVertical = 15
        var maxNumReorderFrames = 0
        var maxDecFrameBuffering = 1

        /// Low delay: no reordering, one picture in the decoded picture buffer (at least the references).
        static func lowDelay(maxNumRefFrames: Int) -> BitstreamRestriction {
            var restriction = BitstreamRestriction()
            restriction.maxDecFrameBuffering = max(1, maxNumRefFrames)
            return restriction
        }
    }

    var aspectRatio: AspectRatio?
    /// overscan_appropriate_flag; nil when overscan_info_present_flag is 0.
    var overscanAppropriate: Bool?
    var videoSignalType: VideoSignalType?
    /// chroma_sample_loc_type_top_field and _bottom_field; nil when absent.
    var chromaSampleLocation: (top: Int, bottom: Int)? {
        get { chromaLocation.map { ($0[0], $0[1]) } }
        set { chromaLocation = newValue.map { [$0.top, $0.bottom] } }
    }
    private var chromaLocation: [Int]?
    var timing: TimingInfo?
    var nalHRD: HRDParameters?
    var vclHRD: HRDParameters?
    /// Present in the stream only when an HRD is.
    var lowDelayHRD = false
    var picStructPresent = false
    var bitstreamRestriction: BitstreamRestriction?

    init() {}

    init(reading reader: inout BitReader) throws(H264BitstreamError) {
        if try reader.readFlag("aspect_ratio_info_present_flag") {
            var aspect = AspectRatio(idc: try reader.readInt(8, "aspect_ratio_idc"))
            if aspect.idc == 255 {
                aspect.sarWidth = try reader.readInt(16, "sar_width")
                aspect.sarHeight = try reader.readInt(16, "sar_height")
            }
            aspectRatio = aspect
        }
        if try reader.readFlag("overscan_info_present_flag") {
            overscanAppropriate = try reader.readFlag("overscan_appropriate_flag")
        }
        if try reader.readFlag("video_signal_type_present_flag") {
            var signal = VideoSignalType()
            signal.videoFormat = try reader.readInt(3, "video_format")
            signal.fullRange = try reader.readFlag("video_full_range_flag")
            if try reader.readFlag("colour_description_present_flag") {
                signal.colourDescription = ColourDescription(
                    primaries: try reader.readInt(8, "colour_primaries"),
                    transfer: try reader.readInt(8, "transfer_characteristics"),
                    matrix: try reader.readInt(8, "matrix_coefficients"))
            }
            videoSignalType = signal
        }
        if try reader.readFlag("chroma_loc_info_present_flag") {
            chromaLocation = [try reader.readUE("chroma_sample_loc_type_top_field", in: 0...5),
                              try reader.readUE("chroma_sample_loc_type_bottom_field", in: 0...5)]
        }
        if try reader.readFlag("timing_info_present_flag") {
            timing = TimingInfo(numUnitsInTick: try reader.readBits(32, "num_units_in_tick"),
                                timeScale: try reader.readBits(32, "time_scale"),
                                fixedFrameRate: try reader.readFlag("fixed_frame_rate_flag"))
        }
        if try reader.readFlag("nal_hrd_parameters_present_flag") {
            nalHRD = try HRDParameters(reading: &reader)
        }
        if try reader.readFlag("vcl_hrd_parameters_present_flag") {
            vclHRD = try HRDParameters(reading: &reader)
        }
        if nalHRD != nil || vclHRD != nil {
            lowDelayHRD = try reader.readFlag("low_delay_hrd_flag")
        }
        picStructPresent = try reader.readFlag("pic_struct_present_flag")
        if try reader.readFlag("bitstream_restriction_flag") {
            var restriction = BitstreamRestriction()
            restriction.motionVectorsOverPicBoundaries = try reader.readFlag("motion_vectors_over_pic_boundaries_flag")
            restriction.maxBytesPerPicDenom = try reader.readUE("max_bytes_per_pic_denom", in: 0...16)
            restriction.maxBitsPerMBDenom = try reader.readUE("max_bits_per_mb_denom", in: 0...16)
            restriction.log2MaxMVLengthHorizontal = try reader.readUE("log2_max_mv_length_horizontal", in: 0...16)
            restriction.log2MaxMVLengthVertical = try reader.readUE("log2_max_mv_length_vertical", in: 0...16)
            restriction.maxNumReorderFrames = try reader.readUE("max_num_reorder_frames", in: 0...16)
            restriction.maxDecFrameBuffering = try reader.readUE("max_dec_frame_buffering", in: 0...16)
            bitstreamRestriction = restriction
        }
    }

    func write(into writer: inout BitWriter) {
        writer.writeFlag(aspectRatio != nil)
        if let aspectRatio {
            writer.writeBits(UInt32(aspectRatio.idc), count: 8)
            if aspectRatio.idc == 255 {
                writer.writeBits(UInt32(aspectRatio.sarWidth), count: 16)
                writer.writeBits(UInt32(aspectRatio.sarHeight), count: 16)
            }
        }
        writer.writeFlag(overscanAppropriate != nil)
        if let overscanAppropriate { writer.writeFlag(overscanAppropriate) }
        writer.writeFlag(videoSignalType != nil)
        if let videoSignalType {
            writer.writeBits(UInt32(videoSignalType.videoFormat), count: 3)
            writer.writeFlag(videoSignalType.fullRange)
            writer.writeFlag(videoSignalType.colourDescription != nil)
            if let colour = videoSignalType.colourDescription {
                writer.writeBits(UInt32(colour.primaries), count: 8)
                writer.writeBits(UInt32(colour.transfer), count: 8)
                writer.writeBits(UInt32(colour.matrix), count: 8)
            }
        }
        writer.writeFlag(chromaLocation != nil)
        if let chromaLocation {
            writer.writeUE(chromaLocation[0])
            writer.writeUE(chromaLocation[1])
        }
        writer.writeFlag(timing != nil)
        if let timing {
            writer.writeBits(timing.numUnitsInTick, count: 32)
            writer.writeBits(timing.timeScale, count: 32)
            writer.writeFlag(timing.fixedFrameRate)
        }
        writer.writeFlag(nalHRD != nil)
        nalHRD?.write(into: &writer)
        writer.writeFlag(vclHRD != nil)
        vclHRD?.write(into: &writer)
        if nalHRD != nil || vclHRD != nil { writer.writeFlag(lowDelayHRD) }
        writer.writeFlag(picStructPresent)
        writer.writeFlag(bitstreamRestriction != nil)
        if let restriction = bitstreamRestriction {
            writer.writeFlag(restriction.motionVectorsOverPicBoundaries)
            writer.writeUE(restriction.maxBytesPerPicDenom)
            writer.writeUE(restriction.maxBitsPerMBDenom)
            writer.writeUE(restriction.log2MaxMVLengthHorizontal)
            writer.writeUE(restriction.log2MaxMVLengthVertical)
            writer.writeUE(restriction.maxNumReorderFrames)
            writer.writeUE(restriction.maxDecFrameBuffering)
        }
    }
}

/// seq_parameter_set_rbsp() (clause 7.3.2.1.1) for profiles 66, 77, 88 and the high profiles.
///
/// `write()` returns the whole NAL unit (header byte with nal_ref_idc 3, escaped payload, no start
/// code) because every caller sends it as such; `init(parsing:)` takes the same. `rbsp()` and
/// `init(rbsp:)` work on the bare RBSP for VA-API packed headers and tests.
package struct SequenceParameterSet: Equatable, Sendable {
    var profileIDC = 66
    /// constraint_set0...5_flag, index = the flag's number.
    var constraintFlags: [Bool] = [true, true, false, false, false, false]
    var levelIDC = 40
    var id = 0

    // Present in the stream only for the high profiles; these are the values inferred otherwise.
    package var chromaFormatIDC = 1
    var separateColourPlane = false
    package var bitDepthLumaMinus8 = 0
    package var bitDepthChromaMinus8 = 0
    var qpprimeYZeroTransformBypass = false
    /// nil when seq_scaling_matrix_present_flag is 0; else 8 or 12 lists, nil where not sent.
    var scalingLists: [ScalingList?]?

    var log2MaxFrameNumMinus4 = 0
    /// 0, 1 or 2; our streams use 2 (POC from frame_num, no B pictures).
    var picOrderCountType = 2
    /// pic_order_cnt_type 0 only.
    var log2MaxPicOrderCountLSBMinus4 = 0
    // pic_order_cnt_type 1 only.
    var deltaPicOrderAlwaysZero = false
    var offsetForNonRefPic = 0
    var offsetForTopToBottomField = 0
    var offsetForRefFrame: [Int] = []

    var maxNumRefFrames = 1
    var gapsInFrameNumAllowed = false
    var picWidthInMBsMinus1 = 0
    var picHeightInMapUnitsMinus1 = 0
    var frameMBsOnly = true
    /// frame_mbs_only_flag 0 only.
    var mbAdaptiveFrameField = false
    var direct8x8Inference = true
    /// frame_crop_*_offset in crop units (2 luma samples for 4:2:0 frames); nil when not cropped.
    var crop: (left: Int, right: Int, top: Int, bottom: Int)? {
        get { cropOffsets.map { ($0[0], $0[1], $0[2], $0[3]) } }
        set { cropOffsets = newValue.map { [$0.left, $0.right, $0.top, $0.bottom] } }
    }
    private var cropOffsets: [Int]?
    var vui: VUIParameters?

    init() {}

    /// Profiles whose SPS carries chroma format, bit depths and scaling matrices.
    static let highProfiles: Set<Int> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// Levels (level_idc, MaxMBPS, MaxFS) from table A-1, lowest first.
    private static let levelLimits: [(idc: Int, macroblocksPerSecond: Double, frameSize: Int)] = [
        (10, 1485, 99), (11, 3000, 396), (12, 6000, 396), (13, 11880, 396), (20, 11880, 396),
        (21, 19800, 792), (22, 20250, 1620), (30, 40500, 1620), (31, 108_000, 3600), (32, 216_000, 5120),
        (40, 245_760, 8192), (41, 245_760, 8192), (42, 522_240, 8704), (50, 589_824, 22080),
        (51, 983_040, 36864), (52, 2_073_600, 36864),
    ]

    /// The lowest level whose frame size, frame width (sqrt(8 MaxFS)) and macroblock rate admit
    /// the picture; 52 when none does (the caller's settings validation bounds sizes before that).
    static func minimumLevel(widthInMBs: Int, heightInMBs: Int, fps: Double) -> Int {
        let frameSize = widthInMBs * heightInMBs
        let rate = Double(frameSize) * (fps.isFinite ? fps : 240)
        for limit in levelLimits where frameSize <= limit.frameSize
            && widthInMBs * widthInMBs <= 8 * limit.frameSize && heightInMBs * heightInMBs <= 8 * limit.frameSize
            && rate <= limit.macroblocksPerSecond {
            return limit.idc
        }
        return 52
    }

    /// Our standard constrained-baseline SPS for a visible `width`x`height`: coded in whole
    /// macroblocks, cropped back to the visible size, POC type 2, one reference, 16-bit frame_num
    /// range, VUI with BT.601 colour, timing and low-delay bitstream restriction. `level` nil picks
    /// the lowest level that fits size and rate.
    static func forSize(width: Int, height: Int, fps: Double, fullRange: Bool, level: Int? = nil) -> SequenceParameterSet {
        precondition(width > 0 && height > 0 && width % 2 == 0 && height % 2 == 0, "4:2:0 needs an even size")
        var sps = SequenceParameterSet()
        let codedWidth = (width + 15) / 16 * 16
        let codedHeight = (height + 15) / 16 * 16
        sps.levelIDC = level ?? minimumLevel(widthInMBs: codedWidth / 16, heightInMBs: codedHeight / 16, fps: fps)
        sps.picWidthInMBsMinus1 = codedWidth / 16 - 1
        sps.picHeightInMapUnitsMinus1 = codedHeight / 16 - 1
        // frame_num wraps at 2^16: a keep-alive stream can run for hours between IDRs.
        sps.log2MaxFrameNumMinus4 = 12
        if codedWidth != width || codedHeight != height {
            sps.crop = (0, (codedWidth - width) / 2, 0, (codedHeight - height) / 2)
        }
        var vui = VUIParameters()
        vui.aspectRatio = VUIParameters.AspectRatio(idc: 1)
        vui.videoSignalType = VUIParameters.VideoSignalType(videoFormat: 5, fullRange: fullRange, colourDescription: .bt601)
        vui.timing = .forFrameRate(fps)
        vui.bitstreamRestriction = .lowDelay(maxNumRefFrames: sps.maxNumRefFrames)
        sps.vui = vui
        return sps
    }

    /// Width of the decoded picture after cropping, in luma samples.
    package var visibleWidth: Int {
        let cropUnitX = chromaFormatIDC == 0 || separateColourPlane ? 1 : (chromaFormatIDC == 3 ? 1 : 2)
        return (picWidthInMBsMinus1 + 1) * 16 - cropUnitX * ((crop?.left ?? 0) + (crop?.right ?? 0))
    }

    /// Height of the decoded picture after cropping, in luma samples.
    package var visibleHeight: Int {
        let frameHeightFactor = frameMBsOnly ? 1 : 2
        let subHeight = chromaFormatIDC == 1 && !separateColourPlane ? 2 : 1
        let cropUnitY = (chromaFormatIDC == 0 || separateColourPlane ? 1 : subHeight) * frameHeightFactor
        return (picHeightInMapUnitsMinus1 + 1) * 16 * frameHeightFactor
            - cropUnitY * ((crop?.top ?? 0) + (crop?.bottom ?? 0))
    }

    /// Bits of frame_num in slice headers.
    var frameNumBits: Int { log2MaxFrameNumMinus4 + 4 }
    /// Bits of pic_order_cnt_lsb in slice headers (POC type 0).
    var picOrderCountLSBBits: Int { log2MaxPicOrderCountLSBMinus4 + 4 }

    /// Parses a whole SPS NAL unit (header byte + escaped payload, no start code).
    package init<C: Collection<UInt8>>(parsing nalUnit: C) throws(H264BitstreamError) {
        let unit = try NALUnit.parse(nalUnit)
        guard unit.type == .sequenceParameterSet else {
            throw .wrongNALUnitType(expected: 7, found: unit.type.rawValue)
        }
        try self.init(rbsp: unit.rbsp)
    }

    /// Parses a bare SPS RBSP.
    init(rbsp: [UInt8]) throws(H264BitstreamError) {
        var reader = BitReader(rbsp)
        profileIDC = try reader.readInt(8, "profile_idc")
        constraintFlags = []
        for _ in 0..<6 { constraintFlags.append(try reader.readFlag("constraint_set_flag")) }
        _ = try reader.readBits(2, "reserved_zero_2bits")
        levelIDC = try reader.readInt(8, "level_idc")
        id = try reader.readUE("seq_parameter_set_id", in: 0...31)
        if Self.highProfiles.contains(profileIDC) {
            chromaFormatIDC = try reader.readUE("chroma_format_idc", in: 0...3)
            if chromaFormatIDC == 3 { separateColourPlane = try reader.readFlag("separate_colour_plane_flag") }
            bitDepthLumaMinus8 = try reader.readUE("bit_depth_luma_minus8", in: 0...6)
            bitDepthChromaMinus8 = try reader.readUE("bit_depth_chroma_minus8", in: 0...6)
            qpprimeYZeroTransformBypass = try reader.readFlag("qpprime_y_zero_transform_bypass_flag")
            if try reader.readFlag("seq_scaling_matrix_present_flag") {
                scalingLists = try ScalingList.readMatrix(&reader, count: chromaFormatIDC == 3 ? 12 : 8)
            }
        }
        log2MaxFrameNumMinus4 = try reader.readUE("log2_max_frame_num_minus4", in: 0...12)
        picOrderCountType = try reader.readUE("pic_order_cnt_type", in: 0...2)
        switch picOrderCountType {
        case 0:
            log2MaxPicOrderCountLSBMinus4 = try reader.readUE("log2_max_pic_order_cnt_lsb_minus4", in: 0...12)
        case 1:
            deltaPicOrderAlwaysZero = try reader.readFlag("delta_pic_order_always_zero_flag")
            let bound = Int(Int32.max)
            offsetForNonRefPic = try reader.readSE("offset_for_non_ref_pic", in: -bound...bound)
            offsetForTopToBottomField = try reader.readSE("offset_for_top_to_bottom_field", in: -bound...bound)
            let cycle = try reader.readUE("num_ref_frames_in_pic_order_cnt_cycle", in: 0...255)
            for _ in 0..<cycle { offsetForRefFrame.append(try reader.readSE("offset_for_ref_frame", in: -bound...bound)) }
        default:
            break
        }
        maxNumRefFrames = try reader.readUE("max_num_ref_frames", in: 0...16)
        gapsInFrameNumAllowed = try reader.readFlag("gaps_in_frame_num_value_allowed_flag")
        picWidthInMBsMinus1 = try reader.readUE("pic_width_in_mbs_minus1", in: 0...1023)
        picHeightInMapUnitsMinus1 = try reader.readUE("pic_height_in_map_units_minus1", in: 0...1023)
        frameMBsOnly = try reader.readFlag("frame_mbs_only_flag")
        if !frameMBsOnly { mbAdaptiveFrameField = try reader.readFlag("mb_adaptive_frame_field_flag") }
        direct8x8Inference = try reader.readFlag("direct_8x8_inference_flag")
        if try reader.readFlag("frame_cropping_flag") {
            crop = (try reader.readUE("frame_crop_left_offset", in: 0...8192),
                    try reader.readUE("frame_crop_right_offset", in: 0...8192),
                    try reader.readUE("frame_crop_top_offset", in: 0...8192),
                    try reader.readUE("frame_crop_bottom_offset", in: 0...8192))
        }
        if try reader.readFlag("vui_parameters_present_flag") {
            vui = try VUIParameters(reading: &reader)
        }
        try reader.readTrailingBits()
    }

    /// The bare RBSP, trailing bits included.
    func rbsp() -> [UInt8] {
        var writer = BitWriter()
        writer.writeBits(UInt32(profileIDC), count: 8)
        for index in 0..<6 { writer.writeFlag(index < constraintFlags.count && constraintFlags[index]) }
        writer.writeBits(0, count: 2)
        writer.writeBits(UInt32(levelIDC), count: 8)
        writer.writeUE(id)
        if Self.highProfiles.contains(profileIDC) {
            writer.writeUE(chromaFormatIDC)
            if chromaFormatIDC == 3 { writer.writeFlag(separateColourPlane) }
            writer.writeUE(bitDepthLumaMinus8)
            writer.writeUE(bitDepthChromaMinus8)
            writer.writeFlag(qpprimeYZeroTransformBypass)
            writer.writeFlag(scalingLists != nil)
            if let scalingLists { ScalingList.writeMatrix(scalingLists, into: &writer) }
        }
        writer.writeUE(log2MaxFrameNumMinus4)
        writer.writeUE(picOrderCountType)
        if picOrderCountType == 0 {
            writer.writeUE(log2MaxPicOrderCountLSBMinus4)
        } else if picOrderCountType == 1 {
            writer.writeFlag(deltaPicOrderAlwaysZero)
            writer.writeSE(offsetForNonRefPic)
            writer.writeSE(offsetForTopToBottomField)
            writer.writeUE(offsetForRefFrame.count)
            for offset in offsetForRefFrame { writer.writeSE(offset) }
        }
        writer.writeUE(maxNumRefFrames)
        writer.writeFlag(gapsInFrameNumAllowed)
        writer.writeUE(picWidthInMBsMinus1)
        writer.writeUE(picHeightInMapUnitsMinus1)
        writer.writeFlag(frameMBsOnly)
        if !frameMBsOnly { writer.writeFlag(mbAdaptiveFrameField) }
        writer.writeFlag(direct8x8Inference)
        writer.writeFlag(crop != nil)
        if let crop {
            writer.writeUE(crop.left)
            writer.writeUE(crop.right)
            writer.writeUE(crop.top)
            writer.writeUE(crop.bottom)
        }
        writer.writeFlag(vui != nil)
        vui?.write(into: &writer)
        writer.writeTrailingBits()
        return writer.bytes
    }

    /// The whole NAL unit: header (nal_ref_idc 3) and escaped payload, without a start code.
    func write() -> [UInt8] {
        NALUnit.make(type: .sequenceParameterSet, referenceIDC: 3, rbsp: rbsp())
    }
}

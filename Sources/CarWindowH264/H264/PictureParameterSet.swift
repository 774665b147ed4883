/// pic_parameter_set_rbsp() (clause 7.3.2.2). Flexible macroblock ordering (more than one slice
/// group) is refused: no encoder we meet writes it and constrained baseline forbids it.
///
/// `write()` returns the whole NAL unit (nal_ref_idc 3, no start code), like the SPS.
struct PictureParameterSet: Equatable, Sendable {
    var id = 0
    var spsID = 0
    /// false = CAVLC, the only choice of constrained baseline.
    var entropyCodingModeCABAC = false
    var bottomFieldPicOrderInFramePresent = false
    var numRefIdxL0DefaultActiveMinus1 = 0
    var numRefIdxL1DefaultActiveMinus1 = 0
    var weightedPred = false
    var weightedBipredIDC = 0
    var picInitQPMinus26 = 0
    var picInitQSMinus26 = 0
    var chromaQPIndexOffset = 0
    var deblockingFilterControlPresent = true
    var constrainedIntraPred = false
    var redundantPicCountPresent = false
    /// The high-profile tail; nil when the RBSP ends after redundant_pic_cnt_present_flag.
    var highProfileExtension: HighProfileExtension?

    /// Fields after more_rbsp_data() in the high profiles.
    struct HighProfileExtension: Equatable, Sendable {
        var transform8x8Mode = false
        /// nil when pic_scaling_matrix_present_flag is 0.
        var scalingLists: [ScalingList?]?
        var secondChromaQPIndexOffset = 0
    }

    init() {}

    /// Our baseline PPS: CAVLC, one slice group, one reference, deblocking controllable per slice.
    static func baseline(initialQP: Int = 26) -> PictureParameterSet {
        var pps = PictureParameterSet()
        pps.picInitQPMinus26 = initialQP - 26
        return pps
    }

    /// Parses a whole PPS NAL unit; `chromaFormatIDC` (from the SPS) sizes a 4:4:4 scaling matrix.
    init<C: Collection<UInt8>>(parsing nalUnit: C, chromaFormatIDC: Int = 1) throws(H264BitstreamError) {
        let unit = try NALUnit.parse(nalUnit)
        guard unit.type == .pictureParameterSet else {
            throw .wrongNALUnitType(expected: 8, found: unit.type.rawValue)
        }
        try self.init(rbsp: unit.rbsp, chromaFormatIDC: chromaFormatIDC)
    }

    /// Parses a bare PPS RBSP.
    init(rbsp: [UInt8], chromaFormatIDC: Int = 1) throws(H264BitstreamError) {
        var reader = BitReader(rbsp)
        id = try reader.readUE("pic_parameter_set_id", in: 0...255)
        spsID = try reader.readUE("seq_parameter_set_id", in: 0...31)
        entropyCodingModeCABAC = try reader.readFlag("entropy_coding_mode_flag")
        bottomFieldPicOrderInFramePresent = try reader.readFlag("bottom_field_pic_order_in_frame_present_flag")
        let sliceGroups = try reader.readUE("num_slice_groups_minus1", in: 0...7) + 1
        guard sliceGroups == 1 else {
            throw .unsupported("\(sliceGroups) slice groups (flexible macroblock ordering)")
        }
        numRefIdxL0DefaultActiveMinus1 = try reader.readUE("num_ref_idx_l0_default_active_minus1", in: 0...31)
        numRefIdxL1DefaultActiveMinus1 = try reader.readUE("num_ref_idx_l1_default_active_minus1", in: 0...31)
        weightedPred = try reader.readFlag("weighted_pred_flag")
        weightedBipredIDC = try reader.readInt(2, "weighted_bipred_idc")
        picInitQPMinus26 = try reader.readSE("pic_init_qp_minus26", in: -(26 + 48)...25)
        picInitQSMinus26 = try reader.readSE("pic_init_qs_minus26", in: -26...25)
        chromaQPIndexOffset = try reader.readSE("chroma_qp_index_offset", in: -12...12)
        deblockingFilterControlPresent = try reader.readFlag("deblocking_filter_control_present_flag")
        constrainedIntraPred = try reader.readFlag("constrained_intra_pred_flag")
        redundantPicCountPresent = try reader.readFlag("redundant_pic_cnt_present_flag")
        if reader.hasMoreRBSPData {
            var tail = HighProfileExtension()
            tail.transform8x8Mode = try reader.readFlag("transform_8x8_mode_flag")
            if try reader.readFlag("pic_scaling_matrix_present_flag") {
                let count = 6 + (tail.transform8x8Mode ? (chromaFormatIDC == 3 ? 6 : 2) : 0)
                tail.scalingLists = try ScalingList.readMatrix(&reader, count: count)
            }
            tail.secondChromaQPIndexOffset = try reader.readSE("second_chroma_qp_index_offset", in: -12...12)
            highProfileExtension = tail
        }
        try reader.readTrailingBits()
    }

    /// The bare RBSP, trailing bits included.
    func rbsp() -> [UInt8] {
        var writer = BitWriter()
        writer.writeUE(id)
        writer.writeUE(spsID)
        writer.writeFlag(entropyCodingModeCABAC)
        writer.writeFlag(bottomFieldPicOrderInFramePresent)
        writer.writeUE(0)
        writer.writeUE(numRefIdxL0DefaultActiveMinus1)
        writer.writeUE(numRefIdxL1DefaultActiveMinus1)
        writer.writeFlag(weightedPred)
        writer.writeBits(UInt32(weightedBipredIDC), count: 2)
        writer.writeSE(picInitQPMinus26)
        writer.writeSE(picInitQSMinus26)
        writer.writeSE(chromaQPIndexOffset)
        writer.writeFlag(deblockingFilterControlPresent)
        writer.writeFlag(constrainedIntraPred)
        writer.writeFlag(redundantPicCountPresent)
        if let tail = highProfileExtension {
            writer.writeFlag(tail.transform8x8Mode)
            writer.writeFlag(tail.scalingLists != nil)
            if let lists = tail.scalingLists { ScalingList.writeMatrix(lists, into: &writer) }
            writer.writeSE(tail.secondChromaQPIndexOffset)
        }
        writer.writeTrailingBits()
        return writer.bytes
    }

    /// The whole NAL unit: header (nal_ref_idc 3) and escaped payload, without a start code.
    func write() -> [UInt8] {
        NALUnit.make(type: .pictureParameterSet, referenceIDC: 3, rbsp: rbsp())
    }
}

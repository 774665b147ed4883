/// slice_header() (clause 7.3.3) for the I/IDR and P slices of our baseline stream, written for
/// VA-API packed slice headers and for hand-made pictures (an all-skipped P picture for keep-alive).
///
/// Not written: field pictures, redundant pictures, weighted prediction, reference list
/// modification, memory management operations, FMO — none of which our SPS/PPS enable.
struct SliceHeader: Equatable, Sendable {
    /// slice_type modulo 5.
    enum SliceType: Int, Sendable {
        case p = 0
        case i = 2
    }

    var isIDR: Bool
    /// nal_ref_idc: 3 for reference pictures (all IDR and our P pictures), 0 for disposable ones.
    var referenceIDC: UInt8 = 3
    var firstMBInSlice = 0
    var sliceType: SliceType
    /// Writes slice_type + 5, promising every slice of the picture has this type.
    var allSlicesSameType = true
    var ppsID = 0
    /// frame_num modulo 2^(log2_max_frame_num); 0 for IDR.
    var frameNum = 0
    /// IDR only: must differ between two consecutive IDR pictures.
    var idrPicID = 0
    /// pic_order_cnt_type 0 only; taken modulo MaxPicOrderCntLsb.
    var picOrderCountLSB = 0
    /// P only: num_ref_idx_l0_active_minus1 overriding the PPS; nil writes the override flag 0.
    var numRefIdxL0ActiveMinus1Override: Int?
    /// IDR only.
    var noOutputOfPriorPics = false
    /// IDR only: marks the IDR as a long-term reference.
    var longTermReference = false
    /// SliceQP = 26 + pic_init_qp_minus26 + slice_qp_delta.
    var sliceQPDelta = 0
    /// 0 = filter on, 1 = off, 2 = off across slice edges; written only when the PPS allows.
    var disableDeblockingFilterIDC = 0
    var sliceAlphaC0OffsetDiv2 = 0
    var sliceBetaOffsetDiv2 = 0

    /// The header of an IDR picture's I slice.
    static func idr(idrPicID: Int, sliceQPDelta: Int = 0) -> SliceHeader {
        SliceHeader(isIDR: true, sliceType: .i, idrPicID: idrPicID, sliceQPDelta: sliceQPDelta)
    }

    /// The header of a reference P slice with `frameNum`, POC LSB 2 x `picturesSinceIDR`.
    static func p(frameNum: Int, picturesSinceIDR: Int, sliceQPDelta: Int = 0) -> SliceHeader {
        SliceHeader(isIDR: false, sliceType: .p, frameNum: frameNum, picOrderCountLSB: 2 * picturesSinceIDR,
                     sliceQPDelta: sliceQPDelta)
    }

    /// nal_unit_type of the slice's NAL unit.
    var nalUnitType: NALUnitType { isIDR ? .idrSlice : .slice }

    /// Appends the header's bits (not byte-aligned) for a stream described by `sps` and `pps`.
    func write(into writer: inout BitWriter, sps: SequenceParameterSet, pps: PictureParameterSet) {
        precondition(sps.frameMBsOnly, "field coding is not written")
        writer.writeUE(firstMBInSlice)
        writer.writeUE(sliceType.rawValue + (allSlicesSameType ? 5 : 0))
        writer.writeUE(ppsID)
        writer.writeBits(UInt32(frameNum & ((1 << sps.frameNumBits) - 1)), count: sps.frameNumBits)
        if isIDR { writer.writeUE(idrPicID) }
        switch sps.picOrderCountType {
        case 0:
            writer.writeBits(UInt32(picOrderCountLSB & ((1 << sps.picOrderCountLSBBits) - 1)),
                             count: sps.picOrderCountLSBBits)
            if pps.bottomFieldPicOrderInFramePresent { writer.writeSE(0) }
        case 1 where !sps.deltaPicOrderAlwaysZero:
            writer.writeSE(0)
            if pps.bottomFieldPicOrderInFramePresent { writer.writeSE(0) }
        default:
            break
        }
        if pps.redundantPicCountPresent { writer.writeUE(0) }
        if sliceType == .p {
            writer.writeFlag(numRefIdxL0ActiveMinus1Override != nil)
            if let override = numRefIdxL0ActiveMinus1Override { writer.writeUE(override) }
            writer.writeFlag(false)  // ref_pic_list_modification_flag_l0
        }
        precondition(!(pps.weightedPred && sliceType == .p), "weighted prediction is not written")
        if referenceIDC != 0 {
            if isIDR {
                writer.writeFlag(noOutputOfPriorPics)
                writer.writeFlag(longTermReference)
            } else {
                writer.writeFlag(false)  // adaptive_ref_pic_marking_mode_flag: sliding window
            }
        }
        if pps.entropyCodingModeCABAC && sliceType != .i { writer.writeUE(0) }  // cabac_init_idc
        writer.writeSE(sliceQPDelta)
        if pps.deblockingFilterControlPresent {
            writer.writeUE(disableDeblockingFilterIDC)
            if disableDeblockingFilterIDC != 1 {
                writer.writeSE(sliceAlphaC0OffsetDiv2)
                writer.writeSE(sliceBetaOffsetDiv2)
            }
        }
    }

    /// A VA-API packed slice header: start code, NAL header and the header bits, not escaped
    /// (has_emulation_bytes = 0, the driver escapes) and not padded; `bitLength` counts the bits.
    func packedHeader(sps: SequenceParameterSet, pps: PictureParameterSet) -> (bytes: [UInt8], bitLength: Int) {
        var writer = BitWriter()
        writer.writeBytes(NALUnit.startCode)
        writer.writeBits(UInt32(NALUnit.header(type: nalUnitType, referenceIDC: referenceIDC)), count: 8)
        write(into: &writer, sps: sps, pps: pps)
        return (writer.bytes, writer.bitCount)
    }

    /// A whole P-slice NAL unit (no start code) in which every macroblock is skipped: the decoder
    /// repeats the reference picture. Costs a few bytes; keeps a head unit's video alive.
    static func skippedPictureNAL(_ header: SliceHeader, sps: SequenceParameterSet, pps: PictureParameterSet) -> [UInt8] {
        precondition(header.sliceType == .p && !header.isIDR && !pps.entropyCodingModeCABAC,
                     "an all-skip picture is a CAVLC P slice")
        var writer = BitWriter()
        header.write(into: &writer, sps: sps, pps: pps)
        writer.writeUE((sps.picWidthInMBsMinus1 + 1) * (sps.picHeightInMapUnitsMinus1 + 1))  // mb_skip_run
        writer.writeTrailingBits()
        return NALUnit.make(type: header.nalUnitType, referenceIDC: header.referenceIDC, rbsp: writer.bytes)
    }
}

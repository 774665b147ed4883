import CarWindowVideoCore
/// Keep-alive pictures made by hand between an encoder's pictures: a P picture whose one slice
/// skips every macroblock, so the decoder repeats the last picture exactly, at a cost of a few
/// bytes and no encoding work.
///
/// Such a picture must be a reference picture (two non-reference pictures in a row break
/// `pic_order_cnt_type` 2 streams, and equal picture order counts are doubtful elsewhere). A
/// reference picture takes the next `frame_num` and a higher picture order count, which the
/// encoder does not know about: so every slice the encoder makes afterwards is renumbered here,
/// its `frame_num` and `pic_order_cnt_lsb` shifted by what the skipped pictures took, until the
/// next IDR starts the count afresh. Both fields have fixed widths, so renumbering rewrites bits
/// in place. With one reference frame (our encoders' setting) the encoder's next picture, which
/// predicts from its own last picture, now predicts from the skip picture, which is identical.
///
/// Streams this cannot follow (several reference frames, field coding, CABAC, a slice that does
/// not parse) make ``skipPicture(presentationTime:frameNumber:)`` return nil until the next IDR;
/// the caller then re-encodes the last picture instead.
package struct SkipPictureStream: Sendable {
    private var sps: SequenceParameterSet?
    private var pps: PictureParameterSet?
    /// What the skip pictures since the last IDR added to frame_num and to the POC LSB.
    private var frameNumShift = 0
    private var pictureOrderShift = 0
    /// The numbering of the last picture sent, as sent (after shifting).
    private var lastFrameNum: Int?
    private var lastPictureOrderLSB: Int?
    /// How much the encoder's POC LSB grows per picture (2 for frames in most encoders).
    private var pictureOrderStep = 2
    private var usable = false
    /// The unescaped start of the slice header being read (at most ``headerPrefixBytes``).
    private var headerScratch: [UInt8] = []
    /// SliceQP of the first slice of the unit being passed, when its header parsed that far.
    private var sliceQuantizer: Int?

    /// A rewriter that has seen no picture yet: it can skip once the first IDR has passed.
    package init() {}

    /// Whether a skip picture can be made now.
    package var canSkip: Bool { usable && lastFrameNum != nil }

    /// Passes one of the encoder's access units: remembers its parameter sets and numbering,
    /// and renumbers its slices after skip pictures. Returns the unit to send, with the first
    /// slice's QP as its ``AccessUnit/quantizer`` where the encoder gave none.
    package mutating func pass(_ unit: AccessUnit) -> AccessUnit {
        var data = unit.data
        sliceQuantizer = nil
        var rewritten: [UInt8]?
        // Ranges refer to `unit.data`; rewritten slices are assembled into a new stream.
        for range in NALUnitRanges(unit.data) {
            guard let header = unit.data[range].first else { continue }
            let type = header & 0x1F, referenceIDC = (header >> 5) & 3
            switch type {
            case 7:
                sps = try? SequenceParameterSet(parsing: unit.data[range])
            case 8:
                pps = try? PictureParameterSet(parsing: unit.data[range])
            case 5, 1:
                let isIDR = type == 5
                if isIDR {
                    frameNumShift = 0
                    pictureOrderShift = 0
                    usable = streamIsFollowable
                }
                guard usable, let renumbered = renumber(unit.data[range], isIDR: isIDR, referenceIDC: referenceIDC) else {
                    usable = false
                    break
                }
                if case .rewritten(let slice) = renumbered {
                    if rewritten == nil { rewritten = Array(unit.data[..<range.lowerBound]) }
                    rewritten?.append(contentsOf: slice)
                    rewritten?.append(contentsOf: unit.data[range.upperBound..<(nextStart(after: range, in: unit.data))])
                    continue
                }
            default:
                break
            }
            if rewritten != nil {
                rewritten?.append(contentsOf: unit.data[range])
                rewritten?.append(contentsOf: unit.data[range.upperBound..<(nextStart(after: range, in: unit.data))])
            }
        }
        if let rewritten { data = rewritten }
        var result = unit
        result.data = data
        if result.quantizer == nil { result.quantizer = sliceQuantizer }
        return result
    }

    /// An all-skip reference P picture repeating the last picture, numbered after it; nil when
    /// the stream cannot take one (see the type's notes).
    package mutating func skipPicture(presentationTime: Duration, frameNumber: Int) -> AccessUnit? {
        guard canSkip, let sps, let pps, let lastFrameNum else { return nil }
        let maxFrameNum = 1 << sps.frameNumBits
        let frameNum = (lastFrameNum + 1) % maxFrameNum
        var header = SliceHeader(isIDR: false, sliceType: .p, frameNum: frameNum)
        header.ppsID = pps.id
        // The picture is an exact copy, so there is nothing to filter.
        header.disableDeblockingFilterIDC = 1
        if sps.picOrderCountType == 0, let lastPictureOrderLSB {
            header.picOrderCountLSB = (lastPictureOrderLSB + pictureOrderStep) % (1 << sps.picOrderCountLSBBits)
            self.lastPictureOrderLSB = header.picOrderCountLSB
            pictureOrderShift += pictureOrderStep
        }
        frameNumShift += 1
        self.lastFrameNum = frameNum
        let nal = SliceHeader.skippedPictureNAL(header, sps: sps, pps: pps)
        return AccessUnit(data: NALUnit.startCode + nal, isKeyframe: false, presentationTime: presentationTime,
                          frameNumber: frameNumber)
    }

    // MARK: Internals

    /// Frame coding, one reference frame, CAVLC, POC type 0 or 2, no weighted prediction.
    private var streamIsFollowable: Bool {
        guard let sps, let pps else { return false }
        return sps.frameMBsOnly && sps.maxNumRefFrames == 1 && !sps.gapsInFrameNumAllowed
            && (sps.picOrderCountType == 0 || sps.picOrderCountType == 2)
            && !pps.entropyCodingModeCABAC && !pps.weightedPred && !pps.bottomFieldPicOrderInFramePresent
    }

    private enum Renumbered {
        case unchanged
        case rewritten([UInt8])
    }

    /// Reads a slice's numbering and, when skip pictures came before it, writes the shifted
    /// numbering. Nil when the slice does not parse or is not a reference picture.
    private mutating func renumber(_ nal: ArraySlice<UInt8>, isIDR: Bool, referenceIDC: UInt8) -> Renumbered? {
        guard let sps else { return nil }
        // The numbering sits in the header's first few bytes; only a slice that is rewritten
        // is unescaped whole.
        // Unescaped into a buffer kept between pictures: its storage is reused, not allocated.
        headerScratch.removeAll(keepingCapacity: true)
        NALUnit.removeEmulationPrevention(nal.dropFirst().prefix(Self.headerPrefixBytes), into: &headerScratch)
        var reader = BitReader(headerScratch)
        let frameNumBits = sps.frameNumBits, lsbBits = sps.picOrderCountLSBBits
        let frameNumPosition: Int, frameNum: Int, sliceType: Int
        var lsbPosition: Int?, lsb: Int?
        do {
            _ = try reader.readUE("first_mb_in_slice")
            sliceType = Int(try reader.readUE("slice_type"))
            _ = try reader.readUE("pic_parameter_set_id")
            frameNumPosition = reader.bitPosition
            frameNum = Int(try reader.readBits(frameNumBits, "frame_num"))
            if isIDR { _ = try reader.readUE("idr_pic_id") }
            if sps.picOrderCountType == 0 {
                lsbPosition = reader.bitPosition
                lsb = Int(try reader.readBits(lsbBits, "pic_order_cnt_lsb"))
            }
        } catch {
            return nil
        }
        // Non-reference pictures would need their own numbering rules; our encoders make none.
        guard referenceIDC != 0 else { return nil }
        if sliceQuantizer == nil {
            sliceQuantizer = Self.readQuantizer(&reader, sliceType: sliceType, isIDR: isIDR, pps: pps)
        }
        let shiftedFrameNum = (frameNum + frameNumShift) % (1 << frameNumBits)
        var shiftedLSB: Int?
        if let lsb {
            if !isIDR, let last = lastPictureOrderLSB, frameNumShift == 0 {
                let step = (lsb - last + (1 << lsbBits)) % (1 << lsbBits)
                if step > 0, step <= 16 { pictureOrderStep = step }
            }
            shiftedLSB = (lsb + pictureOrderShift) % (1 << lsbBits)
        }
        lastFrameNum = shiftedFrameNum
        lastPictureOrderLSB = shiftedLSB
        guard frameNumShift != 0 || pictureOrderShift != 0 else { return .unchanged }
        var rbsp = NALUnit.removeEmulationPrevention(nal.dropFirst())
        Self.overwrite(&rbsp, at: frameNumPosition, bits: frameNumBits, with: shiftedFrameNum)
        if let lsbPosition, let shiftedLSB { Self.overwrite(&rbsp, at: lsbPosition, bits: lsbBits, with: shiftedLSB) }
        guard let headerByte = nal.first else { return nil }
        return .rewritten([headerByte] + NALUnit.insertEmulationPrevention(rbsp))
    }

    /// Reads on from after pic_order_cnt_lsb to slice_qp_delta (clause 7.3.3, for the streams
    /// ``streamIsFollowable`` allows: reference frames, CAVLC, no weighted prediction) and
    /// returns SliceQP, 26 + pic_init_qp_minus26 + slice_qp_delta; nil where the header does not
    /// parse within the bytes read or the QP is out of range.
    private static func readQuantizer(_ reader: inout BitReader, sliceType: Int, isIDR: Bool,
                                      pps: PictureParameterSet?) -> Int? {
        guard let pps else { return nil }
        do {
            if pps.redundantPicCountPresent { _ = try reader.readUE("redundant_pic_cnt") }
            let predicted = sliceType % 5 == 0 || sliceType % 5 == 3
            if predicted {
                if try reader.readFlag("num_ref_idx_active_override_flag") { _ = try reader.readUE("num_ref_idx_l0_active_minus1") }
                if try reader.readFlag("ref_pic_list_modification_flag_l0") {
                    // At most one modification per reference index and a few more: a longer
                    // list is garbage.
                    for _ in 0..<33 {
                        let operation = try reader.readUE("modification_of_pic_nums_idc")
                        if operation == 3 { break }
                        _ = try reader.readUE("abs_diff_pic_num_minus1 or long_term_pic_num")
                    }
                }
            }
            if isIDR {
                _ = try reader.readFlag("no_output_of_prior_pics_flag")
                _ = try reader.readFlag("long_term_reference_flag")
            } else if try reader.readFlag("adaptive_ref_pic_marking_mode_flag") {
                for _ in 0..<33 {
                    let operation = try reader.readUE("memory_management_control_operation")
                    if operation == 0 { break }
                    switch operation {
                    case 1: _ = try reader.readUE("difference_of_pic_nums_minus1")
                    case 2: _ = try reader.readUE("long_term_pic_num")
                    case 3:
                        _ = try reader.readUE("difference_of_pic_nums_minus1")
                        _ = try reader.readUE("long_term_frame_idx")
                    case 4: _ = try reader.readUE("max_long_term_frame_idx_plus1")
                    case 6: _ = try reader.readUE("long_term_frame_idx")
                    default: break
                    }
                }
            }
            let quantizer = 26 + pps.picInitQPMinus26 + (try reader.readSE("slice_qp_delta"))
            return (0...51).contains(quantizer) ? quantizer : nil
        } catch {
            return nil
        }
    }

    /// Escaped bytes read for a slice's numbering: first_mb_in_slice, slice_type, the PPS id,
    /// frame_num, idr_pic_id and pic_order_cnt_lsb take at most about 16.
    private static let headerPrefixBytes = 48

    /// Writes `value` into `count` bits of `bytes` starting at bit `position` (MSB first).
    private static func overwrite(_ bytes: inout [UInt8], at position: Int, bits count: Int, with value: Int) {
        for bit in 0..<count {
            let index = (position + bit) / 8, shift = 7 - (position + bit) % 8
            guard index < bytes.count else { return }
            let set = (value >> (count - 1 - bit)) & 1 == 1
            if set { bytes[index] |= UInt8(1 << shift) } else { bytes[index] &= ~UInt8(1 << shift) }
        }
    }

    /// Where the bytes after `range` (the zeros and start code before the next unit) end.
    private func nextStart(after range: Range<Int>, in data: [UInt8]) -> Int {
        var index = range.upperBound
        while index < data.count, data[index] == 0 { index += 1 }
        if index < data.count, data[index] == 1 { index += 1 }
        return index
    }
}

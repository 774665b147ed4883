/// The only place the VA-API encoder touches the project's H.264 header writer
/// (`Encoder/H264/`), so that a change of its API is reconciled here alone.
///
/// Its values must agree with the VA sequence and picture buffers the encoder sends: profile 66
/// (constrained baseline), `pic_order_cnt_type` 2, one reference frame, frame cropping, CAVLC.
struct VAAPIHeaderBridge {
    let sequence: SequenceParameterSet
    let picture: PictureParameterSet
    /// Annex-B SPS and PPS NAL units (start codes and emulation prevention included).
    let sequenceNAL: [UInt8]
    let pictureNAL: [UInt8]
    /// The frame rate the SPS's timing states: the one the stream was opened at.
    let framesPerSecond: Double

    init(settings: EncoderSettings) {
        framesPerSecond = settings.framesPerSecond
        sequence = SequenceParameterSet.forSize(width: settings.width, height: settings.height,
                                                fps: settings.framesPerSecond, fullRange: settings.fullRange, level: nil)
        picture = PictureParameterSet.baseline()
        sequenceNAL = NALUnit.startCode + sequence.write()
        pictureNAL = NALUnit.startCode + picture.write()
    }

    var levelIdc: UInt8 { UInt8(clamping: sequence.levelIDC) }
    var log2MaxFrameNum: Int { sequence.frameNumBits }

    /// The slice header NAL prefix for a packed slice header, with its exact length in bits
    /// (the header does not end on a byte boundary; the driver appends the slice data).
    func sliceHeader(for picture: LowDelayGOP.Picture) -> (bytes: [UInt8], bitLength: Int) {
        let header = picture.isIDR
            ? SliceHeader.idr(idrPicID: picture.idrPicId)
            : SliceHeader.p(frameNum: picture.frameNum, picturesSinceIDR: picture.pictureOrderCount / 2)
        return header.packedHeader(sps: sequence, pps: self.picture)
    }
}

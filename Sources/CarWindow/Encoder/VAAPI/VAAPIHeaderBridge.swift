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

    init(settings: EncoderSettings) {
        sequence = SequenceParameterSet.forSize(width: settings.width, height: settings.height,
                                                fps: settings.framesPerSecond, fullRange: settings.fullRange, level: nil)
        picture = PictureParameterSet()
        sequenceNAL = sequence.write()
        pictureNAL = picture.write()
    }

    var levelIdc: UInt8 { sequence.levelIdc }
    var log2MaxFrameNum: Int { sequence.log2MaxFrameNumMinus4 + 4 }

    /// The slice header NAL prefix for a packed slice header, with its exact length in bits
    /// (the header does not end on a byte boundary; the driver appends the slice data).
    func sliceHeader(for picture: LowDelayGOP.Picture) -> (bytes: [UInt8], bitLength: Int) {
        SliceHeader(sequence: sequence, picture: self.picture, isIDR: picture.isIDR,
                    sliceType: picture.isIDR ? .i : .p, frameNum: picture.frameNum, idrPicId: picture.idrPicId,
                    overridesReferenceCount: !picture.isIDR).write()
    }
}

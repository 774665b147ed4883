/// The picture bookkeeping of a low-delay, P-only H.264 stream with one reference picture,
/// kept apart from VA-API so it can be tested without a device.
///
/// Every picture is a reference picture (the next P predicts from it), so `frame_num` grows by
/// one per picture modulo MaxFrameNum, and with `pic_order_cnt_type` 2 the order count is
/// twice the distance from the last IDR. Two reconstruction surfaces alternate: the picture being
/// coded writes one while the other holds its reference.
struct LowDelayGOP: Sendable, Equatable {
    /// What the encoder must code for one input frame.
    struct Picture: Sendable, Equatable {
        var isIDR: Bool
        /// `frame_num` of this picture (0 for an IDR).
        var frameNum: Int
        /// TopFieldOrderCnt: 2 x pictures since the last IDR.
        var pictureOrderCount: Int
        /// `idr_pic_id` of the last IDR; consecutive IDRs differ.
        var idrPicId: Int
        /// Reconstruction slot (0 or 1) this picture writes.
        var reconstructionSlot: Int
        /// The picture it predicts from; nil for an IDR.
        var reference: Reference?
    }

    /// The single short-term reference of a P picture.
    struct Reference: Sendable, Equatable {
        var slot: Int
        var frameNum: Int
        var pictureOrderCount: Int
    }

    /// Pictures between IDRs; nil for IDRs only at the start and on request.
    let idrInterval: Int?
    /// 2^(log2_max_frame_num_minus4 + 4), from the SPS.
    let maxFrameNum: Int
    /// An IDR is forced after this many pictures so the order count stays well inside Int32
    /// (2^30 pictures is about 200 days at 60 fps).
    let maximumPicturesBetweenIDRs: Int

    private(set) var picturesSinceIDR = 0
    private(set) var picturesCoded = 0
    private var lastIDRPicId = -1
    private var previous: Picture?

    init(idrInterval: Int?, log2MaxFrameNum: Int, maximumPicturesBetweenIDRs: Int = 1 << 30) {
        self.idrInterval = idrInterval
        maxFrameNum = 1 << min(max(log2MaxFrameNum, 4), 16)
        self.maximumPicturesBetweenIDRs = max(1, maximumPicturesBetweenIDRs)
    }

    /// Decides the next picture; `forceIDR` makes it an IDR.
    mutating func next(forceIDR: Bool) -> Picture {
        let isIDR = previous == nil || forceIDR
            || (idrInterval.map { picturesSinceIDR >= $0 } ?? false)
            || picturesSinceIDR >= maximumPicturesBetweenIDRs
        let picture: Picture
        if isIDR {
            lastIDRPicId = (lastIDRPicId + 1) % 65_536
            picturesSinceIDR = 0
            let slot = previous.map { 1 - $0.reconstructionSlot } ?? 0
            picture = Picture(isIDR: true, frameNum: 0, pictureOrderCount: 0, idrPicId: lastIDRPicId,
                              reconstructionSlot: slot, reference: nil)
        } else if let previous {
            let reference = Reference(slot: previous.reconstructionSlot, frameNum: previous.frameNum,
                                      pictureOrderCount: previous.pictureOrderCount)
            picture = Picture(isIDR: false, frameNum: (previous.frameNum + 1) % maxFrameNum,
                              pictureOrderCount: 2 * picturesSinceIDR, idrPicId: lastIDRPicId,
                              reconstructionSlot: 1 - previous.reconstructionSlot, reference: reference)
        } else {
            preconditionFailure("the first picture is always an IDR")
        }
        picturesSinceIDR += 1
        picturesCoded += 1
        previous = picture
        return picture
    }

    /// Forgets the last picture after a failed encode, so the next one is an IDR and the decoder
    /// never sees a P picture that refers to a reconstruction the driver may not have written.
    mutating func restartAfterFailure() {
        previous = nil
    }
}

/// One encoded picture: Annex-B NAL units (start codes included), SPS and PPS in front of every IDR.
public struct AccessUnit: Sendable {
    /// The Annex-B bytes of the picture.
    public var data: [UInt8]
    /// Whether it holds an IDR picture (decoding can start here).
    public var isKeyframe: Bool
    /// When the picture is shown, from the start of its stream.
    public var presentationTime: Duration
    /// Counts pictures given to the encoder, from 0.
    public var frameNumber: Int
    /// The picture's mean quantiser (H.264 QP, 0-51: higher is coarser) where the encoder
    /// reports it; a session lowers its frame rate and detail when this stays high.
    public var quantizer: Int?

    /// Makes an access unit from encoded bytes and what is known about them.
    public init(data: [UInt8], isKeyframe: Bool, presentationTime: Duration, frameNumber: Int, quantizer: Int? = nil) {
        self.data = data
        self.isKeyframe = isKeyframe
        self.presentationTime = presentationTime
        self.frameNumber = frameNumber
        self.quantizer = quantizer
    }
}

import CarWindowH264
import CarWindowVideoCore
extension EncoderSettings {
    /// The frame rate where the head unit states no preference: SmartDeviceLink's default.
    public static let defaultFramesPerSecond: Double = 15
    /// 600 kbit/s, in bit/s, where the head unit states no limit: SmartDeviceLink's default.
    public static let defaultBitrate = 600_000

    /// Settings for `stream`: the head unit's preferred frame rate and maximum bitrate
    /// (``HeadUnitDisplay/preferredFramesPerSecond``, ``HeadUnitDisplay/maximumBitrate``) replace
    /// the defaults (15 fps, 600 kbit/s), and the app's own values apply only where they are
    /// lower, because a head unit's limits are what its decoder and link can take.
    ///
    /// Non-positive or non-finite values, from either side, are ignored; the frame rate is capped
    /// at ``maximumStreamingFramesPerSecond`` and the bitrate at what `validate()` accepts.
    public init(stream: StreamResolution, customFramesPerSecond: Double? = nil, customBitrate: Int? = nil,
                rateControl: RateControl = .cbr, idrInterval: Int? = nil) {
        var framesPerSecond = Self.defaultFramesPerSecond
        if let preferred = stream.display.preferredFramesPerSecond, preferred > 0 {
            framesPerSecond = min(Double(preferred), Self.maximumStreamingFramesPerSecond)
        }
        if let customFramesPerSecond, customFramesPerSecond.isFinite, customFramesPerSecond > 0 {
            framesPerSecond = min(framesPerSecond, customFramesPerSecond)
        }
        var bitrate = Self.defaultBitrate
        if let limit = stream.display.maximumBitrate, limit > 0 {
            bitrate = min(limit, Self.maximumBitrate)
        }
        if let customBitrate, customBitrate > 0 {
            bitrate = min(bitrate, customBitrate)
        }
        self.init(width: stream.encodedSize.width, height: stream.encodedSize.height,
                  framesPerSecond: framesPerSecond, bitrate: bitrate, rateControl: rateControl, idrInterval: idrInterval)
    }

    /// The highest bitrate `validate()` accepts.
    public static let maximumBitrate = 200_000_000
    /// The highest frame rate `validate()` accepts.
    public static let maximumFramesPerSecond: Double = 240
    /// The highest frame rate a stream to a head unit runs at, whatever the head unit asks:
    /// drawing, NV12 conversion and encoding take several milliseconds a picture, and head
    /// units show 60 at most. Above it the pacer would draw without pause and take a core.
    public static let maximumStreamingFramesPerSecond: Double = 60
}

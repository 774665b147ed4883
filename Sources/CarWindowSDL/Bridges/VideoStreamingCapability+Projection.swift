import CarWindowProjection
import CarWindowSDLProtocol

// What the session takes from the head unit's capability.
extension VideoStreamingCapability {
    /// What the session takes from this capability: the resolution, scale, diagonal, frame rate
    /// and bitrate (kbit/s here, bit/s there, saturating), the nested capabilities as
    /// alternatives. Formats, haptics and pixel density stay with the link.
    public var headUnitDisplay: HeadUnitDisplay {
        HeadUnitDisplay(
            size: preferredResolution?.videoSize,
            scale: scale,
            diagonalInches: diagonalScreenSize,
            preferredFramesPerSecond: preferredFPS,
            maximumBitrate: maxBitrate.map(Self.bitsPerSecond(kilobits:)),
            alternatives: additionalVideoStreamingCapabilities?.map(\.headUnitDisplay))
    }
}

/// The ranges this side accepts for numbers that come off the wire from the head unit.
///
/// A head unit is untrusted input: every number it sends that sizes a buffer or takes part in
/// arithmetic is clamped into one of these ranges first, so a hostile or broken peer can neither
/// trap the process on overflow nor choose how much memory it uses.
package enum SDLWireLimits {
    /// Frame sizes (header included) this side works with. The upper end is what SDL Core, the
    /// reference head unit, negotiates for version 5 frames (131,072 bytes of payload plus the
    /// 12-byte header); the lower end still leaves room for a header and some payload.
    package static let mtu: ClosedRange<Int> = 64...131_084

    /// Video sizes a StartServiceACK may grant; others are ignored and the asked size stands.
    package static let videoDimension: ClosedRange<Int> = 16...8192

    /// A negotiated MTU clamped into ``mtu``.
    package static func clampedMTU(_ value: Int) -> Int {
        min(max(value, mtu.lowerBound), mtu.upperBound)
    }
}

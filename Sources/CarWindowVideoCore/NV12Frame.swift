/// A picture in NV12: a full-resolution luma plane followed by one half-resolution plane of
/// interleaved Cb, Cr samples (4:2:0), the layout VA-API surfaces and most H.264 hardware use.
///
/// Planes are stored at the coded size (multiples of 16, as H.264 macroblocks need); the visible
/// size is what the head unit shows, and the encoder crops the rest in the SPS. Rows are
/// tightly packed: the stride of both planes is `codedWidth`.
///
/// The arrays keep their storage when a pipeline refills a frame, so steady-state encoding
/// allocates nothing.
public struct NV12Frame: Sendable {
    /// Visible width in pixels (even).
    public let width: Int
    /// Visible height in pixels (even).
    public let height: Int
    /// Coded width: the visible width rounded up to a multiple of 16.
    public let codedWidth: Int
    /// Coded height: the visible height rounded up to a multiple of 16.
    public let codedHeight: Int
    /// `codedWidth * codedHeight` luma samples, top row first.
    public var luma: [UInt8]
    /// `codedWidth * codedHeight / 2` bytes: Cb, Cr pairs for every 2x2 block, top row first.
    public var chroma: [UInt8]
    /// Whether samples use the full 0...255 range (else BT.601 limited range, 16...235/240).
    public var fullRange: Bool

    /// A black frame of the given visible size.
    public init(width: Int, height: Int, fullRange: Bool = false) {
        self.width = width
        self.height = height
        codedWidth = NV12Frame.align16(width)
        codedHeight = NV12Frame.align16(height)
        self.fullRange = fullRange
        luma = [UInt8](repeating: fullRange ? 0 : 16, count: codedWidth * codedHeight)
        chroma = [UInt8](repeating: 128, count: codedWidth * codedHeight / 2)
    }

    /// Rounds up to the next multiple of 16 (an H.264 macroblock).
    public static func align16(_ value: Int) -> Int { (value + 15) & ~15 }
}

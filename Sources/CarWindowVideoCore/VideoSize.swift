/// The size of a stream's pictures in pixels: what a sink needs to know when a stream starts,
/// without the head-unit capability it was chosen from.
public struct VideoSize: Sendable, Hashable, CustomStringConvertible {
    /// Pixels per row.
    public var width: Int
    /// Rows.
    public var height: Int

    /// A size from its sides.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `800x480`.
    public var description: String { "\(width)x\(height)" }
}

/// A tile of the Web Mercator pyramid: zoom `z`, column `x` from the west, row `y` from the north
/// (the XYZ scheme; MBTiles' TMS rows are flipped when read).
public struct TileID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Zoom level; 0...30 for a valid tile.
    public var z: Int
    /// Column, counted from the west edge of the world: 0..<2^z.
    public var x: Int
    /// Row, counted from the north edge of the world: 0..<2^z.
    public var y: Int

    /// Makes the tile at zoom `z`, column `x` and row `y`, unchecked; see ``isValid``.
    public init(z: Int, x: Int, y: Int) {
        self.z = z
        self.x = x
        self.y = y
    }

    /// Whether `x` and `y` lie inside the `2^z` by `2^z` grid of zoom `z` (0...30).
    public var isValid: Bool {
        guard (0...30).contains(z) else { return false }
        let count = 1 << z
        return (0..<count).contains(x) && (0..<count).contains(y)
    }

    /// The tile one zoom level up that contains this one, or nil at zoom 0.
    public var parent: TileID? {
        z > 0 ? TileID(z: z - 1, x: x >> 1, y: y >> 1) : nil
    }

    /// The ancestor at zoom `level` (which must not exceed `z`).
    public func ancestor(atZoom level: Int) -> TileID {
        precondition(level <= z && level >= 0, "ancestor zoom \(level) is not in 0...\(z)")
        let shift = z - level
        return TileID(z: level, x: x >> shift, y: y >> shift)
    }

    /// The four tiles one zoom level down.
    public var children: [TileID] {
        let cz = z + 1, cx = x << 1, cy = y << 1
        return [TileID(z: cz, x: cx, y: cy), TileID(z: cz, x: cx + 1, y: cy),
                TileID(z: cz, x: cx, y: cy + 1), TileID(z: cz, x: cx + 1, y: cy + 1)]
    }

    public static func < (a: TileID, b: TileID) -> Bool {
        (a.z, a.x, a.y) < (b.z, b.x, b.y)
    }

    public var description: String { "\(z)/\(x)/\(y)" }
}

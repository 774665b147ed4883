import CarWindowGeo
import CarWindowStyle
/// What laying out one tile for a style may cost: **64 MiB of layout memory per tile**, and work
/// in proportion to it.
///
/// The layout of a real tile is far smaller (the densest bundled Helsinki tile takes under 7 MiB
/// with the day style), but a crafted tile, such as one road of a million vertices, would take
/// gigabytes and minutes. The budget is kept by planning before anything is built:
///
/// - Every style layer's bucket has a worst case per vertex, per part (line or ring) and per
///   feature that it draws (``DrawCost``). Before building, the builder adds up the worst case of
///   every feature in every layer that draws it.
/// - When the total is over budget, every part is thinned to at most a common number of vertices,
///   the largest that fits (water-filling), so small features stay whole and only the outsized
///   ones are simplified. Features that still do not fit are dropped.
/// - Labels have their own caps (candidates and glyphs), charged as they are made.
///
/// Arrays grown by appending hold up to twice what they contain, so worst cases are charged
/// against half the budget: with every array at its largest, the layout stays within 64 MiB.
///
/// What the budget comes to, at the worst-case costs below: 35,700 line vertices with round joins
/// (732 bytes each), 77,800 building vertices (336 bytes each) or 817,000 polygon vertices (32
/// bytes each) per tile, plus 4,096 label candidates with 65,536 glyphs.
struct TileLayoutBudget {
    /// The most one tile's layout may hold, array capacity included.
    static let layoutBytes = 64 << 20
    /// What the worst-case costs are charged against.
    static let chargeableBytes = layoutBytes / 2
    /// Label candidates per tile; each is placed on the screen every frame it is visible, so the
    /// cap also bounds per-frame work. The densest Helsinki tile has 1,074.
    static let maximumLabelCandidates = 4096
    /// Glyphs of shaped label text per tile (72 bytes each).
    static let maximumLabelGlyphs = 1 << 16
    /// Vertices of path a line label takes along. Placement projects a label's path every frame,
    /// so longer paths (only crafted or unsimplified data has them: a real road in a tile has
    /// tens) are cut into a stretch of this many vertices around each anchor, which is far more
    /// than a label can span.
    static let maximumLabelPathPoints = 64
    /// What the label caps can take at most, kept back from the geometry's share.
    static let labelReserve = maximumLabelCandidates
        * (MemoryLayout<LabelCandidate>.stride + maximumLabelPathPoints * MemoryLayout<SIMD2<Float>>.stride + 32)
        + maximumLabelGlyphs * MemoryLayout<PositionedGlyph>.stride
    /// What the geometry of all layers may take.
    static let geometryBytes = chargeableBytes - labelReserve

    /// Vertices of one polygon handed to the triangulator. Ear clipping is quadratic at worst in
    /// the vertices of one polygon (self-intersecting rings, which only broken or crafted data
    /// has), so larger polygons are thinned first. Real polygons stay far below: whole lakes and
    /// coastlines at zoom 14 have a few thousand.
    static let maximumPolygonVertices = 1 << 15
    /// Holes times vertices of one polygon: each hole is joined to the exterior by a search along
    /// the chain so far, so this bounds that work. The smallest holes are dropped first.
    static let maximumHoleWork = 1 << 24

    /// Bytes the geometry may still take.
    private(set) var remaining = geometryBytes
    private(set) var labelCandidates = 0
    private(set) var labelGlyphs = 0
    var reductions = TileReductions()

    /// Takes `bytes` of the geometry's share if they fit.
    mutating func take(_ bytes: Int) -> Bool {
        guard bytes <= remaining else { return false }
        remaining -= bytes
        return true
    }

    /// Takes room for a shaped text of `glyphs` glyphs if the label caps allow it.
    mutating func takeLabelText(glyphs: Int) -> Bool {
        guard labelCandidates < Self.maximumLabelCandidates, labelGlyphs + glyphs <= Self.maximumLabelGlyphs else {
            return false
        }
        labelGlyphs += glyphs
        return true
    }

    /// Takes room for one label candidate if the cap allows it.
    mutating func takeLabelCandidate() -> Bool {
        guard labelCandidates < Self.maximumLabelCandidates else { return false }
        labelCandidates += 1
        return true
    }
}

/// The worst case a style layer's bucket takes for what it draws: bytes per vertex, per part
/// (line or ring) and per feature, from the most each vertex can produce.
struct DrawCost: Sendable, Equatable {
    var perVertex: Int
    var perPart: Int
    var perFeature: Int

    /// Bytes for a feature of `vertices` vertices in `parts` parts.
    func bytes(vertices: Int, parts: Int) -> Int {
        perVertex * vertices + perPart * parts + perFeature
    }

    static func of(_ type: LayerType) -> DrawCost {
        let chunk = MemoryLayout<MeshChunk>.stride
        let index = MemoryLayout<UInt32>.stride
        let color = MemoryLayout<PackedColor>.stride
        switch type {
        case .fill:
            // Position and colour; at most one triangle per vertex plus two per hole bridge
            // (n + 2h - 2 for ear clipping); two outline indices per vertex; fill and outline chunks.
            let vertex = MemoryLayout<SIMD2<Float>>.stride + color
            return DrawCost(perVertex: vertex + 3 * index + 2 * index, perPart: 6 * index, perFeature: 2 * chunk)
        case .line:
            // Per point: a segment quad (4 vertices, 6 indices) and a round join fan (11 vertices,
            // 27 indices). Per open line: two round caps (22 vertices, 54 indices). Each vertex
            // may carry a colour and a width.
            let vertex = MemoryLayout<LineVertex>.stride + color + MemoryLayout<Float>.stride
            return DrawCost(perVertex: 15 * vertex + 33 * index, perPart: 22 * vertex + 54 * index, perFeature: chunk)
        case .fillExtrusion:
            // A roof vertex and a wall quad per point (5 vertices, 3 + 6 indices), each vertex with
            // base and top heights and a colour; two triangles per hole bridge.
            let vertex = MemoryLayout<ExtrusionVertex>.stride + MemoryLayout<SIMD2<Float>>.stride + color
            return DrawCost(perVertex: 5 * vertex + 9 * index, perPart: 6 * index, perFeature: chunk)
        case .symbol:
            // Line labels keep their path; candidates and text are charged as they are made.
            return DrawCost(perVertex: MemoryLayout<SIMD2<Float>>.stride, perPart: 32, perFeature: 0)
        case .circle:
            // A centre per point, and up to four paint values when they depend on the feature.
            return DrawCost(perVertex: MemoryLayout<SIMD2<Float>>.stride + 2 * color + 2 * MemoryLayout<Float>.stride,
                            perPart: 0, perFeature: 0)
        case .background:
            return DrawCost(perVertex: 0, perPart: 0, perFeature: 0)
        }
    }
}

extension Array {
    /// At most `keep` of the points, evenly spread, first and last included (all when they fit).
    func thinned(to keep: Int) -> [Element] {
        guard keep < count else { return self }
        guard keep > 1 else { return keep == 1 ? [self[0]] : [] }
        var result: [Element] = []
        result.reserveCapacity(keep)
        for ordinal in 0..<keep {
            result.append(self[ordinal * (count - 1) / (keep - 1)])
        }
        return result
    }
}

/// What one tile may hold once decoded. A tile is untrusted input: a crafted or broken one (a
/// road of a million points, a polygon of a hundred thousand rings, a gzip bomb, a million
/// features) must cost no more than a dense real one.
///
/// The figures follow from the layout budget (``TileLayoutBudget``, 64 MiB per tile): nothing
/// is decoded that no layout could use. A decoded tile at every limit holds about 40 MiB, and
/// decoding it takes twice its bytes besides (the data and a copy the reader walks). Real tiles
/// stay far below every limit: the densest bundled Helsinki tile (OpenMapTiles schema, zoom 14)
/// has 117 KiB of data, 4,064 features, 4,164 parts and 23,542 vertices; tippecanoe and
/// planetiler aim at 500 KiB per tile.
package struct VectorTileLimits: Sendable, Equatable {
    /// Stored and inflated bytes of one tile. A larger tile is refused with an error (before it is
    /// read where the size is known up front, else while inflating), which stops decompression
    /// bombs before they take memory.
    package var maximumBytes = 16 << 20
    /// Features per tile. Each decoded feature costs about 200 bytes before its geometry (its
    /// property table and part arrays), so this keeps a tile of tiny features to about 13 MiB.
    /// Features past it, in the order the tile lists them, are left out.
    package var maximumFeatures = 1 << 16
    /// Parts (lines, polygon rings, runs of points) per tile: 40 bytes of array each. Parts past it
    /// are left out.
    package var maximumParts = 1 << 18
    /// Vertices per tile: 8 MiB of points. The cheapest layout of a vertex (a polygon's: position,
    /// colour and 5 indices, 32 bytes) fills the layout budget's share for geometry with 817,000
    /// vertices, so more could never be drawn. Parts over their share are thinned evenly while
    /// decoding; see ``VertexPlan``.
    package var maximumVertices = 1 << 20
    /// Keys and values per tile, which features refer to by index and so cannot be dropped one by
    /// one: a tile with more is refused with an error.
    var maximumTableEntries = 1 << 18
    /// Layers per tile (OpenMapTiles has 15). Layers past it are left out.
    var maximumLayers = 1024

    package static let standard = VectorTileLimits()
}

/// What was left out of a tile to keep it within the per-tile limits: what decoding thinned or
/// dropped (``VectorTile/reductions``) and what laying it out for a style had to cut. The tile
/// loader reports it in one warning that names the tile.
public struct TileReductions: Sendable, Equatable, CustomStringConvertible {
    /// Layers left out whole.
    public package(set) var droppedLayers = 0
    /// Features left out whole.
    public package(set) var droppedFeatures = 0
    /// Lines, rings or runs of points left out of features that were kept.
    public package(set) var droppedParts = 0
    /// Holes left out of polygons whose triangulation would otherwise cost too much.
    public package(set) var droppedHoles = 0
    /// Parts thinned to fewer vertices.
    public package(set) var thinnedParts = 0
    /// Vertices the thinned parts had before thinning, all parts together.
    public package(set) var verticesBeforeThinning = 0
    /// Vertices the thinned parts kept.
    public package(set) var verticesAfterThinning = 0
    /// Labels left out, or cut short along their line, because the tile reached its label caps.
    public package(set) var droppedLabels = 0

    /// Nothing cut.
    package init() {}

    /// Whether nothing was cut.
    public var isEmpty: Bool { self == TileReductions() }

    package mutating func thinned(from before: Int, to after: Int) {
        thinnedParts += 1
        verticesBeforeThinning += before
        verticesAfterThinning += after
    }

    /// Adds what was cut of another tile joined to this one.
    package mutating func merge(_ other: TileReductions) {
        droppedLayers += other.droppedLayers
        droppedFeatures += other.droppedFeatures
        droppedParts += other.droppedParts
        droppedHoles += other.droppedHoles
        thinnedParts += other.thinnedParts
        verticesBeforeThinning += other.verticesBeforeThinning
        verticesAfterThinning += other.verticesAfterThinning
        droppedLabels += other.droppedLabels
    }

    /// What was cut, as a list for a log line; "nothing" when nothing was.
    public var description: String {
        var parts: [String] = []
        if thinnedParts > 0 {
            parts.append("\(thinnedParts) line\(thinnedParts == 1 ? "" : "s") or ring\(thinnedParts == 1 ? "" : "s") thinned from \(verticesBeforeThinning) to \(verticesAfterThinning) vertices")
        }
        if droppedLayers > 0 { parts.append("\(droppedLayers) layer\(droppedLayers == 1 ? "" : "s") dropped") }
        if droppedFeatures > 0 { parts.append("\(droppedFeatures) feature\(droppedFeatures == 1 ? "" : "s") dropped") }
        if droppedParts > 0 { parts.append("\(droppedParts) part\(droppedParts == 1 ? "" : "s") of features dropped") }
        if droppedHoles > 0 { parts.append("\(droppedHoles) polygon hole\(droppedHoles == 1 ? "" : "s") dropped") }
        if droppedLabels > 0 { parts.append("\(droppedLabels) label\(droppedLabels == 1 ? "" : "s") dropped or cut short") }
        return parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
    }
}

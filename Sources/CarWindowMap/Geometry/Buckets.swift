import CarWindowGeo
import CarWindowStyle
/// Per-tile, per-layer geometry ready for upload, built off the render thread (MapLibre's
/// "buckets"). Colours that depend on the feature are baked per vertex as premultiplied RGBA8;
/// everything that depends only on the zoom is left to uniforms so it can change every frame.

/// Premultiplied RGBA8, as the shaders read normalised unsigned bytes.
typealias PackedColor = UInt32

extension Color {
    /// Premultiplied and multiplied by `opacity`, packed little-endian as R, G, B, A bytes.
    func packed(opacity: Float = 1) -> PackedColor {
        let p = premultiplied * max(0, min(opacity, 1))
        func byte(_ v: Float) -> UInt32 { UInt32(max(0, min(v, 1)) * 255 + 0.5) }
        return byte(p.x) | byte(p.y) << 8 | byte(p.z) << 16 | byte(p.w) << 24
    }
}

/// Polygons: triangles plus, for anti-aliasing, their rings as line pairs over the same vertices.
struct FillBucket: Sendable {
    var positions: [SIMD2<Float>] = []
    var indices: [UInt32] = []
    /// Per-vertex colours when the colour or opacity depends on the feature.
    var colors: [PackedColor]?
    var outlineIndices: [UInt32] = []
    var chunks: [MeshChunk] = []
    var outlineChunks: [MeshChunk] = []
}

/// Lines with joins and caps.
struct LineBucket: Sendable {
    var tessellation = LineTessellation()
    var colors: [PackedColor]?
    /// Per-vertex widths in pixels when the width depends on the feature.
    var widths: [Float]?
    var chunks: [MeshChunk] = []
}

/// Buildings as prisms: base and top height per vertex in metres.
struct ExtrusionBucket: Sendable {
    var mesh = ExtrusionMesh()
    var heights: [SIMD2<Float>] = []
    var colors: [PackedColor]?
    var chunks: [MeshChunk] = []
}

/// Label candidates of one symbol layer; placed on the screen every frame.
struct SymbolBucket: Sendable {
    var labels: [LabelCandidate] = []
    /// Lines that line labels follow, in tile units.
    var paths: [[SIMD2<Float>]] = []
    /// Bytes of the shaped texts the labels share (one glyph array per labelled feature).
    var textBytes = 0
}

/// A label before placement: shaped at the atlas's base size, scaled to the text size when drawn.
struct LabelCandidate: Sendable {
    enum Anchor: Sendable {
        /// At a point, in tile units.
        case point(SIMD2<Float>)
        /// Along `paths[path]`, centred at `distance` tile units from its start. Anchors of
        /// `level` n are used from n zoom levels above the tile's own: each level halves the
        /// spacing, so an overzoomed tile keeps labels about `symbol-spacing` pixels apart.
        case line(path: Int, distance: Float, level: Int)
    }

    var anchor: Anchor
    /// The text; no glyphs for an icon without text.
    var text: ShapedText
    /// Shift of the text from the anchor in ems (`text-offset`).
    var textOffset: SIMD2<Float> = .zero
    /// Anchors to try in turn for a point label (`text-variable-anchor`); the text is shaped
    /// centred on its anchor then. Nil: the one it was shaped with.
    var variableAnchors: [TextAnchor]?
    /// With variable anchors: ems from the point in the direction of the anchor used.
    var radialOffset: Float = 0
    /// The icon drawn with the text, placed and collided with it as one symbol.
    var icon: IconCandidate?
    /// Identifies the label across frames and tiles for stable placement.
    var key: Int
    /// Equal for labels of one layer with the same text, so repeats can be kept apart.
    var textKey: Int
    /// Feature-dependent paint, when the style has it; otherwise the layer's values apply.
    var fillColor: Color?
    var haloColor: Color?

    var hasText: Bool { !text.glyphs.isEmpty }
}

/// A symbol's icon before placement: its sprite image and what the feature decides about it.
struct IconCandidate: Sendable {
    var image: SpriteImage
    /// Which part of the icon sits on the anchor.
    var anchor: TextAnchor
    /// Shift from the anchor in sprite pixels, scaled with the icon.
    var offset: SIMD2<Float>
    /// Clockwise turn in degrees.
    var rotate: Float
    /// `icon-size` when it depends on the feature; otherwise the layer's value applies.
    var size: Float?
    /// `icon-color` and `icon-halo-color` when they depend on the feature.
    var color: Color?
    var haloColor: Color?
}

/// What a tile holds for one style layer.
enum LayerBucket: Sendable {
    case fill(FillBucket)
    case line(LineBucket)
    case extrusion(ExtrusionBucket)
    case symbol(SymbolBucket)
    case circle(CircleBucket)
}

/// Discs at point features, drawn facing the viewer; paint that depends on the feature is kept
/// per circle (evaluated at the tile's zoom), the rest comes from the layer every frame.
struct CircleBucket: Sendable {
    /// Centres in tile units.
    var centers: [SIMD2<Float>] = []
    var colors: [PackedColor]?
    var strokeColors: [PackedColor]?
    var radii: [Float]?
    var strokeWidths: [Float]?
}

/// Everything one tile needs for drawing: a bucket per style layer index, nil where the layer
/// has nothing in this tile.
struct TileLayout: Sendable {
    let tile: TileID
    let extent: Int
    var buckets: [LayerBucket?]
    /// What laying the tile out left out to keep it within its budget (decoding's cuts are in
    /// the decoded tile's ``VectorTile/reductions``).
    var reductions = TileReductions()
    /// What cutting the style's GeoJSON sources for the tile left out to keep them within the
    /// limits of a decoded tile (``GeoJSONData/cut(for:name:limits:)``).
    var geojsonReductions = TileReductions()
}

/// A run of a mesh's indices whose geometry lies in one cell of the tile. Views that show only
/// part of a tile (overzoomed ones above all: a zoom 16 view sees a sixteenth of a zoom 14
/// tile) draw only the chunks they see.
struct MeshChunk: Sendable {
    var indexStart: Int
    var indexCount: Int
    /// minX, minY, maxX, maxY of the chunk's vertex positions, tile units.
    var bounds: SIMD4<Float>
}

/// Cuts a mesh into chunks while features are added in cell order.
struct Chunker: Sendable {
    /// Cells per tile side.
    static let cellsPerSide = 8

    private(set) var chunks: [MeshChunk] = []
    private var cell = -1
    private var start = 0
    private var end = 0
    private var bounds = SIMD4<Float>(.infinity, .infinity, -.infinity, -.infinity)

    /// The cell of a feature: where the centre of its bounding box falls.
    static func cell(of feature: VectorTileFeature, scale: Float) -> Int {
        var minX = Int32.max, minY = Int32.max, maxX = Int32.min, maxY = Int32.min
        for part in feature.geometry {
            for point in part {
                minX = min(minX, point.x); maxX = max(maxX, point.x)
                minY = min(minY, point.y); maxY = max(maxY, point.y)
            }
        }
        guard minX <= maxX else { return 0 }
        let size = Float(4096) / Float(cellsPerSide)
        let cx = Int(((Float(minX) + Float(maxX)) / 2 * scale / size).rounded(.down))
        let cy = Int(((Float(minY) + Float(maxY)) / 2 * scale / size).rounded(.down))
        return min(max(cy, 0), cellsPerSide - 1) * cellsPerSide + min(max(cx, 0), cellsPerSide - 1)
    }

    /// Records a feature of `cell` whose indices end at `indexEnd` and whose new vertices are `points`.
    mutating func add(cell: Int, indexEnd: Int, points: some Sequence<SIMD2<Float>>) {
        if cell != self.cell {
            close()
            self.cell = cell
            start = end
        }
        for point in points {
            bounds = SIMD4(min(bounds.x, point.x), min(bounds.y, point.y), max(bounds.z, point.x), max(bounds.w, point.y))
        }
        end = indexEnd
    }

    /// The chunks, the last one closed.
    mutating func finish() -> [MeshChunk] {
        close()
        return chunks
    }

    private mutating func close() {
        if end > start && bounds.x <= bounds.z {
            chunks.append(MeshChunk(indexStart: start, indexCount: end - start, bounds: bounds))
        }
        bounds = SIMD4(.infinity, .infinity, -.infinity, -.infinity)
    }
}

// MARK: Memory

extension TileLayout {
    /// The bytes the layout's arrays hold, counted by capacity (what is allocated, not just used),
    /// so that the per-tile budget can be checked against what a tile really costs.
    var byteCount: Int {
        buckets.reduce(0) { total, bucket in
            switch bucket {
            case .fill(let fill): total + fill.byteCount
            case .line(let line): total + line.byteCount
            case .extrusion(let extrusion): total + extrusion.byteCount
            case .symbol(let symbol): total + symbol.byteCount
            case .circle(let circle): total + circle.byteCount
            case nil: total
            }
        }
    }
}

/// The bytes an array has allocated for its elements.
func allocatedBytes<Element>(_ array: [Element]?) -> Int {
    guard let array else { return 0 }
    return array.capacity * MemoryLayout<Element>.stride
}

extension FillBucket {
    var byteCount: Int {
        allocatedBytes(positions) + allocatedBytes(indices) + allocatedBytes(colors) + allocatedBytes(outlineIndices)
            + allocatedBytes(chunks) + allocatedBytes(outlineChunks)
    }
}

extension LineBucket {
    var byteCount: Int {
        allocatedBytes(tessellation.vertices) + allocatedBytes(tessellation.indices) + allocatedBytes(colors)
            + allocatedBytes(widths) + allocatedBytes(chunks)
    }
}

extension ExtrusionBucket {
    var byteCount: Int {
        allocatedBytes(mesh.vertices) + allocatedBytes(mesh.indices) + allocatedBytes(heights) + allocatedBytes(colors)
            + allocatedBytes(chunks)
    }
}

extension CircleBucket {
    var byteCount: Int {
        allocatedBytes(centers) + allocatedBytes(colors) + allocatedBytes(strokeColors) + allocatedBytes(radii)
            + allocatedBytes(strokeWidths)
    }
}

extension SymbolBucket {
    var byteCount: Int {
        allocatedBytes(labels) + allocatedBytes(paths) + paths.reduce(0) { $0 + allocatedBytes($1) } + textBytes
    }
}

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

/// Polygons: triangles plus, for anti-aliasing, their rings as one-pixel lines.
struct FillBucket: Sendable {
    var positions: [SIMD2<Float>] = []
    var indices: [UInt32] = []
    /// Per-vertex colours when the colour or opacity depends on the feature.
    var colors: [PackedColor]?
    var outline = LineTessellation()
    var outlineColors: [PackedColor]?
}

/// Lines with joins and caps.
struct LineBucket: Sendable {
    var tessellation = LineTessellation()
    var colors: [PackedColor]?
    /// Per-vertex widths in pixels when the width depends on the feature.
    var widths: [Float]?
}

/// Buildings as prisms: base and top height per vertex in metres.
struct ExtrusionBucket: Sendable {
    var mesh = ExtrusionMesh()
    var heights: [SIMD2<Float>] = []
    var colors: [PackedColor]?
}

/// Label candidates of one symbol layer; placed on the screen every frame.
struct SymbolBucket: Sendable {
    var labels: [LabelCandidate] = []
    /// Lines that line labels follow, in tile units.
    var paths: [[SIMD2<Float>]] = []
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
    var text: ShapedText
    /// Identifies the label across frames and tiles for stable placement.
    var key: Int
    /// Feature-dependent paint, when the style has it; otherwise the layer's values apply.
    var fillColor: Color?
    var haloColor: Color?
}

/// What a tile holds for one style layer.
enum LayerBucket: Sendable {
    case fill(FillBucket)
    case line(LineBucket)
    case extrusion(ExtrusionBucket)
    case symbol(SymbolBucket)
}

/// Everything one tile needs for drawing: a bucket per style layer index, nil where the layer
/// has nothing in this tile.
struct TileLayout: Sendable {
    let tile: TileID
    let extent: Int
    var buckets: [LayerBucket?]
}

internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// The two passes a frame draws its style layers in.
enum RenderPass {
    /// Layers that hide what lies below them, top to bottom with depth writes and no blending,
    /// so llvmpipe's early depth test skips the hidden pixels of every layer below (under
    /// buildings, most of a pitched view).
    case opaque
    /// Everything else, bottom to top, blended.
    case translucent
}

/// Draws the style layers of one kind from every drawn tile's buckets, as MapLibre Native keeps
/// a render layer per kind apart from the style layers and buckets it reads. The renderer picks
/// one per layer (``LayerDrawers``) and gives it the frame's ``LayerDrawContext``; a new layer
/// kind is a new drawer.
///
/// Before each call the frame has set the pass's depth, blending and colour state and the
/// layer's depth range (``LayerDrawContext/beginLayer(_:pass:depthTested:spanningDepthBelow:)``).
/// A drawer sets whatever else it needs (program, stencil, textures, culling) through the
/// frame's ``GLStateCache`` and restores nothing: the next layer sets what it needs.
///
/// Drawers own render-thread GL objects or scratch storage and belong to one renderer's
/// resources; they are not Sendable.
protocol LayerDrawer: AnyObject {
    /// Whether `layer` hides what lies below it this frame, so it is drawn in the opaque pass.
    func isOpaque(_ layer: StyleLayer, at index: Int, in frame: LayerDrawContext) -> Bool
    /// Whether a layer drawn in the opaque pass has more to draw in the translucent pass (a
    /// fill's outlines).
    var drawsAgainAfterOpaquePass: Bool { get }
    /// Whether the layer's geometry rises: it then owns the depth range from the near plane to
    /// its layer's slot, in front of every layer below, rather than the slot alone.
    var spansDepthBelowItsLayer: Bool { get }
    /// Draws `layer` (style layer `index`, visible at this zoom) in `pass`.
    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext)
}

extension LayerDrawer {
    func isOpaque(_ layer: StyleLayer, at index: Int, in frame: LayerDrawContext) -> Bool { false }
    var drawsAgainAfterOpaquePass: Bool { false }
    var spansDepthBelowItsLayer: Bool { false }
}

/// What every layer of one frame is drawn with. The renderer makes one per frame from its
/// reused frame lists, so making it allocates nothing.
struct LayerDrawContext {
    let transform: MapTransform
    let style: Style
    /// The tiles drawn, parents first, and per tile its matrix and chunk culler.
    let tiles: [GPUTile]
    let matrices: [Matrix4]
    let cullers: [ChunkCuller]
    let programs: Programs
    let state: GLStateCache
    /// The style's sprite images, for patterns.
    let sprites: SpriteSheet
    /// The engine's route and markers, for the style's route layers.
    let overlays: MapOverlays
    /// Draw calls issued so far in the frame.
    var drawCalls = 0

    /// The stencil's low 7 bits number the tiles (0 is none); tiles past that are not drawn.
    static let maximumClippedTiles = 127

    var zoom: Double { transform.camera.zoom }

    /// The depth of style layer `index`: one slot per layer, the bottom layer farthest.
    func depth(ofLayer index: Int) -> Float {
        let step = 1.0 / Float(style.layers.count + 2)
        return 1 - Float(index + 1) * step
    }

    /// Sets the pass's depth, blending and colour state and the layer's depth range.
    func beginLayer(_ index: Int, pass: RenderPass, depthTested: Bool, spanningDepthBelow: Bool) {
        let depth = depth(ofLayer: index)
        state.setDepthRange(near: spanningDepthBelow ? 0 : depth, far: depth)
        state.setDepthTest(depthTested)
        state.setDepthMask(pass == .opaque)
        state.setDepthFunction(pass == .opaque ? GL_LESS : GL_LEQUAL)
        state.setBlend(pass == .translucent)
        state.setColorMask(true)
        state.setCullFace(false)
    }

    /// Sets what screen-space drawing after the map's layers needs: blending, no depth, no
    /// stencil.
    func beginScreenSpace() {
        state.setDepthRange(near: 0, far: 1)
        state.setDepthTest(false)
        state.setDepthMask(false)
        state.setStencilTest(false)
        state.setBlend(true)
        state.setColorMask(true)
        state.setCullFace(false)
    }

    /// Limits drawing to the pixels of drawn tile `index`, where no child tile drawn after
    /// it covers them (its stencil mask).
    func clip(toTile index: Int) {
        state.setStencilTest(true)
        state.setStencilFunction(GL_EQUAL, reference: GLint(index + 1), mask: 0x7F)
        state.setStencilOperation(stencilFail: GL_KEEP, depthFail: GL_KEEP, pass: GL_KEEP)
        state.setStencilMask(0)
    }

    /// Writes each drawn tile's number into the stencil over its square, parents first, so
    /// children cover their parents where both are drawn.
    mutating func drawTileMasks() {
        state.setStencilTest(true)
        state.setStencilOperation(stencilFail: GL_KEEP, depthFail: GL_KEEP, pass: GL_REPLACE)
        state.setStencilMask(0x7F)
        state.setColorMask(false)
        state.setDepthTest(false)
        let program = programs.fill
        state.useProgram(program.name)
        glUniform1f(program.uniforms.opacity, 1)
        for index in tiles.indices where index < Self.maximumClippedTiles {
            state.setStencilFunction(GL_ALWAYS, reference: GLint(index + 1), mask: 0x7F)
            programs.setMatrix(program.uniforms.matrix, matrices[index])
            programs.tileQuad.draw()
            drawCalls += 1
        }
    }

    /// Tile `index`'s matrix with the layer's translation in its tile units, so the shift stays
    /// the same number of pixels at every zoom and lies on the map under pitch, as MapLibre
    /// draws it.
    func matrix(forTile index: Int, shiftedBy shift: SIMD2<Double>?) -> Matrix4 {
        MapRenderer.matrix(matrices[index], for: tiles[index], shiftedBy: shift, transform)
    }
}

/// One drawer per layer kind, made with a map's GL resources on the render thread.
final class LayerDrawers {
    let background: BackgroundDrawer
    let fill: FillDrawer
    let line: LineDrawer
    let fillExtrusion: FillExtrusionDrawer
    let circle: CircleDrawer
    let symbol: SymbolDrawer

    init(icons: IconRenderer, route: RouteOverlay) {
        let pattern = PatternPainter(icons: icons)
        background = BackgroundDrawer(pattern: pattern)
        fill = FillDrawer(pattern: pattern)
        line = LineDrawer(route: route, icons: icons)
        fillExtrusion = FillExtrusionDrawer()
        circle = CircleDrawer()
        symbol = SymbolDrawer()
    }

    /// The drawer of `type`'s layers.
    func drawer(for type: LayerType) -> any LayerDrawer {
        switch type {
        case .background: background
        case .fill: fill
        case .line: line
        case .fillExtrusion: fillExtrusion
        case .circle: circle
        case .symbol: symbol
        }
    }
}

internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws symbol layers: their labels and icons compete for room across every layer and tile,
/// top layer first as in MapLibre, so they are placed together after the map's layers
/// (``placeLabels(in:)``) into one ``LabelPlacer`` that the screen's own text joins, then
/// drawn in two calls: icons (``IconRenderer``) and text (``drawText(glyphs:in:)``).
final class SymbolDrawer: LayerDrawer {
    /// This frame's placed labels, icons and screen text; it keeps its storage between frames.
    var placer = LabelPlacer()
    private let textVertexBuffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
    private let textIndexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
    private let textVertexArray = GLVertexArray()
    private let atlasTexture = GLTexture()
    /// The glyph atlas generation in the texture.
    private var atlasGeneration = -1

    init() {
        glBindVertexArray(textVertexArray.name)
        glBindBuffer(GLenum(GL_ARRAY_BUFFER), textVertexBuffer.name)
        textVertexArray.describeScreenQuads()
        glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), textIndexBuffer.name)
        glBindVertexArray(0)
    }

    /// Nothing in the layer passes: symbols are placed and drawn over the whole map after them.
    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {}

    /// Places the labels and icons of every visible symbol layer in `frame`'s tiles, top
    /// layer first, into ``placer`` (begun, with the screen's blocked rectangles, by the caller).
    func placeLabels(in frame: LayerDrawContext) {
        let transform = frame.transform, zoom = frame.zoom
        let width = transform.width, height = transform.height
        let layers = frame.style.layers
        for index in layers.indices.reversed() {
            let layer = layers[index]
            guard layer.isVisible(atZoom: zoom), let paint = Self.paint(layer, camera: transform.camera) else { continue }
            guard (paint.opacity > 0 && paint.size > 0) || (paint.icon.opacity > 0 && paint.icon.size > 0) else { continue }
            for (tileIndex, tile) in frame.tiles.enumerated() {
                guard index < tile.layers.count, case .symbol(let bucket)? = tile.layers[index] else { continue }
                let matrix = frame.matrices[tileIndex]
                let screenWidth = Double(width), screenHeight = Double(height)
                let centreDepth = transform.cameraToCenterDistance
                let zoomAboveTile = zoom - Double(tile.layout.tile.z)
                placer.place(bucket, paint: paint, zoomAboveTile: zoomAboveTile, width: width, height: height) { point in
                    let clip = matrix.transform(SIMD4(Double(point.x), Double(point.y), 0, 1))
                    guard clip.w > 1e-9 else { return nil }
                    return SIMD3(Float((clip.x / clip.w + 1) / 2 * screenWidth),
                                 Float((clip.y / clip.w + 1) / 2 * screenHeight), Float(centreDepth / clip.w))
                }
            }
        }
    }

    /// Draws every glyph quad placed this frame (labels, attribution, control labels) at once.
    func drawText(glyphs: GlyphAtlas, in frame: inout LayerDrawContext) {
        guard !placer.indices.isEmpty else { return }
        uploadAtlasIfChanged(glyphs, state: frame.state)
        let state = frame.state
        let program = frame.programs.text
        state.useProgram(program.name)
        glUniform2f(program.uniforms.screenSize, Float(frame.transform.width), Float(frame.transform.height))
        glUniform2f(program.uniforms.atlasSize, Float(atlasTexture.width), Float(atlasTexture.height))
        glUniform1f(program.uniforms.sdfEdge, Float(GlyphAtlas.sdfEdgeValue) / 255)
        glUniform1f(program.uniforms.sdfPerPixel, GlyphAtlas.sdfValuesPerPixel / 255)
        state.bindTexture2D(atlasTexture.name, unit: 0)
        glUniform1i(program.uniforms.atlas, 0)
        // Bound before the uploads: the index buffer's binding belongs to the vertex array.
        glBindVertexArray(textVertexArray.name)
        defer { glBindVertexArray(0) }
        textVertexBuffer.upload(placer.vertices, usage: GLenum(GL_DYNAMIC_DRAW))
        textIndexBuffer.upload(placer.indices, usage: GLenum(GL_DYNAMIC_DRAW))
        glDrawElements(GLenum(GL_TRIANGLES), GLsizei(placer.indices.count), GLenum(GL_UNSIGNED_INT), nil)
        frame.drawCalls += 1
    }

    private func uploadAtlasIfChanged(_ glyphs: GlyphAtlas, state: GLStateCache) {
        let generation = glyphs.generation
        guard generation != atlasGeneration else { return }
        atlasGeneration = generation
        glyphs.withBitmap { width, height, bytes in
            atlasTexture.allocate(width: width, height: height, internalFormat: GLenum(GL_R8), format: GLenum(GL_RED),
                                  type: GLenum(GL_UNSIGNED_BYTE), pixels: bytes.baseAddress)
        }
        state.forgetTextures()
    }

    /// A symbol layer's paint and layout at the camera's zoom, as the placer reads them.
    static func paint(_ layer: StyleLayer, camera: Camera) -> SymbolLayerPaint? {
        let zoom = camera.zoom
        guard let layout = layer.layout.symbol, let paint = layer.paint.symbol else { return nil }
        let isLine = layout.symbolPlacement.evaluate(zoom: zoom) != .point
        let fitPadding = layout.iconTextFitPadding.evaluate(zoom: zoom)
        func padding(_ i: Int) -> Float { i < fitPadding.count && fitPadding[i].isFinite ? Float(fitPadding[i]) : 0 }
        let iconAlignment = layout.iconRotationAlignment.evaluate(zoom: zoom)
        let icon = IconLayerPaint(
            size: Float(layout.iconSize.evaluate(zoom: zoom)),
            opacity: Float(paint.iconOpacity.evaluate(zoom: zoom)),
            color: paint.iconColor.evaluate(zoom: zoom),
            halo: paint.iconHaloColor.evaluate(zoom: zoom),
            haloWidth: Float(paint.iconHaloWidth.evaluate(zoom: zoom)),
            padding: Float(layout.iconPadding.evaluate(zoom: zoom)),
            allowOverlap: layout.iconAllowOverlap.evaluate(zoom: zoom),
            ignorePlacement: layout.iconIgnorePlacement.evaluate(zoom: zoom),
            optional: layout.iconOptional.evaluate(zoom: zoom),
            followsLine: iconAlignment == .map || (iconAlignment == .auto && isLine),
            mapBearing: Float(camera.bearing * .pi / 180),
            textFit: layout.iconTextFit.evaluate(zoom: zoom),
            textFitPadding: SIMD4(padding(0), padding(1), padding(2), padding(3)))
        return SymbolLayerPaint(
            size: Float(layout.textSize.evaluate(zoom: zoom)),
            fill: paint.textColor.evaluate(zoom: zoom),
            halo: paint.textHaloColor.evaluate(zoom: zoom),
            haloWidth: Float(paint.textHaloWidth.evaluate(zoom: zoom)),
            opacity: Float(paint.textOpacity.evaluate(zoom: zoom)),
            maxAngle: Float(layout.textMaxAngle.evaluate(zoom: zoom)),
            padding: Float(layout.textPadding.evaluate(zoom: zoom)),
            allowOverlap: layout.textAllowOverlap.evaluate(zoom: zoom),
            isLine: isLine,
            repeatDistance: Float(layout.symbolSpacing.evaluate(zoom: zoom)) * 0.6,
            textOptional: layout.textOptional.evaluate(zoom: zoom),
            textIgnorePlacement: layout.textIgnorePlacement.evaluate(zoom: zoom),
            textFollowsLine: layout.textRotationAlignment.evaluate(zoom: zoom) != .viewport,
            icon: icon)
    }
}

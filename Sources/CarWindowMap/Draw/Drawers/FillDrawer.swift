internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws fill layers: their polygons in one colour (or per-feature colours), or a sprite
/// pattern, then their outlines. A fill of one opaque colour draws its polygons in the opaque
/// pass and its outlines in the translucent pass.
final class FillDrawer: LayerDrawer {
    private let pattern: PatternPainter

    init(pattern: PatternPainter) {
        self.pattern = pattern
    }

    var drawsAgainAfterOpaquePass: Bool { true }

    func isOpaque(_ layer: StyleLayer, at index: Int, in frame: LayerDrawContext) -> Bool {
        Self.opaqueColor(layer, frame.zoom) != nil
    }

    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {
        guard let paint = layer.paint.fill else { return }
        let zoom = frame.zoom
        if let image = paint.fillPattern {
            pattern.draw(image, opacity: paint.fillOpacity.evaluate(zoom: zoom), layer: layer, at: index, in: &frame)
            return
        }
        switch pass {
        case .opaque:
            if let color = Self.opaqueColor(layer, zoom) {
                drawPolygons(layer, at: index, color: color, opacity: 1, in: &frame)
            }
        case .translucent:
            if Self.opaqueColor(layer, zoom) == nil {
                drawPolygons(layer, at: index, color: paint.fillColor.evaluate(zoom: zoom),
                             opacity: Float(paint.fillOpacity.evaluate(zoom: zoom)), in: &frame)
            }
            drawOutlines(layer, paint, at: index, in: &frame)
        }
    }

    /// The colour of a fill layer that covers what lies below completely, or nil if it blends.
    static func opaqueColor(_ layer: StyleLayer, _ zoom: Double) -> Color? {
        guard let paint = layer.paint.fill, paint.fillPattern == nil, !paint.fillColor.dependsOnFeature,
              !paint.fillOpacity.dependsOnFeature else { return nil }
        let color = paint.fillColor.evaluate(zoom: zoom)
        return color.a >= 1 && paint.fillOpacity.evaluate(zoom: zoom) >= 1 ? color : nil
    }

    private func drawPolygons(_ layer: StyleLayer, at index: Int, color: Color, opacity: Float,
                              in frame: inout LayerDrawContext) {
        let program = frame.programs.fill
        frame.state.useProgram(program.name)
        glUniform1f(program.uniforms.opacity, opacity)
        let constant = color.premultiplied
        let shift = MapRenderer.translation(of: layer, camera: frame.transform.camera)
        for (tileIndex, tile) in frame.tiles.enumerated() where tileIndex < LayerDrawContext.maximumClippedTiles {
            guard index < tile.layers.count, case .fill(let mesh)? = tile.layers[index] else { continue }
            frame.clip(toTile: tileIndex)
            frame.programs.setMatrix(program.uniforms.matrix, frame.matrix(forTile: tileIndex, shiftedBy: shift))
            if !mesh.hasPerVertexColor {
                glVertexAttrib4f(AttributeSlot.fillColor, constant.x, constant.y, constant.z, constant.w)
            }
            frame.drawCalls += mesh.draw(frame.cullers[tileIndex], margin: 0)
        }
    }

    private func drawOutlines(_ layer: StyleLayer, _ paint: FillPaint, at index: Int, in frame: inout LayerDrawContext) {
        let zoom = frame.zoom
        let opacity = Float(paint.fillOpacity.evaluate(zoom: zoom))
        guard opacity > 0 else { return }
        let program = frame.programs.fillOutline
        frame.state.useProgram(program.name)
        glUniform1f(program.uniforms.opacity, opacity)
        glUniform2f(program.uniforms.viewport, Float(frame.transform.width), Float(frame.transform.height))
        frame.state.setLineWidth(2)
        let color = (paint.fillOutlineColor ?? paint.fillColor).evaluate(zoom: zoom).premultiplied
        let shift = MapRenderer.translation(of: layer, camera: frame.transform.camera)
        for (tileIndex, tile) in frame.tiles.enumerated() where tileIndex < LayerDrawContext.maximumClippedTiles {
            guard index < tile.layers.count, case .fill(let mesh)? = tile.layers[index], mesh.hasLines else { continue }
            frame.clip(toTile: tileIndex)
            frame.programs.setMatrix(program.uniforms.matrix, frame.matrix(forTile: tileIndex, shiftedBy: shift))
            if !mesh.hasPerVertexColor || paint.fillOutlineColor != nil {
                glVertexAttrib4f(AttributeSlot.fillColor, color.x, color.y, color.z, color.w)
            }
            frame.drawCalls += mesh.drawLines(frame.cullers[tileIndex])
        }
    }
}

internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws line layers from the tiles' tessellated lines, dashed or not. Line layers of the
/// engine's route source draw the route (``RouteOverlay``) where the style puts them.
final class LineDrawer: LayerDrawer {
    private let route: RouteOverlay

    init(route: RouteOverlay) {
        self.route = route
    }

    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {
        let zoom = frame.zoom
        if layer.source == RouteOverlay.sourceID {
            // The engine's route, as the style paints it: over tile edges and whatever is below.
            guard let part = RouteOverlay.part(of: layer, zoom: zoom) else { return }
            frame.state.setStencilTest(false)
            frame.state.setDepthTest(false)
            route.draw(frame.overlays.route, progress: frame.overlays.routeProgress, congestion: frame.overlays.routeCongestion,
                       part: part, transform: frame.transform, programs: frame.programs, state: frame.state,
                       drawCalls: &frame.drawCalls)
            return
        }
        guard let paint = layer.paint.line else { return }
        let width = Float(paint.lineWidth.evaluate(zoom: zoom))
        let opacity = Float(paint.lineOpacity.evaluate(zoom: zoom))
        guard opacity > 0, width > 0 else { return }
        let dashes = paint.lineDasharray?.evaluate(zoom: zoom)
        let program = frame.programs.useLineProgram(dashes: dashes, lineWidth: width, state: frame.state)
        glUniform1f(program.uniforms.opacity, opacity)
        glUniform1f(program.uniforms.blur, Float(paint.lineBlur.evaluate(zoom: zoom)))
        glUniform1f(program.uniforms.centreW, Float(frame.transform.cameraToCenterDistance))
        let constant = paint.lineColor.evaluate(zoom: zoom).premultiplied
        let shift = MapRenderer.translation(of: layer, camera: frame.transform.camera)
        for (tileIndex, tile) in frame.tiles.enumerated() where tileIndex < LayerDrawContext.maximumClippedTiles {
            guard index < tile.layers.count, case .line(let mesh)? = tile.layers[index] else { continue }
            frame.clip(toTile: tileIndex)
            frame.programs.setMatrix(program.uniforms.matrix, frame.matrix(forTile: tileIndex, shiftedBy: shift))
            let unitsPerPixel = Float(frame.transform.tileUnitsPerPixel(for: tile.layout.tile, extent: tile.layout.extent))
            glUniform1f(program.uniforms.unitsPerPixel, unitsPerPixel)
            if !mesh.hasPerVertexColor {
                glVertexAttrib4f(AttributeSlot.lineColor, constant.x, constant.y, constant.z, constant.w)
            }
            if !mesh.hasPerVertexWidth { glVertexAttrib1f(AttributeSlot.lineWidth, width) }
            // Far parts of a pitched view shrink; a width's worth of margin at the centre is enough.
            frame.drawCalls += mesh.draw(frame.cullers[tileIndex], margin: (width + 2) * unitsPerPixel)
        }
    }
}

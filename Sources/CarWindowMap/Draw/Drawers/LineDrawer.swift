internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws line layers from the tiles' tessellated lines, dashed, plain or painted with a sprite
/// image. Line layers of the engine's route source draw the route (``RouteOverlay``) where the
/// style puts them.
final class LineDrawer: LayerDrawer {
    private let route: RouteOverlay
    private let icons: IconRenderer

    init(route: RouteOverlay, icons: IconRenderer) {
        self.route = route
        self.icons = icons
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
        let program: LinkedProgram<LineUniforms>
        if let pattern = paint.linePattern {
            guard let patterned = usePattern(pattern, opacity: opacity, in: &frame) else { return }
            program = patterned
        } else {
            let dashes = paint.lineDasharray?.evaluate(zoom: zoom)
            program = frame.programs.useLineProgram(dashes: dashes, lineWidth: width, state: frame.state)
        }
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

    /// Makes the patterned program current with `pattern`'s image; nil leaves the layer out: an
    /// image the sprite lacks (as MapLibre skips it), an empty name, no sheet.
    private func usePattern(_ pattern: StyleProperty<String>, opacity: Float,
                            in frame: inout LayerDrawContext) -> LinkedProgram<LineUniforms>? {
        let name = pattern.evaluate(zoom: frame.zoom, feature: nil, availableImages: frame.sprites.names)
        guard !name.isEmpty else { return nil }
        guard let image = frame.sprites.images[name] else {
            SpriteWarnings.missingImage(name)
            return nil
        }
        guard icons.bindSheet(state: frame.state),
              let program = frame.programs.usePatternedLineProgram(state: frame.state) else { return nil }
        let sheet = icons.sheetSize
        let size = image.displaySize
        glUniform1i(program.uniforms.sheet, 0)
        glUniform1f(program.uniforms.patternOpacity, opacity)
        glUniform2f(program.uniforms.patternSize, max(size.x, 1), max(size.y, 1))
        // Half a texel in from each edge, so linear filtering never reads the neighbour image.
        glUniform2f(program.uniforms.imageOrigin, (Float(image.x) + 0.5) / sheet.x, (Float(image.y) + 0.5) / sheet.y)
        glUniform2f(program.uniforms.imageExtent, (Float(image.width) - 1) / sheet.x, (Float(image.height) - 1) / sheet.y)
        return program
    }
}

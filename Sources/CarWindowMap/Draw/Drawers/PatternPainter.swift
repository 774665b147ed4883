internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Paints fill and background layers with a sprite image: every tile's polygons (or whole
/// square, for a background) with the image repeated at its own size in screen pixels. An
/// image the sprite lacks leaves the layer out, as MapLibre does. Shared by the fill and
/// background drawers.
final class PatternPainter {
    private let icons: IconRenderer

    init(icons: IconRenderer) {
        self.icons = icons
    }

    /// Draws style layer `index` with `pattern` at `opacity`.
    func draw(_ pattern: StyleProperty<String>, opacity: Double, layer: StyleLayer, at index: Int,
              in frame: inout LayerDrawContext) {
        guard opacity > 0 else { return }
        let name = pattern.evaluate(zoom: frame.zoom, feature: nil, availableImages: frame.sprites.names)
        guard !name.isEmpty else { return }
        guard let image = frame.sprites.images[name] else {
            SpriteWarnings.missingImage(name)
            return
        }
        let state = frame.state
        guard icons.bindSheet(state: state) else { return }
        let program = frame.programs.fillPattern
        state.useProgram(program.name)
        let sheet = icons.sheetSize
        let size = image.displaySize
        glUniform1i(program.uniforms.sheet, 0)
        glUniform1f(program.uniforms.opacity, Float(min(max(opacity, 0), 1)))
        glUniform2f(program.uniforms.imageSize, size.x, size.y)
        // Half a texel in from each edge, so linear filtering never reads the neighbour image.
        glUniform2f(program.uniforms.imageOrigin, (Float(image.x) + 0.5) / sheet.x, (Float(image.y) + 0.5) / sheet.y)
        glUniform2f(program.uniforms.imageExtent, (Float(image.width) - 1) / sheet.x, (Float(image.height) - 1) / sheet.y)
        let isBackground = layer.type == .background
        let shift = MapRenderer.translation(of: layer, camera: frame.transform.camera)
        for (tileIndex, tile) in frame.tiles.enumerated() where tileIndex < LayerDrawContext.maximumClippedTiles {
            let mesh: GPUMesh
            if isBackground {
                mesh = frame.programs.tileQuad
            } else {
                guard index < tile.layers.count, case .fill(let fill)? = tile.layers[index] else { continue }
                mesh = fill
            }
            frame.clip(toTile: tileIndex)
            frame.programs.setMatrix(program.uniforms.matrix, frame.matrix(forTile: tileIndex, shiftedBy: shift))
            let id = tile.layout.tile
            let tileSize = frame.transform.worldSize / Double(1 << id.z)
            glUniform1f(program.uniforms.pixelsPerUnit, Float(tileSize / Double(tile.layout.extent)))
            let origin = SIMD2(Double(id.x), Double(id.y)) * tileSize
            glUniform2f(program.uniforms.offset, Float(origin.x.truncatingRemainder(dividingBy: Double(size.x))),
                        Float(origin.y.truncatingRemainder(dividingBy: Double(size.y))))
            if isBackground {
                mesh.draw()
                frame.drawCalls += 1
            } else {
                frame.drawCalls += mesh.draw(frame.cullers[tileIndex], margin: 0)
            }
        }
    }
}

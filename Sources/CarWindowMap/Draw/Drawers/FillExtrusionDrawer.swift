internal import CGLES
import CarWindowGeo
import Foundation
import CarWindowStyle

/// Draws fill-extrusion layers: buildings as closed prisms lit by MapLibre's default light, at
/// full height at every pitch as MapLibre draws them. Opaque ones draw in the opaque pass; translucent ones draw depth
/// first and then colour where it matches, so each pixel shows the nearest surface once.
final class FillExtrusionDrawer: LayerDrawer {
    /// The drawn tiles that have the layer's buildings, by index; kept between frames.
    private var tilesWithMeshes: [(tile: Int, mesh: GPUMesh)] = []

    var spansDepthBelowItsLayer: Bool { true }

    func isOpaque(_ layer: StyleLayer, at index: Int, in frame: LayerDrawContext) -> Bool {
        guard let paint = layer.paint.fillExtrusion else { return false }
        return paint.fillExtrusionOpacity.evaluate(zoom: frame.zoom) >= 1 && !paint.fillExtrusionColor.dependsOnFeature
            && paint.fillExtrusionColor.evaluate(zoom: frame.zoom).a >= 1
    }

    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {
        guard let paint = layer.paint.fillExtrusion else { return }
        let transform = frame.transform, zoom = frame.zoom
        let opacity = Float(paint.fillExtrusionOpacity.evaluate(zoom: zoom))
        guard opacity > 0 else { return }
        let pitch = transform.camera.pitch
        let state = frame.state
        let program = frame.programs.extrusion
        state.useProgram(program.name)
        glUniform1f(program.uniforms.opacity, opacity)
        // MapLibre's default light: radial 1.15, azimuth 210° (plus its 90° offset), polar 30°,
        // fixed to the viewport so it turns with the bearing. Our wall normals face the other
        // way round in this frame, hence the extra half turn (checked against MapLibre renders).
        let azimuth = (210 + 90 + 180 + transform.camera.bearing) * .pi / 180, polar = 30 * Double.pi / 180
        let light = SIMD3(cos(azimuth) * sin(polar), sin(azimuth) * sin(polar), cos(polar)) * 1.15
        glUniform3f(program.uniforms.lightPosition, Float(light.x), Float(light.y), Float(light.z))
        glUniform1f(program.uniforms.lightIntensity, 0.5)
        tilesWithMeshes.removeAll(keepingCapacity: true)
        for (tileIndex, tile) in frame.tiles.enumerated() {
            guard index < tile.layers.count, case .extrusion(let mesh)? = tile.layers[index] else { continue }
            tilesWithMeshes.append((tileIndex, mesh))
        }
        guard !tilesWithMeshes.isEmpty else { return }
        let color = paint.fillExtrusionColor.evaluate(zoom: zoom).premultiplied
        // Tall buildings just beyond the far edge of a pitched view still rise into it.
        let reach = Float(150 * transform.pixelsPerMeter * max(tan(pitch * .pi / 180), 1))
        // Prisms are closed: back faces never show, and culling them halves the work.
        state.setCullFace(true)
        state.setCullFaceMode(GL_BACK)
        state.setDepthTest(true)
        state.setStencilTest(false)
        state.setDepthMask(true)
        state.setDepthFunction(GL_LESS)
        if opacity >= 1 {
            // Opaque (drawn in the opaque pass, blending off): the depth test alone keeps the
            // nearest surface.
            drawAll(colored: true, color: color, reach: reach, program: program, in: &frame)
        } else {
            // Translucent: depth first, then colour where the depth matches, so each pixel shows
            // the nearest wall or roof once, as MapLibre's offscreen pass does.
            state.setColorMask(false)
            drawAll(colored: false, color: color, reach: reach, program: program, in: &frame)
            state.setColorMask(true)
            state.setDepthFunction(GL_EQUAL)
            // Tiles repeat buildings that cross their edges; the stencil's top bit lets a pixel
            // take colour once.
            state.setStencilTest(true)
            state.setStencilFunction(GL_NOTEQUAL, reference: 0x80, mask: 0x80)
            state.setStencilOperation(stencilFail: GL_KEEP, depthFail: GL_KEEP, pass: GL_REPLACE)
            state.setStencilMask(0x80)
            drawAll(colored: true, color: color, reach: reach, program: program, in: &frame)
        }
    }

    private func drawAll(colored: Bool, color: SIMD4<Float>, reach: Float, program: LinkedProgram<ExtrusionUniforms>,
                         in frame: inout LayerDrawContext) {
        for (tileIndex, mesh) in tilesWithMeshes {
            let tile = frame.tiles[tileIndex].layout
            frame.programs.setMatrix(program.uniforms.matrix, frame.matrices[tileIndex])
            if colored && !mesh.hasPerVertexColor {
                glVertexAttrib4f(AttributeSlot.extrusionColor, color.x, color.y, color.z, color.w)
            }
            let margin = reach * Float(frame.transform.tileUnitsPerPixel(for: tile.tile, extent: tile.extent))
            frame.drawCalls += mesh.draw(frame.cullers[tileIndex], margin: margin)
        }
    }
}

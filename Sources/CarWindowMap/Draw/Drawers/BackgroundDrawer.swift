internal import CGLES
import CarWindowStyle

/// Draws background layers: one colour over the whole viewport, or a sprite pattern repeated
/// over every tile. An opaque plain bottom background is the frame's clear colour instead and
/// never reaches this drawer.
final class BackgroundDrawer: LayerDrawer {
    private let pattern: PatternPainter

    init(pattern: PatternPainter) {
        self.pattern = pattern
    }

    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {
        guard let paint = layer.paint.background else { return }
        if let image = paint.backgroundPattern {
            pattern.draw(image, opacity: paint.backgroundOpacity.evaluate(zoom: frame.zoom), layer: layer, at: index,
                         in: &frame)
            return
        }
        let program = frame.programs.fill
        frame.state.useProgram(program.name)
        // It covers the viewport, not tiles: no tile clipping.
        frame.state.setStencilTest(false)
        frame.programs.setMatrix(program.uniforms.matrix, .identity)
        glUniform1f(program.uniforms.opacity, Float(paint.backgroundOpacity.evaluate(zoom: frame.zoom)))
        let color = paint.backgroundColor.evaluate(zoom: frame.zoom).premultiplied
        glVertexAttrib4f(AttributeSlot.fillColor, color.x, color.y, color.z, color.w)
        frame.programs.screenQuad.draw()
        frame.drawCalls += 1
    }
}

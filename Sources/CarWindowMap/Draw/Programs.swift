internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// The programs every map draws with, and the two quads they share.
final class Programs {
    let fill: GLProgram
    let fillOutline: GLProgram
    let fillPattern: GLProgram
    let line: GLProgram
    let dashedLine: GLProgram
    /// The route's line program: it leaves out what lies before `u_trim_before`.
    let trimmedLine: GLProgram
    let extrusion: GLProgram
    let text: GLProgram
    let icon: GLProgram
    let circle: GLProgram
    /// A tile's square, 0...4096, for stencil masks.
    let tileQuad: GPUMesh
    /// The whole viewport in clip space, for background layers.
    let screenQuad: GPUMesh
    private var dashScratch = [Float](repeating: 0, count: 8)
    private var matrixScratch = [Float](repeating: 0, count: 16)

    init() throws(GLSetupError) {
        fill = try GLProgram(vertex: "fill.vert", fragment: "fill.frag", attributes: ["a_pos", "a_color"])
        fillOutline = try GLProgram(vertex: "fill_outline.vert", fragment: "fill_outline.frag",
                                    attributes: ["a_pos", "a_color"])
        fillPattern = try GLProgram(vertex: "fill_pattern.vert", fragment: "fill_pattern.frag", attributes: ["a_pos"])
        let lineAttributes = ["a_pos", "a_extrude", "a_edge", "a_distance", "a_color", "a_width"]
        line = try GLProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes)
        // Dashes cost a loop per fragment: only dashed layers pay for it.
        dashedLine = try GLProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes,
                                   defines: ["DASHED"])
        trimmedLine = try GLProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes,
                                    defines: ["TRIMMED"])
        extrusion = try GLProgram(vertex: "extrusion.vert", fragment: "extrusion.frag",
                                  attributes: ["a_pos", "a_normal", "a_top", "a_heights", "a_color"])
        text = try GLProgram(vertex: "text.vert", fragment: "text.frag",
                             attributes: ["a_pos", "a_tex", "a_fill", "a_halo", "a_params"])
        icon = try GLProgram(vertex: "icon.vert", fragment: "icon.frag",
                             attributes: ["a_pos", "a_tex", "a_fill", "a_halo", "a_params"])
        circle = try GLProgram(vertex: "circle.vert", fragment: "circle.frag",
                               attributes: ["a_pos", "a_extrude", "a_color", "a_stroke_color", "a_size"])
        let square: [UInt32] = [0, 1, 2, 0, 2, 3]
        tileQuad = .fill(positions: [SIMD2(0, 0), SIMD2(4096, 0), SIMD2(4096, 4096), SIMD2(0, 4096)],
                         indices: square, colors: nil)
        screenQuad = .fill(positions: [SIMD2(-1, -1), SIMD2(1, -1), SIMD2(1, 1), SIMD2(-1, 1)],
                           indices: square, colors: nil)
    }

    /// Sets a mat4 uniform of the current program without allocating.
    func setMatrix(_ location: GLint, _ matrix: Matrix4) {
        matrixScratch.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            matrix.write(into: base)
            glUniformMatrix4fv(location, 1, GLboolean(GL_FALSE), base)
        }
    }

    /// The route's line program, made current; the caller sets every uniform.
    func useTrimmedLineProgram() -> GLProgram {
        glUseProgram(trimmedLine.name)
        return trimmedLine
    }

    /// The line program for `dashes` (in line widths, as the style gives them), made current with
    /// its dash uniforms set.
    func useLineProgram(dashes: [Double]?, lineWidth: Float) -> GLProgram {
        let pattern = (dashes ?? []).prefix(8)
        let count = pattern.count >= 2 && pattern.reduce(0, +) > 0 ? pattern.count & ~1 : 0
        guard count > 0 else {
            glUseProgram(line.name)
            return line
        }
        var end: Float = 0
        for (i, length) in pattern.prefix(count).enumerated() {
            end += max(Float(length), 0) * max(lineWidth, 1)
            dashScratch[i] = end
        }
        glUseProgram(dashedLine.name)
        glUniform1i(dashedLine.location("u_dash_count"), GLint(count))
        dashScratch.withUnsafeBufferPointer {
            glUniform1fv(dashedLine.location("u_dash_ends"), GLsizei(count), $0.baseAddress)
        }
        return dashedLine
    }
}

extension Style {
    /// Whether the style has line layers for the engine's route (``RouteOverlay/sourceID``):
    /// then they draw it, else the built-in look goes on top of the map.
    var drawsRoute: Bool {
        layers.contains { $0.source == RouteOverlay.sourceID && $0.type == .line }
    }

    /// Whether the style's background is dark, so screen text (attribution) should be light.
    func isDark(atZoom zoom: Double) -> Bool {
        guard let background = layers.lazy.compactMap(\.paint.background).first else { return false }
        let color = background.backgroundColor.evaluate(zoom: zoom)
        return 0.299 * color.r + 0.587 * color.g + 0.114 * color.b < 0.5
    }
}

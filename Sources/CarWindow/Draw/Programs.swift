import CGLES

/// The four programs every map draws with, and the two quads they share.
final class Programs {
    let fill: GLProgram
    let line: GLProgram
    let extrusion: GLProgram
    let text: GLProgram
    /// A tile's square, 0...4096, for stencil masks.
    let tileQuad: GPUMesh
    /// The whole viewport in clip space, for background layers.
    let screenQuad: GPUMesh
    private var dashScratch = [Float](repeating: 0, count: 8)

    init() throws(GLSetupError) {
        fill = try GLProgram(vertex: "fill.vert", fragment: "fill.frag", attributes: ["a_pos", "a_color"])
        line = try GLProgram(vertex: "line.vert", fragment: "line.frag",
                             attributes: ["a_pos", "a_extrude", "a_edge", "a_distance", "a_color", "a_width"])
        extrusion = try GLProgram(vertex: "extrusion.vert", fragment: "extrusion.frag",
                                  attributes: ["a_pos", "a_normal", "a_top", "a_heights", "a_color"])
        text = try GLProgram(vertex: "text.vert", fragment: "text.frag",
                             attributes: ["a_pos", "a_tex", "a_fill", "a_halo", "a_params"])
        let square: [UInt32] = [0, 1, 2, 0, 2, 3]
        tileQuad = .fill(positions: [SIMD2(0, 0), SIMD2(4096, 0), SIMD2(4096, 4096), SIMD2(0, 4096)],
                         indices: square, colors: nil)
        screenQuad = .fill(positions: [SIMD2(-1, -1), SIMD2(1, -1), SIMD2(1, 1), SIMD2(-1, 1)],
                           indices: square, colors: nil)
    }

    /// Sets the line program's dash uniforms; `dashes` are in line widths, as the style gives them.
    func setDashes(_ dashes: [Double]?, lineWidth: Float) {
        let pattern = (dashes ?? []).prefix(8)
        let count = pattern.count >= 2 && pattern.reduce(0, +) > 0 ? pattern.count & ~1 : 0
        var end: Float = 0
        for (i, length) in pattern.prefix(count).enumerated() {
            end += max(Float(length), 0) * max(lineWidth, 1)
            dashScratch[i] = end
        }
        glUniform1i(line.location("u_dash_count"), GLint(count))
        if count > 0 {
            dashScratch.withUnsafeBufferPointer { glUniform1fv(line.location("u_dash_ends"), GLsizei(count), $0.baseAddress) }
        }
    }
}

extension Style {
    /// Whether the style's background is dark, so screen text (attribution) should be light.
    func isDark(atZoom zoom: Double) -> Bool {
        guard let background = layers.lazy.compactMap(\.paint.background).first else { return false }
        let color = background.backgroundColor.evaluate(zoom: zoom)
        return 0.299 * color.r + 0.587 * color.g + 0.114 * color.b < 0.5
    }
}

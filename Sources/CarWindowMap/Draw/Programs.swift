internal import CGLES
import CarWindowGeo
import CarWindowStyle
import Logging

/// The uniforms one kind of program sets, located when the program links, so frames set them
/// by location without asking GL (or a dictionary) for names.
protocol UniformLocations {
    init(of program: GLProgram)
}

/// A linked program with the locations of its uniforms.
struct LinkedProgram<Uniforms: UniformLocations> {
    let program: GLProgram
    let uniforms: Uniforms
    var name: GLuint { program.name }

    init(vertex: String, fragment: String, attributes: [String], defines: [String] = [],
         binaries: ProgramBinaries?) throws(GLSetupError) {
        program = try GLProgram(vertex: vertex, fragment: fragment, attributes: attributes, defines: defines,
                                binaries: binaries)
        uniforms = Uniforms(of: program)
    }
}

struct FillUniforms: UniformLocations {
    let matrix, opacity: GLint
    init(of program: GLProgram) {
        matrix = program.uniformLocation("u_matrix")
        opacity = program.uniformLocation("u_opacity")
    }
}

struct FillOutlineUniforms: UniformLocations {
    let matrix, opacity, viewport: GLint
    init(of program: GLProgram) {
        matrix = program.uniformLocation("u_matrix")
        opacity = program.uniformLocation("u_opacity")
        viewport = program.uniformLocation("u_viewport")
    }
}

struct FillPatternUniforms: UniformLocations {
    let matrix, opacity, sheet, imageSize, imageOrigin, imageExtent, pixelsPerUnit, offset: GLint
    init(of program: GLProgram) {
        matrix = program.uniformLocation("u_matrix")
        opacity = program.uniformLocation("u_opacity")
        sheet = program.uniformLocation("u_sheet")
        imageSize = program.uniformLocation("u_image_size")
        imageOrigin = program.uniformLocation("u_image_origin")
        imageExtent = program.uniformLocation("u_image_extent")
        pixelsPerUnit = program.uniformLocation("u_pixels_per_unit")
        offset = program.uniformLocation("u_offset")
    }
}

/// Every variant of line.frag: a variant without dashes, trimming or a pattern has -1 for those.
struct LineUniforms: UniformLocations {
    let matrix, opacity, blur, centreW, unitsPerPixel, dashCount, dashEnds, trimBefore, trimAfter: GLint
    /// The route's traffic and line-gradient (the trimmed program only; -1 in the others).
    let congestionCount, congestion, palette, gradientCount, gradient, progressCount, progressMap: GLint
    /// The sprite image of a patterned line (the patterned program only).
    let sheet, imageOrigin, imageExtent, patternSize, patternOpacity: GLint
    init(of program: GLProgram) {
        matrix = program.uniformLocation("u_matrix")
        opacity = program.uniformLocation("u_opacity")
        blur = program.uniformLocation("u_blur")
        centreW = program.uniformLocation("u_centre_w")
        unitsPerPixel = program.uniformLocation("u_units_per_pixel")
        dashCount = program.uniformLocation("u_dash_count")
        dashEnds = program.uniformLocation("u_dash_ends")
        trimBefore = program.uniformLocation("u_trim_before")
        trimAfter = program.uniformLocation("u_trim_after")
        congestionCount = program.uniformLocation("u_congestion_count")
        congestion = program.uniformLocation("u_congestion")
        palette = program.uniformLocation("u_palette")
        gradientCount = program.uniformLocation("u_gradient_count")
        gradient = program.uniformLocation("u_gradient")
        progressCount = program.uniformLocation("u_progress_count")
        progressMap = program.uniformLocation("u_progress_map")
        sheet = program.uniformLocation("u_sheet")
        imageOrigin = program.uniformLocation("u_image_origin")
        imageExtent = program.uniformLocation("u_image_extent")
        patternSize = program.uniformLocation("u_pattern_size")
        patternOpacity = program.uniformLocation("u_pattern_opacity")
    }
}

struct ExtrusionUniforms: UniformLocations {
    let matrix, opacity, lightPosition, lightIntensity: GLint
    init(of program: GLProgram) {
        matrix = program.uniformLocation("u_matrix")
        opacity = program.uniformLocation("u_opacity")
        lightPosition = program.uniformLocation("u_light_position")
        lightIntensity = program.uniformLocation("u_light_intensity")
    }
}

struct TextUniforms: UniformLocations {
    let screenSize, atlasSize, sdfEdge, sdfPerPixel, atlas: GLint
    init(of program: GLProgram) {
        screenSize = program.uniformLocation("u_screen_size")
        atlasSize = program.uniformLocation("u_atlas_size")
        sdfEdge = program.uniformLocation("u_sdf_edge")
        sdfPerPixel = program.uniformLocation("u_sdf_per_pixel")
        atlas = program.uniformLocation("u_atlas")
    }
}

struct IconUniforms: UniformLocations {
    let screenSize, sheetSize, sheet: GLint
    init(of program: GLProgram) {
        screenSize = program.uniformLocation("u_screen_size")
        sheetSize = program.uniformLocation("u_sheet_size")
        sheet = program.uniformLocation("u_sheet")
    }
}

struct CircleUniforms: UniformLocations {
    let screenSize, blur: GLint
    init(of program: GLProgram) {
        screenSize = program.uniformLocation("u_screen_size")
        blur = program.uniformLocation("u_blur")
    }
}

/// The programs every map draws with, and the two quads they share.
final class Programs {
    let fill: LinkedProgram<FillUniforms>
    let fillOutline: LinkedProgram<FillOutlineUniforms>
    let fillPattern: LinkedProgram<FillPatternUniforms>
    let line: LinkedProgram<LineUniforms>
    let dashedLine: LinkedProgram<LineUniforms>
    /// The route's line program: it leaves out what lies before `u_trim_before`.
    let trimmedLine: LinkedProgram<LineUniforms>
    let extrusion: LinkedProgram<ExtrusionUniforms>
    let text: LinkedProgram<TextUniforms>
    let icon: LinkedProgram<IconUniforms>
    let circle: LinkedProgram<CircleUniforms>
    /// A tile's square, 0...4096, for stencil masks.
    let tileQuad: GPUMesh
    /// The whole viewport in clip space, for background layers.
    let screenQuad: GPUMesh
    static let lineAttributes = ["a_pos", "a_extrude", "a_edge", "a_distance", "a_color", "a_width"]
    private static let logger = Logger(label: "carwindow.render")
    /// Lines painted with a sprite image (line-pattern); linked on the first such layer, so
    /// maps without one never pay for it at start. nil while not yet linked or when it failed.
    private var patternedLine: LinkedProgram<LineUniforms>?
    private var patternedLineFailed = false
    private let binaries: ProgramBinaries?
    private var dashScratch = [Float](repeating: 0, count: 8)
    private var matrixScratch = [Float](repeating: 0, count: 16)

    /// Links every program, from `binaries` where an earlier start stored them.
    init(binaries: ProgramBinaries?) throws(GLSetupError) {
        self.binaries = binaries
        fill = try LinkedProgram(vertex: "fill.vert", fragment: "fill.frag", attributes: ["a_pos", "a_color"],
                                 binaries: binaries)
        fillOutline = try LinkedProgram(vertex: "fill_outline.vert", fragment: "fill_outline.frag",
                                        attributes: ["a_pos", "a_color"], binaries: binaries)
        fillPattern = try LinkedProgram(vertex: "fill_pattern.vert", fragment: "fill_pattern.frag", attributes: ["a_pos"],
                                        binaries: binaries)
        let lineAttributes = Self.lineAttributes
        line = try LinkedProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes,
                                 binaries: binaries)
        // Dashes cost a loop per fragment: only dashed layers pay for it.
        dashedLine = try LinkedProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes,
                                       defines: ["DASHED"], binaries: binaries)
        trimmedLine = try LinkedProgram(vertex: "line.vert", fragment: "line.frag", attributes: lineAttributes,
                                        defines: ["TRIMMED"], binaries: binaries)
        extrusion = try LinkedProgram(vertex: "extrusion.vert", fragment: "extrusion.frag",
                                      attributes: ["a_pos", "a_normal", "a_top", "a_heights", "a_color"],
                                      binaries: binaries)
        text = try LinkedProgram(vertex: "text.vert", fragment: "text.frag",
                                 attributes: ["a_pos", "a_tex", "a_fill", "a_halo", "a_params"], binaries: binaries)
        icon = try LinkedProgram(vertex: "icon.vert", fragment: "icon.frag",
                                 attributes: ["a_pos", "a_tex", "a_fill", "a_halo", "a_params"], binaries: binaries)
        circle = try LinkedProgram(vertex: "circle.vert", fragment: "circle.frag",
                                   attributes: ["a_pos", "a_extrude", "a_color", "a_stroke_color", "a_size"],
                                   binaries: binaries)
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

    /// The patterned line program, made current (linked on first use); nil when it cannot be
    /// linked, which is logged once and leaves patterned layers out.
    func usePatternedLineProgram(state: GLStateCache) -> LinkedProgram<LineUniforms>? {
        if patternedLine == nil, !patternedLineFailed {
            do {
                patternedLine = try LinkedProgram(vertex: "line.vert", fragment: "line.frag", attributes: Self.lineAttributes,
                                                  defines: ["PATTERNED"], binaries: binaries)
            } catch {
                patternedLineFailed = true
                Self.logger.error("the line-pattern program cannot be linked, so patterned line layers are not drawn: \(error)")
            }
        }
        guard let patternedLine else { return nil }
        state.useProgram(patternedLine.name)
        return patternedLine
    }

    /// The route's line program, made current; the caller sets every uniform.
    func useTrimmedLineProgram(state: GLStateCache) -> LinkedProgram<LineUniforms> {
        state.useProgram(trimmedLine.name)
        return trimmedLine
    }

    /// The line program for `dashes` (in line widths, as the style gives them), made current with
    /// its dash uniforms set.
    func useLineProgram(dashes: [Double]?, lineWidth: Float, state: GLStateCache) -> LinkedProgram<LineUniforms> {
        let pattern = (dashes ?? []).prefix(8)
        let count = pattern.count >= 2 && pattern.reduce(0, +) > 0 ? pattern.count & ~1 : 0
        guard count > 0 else {
            state.useProgram(line.name)
            return line
        }
        var end: Float = 0
        for (i, length) in pattern.prefix(count).enumerated() {
            end += max(Float(length), 0) * max(lineWidth, 1)
            dashScratch[i] = end
        }
        state.useProgram(dashedLine.name)
        glUniform1i(dashedLine.uniforms.dashCount, GLint(count))
        dashScratch.withUnsafeBufferPointer {
            glUniform1fv(dashedLine.uniforms.dashEnds, GLsizei(count), $0.baseAddress)
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

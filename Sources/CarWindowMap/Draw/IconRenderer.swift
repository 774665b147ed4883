internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws the icons the label placer placed, from the style's sprite sheet in one texture.
/// Made, used and released on the render thread, as part of a map's resources.
final class IconRenderer {
    private let vertexBuffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
    private let indexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
    private let vertexArray = GLVertexArray()
    private let sheetTexture = GLTexture()
    private var hasSheet = false

    init() {
        glBindVertexArray(vertexArray.name)
        glBindBuffer(GLenum(GL_ARRAY_BUFFER), vertexBuffer.name)
        vertexArray.describeScreenQuads()
        glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), indexBuffer.name)
        glBindVertexArray(0)
    }

    /// Uploads the sheet; an empty sheet draws no icons.
    func upload(_ sheet: SpriteSheet) {
        hasSheet = sheet.width > 0 && sheet.height > 0
        guard hasSheet else { return }
        sheet.pixels.withUnsafeBytes { bytes in
            sheetTexture.allocate(width: sheet.width, height: sheet.height, internalFormat: GLenum(GL_RGBA8),
                                  format: GLenum(GL_RGBA), type: GLenum(GL_UNSIGNED_BYTE), pixels: bytes.baseAddress)
        }
    }

    /// Binds the sheet to texture unit 0 for a pattern; false when there is no sheet.
    func bindSheet(state: GLStateCache) -> Bool {
        guard hasSheet else { return false }
        state.bindTexture2D(sheetTexture.name, unit: 0)
        return true
    }

    /// The sheet's size in pixels.
    var sheetSize: SIMD2<Float> { SIMD2(Float(sheetTexture.width), Float(sheetTexture.height)) }

    /// Draws every icon quad gathered this frame in one call.
    func draw(_ placer: LabelPlacer, width: Int, height: Int, programs: Programs, state: GLStateCache,
              drawCalls: inout Int) {
        guard hasSheet, !placer.iconIndices.isEmpty else { return }
        let program = programs.icon
        state.useProgram(program.name)
        glUniform2f(program.uniforms.screenSize, Float(width), Float(height))
        glUniform2f(program.uniforms.sheetSize, Float(sheetTexture.width), Float(sheetTexture.height))
        state.bindTexture2D(sheetTexture.name, unit: 0)
        glUniform1i(program.uniforms.sheet, 0)
        // Bound before the uploads: the index buffer's binding belongs to the vertex array.
        glBindVertexArray(vertexArray.name)
        defer { glBindVertexArray(0) }
        vertexBuffer.upload(placer.iconVertices, usage: GLenum(GL_DYNAMIC_DRAW))
        indexBuffer.upload(placer.iconIndices, usage: GLenum(GL_DYNAMIC_DRAW))
        glDrawElements(GLenum(GL_TRIANGLES), GLsizei(placer.iconIndices.count), GLenum(GL_UNSIGNED_INT), nil)
        drawCalls += 1
    }
}

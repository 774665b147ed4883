internal import CGLES
import CarWindowVideoCore

/// Turns the rendered RGBA frame into NV12 on the GPU and reads back only the NV12 bytes
/// (1.5 bytes per pixel instead of 4).
///
/// Two passes write the planes into RGBA8 targets that pack four luma samples, or two Cb/Cr
/// pairs, per texel, so a plain RGBA readback yields NV12 memory order. Readbacks go through two
/// pixel buffer objects: the read of frame N is started right after its conversion and collected
/// later, so the copy overlaps drawing frame N+1.
///
/// - Important: Render thread only; owned by a ``MapRenderer``.
final class NV12Converter {
    /// Visible and coded sizes.
    private(set) var width = 0, height = 0, codedWidth = 0, codedHeight = 0
    private let lumaTarget = GLTexture()
    private let chromaTarget = GLTexture()
    private var framebuffers: [GLuint] = [0, 0]
    private var pixelBuffers: [GLuint] = [0, 0]
    private var pending: [Bool] = [false, false]
    private let lumaProgram: LinkedProgram<NV12Uniforms>
    private let chromaProgram: LinkedProgram<NV12Uniforms>
    /// Made on first zero-copy use.
    private var planePrograms: (luma: LinkedProgram<NV12Uniforms>, chroma: LinkedProgram<NV12Uniforms>)?
    private var planeFramebuffers: (luma: GLuint, chroma: GLuint, textures: SIMD2<UInt32>)?
    private let emptyVertexArray = GLVertexArray()
    private var fullRange = false
    private let context: GLContextID
    private let binaries: ProgramBinaries?

    /// Links the readback programs, from `binaries` where an earlier start stored them.
    init(binaries: ProgramBinaries?) throws(GLSetupError) {
        self.binaries = binaries
        lumaProgram = try LinkedProgram(vertex: "fullscreen.vert", fragment: "nv12_luma.frag", attributes: [],
                                        binaries: binaries)
        chromaProgram = try LinkedProgram(vertex: "fullscreen.vert", fragment: "nv12_chroma.frag", attributes: [],
                                          binaries: binaries)
        glGenFramebuffers(2, &framebuffers)
        glGenBuffers(2, &pixelBuffers)
        context = GLObjectLedger.made(.framebuffer, count: 2)
        _ = GLObjectLedger.made(.buffer, count: 2)
    }

    deinit {
        GLObjectLedger.release(.framebuffer, count: 2, madeIn: context) { glDeleteFramebuffers(2, framebuffers) }
        GLObjectLedger.release(.buffer, count: 2, madeIn: context) { glDeleteBuffers(2, pixelBuffers) }
        if let planeFramebuffers {
            let names = [planeFramebuffers.luma, planeFramebuffers.chroma]
            GLObjectLedger.release(.framebuffer, count: 2, madeIn: context) { glDeleteFramebuffers(2, names) }
        }
    }

    /// Zero copy: writes the planes straight into `luma` (R8, coded size) and `chroma` (GR88,
    /// half the coded size), textures that alias an encoder's input surface through dma-buf
    /// import. Nothing is read back; glFlush hands the work to the GPU and the encoder's access
    /// to the shared buffers waits for it (implicit dma-buf fences).
    func convert(source: GLuint, width: Int, height: Int, fullRange: Bool, flipsRows: Bool, intoLuma luma: GLuint,
                 chroma: GLuint) throws(GLSetupError) {
        let programs: (luma: LinkedProgram<NV12Uniforms>, chroma: LinkedProgram<NV12Uniforms>)
        if let existing = planePrograms {
            programs = existing
        } else {
            programs = (try LinkedProgram(vertex: "fullscreen.vert", fragment: "nv12_luma_plane.frag", attributes: [],
                                          binaries: binaries),
                        try LinkedProgram(vertex: "fullscreen.vert", fragment: "nv12_chroma_plane.frag", attributes: [],
                                          binaries: binaries))
            planePrograms = programs
        }
        if planeFramebuffers?.textures != SIMD2(luma, chroma) {
            var names: [GLuint] = [0, 0]
            if let old = planeFramebuffers {
                names = [old.luma, old.chroma]
            } else {
                glGenFramebuffers(2, &names)
                _ = GLObjectLedger.made(.framebuffer, count: 2)
            }
            for (framebuffer, texture) in zip(names, [luma, chroma]) {
                glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
                glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), texture, 0)
                guard glCheckFramebufferStatus(GLenum(GL_FRAMEBUFFER)) == GLenum(GL_FRAMEBUFFER_COMPLETE) else {
                    throw .importedPlaneNotRenderable
                }
            }
            planeFramebuffers = (names[0], names[1], SIMD2(luma, chroma))
        }
        guard let framebuffers = planeFramebuffers else { return }
        let codedWidth = NV12Frame.align16(width), codedHeight = NV12Frame.align16(height)
        prepare(source: source)
        setUniforms(programs.luma, width: width, height: height, fullRange: fullRange, flipsRows: flipsRows)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers.luma)
        glViewport(0, 0, GLsizei(codedWidth), GLsizei(codedHeight))
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        setUniforms(programs.chroma, width: width, height: height, fullRange: fullRange, flipsRows: flipsRows)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers.chroma)
        glViewport(0, 0, GLsizei(codedWidth / 2), GLsizei(codedHeight / 2))
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        glBindVertexArray(0)
        glFlush()
    }

    private func prepare(source: GLuint) {
        glDisable(GLenum(GL_BLEND))
        glDisable(GLenum(GL_DEPTH_TEST))
        glDisable(GLenum(GL_STENCIL_TEST))
        glDisable(GLenum(GL_CULL_FACE))
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_2D), source)
        glBindVertexArray(emptyVertexArray.name)
    }

    /// BT.601: Y' = 0.299 R + 0.587 G + 0.114 B; limited range scales luma by 219/255 and
    /// chroma by 224/255 and lifts luma by 16/255. Sets whichever of the uniforms `program` has.
    private func setUniforms(_ program: LinkedProgram<NV12Uniforms>, width: Int, height: Int, fullRange: Bool,
                             flipsRows: Bool) {
        let lumaScale: Float = fullRange ? 1 : 219 / 255, chromaScale: Float = fullRange ? 1 : 224 / 255
        glUseProgram(program.name)
        glUniform1i(program.uniforms.source, 0)
        glUniform2i(program.uniforms.visibleSize, GLint(width), GLint(height))
        glUniform1i(program.uniforms.flipRows, flipsRows ? 1 : 0)
        glUniform3f(program.uniforms.luma, 0.299 * lumaScale, 0.587 * lumaScale, 0.114 * lumaScale)
        glUniform1f(program.uniforms.lumaOffset, fullRange ? 0 : 16 / 255)
        glUniform3f(program.uniforms.cb, -0.168736 * chromaScale, -0.331264 * chromaScale, 0.5 * chromaScale)
        glUniform3f(program.uniforms.cr, 0.5 * chromaScale, -0.418688 * chromaScale, -0.081312 * chromaScale)
    }

    /// Bytes of one NV12 frame at the coded size.
    var frameBytes: Int { codedWidth * codedHeight * 3 / 2 }

    private func configure(width: Int, height: Int, fullRange: Bool) {
        self.fullRange = fullRange
        guard width != self.width || height != self.height else { return }
        self.width = width
        self.height = height
        codedWidth = NV12Frame.align16(width)
        codedHeight = NV12Frame.align16(height)
        let rgba = (GLenum(GL_RGBA8), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE))
        lumaTarget.allocate(width: codedWidth / 4, height: codedHeight, internalFormat: rgba.0, format: rgba.1,
                            type: rgba.2, filter: GLenum(GL_NEAREST))
        chromaTarget.allocate(width: codedWidth / 4, height: codedHeight / 2, internalFormat: rgba.0, format: rgba.1,
                              type: rgba.2, filter: GLenum(GL_NEAREST))
        for (framebuffer, texture) in zip(framebuffers, [lumaTarget.name, chromaTarget.name]) {
            glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
            glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), texture, 0)
        }
        for buffer in pixelBuffers {
            glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), buffer)
            glBufferData(GLenum(GL_PIXEL_PACK_BUFFER), frameBytes, nil, GLenum(GL_STREAM_READ))
        }
        glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), 0)
        pending = [false, false]
    }

    /// Converts `source` (an RGBA texture of `width` x `height`, top row first unless
    /// `flipsRows`) and starts reading the result into readback `slot` (0 or 1).
    func convert(source: GLuint, width: Int, height: Int, fullRange: Bool, flipsRows: Bool, slot: Int) {
        configure(width: width, height: height, fullRange: fullRange)
        prepare(source: source)
        setUniforms(lumaProgram, width: width, height: height, fullRange: fullRange, flipsRows: flipsRows)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers[0])
        glViewport(0, 0, GLsizei(codedWidth / 4), GLsizei(codedHeight))
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        setUniforms(chromaProgram, width: width, height: height, fullRange: fullRange, flipsRows: flipsRows)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers[1])
        glViewport(0, 0, GLsizei(codedWidth / 4), GLsizei(codedHeight / 2))
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)

        // Asynchronous reads into the slot's buffer: luma first, chroma right after it.
        glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), pixelBuffers[slot])
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 4)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers[0])
        glReadPixels(0, 0, GLsizei(codedWidth / 4), GLsizei(codedHeight), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), nil)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffers[1])
        glReadPixels(0, 0, GLsizei(codedWidth / 4), GLsizei(codedHeight / 2), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE),
                     UnsafeMutableRawPointer(bitPattern: codedWidth * codedHeight))
        glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), 0)
        glBindVertexArray(0)
        pending[slot] = true
    }

    /// Copies the finished readback of `slot` into `frame` (waiting for it if the GPU is still
    /// busy); false when nothing was started there or the frame's size differs.
    func collect(slot: Int, into frame: inout NV12Frame) -> Bool {
        guard pending[slot], frame.codedWidth == codedWidth, frame.codedHeight == codedHeight else { return false }
        pending[slot] = false
        glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), pixelBuffers[slot])
        defer { glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), 0) }
        guard let mapped = glMapBufferRange(GLenum(GL_PIXEL_PACK_BUFFER), 0, frameBytes, GLbitfield(GL_MAP_READ_BIT)) else {
            return false
        }
        let lumaBytes = codedWidth * codedHeight
        frame.luma.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: mapped, count: lumaBytes)) }
        frame.chroma.withUnsafeMutableBytes {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: mapped + lumaBytes, count: lumaBytes / 2))
        }
        frame.fullRange = fullRange
        glUnmapBuffer(GLenum(GL_PIXEL_PACK_BUFFER))
        return true
    }
}

/// The uniforms of the NV12 programs; a plane program lacks some (-1).
struct NV12Uniforms: UniformLocations {
    let source, visibleSize, flipRows, luma, lumaOffset, cb, cr: GLint
    init(of program: GLProgram) {
        source = program.uniformLocation("u_source")
        visibleSize = program.uniformLocation("u_visible_size")
        flipRows = program.uniformLocation("u_flip_rows")
        luma = program.uniformLocation("u_luma")
        lumaOffset = program.uniformLocation("u_luma_offset")
        cb = program.uniformLocation("u_cb")
        cr = program.uniformLocation("u_cr")
    }
}

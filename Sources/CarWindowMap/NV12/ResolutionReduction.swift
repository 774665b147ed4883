internal import CGLES

/// Takes detail out of a picture while keeping its size: the picture is reduced to a share of
/// its width and height and enlarged again, both with linear filtering, so the encoder gets a
/// full-size picture that costs the bits of a smaller one. A stream whose bitrate cannot carry
/// its size keeps the size the head unit negotiated (a new one needs the head unit's consent)
/// and sends a softer picture instead.
///
/// Two framebuffer blits, no shader: any canvas's texture that a framebuffer can read works.
///
/// - Important: Render thread only; owned by an ``NV12Output``.
final class ResolutionReduction {
    private let reduced = GLTexture()
    private let restored = GLTexture()
    /// Reading the source, drawing the reduced picture, drawing the restored one.
    private var framebuffers: [GLuint] = [0, 0, 0]
    private var sizes = SIMD4<Int32>(0, 0, 0, 0)
    private let context: GLContextID

    init() {
        glGenFramebuffers(3, &framebuffers)
        context = GLObjectLedger.made(.framebuffer, count: 3)
    }

    deinit {
        GLObjectLedger.release(.framebuffer, count: 3, madeIn: context) { glDeleteFramebuffers(3, framebuffers) }
    }

    /// The texture holding `source` (`width` x `height`) with the detail of `scale` of its
    /// sides, in the same orientation; nil when a framebuffer cannot read `source` (then the
    /// picture goes out with all its detail).
    func reduce(source: GLuint, width: Int, height: Int, scale: Double) -> GLuint? {
        let reducedWidth = max(Int((Double(width) * scale).rounded()), 2)
        let reducedHeight = max(Int((Double(height) * scale).rounded()), 2)
        let wanted = SIMD4(Int32(width), Int32(height), Int32(reducedWidth), Int32(reducedHeight))
        let rgba = (GLenum(GL_RGBA8), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE))
        if sizes != wanted {
            reduced.allocate(width: reducedWidth, height: reducedHeight, internalFormat: rgba.0, format: rgba.1, type: rgba.2)
            restored.allocate(width: width, height: height, internalFormat: rgba.0, format: rgba.1, type: rgba.2)
            for (framebuffer, texture) in [(framebuffers[1], reduced.name), (framebuffers[2], restored.name)] {
                glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
                glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), texture, 0)
            }
            sizes = wanted
        }
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), framebuffers[0])
        glFramebufferTexture2D(GLenum(GL_READ_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), source, 0)
        // The source is attached only for the blit: a texture deleted later must not stay
        // attached to a framebuffer that is not bound.
        defer {
            glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), framebuffers[0])
            glFramebufferTexture2D(GLenum(GL_READ_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), 0, 0)
            glBindFramebuffer(GLenum(GL_FRAMEBUFFER), 0)
        }
        guard glCheckFramebufferStatus(GLenum(GL_READ_FRAMEBUFFER)) == GLenum(GL_FRAMEBUFFER_COMPLETE) else { return nil }
        glDisable(GLenum(GL_SCISSOR_TEST))
        glBindFramebuffer(GLenum(GL_DRAW_FRAMEBUFFER), framebuffers[1])
        glBlitFramebuffer(0, 0, GLint(width), GLint(height), 0, 0, GLint(reducedWidth), GLint(reducedHeight),
                          GLbitfield(GL_COLOR_BUFFER_BIT), GLenum(GL_LINEAR))
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), framebuffers[1])
        glBindFramebuffer(GLenum(GL_DRAW_FRAMEBUFFER), framebuffers[2])
        glBlitFramebuffer(0, 0, GLint(reducedWidth), GLint(reducedHeight), 0, 0, GLint(width), GLint(height),
                          GLbitfield(GL_COLOR_BUFFER_BIT), GLenum(GL_LINEAR))
        return restored.name
    }
}

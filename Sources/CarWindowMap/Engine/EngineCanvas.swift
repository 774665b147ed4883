internal import CGLES
import CarWindowVideoCore

/// What an engine canvas shows in the next picture.
package enum EngineDrawing: Sendable {
    /// The engine draws with GL into the canvas's framebuffer.
    case gl(EngineGLDraw, scale: Double)
    /// Pixels the engine handed over (validated against the canvas's size).
    case pixels(EnginePixels)
    /// The pixels handed over last, converted again (black before any).
    case samePixels
}

/// What one visit of a stream to an engine canvas did.
package struct EngineStreamDraw {
    /// Why the picture was not drawn and converted; nil when its readback started.
    package var error: EngineContentError?
    /// The earlier picture's NV12 frame, when the visit was asked to collect one.
    package var collected: Result<NV12Frame, MapRenderError>?
}

/// The engine's own picture, where a session would otherwise draw its map: a framebuffer of the
/// stream's size that the engine's GL draws into or its pixels are uploaded to, then converted
/// to NV12 with the same readback ring (or zero-copy surface) as the map.
///
/// It shares the executor of its ``RenderContext``: every GL call runs on the render thread.
package actor EngineCanvas {
    package nonisolated let context: RenderContext
    package nonisolated var unownedExecutor: UnownedSerialExecutor { context.thread.asUnownedSerialExecutor() }

    package private(set) var width: Int
    package private(set) var height: Int
    private let target: GLRenderTarget
    private let output: NV12Output
    private var picturesDrawn: UInt64 = 0
    /// Whether the colour texture is sampled with red and blue swapped (BGRA pixels).
    private var swapsRedAndBlue = false
    /// Whether the texture's rows run top first (pixels) rather than GL's bottom first (a draw).
    private var holdsPixels = false

    isolated deinit {
        output.releaseImportedPlanes()
    }

    /// Makes a canvas of `width` x `height`, cleared to opaque black.
    package init(context: RenderContext, width: Int, height: Int) async throws(MapRenderError) {
        try await self.init(making: context, width: width, height: height)
    }

    // As MapRenderer's: a private designated initializer keeps the allocation of an actor with an
    // isolated deinit out of what other modules inline (Swift 6.3.1 -O crashes otherwise).
    private init(making context: RenderContext, width: Int, height: Int) async throws(MapRenderError) {
        self.context = context
        self.width = width
        self.height = height
        switch await context.makeEngineTarget(width: width, height: height) {
        case .success(let made):
            target = made.target
            output = made.output
        case .failure(let error):
            throw error
        }
    }

    /// Changes the size; the framebuffer is cleared and pixels must be handed over again.
    package func resize(width: Int, height: Int) throws(MapRenderError) {
        do {
            try target.resize(width: width, height: height)
        } catch {
            throw .invalidSize(width: width, height: height, reason: error.description)
        }
        self.width = width
        self.height = height
        holdsPixels = false
        Self.clear(target)
    }

    /// Draws or uploads `drawing`, converts the picture to NV12 and starts reading it back into
    /// `slot`; then, if asked, collects the picture an earlier visit read into the other slot.
    package func drawStreamFrame(_ drawing: EngineDrawing, fullRange: Bool, readbackSlot slot: Int,
                                 collecting previous: (slot: Int, frame: NV12Frame)?) -> EngineStreamDraw {
        var draw = EngineStreamDraw()
        draw.error = render(drawing) { flipsRows throws(MapRenderError) in
            try output.convert(source: target.color.name, width: width, height: height, fullRange: fullRange,
                               flipsRows: flipsRows, slot: slot)
        }
        if let previous { draw.collected = collectStreamFrame(slot: previous.slot, into: previous.frame) }
        return draw
    }

    /// The picture a draw started reading back into `slot`, copied into `frame`.
    package func collectStreamFrame(slot: Int, into frame: consuming NV12Frame) -> Result<NV12Frame, MapRenderError> {
        guard let filled = output.collect(slot: slot, into: frame) else { return .failure(.gl(.readbackUnavailable)) }
        return .success(filled)
    }

    /// Zero copy: draws or uploads `drawing` and converts it straight into the encoder's
    /// surface; the error, if any, says why the picture is not in the surface.
    package func drawStreamFrame(_ drawing: EngineDrawing, fullRange: Bool, into planes: DMABufPlanes)
        -> EngineContentError? {
        render(drawing) { flipsRows throws(MapRenderError) in
            try output.convert(source: target.color.name, width: width, height: height, fullRange: fullRange,
                               flipsRows: flipsRows, into: planes)
        }
    }

    /// Draws or uploads `drawing`, then has `convert` take the picture, told whether its rows
    /// run bottom first (a GL draw) or top first (pixels); nil when both went well.
    private func render(_ drawing: EngineDrawing,
                        thenConvert convert: (_ flipsRows: Bool) throws(MapRenderError) -> Void) -> EngineContentError? {
        do throws(EngineContentError) {
            try render(drawing)
            do {
                try convert(!holdsPixels)
            } catch {
                throw .output(error)
            }
            return nil
        } catch {
            return error
        }
    }

    /// The picture in the framebuffer as RGBA, top row first.
    package func readPixels() -> RGBAImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        pixels.withUnsafeMutableBytes {
            glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), $0.baseAddress)
        }
        var image = RGBAImage(width: width, height: height, pixels: pixels)
        if !holdsPixels { image = image.flippedVertically() }
        if swapsRedAndBlue { image = image.swappingRedAndBlue() }
        return image
    }

    private func render(_ drawing: EngineDrawing) throws(EngineContentError) {
        switch drawing {
        case .gl(let draw, let scale):
            picturesDrawn += 1
            holdsPixels = false
            setSwapsRedAndBlue(false)
            glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
            glViewport(0, 0, GLsizei(width), GLsizei(height))
            let frame = EngineGLFrame(framebuffer: target.framebuffer, width: width, height: height, scale: scale,
                                      pictureNumber: picturesDrawn)
            var failure: (any Error)?
            do {
                try draw(frame)
            } catch {
                failure = error
            }
            restoreGLStateAfterEngineCode()
            if let failure { throw .drawFailed(String(describing: failure)) }
        case .pixels(let pixels):
            try pixels.validate(width: width, height: height)
            picturesDrawn += 1
            holdsPixels = true
            setSwapsRedAndBlue(pixels.format == .bgra)
            glBindTexture(GLenum(GL_TEXTURE_2D), target.color.name)
            glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 4)
            glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(pixels.bytesPerRow / 4))
            pixels.bytes.withUnsafeBytes {
                glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA),
                                GLenum(GL_UNSIGNED_BYTE), $0.baseAddress)
            }
            glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
            glBindTexture(GLenum(GL_TEXTURE_2D), 0)
        case .samePixels:
            break
        }
    }

    /// BGRA pixels are uploaded as they are and read with red and blue swapped: no CPU pass.
    private func setSwapsRedAndBlue(_ swaps: Bool) {
        guard swaps != swapsRedAndBlue else { return }
        swapsRedAndBlue = swaps
        glBindTexture(GLenum(GL_TEXTURE_2D), target.color.name)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_SWIZZLE_R), swaps ? GL_BLUE : GL_RED)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_SWIZZLE_B), swaps ? GL_RED : GL_BLUE)
        glBindTexture(GLenum(GL_TEXTURE_2D), 0)
    }

    fileprivate static func clear(_ target: GLRenderTarget) {
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
        glViewport(0, 0, GLsizei(target.width), GLsizei(target.height))
        glClearColor(0, 0, 0, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT | GL_STENCIL_BUFFER_BIT))
    }
}

extension RenderContext {
    /// Makes an engine canvas's framebuffer, cleared, on the render thread.
    func makeEngineTarget(width: Int, height: Int) -> sending Result<(target: GLRenderTarget, output: NV12Output), MapRenderError> {
        guard width > 0, height > 0 else {
            return .failure(.invalidSize(width: width, height: height, reason: "each side must be at least 1"))
        }
        do {
            let target = try GLRenderTarget(width: width, height: height)
            EngineCanvas.clear(target)
            return .success((target, NV12Output(display: display, binaries: programBinaries)))
        } catch {
            return .failure(.invalidSize(width: width, height: height, reason: error.description))
        }
    }
}

/// Puts back the GL state the rest of CarWindow takes for granted, whatever the engine's code
/// (a canvas draw, a custom layer) left behind: the map and the NV12 passes set the rest
/// themselves. Render thread only.
func restoreGLStateAfterEngineCode() {
    glDisable(GLenum(GL_SCISSOR_TEST))
    glDisable(GLenum(GL_RASTERIZER_DISCARD))
    glDisable(GLenum(GL_POLYGON_OFFSET_FILL))
    glDisable(GLenum(GL_SAMPLE_ALPHA_TO_COVERAGE))
    glDisable(GLenum(GL_SAMPLE_COVERAGE))
    glColorMask(GLboolean(GL_TRUE), GLboolean(GL_TRUE), GLboolean(GL_TRUE), GLboolean(GL_TRUE))
    glBlendEquation(GLenum(GL_FUNC_ADD))
    glFrontFace(GLenum(GL_CCW))
    glBindBuffer(GLenum(GL_PIXEL_PACK_BUFFER), 0)
    glBindBuffer(GLenum(GL_PIXEL_UNPACK_BUFFER), 0)
    // One call each: a list of them would be an allocation per picture.
    glPixelStorei(GLenum(GL_PACK_ROW_LENGTH), 0)
    glPixelStorei(GLenum(GL_PACK_SKIP_ROWS), 0)
    glPixelStorei(GLenum(GL_PACK_SKIP_PIXELS), 0)
    glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
    glPixelStorei(GLenum(GL_UNPACK_SKIP_ROWS), 0)
    glPixelStorei(GLenum(GL_UNPACK_SKIP_PIXELS), 0)
    glPixelStorei(GLenum(GL_UNPACK_IMAGE_HEIGHT), 0)
    glPixelStorei(GLenum(GL_UNPACK_SKIP_IMAGES), 0)
    glBindVertexArray(0)
    glUseProgram(0)
    glActiveTexture(GLenum(GL_TEXTURE0))
    // An error the engine left would be taken for one of ours.
    while glGetError() != GLenum(GL_NO_ERROR) {}
}

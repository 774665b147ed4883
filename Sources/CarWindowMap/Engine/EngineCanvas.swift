internal import CGLES
import CarWindowVideoCore

/// What an engine canvas shows in the next picture.
package enum EngineDrawing: Sendable {
    /// The engine draws with GL into the canvas's framebuffer.
    case gl(EngineGLDraw, scale: Double)
    /// Pixels the engine handed over (validated against the canvas's size).
    case pixels(EnginePixels)
    /// A dma-buf the engine handed over, with descriptors the canvas closes once it has read
    /// or imported them.
    case dmaBuf(EngineDmaBuf)
    /// What was handed over last, converted again (black before anything).
    case samePixels
}

/// What one visit of a stream to an engine canvas did.
package struct EngineStreamDraw {
    /// Why the picture was not drawn and converted; nil when its readback started.
    package var error: EngineContentError?
    /// The earlier picture's NV12 frame, when the visit was asked to collect one.
    package var collected: Result<NV12Frame, MapRenderError>?
    /// Why a dma-buf was read through a mapping rather than imported, when it was.
    package var dmaBufMapped: String?
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
    private let imports: DmaBufImports
    /// Made when the first YUV picture comes.
    private var yuvPass: YUVPicturePass?
    private var picturesDrawn: UInt64 = 0
    /// Whether the colour texture is sampled with red and blue swapped (BGRA pixels).
    private var swapsRedAndBlue = false
    /// Whether the framebuffer's rows run bottom first (GL's own orientation, as a draw leaves
    /// them) rather than top first (pixels).
    private var targetBottomFirst = true
    /// The imported dma-buf the picture is converted from instead of the framebuffer, and
    /// whether its rows run bottom first.
    private var importedSource: (texture: GLuint, bottomFirst: Bool)?
    /// Why the last dma-buf was read through a mapping, if it was.
    private var mappedReason: String?

    isolated deinit {
        output.releaseImportedPlanes()
        imports.removeAll()
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
            imports = made.imports
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
        targetBottomFirst = true
        importedSource = nil
        imports.removeAll()
        Self.clear(target)
    }

    /// Draws or uploads `drawing`, converts the picture to NV12 and starts reading it back into
    /// `slot`; then, if asked, collects the picture an earlier visit read into the other slot.
    package func drawStreamFrame(_ drawing: EngineDrawing, fullRange: Bool, readbackSlot slot: Int,
                                 collecting previous: (slot: Int, frame: NV12Frame)?,
                                 resolutionScale: Double = 1) -> EngineStreamDraw {
        var draw = EngineStreamDraw()
        draw.error = render(drawing) { source, flipsRows throws(MapRenderError) in
            try output.convert(source: source, width: width, height: height, fullRange: fullRange,
                               flipsRows: flipsRows, slot: slot, resolutionScale: resolutionScale)
        }
        draw.dmaBufMapped = mappedReason
        if let previous { draw.collected = collectStreamFrame(slot: previous.slot, into: previous.frame) }
        return draw
    }

    /// The picture a draw started reading back into `slot`, copied into `frame`.
    package func collectStreamFrame(slot: Int, into frame: consuming NV12Frame) -> Result<NV12Frame, MapRenderError> {
        guard let filled = output.collect(slot: slot, into: frame) else { return .failure(.gl(.readbackUnavailable)) }
        return .success(filled)
    }

    /// Zero copy: draws or uploads `drawing` and converts it straight into the encoder's
    /// surface; its error, if any, says why the picture is not in the surface.
    package func drawStreamFrame(_ drawing: EngineDrawing, fullRange: Bool, into planes: DMABufPlanes,
                                 resolutionScale: Double = 1) -> EngineStreamDraw {
        var draw = EngineStreamDraw()
        draw.error = render(drawing) { source, flipsRows throws(MapRenderError) in
            try output.convert(source: source, width: width, height: height, fullRange: fullRange,
                               flipsRows: flipsRows, into: planes, resolutionScale: resolutionScale)
        }
        draw.dmaBufMapped = mappedReason
        return draw
    }

    /// Draws or uploads `drawing`, then has `convert` take the picture from the texture it is
    /// in, told whether its rows run bottom first (a GL draw) or top first (pixels); nil when
    /// both went well.
    private func render(_ drawing: EngineDrawing,
                        thenConvert convert: (_ source: GLuint, _ flipsRows: Bool) throws(MapRenderError) -> Void)
        -> EngineContentError? {
        do throws(EngineContentError) {
            try render(drawing)
            do {
                if let importedSource {
                    try convert(importedSource.texture, importedSource.bottomFirst)
                } else {
                    try convert(target.color.name, targetBottomFirst)
                }
            } catch {
                throw .output(error)
            }
            return nil
        } catch {
            return error
        }
    }

    /// The picture in the framebuffer as RGBA, top row first (not an imported dma-buf's,
    /// which is converted from where it is).
    package func readPixels() -> RGBAImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        pixels.withUnsafeMutableBytes {
            glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), $0.baseAddress)
        }
        var image = RGBAImage(width: width, height: height, pixels: pixels)
        if targetBottomFirst { image = image.flippedVertically() }
        if swapsRedAndBlue { image = image.swappingRedAndBlue() }
        return image
    }

    private func render(_ drawing: EngineDrawing) throws(EngineContentError) {
        switch drawing {
        case .gl(let draw, let scale):
            picturesDrawn += 1
            showFramebuffer(bottomFirst: true, swapsRedAndBlue: false)
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
            let pass = try yuvPassIfNeeded(pixels.format)
            picturesDrawn += 1
            mappedReason = nil
            pixels.bytes.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                let layout = pixels.layout
                show(layout.format, pass: pass, first: PlaneRows(start: base, bytesPerRow: layout.bytesPerRow),
                     chroma: PlaneRows(start: base + layout.chromaOffset, bytesPerRow: layout.chromaBytesPerRow),
                     crPlane: layout.format == .i420 ? PlaneRows(start: base + layout.crOffset,
                                                                 bytesPerRow: layout.chromaBytesPerRow) : nil)
            }
        case .dmaBuf(let buffer):
            defer { buffer.closeDescriptors() }
            try buffer.validate(width: width, height: height)
            try show(buffer)
            picturesDrawn += 1
        case .samePixels:
            break
        }
    }

    /// Shows a dma-buf: imported, or read through a mapping where it cannot be.
    private func show(_ buffer: EngineDmaBuf) throws(EngineContentError) {
        let bottomFirst = buffer.firstRow == .bottom
        var refusal = "this display has no EGL_EXT_image_dma_buf_import"
        let format = buffer.pixelLayout.format
        let pass = try yuvPassIfNeeded(format)
        if imports.mayImport(buffer) {
            do throws(DMABufImportError) {
                let textures = try imports.textures(for: buffer)
                if let pass, let chroma = textures.second {
                    showFramebuffer(bottomFirst: bottomFirst, swapsRedAndBlue: false)
                    pass.draw(into: target, luma: textures.first, cb: chroma, cr: chroma, interleaved: true)
                } else {
                    importedSource = (textures.first, bottomFirst)
                }
                mappedReason = nil
                return
            } catch {
                refusal = error.description
            }
        } else if imports.canImport {
            refusal = "the driver refused an earlier buffer of this format and modifier"
        }
        do {
            try DmaBufMapping.withPlanes(of: buffer) { first, chroma in
                show(format, pass: pass, first: first, chroma: chroma ?? first, crPlane: nil)
            }
        } catch .dmaBufUnreadable(let reason) {
            throw .dmaBufUnreadable("EGL did not import it (\(refusal)), and \(reason)")
        }
        targetBottomFirst = bottomFirst
        mappedReason = refusal
    }

    /// Uploads a picture's planes from memory into the framebuffer (top row first).
    private func show(_ format: EnginePixels.Format, pass: YUVPicturePass?, first: PlaneRows, chroma: PlaneRows,
                      crPlane: PlaneRows?) {
        switch format {
        case .rgba, .bgra:
            showFramebuffer(bottomFirst: false, swapsRedAndBlue: format == .bgra)
            glBindTexture(GLenum(GL_TEXTURE_2D), target.color.name)
            glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 4)
            glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(first.bytesPerRow / 4))
            glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA),
                            GLenum(GL_UNSIGNED_BYTE), first.start)
            glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
            glBindTexture(GLenum(GL_TEXTURE_2D), 0)
        case .nv12, .i420:
            guard let pass else { return }
            showFramebuffer(bottomFirst: false, swapsRedAndBlue: false)
            pass.upload(width: width, height: height, luma: first, chroma: chroma, crPlane: format == .i420 ? crPlane : nil)
            pass.drawUploaded(into: target, interleaved: format == .nv12)
        }
    }

    /// The next picture is the framebuffer's, in the orientation and byte order given.
    private func showFramebuffer(bottomFirst: Bool, swapsRedAndBlue swaps: Bool) {
        importedSource = nil
        targetBottomFirst = bottomFirst
        setSwapsRedAndBlue(swaps)
    }

    /// The YUV pass, made the first time a YUV picture comes; nil for other formats.
    private func yuvPassIfNeeded(_ format: EnginePixels.Format) throws(EngineContentError) -> YUVPicturePass? {
        guard format.isPlanar else { return nil }
        if let yuvPass { return yuvPass }
        do {
            let made = try YUVPicturePass(binaries: context.programBinaries)
            yuvPass = made
            return made
        } catch {
            throw .output(.gl(error))
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
    func makeEngineTarget(width: Int, height: Int)
        -> sending Result<(target: GLRenderTarget, output: NV12Output, imports: DmaBufImports), MapRenderError> {
        guard width > 0, height > 0 else {
            return .failure(.invalidSize(width: width, height: height, reason: "each side must be at least 1"))
        }
        do {
            let target = try GLRenderTarget(width: width, height: height)
            EngineCanvas.clear(target)
            return .success((target, NV12Output(display: display, binaries: programBinaries), DmaBufImports(display: display, canImport: importsDmaBufs)))
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

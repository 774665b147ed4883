internal import CGLES
internal import CEGL
import Glibc
import CarWindowVideoCore

/// Where one plane's rows lie in memory.
struct PlaneRows {
    var start: UnsafeRawPointer
    var bytesPerRow: Int
}

/// An engine's NV12 or I420 picture turned into RGB in a canvas's framebuffer, from planes in
/// memory (uploaded as R8 textures) or imported from a dma-buf.
///
/// - Important: Render thread only; owned by an ``EngineCanvas``.
final class YUVPicturePass {
    private let luma = GLTexture()
    private let cb = GLTexture()
    private let cr = GLTexture()
    private let program: LinkedProgram<YUVUniforms>
    private let emptyVertexArray = GLVertexArray()

    init(binaries: ProgramBinaries?) throws(GLSetupError) {
        program = try LinkedProgram(vertex: "fullscreen.vert", fragment: "yuv_to_rgb.frag", attributes: [],
                                    binaries: binaries)
    }

    /// Uploads a `width` x `height` picture's planes: NV12 gives `chroma` its Cb, Cr pairs and
    /// no `crPlane`; I420 gives both.
    func upload(width: Int, height: Int, luma lumaRows: PlaneRows, chroma: PlaneRows, crPlane: PlaneRows?) {
        let chromaWidth = width / 2 + width % 2, chromaHeight = height / 2 + height % 2
        Self.upload(lumaRows, into: luma, width: width, height: height)
        Self.upload(chroma, into: cb, width: crPlane == nil ? 2 * chromaWidth : chromaWidth, height: chromaHeight)
        if let crPlane { Self.upload(crPlane, into: cr, width: chromaWidth, height: chromaHeight) }
    }

    /// Draws the planes uploaded last into `target`, as RGB, row for row.
    func drawUploaded(into target: GLRenderTarget, interleaved: Bool) {
        draw(into: target, luma: luma.name, cb: cb.name, cr: interleaved ? cb.name : cr.name, interleaved: interleaved)
    }

    /// Draws planes held in R8 textures (uploaded, or imported from a dma-buf) into `target`.
    func draw(into target: GLRenderTarget, luma lumaTexture: GLuint, cb cbTexture: GLuint, cr crTexture: GLuint,
              interleaved: Bool) {
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
        glViewport(0, 0, GLsizei(target.width), GLsizei(target.height))
        glDisable(GLenum(GL_BLEND))
        glDisable(GLenum(GL_DEPTH_TEST))
        glDisable(GLenum(GL_STENCIL_TEST))
        glDisable(GLenum(GL_CULL_FACE))
        glUseProgram(program.name)
        Self.bind(lumaTexture, unit: 0, to: program.uniforms.luma)
        Self.bind(cbTexture, unit: 1, to: program.uniforms.cb)
        Self.bind(crTexture, unit: 2, to: program.uniforms.cr)
        glUniform1i(program.uniforms.interleaved, interleaved ? 1 : 0)
        glBindVertexArray(emptyVertexArray.name)
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        glBindVertexArray(0)
        Self.bind(0, unit: 2, to: -1)
        Self.bind(0, unit: 1, to: -1)
        Self.bind(0, unit: 0, to: -1)
    }

    private static func bind(_ texture: GLuint, unit: Int32, to location: GLint) {
        glActiveTexture(GLenum(GL_TEXTURE0 + unit))
        glBindTexture(GLenum(GL_TEXTURE_2D), texture)
        if location >= 0 { glUniform1i(location, unit) }
    }

    private static func upload(_ rows: PlaneRows, into texture: GLTexture, width: Int, height: Int) {
        if texture.width != width || texture.height != height {
            texture.allocate(width: width, height: height, internalFormat: GLenum(GL_R8), format: GLenum(GL_RED),
                             type: GLenum(GL_UNSIGNED_BYTE), filter: GLenum(GL_NEAREST))
        }
        glBindTexture(GLenum(GL_TEXTURE_2D), texture.name)
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), GLint(rows.bytesPerRow))
        glTexSubImage2D(GLenum(GL_TEXTURE_2D), 0, 0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RED),
                        GLenum(GL_UNSIGNED_BYTE), rows.start)
        glPixelStorei(GLenum(GL_UNPACK_ROW_LENGTH), 0)
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 4)
        glBindTexture(GLenum(GL_TEXTURE_2D), 0)
    }
}

struct YUVUniforms: UniformLocations {
    let luma, cb, cr, interleaved: GLint
    init(of program: GLProgram) {
        luma = program.uniformLocation("u_luma_plane")
        cb = program.uniformLocation("u_cb_plane")
        cr = program.uniformLocation("u_cr_plane")
        interleaved = program.uniformLocation("u_interleaved")
    }
}

/// The engine's dma-bufs imported as EGL images, kept while the engine cycles through the same
/// few buffers (a swap chain), so a picture costs no import; the least recently shown is let go
/// when a new buffer comes and all places are taken.
///
/// - Important: Render thread only; owned by an ``EngineCanvas``, whose isolated deinit calls
///   ``removeAll()``.
final class DmaBufImports {
    /// A buffer is the same when its planes are the same kernel objects with the same layout.
    struct Key: Equatable {
        var format: EngineDmaBuf.Format
        var width: Int
        var height: Int
        var modifier: UInt64
        var plane: PlaneKey
        var chroma: PlaneKey?
    }

    struct PlaneKey: Equatable {
        var device: UInt64
        var inode: UInt64
        var offset: Int
        var bytesPerRow: Int
    }

    /// The textures a buffer was imported as: its pixels, or NV12's luma and chroma as R8.
    struct Textures {
        var first: GLuint
        var second: GLuint?
    }

    private struct Entry {
        var key: Key
        var first: DMABufTexture
        var second: DMABufTexture?
        var context: GLContextID
        var lastShown: UInt64
    }

    private static let places = 4
    private let display: EGLDisplayHandle
    /// Whether the display imports dma-bufs at all.
    let canImport: Bool
    private var entries: [Entry] = []
    private var shown: UInt64 = 0
    /// The format and modifier whose import the driver refused last: buffers like it are read
    /// through a mapping without asking again.
    private var refused: (format: EngineDmaBuf.Format, modifier: UInt64)?

    init(display: EGLDisplayHandle, canImport: Bool) {
        self.display = display
        self.canImport = canImport
        entries.reserveCapacity(Self.places)
    }

    /// Whether importing `buffer` is worth a try.
    func mayImport(_ buffer: EngineDmaBuf) -> Bool {
        guard canImport else { return false }
        guard let refused else { return true }
        return refused.format != buffer.format || refused.modifier != buffer.modifier
    }

    /// The textures of `buffer`, imported now or found among the buffers imported before.
    func textures(for buffer: EngineDmaBuf) throws(DMABufImportError) -> Textures {
        shown &+= 1
        let key = try Self.key(for: buffer)
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].lastShown = shown
            return Textures(first: entries[index].first.texture, second: entries[index].second?.texture)
        }
        if entries.count == Self.places, let oldest = entries.indices.min(by: { entries[$0].lastShown < entries[$1].lastShown }) {
            release(entries.remove(at: oldest))
        }
        do {
            let entry = try importing(buffer, key: key)
            entries.append(entry)
            return Textures(first: entry.first.texture, second: entry.second?.texture)
        } catch {
            refused = (buffer.format, buffer.modifier)
            throw error
        }
    }

    /// Lets go of every imported buffer (at a resize, and when the canvas goes).
    func removeAll() {
        for entry in entries { release(entry) }
        entries.removeAll(keepingCapacity: true)
    }

    private func importing(_ buffer: EngineDmaBuf, key: Key) throws(DMABufImportError) -> Entry {
        let first: DMABufTexture
        var second: DMABufTexture?
        switch buffer.format {
        case .nv12:
            // Two R8 images rather than one NV12 image: sampling stays plain texelFetch, with
            // no external-image sampler, and the chroma pairs are read as the uploads are.
            let chromaWidth = buffer.width / 2 + buffer.width % 2, chromaHeight = buffer.height / 2 + buffer.height % 2
            first = try DMABufImport.importPlane(
                DMABufPlane(drmFourCC: DRMFormat.r8, width: buffer.width, height: buffer.height,
                            fileDescriptor: buffer.plane.fileDescriptor, offset: buffer.plane.offset,
                            pitch: buffer.plane.bytesPerRow, modifier: buffer.modifier), display: display.raw)
            let chroma = buffer.chromaPlane ?? buffer.plane
            do {
                second = try DMABufImport.importPlane(
                    DMABufPlane(drmFourCC: DRMFormat.r8, width: 2 * chromaWidth, height: chromaHeight,
                                fileDescriptor: chroma.fileDescriptor, offset: chroma.offset, pitch: chroma.bytesPerRow,
                                modifier: buffer.modifier), display: display.raw)
            } catch {
                var texture = first.texture
                glDeleteTextures(1, &texture)
                DMABufImport.destroy(first.image, display: display.raw)
                throw error
            }
        default:
            first = try DMABufImport.importPlane(
                DMABufPlane(drmFourCC: buffer.format.drmFourCC, width: buffer.width, height: buffer.height,
                            fileDescriptor: buffer.plane.fileDescriptor, offset: buffer.plane.offset,
                            pitch: buffer.plane.bytesPerRow, modifier: buffer.modifier), display: display.raw)
        }
        let context = GLObjectLedger.made(.texture, count: second == nil ? 1 : 2)
        return Entry(key: key, first: first, second: second, context: context, lastShown: shown)
    }

    private func release(_ entry: Entry) {
        var textures = (entry.first.texture, entry.second?.texture ?? 0)
        let count: Int32 = entry.second == nil ? 1 : 2
        GLObjectLedger.release(.texture, count: Int(count), madeIn: entry.context) {
            withUnsafePointer(to: &textures) { $0.withMemoryRebound(to: GLuint.self, capacity: 2) { glDeleteTextures(count, $0) } }
        }
        DMABufImport.destroy(entry.first.image, display: display.raw)
        if let second = entry.second { DMABufImport.destroy(second.image, display: display.raw) }
    }

    private static func key(for buffer: EngineDmaBuf) throws(DMABufImportError) -> Key {
        func planeKey(_ plane: EngineDmaBuf.Plane) throws(DMABufImportError) -> PlaneKey {
            var status = stat()
            guard fstat(plane.fileDescriptor, &status) == 0 else { throw .imageCreationFailed(eglError: EGL_BAD_PARAMETER) }
            return PlaneKey(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), offset: plane.offset,
                            bytesPerRow: plane.bytesPerRow)
        }
        var key = Key(format: buffer.format, width: buffer.width, height: buffer.height, modifier: buffer.modifier,
                      plane: try planeKey(buffer.plane), chroma: nil)
        if let chroma = buffer.chromaPlane { key.chroma = try planeKey(chroma) }
        return key
    }
}

/// Reading a dma-buf with the CPU, where EGL cannot import it: a read-only mapping of each
/// plane's buffer, bracketed by DMA_BUF_IOCTL_SYNC so that the exporter's GPU work is finished
/// and caches are right. Only linear buffers (or those with the implicit layout, taken as
/// linear) read correctly this way.
enum DmaBufMapping {
    /// `DMA_BUF_IOCTL_SYNC`: _IOW('b', 0, struct dma_buf_sync { __u64 flags; }).
    private static let syncRequest: UInt = 0x4008_6200
    private static let syncRead: UInt64 = 1
    private static let syncEnd: UInt64 = 4

    /// Calls `body` with the rows of `buffer`'s planes, mapped; errors say why they cannot be.
    static func withPlanes<Result>(of buffer: EngineDmaBuf,
                                   _ body: (_ first: PlaneRows, _ chroma: PlaneRows?) -> Result) throws(EngineContentError) -> Result {
        guard buffer.modifier == 0 || buffer.modifier == DRMFormat.invalidModifier else {
            throw .dmaBufUnreadable("its modifier 0x\(String(buffer.modifier, radix: 16)) is a tiled layout a mapping cannot read")
        }
        let layout = buffer.pixelLayout
        let rowBytes = buffer.format == .nv12 ? buffer.width : 4 * buffer.width
        let firstEnd = buffer.plane.offset + buffer.plane.bytesPerRow * (buffer.height - 1) + rowBytes
        guard let chroma = buffer.chromaPlane else {
            return try mapped(buffer.plane.fileDescriptor, length: firstEnd) { base throws(EngineContentError) in
                body(PlaneRows(start: base + buffer.plane.offset, bytesPerRow: buffer.plane.bytesPerRow), nil)
            }
        }
        let chromaEnd = chroma.offset + chroma.bytesPerRow * (layout.chromaHeight - 1) + 2 * layout.chromaWidth
        if chroma.fileDescriptor == buffer.plane.fileDescriptor {
            return try mapped(chroma.fileDescriptor, length: max(firstEnd, chromaEnd)) { base throws(EngineContentError) in
                body(PlaneRows(start: base + buffer.plane.offset, bytesPerRow: buffer.plane.bytesPerRow),
                     PlaneRows(start: base + chroma.offset, bytesPerRow: chroma.bytesPerRow))
            }
        }
        return try mapped(buffer.plane.fileDescriptor, length: firstEnd) { first throws(EngineContentError) in
            try mapped(chroma.fileDescriptor, length: chromaEnd) { second throws(EngineContentError) in
                body(PlaneRows(start: first + buffer.plane.offset, bytesPerRow: buffer.plane.bytesPerRow),
                     PlaneRows(start: second + chroma.offset, bytesPerRow: chroma.bytesPerRow))
            }
        }
    }

    private static func mapped<Result>(_ descriptor: Int32, length: Int,
                                       _ body: (UnsafeRawPointer) throws(EngineContentError) -> Result) throws(EngineContentError) -> Result {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw .dmaBufUnreadable("its file descriptor cannot be examined (errno \(errno))")
        }
        guard Int(status.st_size) >= length else { throw .bufferTooShort(bytes: Int(status.st_size), needed: length) }
        guard let base = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, 0), base != MAP_FAILED else {
            throw .dmaBufUnreadable("it cannot be mapped (errno \(errno))")
        }
        defer { munmap(base, length) }
        // Not a dma-buf (a memfd, say) answers ENOTTY: there is nothing to wait for then.
        var sync = syncRead
        _ = ioctl(descriptor, syncRequest, &sync)
        defer {
            var done = syncRead | syncEnd
            _ = ioctl(descriptor, syncRequest, &done)
        }
        return try body(UnsafeRawPointer(base))
    }
}

extension EngineDmaBuf {
    /// The same buffer with its own duplicates of the descriptors (one per distinct
    /// descriptor), for a session to keep after the engine closes its own.
    package func duplicatingDescriptors() throws(EngineContentError) -> EngineDmaBuf {
        var copy = self
        copy.plane.fileDescriptor = try Self.duplicate(plane.fileDescriptor, "plane 0")
        if let chroma = chromaPlane {
            if chroma.fileDescriptor == plane.fileDescriptor {
                copy.chromaPlane?.fileDescriptor = copy.plane.fileDescriptor
            } else {
                do {
                    copy.chromaPlane?.fileDescriptor = try Self.duplicate(chroma.fileDescriptor, "plane 1")
                } catch {
                    close(copy.plane.fileDescriptor)
                    throw error
                }
            }
        }
        return copy
    }

    /// Closes each descriptor once (planes may share one).
    package func closeDescriptors() {
        close(plane.fileDescriptor)
        if let chroma = chromaPlane, chroma.fileDescriptor != plane.fileDescriptor { close(chroma.fileDescriptor) }
    }

    private static func duplicate(_ descriptor: Int32, _ name: StaticString) throws(EngineContentError) -> Int32 {
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw .dmaBufPlanes("\(name): file descriptor \(descriptor) is not open (errno \(errno))")
        }
        return copy
    }
}

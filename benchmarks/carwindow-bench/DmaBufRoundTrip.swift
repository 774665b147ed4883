import CarWindow
import CEGL
import CGLES
import CarWindowSystemSupport
import Foundation

/// A dma-buf round trip on the machine's own driver: GL draws four coloured quadrants into a
/// texture, EGL exports it (`EGL_MESA_image_dma_buf_export`) as an engine would from its own
/// context, and an engine canvas takes the buffer as `EngineDrawing.dmaBuf`: imported, or read
/// through a mapping where the display cannot import it. The NV12 picture it converts is
/// checked at each quadrant's centre, then the same buffer is handed over again and again (a
/// swap chain's steady state, the import kept) and timed.
struct DmaBufRoundTrip {
    /// What the exporter gave, with the descriptors the bench owns.
    struct Exported: Sendable {
        var buffer: EngineDmaBuf
        var fourCC: String
        /// The texture or renderbuffer the picture was drawn into, and how it was made; nil
        /// for a buffer of system memory.
        var name: UInt32 = 0
        var madeWith: ExportSource?
        /// Frees memory the buffer was exported from outside GL (CUDA's).
        var releaseMemory: (@Sendable () -> Void)?
    }

    struct Outcome {
        var exported: String
        /// "imported" or "mapped: why".
        var path: String
        /// The largest difference of Y, Cb or Cr from the quadrants' own, at their centres.
        var largestDifference: Int
        var milliseconds: Double
    }

    static let quadrants: [SIMD3<Double>] = [[220, 30, 30], [30, 200, 40], [30, 40, 210], [235, 235, 235]]

    /// Runs the round trip at `size`; throws a `BenchError` saying why it cannot (no export).
    static func run(_ context: RenderContext, size: FrameSize, pictures: Int) async throws -> Outcome {
        let scratch = try await EngineCanvas(context: context, width: size.width, height: size.height)
        let exported = LockedState<Result<Exported, BenchError>?>(nil)
        let draw: EngineGLDraw = { frame in exported.withLock { $0 = exportQuadrants(width: frame.width, height: frame.height) } }
        _ = await scratch.drawStreamFrame(.gl(draw, scale: 1), fullRange: false, readbackSlot: 0, collecting: nil)
        guard let made = exported.withLock({ $0 }) else { throw BenchError("dma-buf export: the draw did not run") }
        let export: Exported
        switch made {
        case .success(let fromGL):
            export = fromGL
        case .failure(let glRefusal):
            // No GL export: CUDA's export of device memory (NVIDIA), then a dma-buf of system
            // memory from the kernel's udmabuf device, still run the import (or the mapping
            // with the real sync ioctl).
            switch exportCUDA(width: size.width, height: size.height) {
            case .success(let fromCUDA):
                export = fromCUDA
            case .failure(let cudaRefusal):
                switch exportUdmabuf(width: size.width, height: size.height) {
                case .success(let fromMemory): export = fromMemory
                case .failure(let memoryRefusal):
                    throw BenchError("\(glRefusal.description); \(cudaRefusal.description); \(memoryRefusal.description)")
                }
            }
        }
        var outcome: Outcome?
        var failure: (any Error)?
        do {
            outcome = try await show(export, context: context, size: size, pictures: pictures)
        } catch {
            failure = error
        }
        // A linear buffer the driver would not import may be taken with the layout left
        // implicit, as some drivers want for memory they did not allocate for scan-out.
        if export.buffer.modifier == 0, outcome?.path.hasPrefix("imported") != true {
            var implicit = export
            implicit.buffer.modifier = DRMFormat.invalidModifier
            do {
                var second = try await show(implicit, context: context, size: size, pictures: pictures)
                second.path += " (with the modifier left implicit; as linear: \(outcome?.path ?? "\(failure.map { "\($0)" } ?? "")"))"
                outcome = second
                failure = nil
            } catch {
                failure = BenchError("\(failure.map { "\($0)" } ?? outcome?.path ?? ""); with the modifier left implicit: \(error)")
            }
        }
        export.buffer.closeDescriptors()
        export.releaseMemory?()
        if let way = export.madeWith {
            let name = export.name
            let release: EngineGLDraw = { _ in delete(way, name) }
            _ = await scratch.drawStreamFrame(.gl(release, scale: 1), fullRange: false, readbackSlot: 1, collecting: nil)
        }
        if let failure { throw failure }
        guard let outcome else { throw BenchError("dma-buf round trip: no outcome") }
        return outcome
    }

    /// Hands the exported buffer to a canvas: once to check the picture, then `pictures` times.
    private static func show(_ export: Exported, context: RenderContext, size: FrameSize, pictures: Int) async throws -> Outcome {
        let canvas = try await EngineCanvas(context: context, width: size.width, height: size.height)
        var frame = NV12Frame(width: size.width, height: size.height, fullRange: false)
        var path = "imported"
        func show() async throws -> Double {
            let buffer: EngineDmaBuf
            do {
                buffer = try export.buffer.duplicatingDescriptors()
            } catch {
                throw BenchError("dma-buf: \(error)")
            }
            let start = DispatchTime.now().uptimeNanoseconds
            let drawn = await canvas.drawStreamFrame(.dmaBuf(buffer), fullRange: false, readbackSlot: 0, collecting: (0, frame))
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            if let error = drawn.error { throw BenchError("dma-buf \(export.fourCC): \(error)") }
            if let mapped = drawn.dmaBufMapped { path = "mapped: \(mapped)" }
            if case .success(let collected)? = drawn.collected { frame = collected }
            return elapsed
        }
        _ = try await show()
        let difference = largestDifference(frame)
        var times: [Double] = []
        for _ in 0..<pictures { times.append(try await show()) }
        return Outcome(exported: "\(export.fourCC), modifier 0x\(String(export.buffer.modifier, radix: 16)), "
                           + "pitch \(export.buffer.plane.bytesPerRow)",
                       path: path, largestDifference: difference, milliseconds: Summary(times).p50)
    }

    /// The largest difference from the quadrants' BT.601 limited-range values at their centres.
    private static func largestDifference(_ frame: NV12Frame) -> Int {
        let w = frame.width, h = frame.height
        let centres = [(w / 4, h / 4), (3 * w / 4, h / 4), (w / 4, 3 * h / 4), (3 * w / 4, 3 * h / 4)]
        var largest = 0
        for (colour, (x, y)) in zip(quadrants, centres) {
            let r = colour.x, g = colour.y, b = colour.z
            let expected = [16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
                            128 + (-37.797 * r - 74.203 * g + 112 * b) / 255,
                            128 + (112 * r - 93.786 * g - 18.214 * b) / 255]
            let chroma = (y / 2) * frame.codedWidth + (x / 2) * 2
            let found = [frame.luma[y * frame.codedWidth + x], frame.chroma[chroma], frame.chroma[chroma + 1]]
            for (value, wanted) in zip(found, expected) { largest = max(largest, abs(Int(value) - Int(wanted.rounded()))) }
        }
        return largest
    }

    /// On the render thread, with the context current: draws the quadrants into a new texture
    /// and exports it.
    private static func exportQuadrants(width: Int, height: Int) -> Result<Exported, BenchError> {
        guard let display = eglGetCurrentDisplay(), let eglContext = eglGetCurrentContext() else {
            return .failure(BenchError("no current EGL context"))
        }
        let extensions = Set((eglQueryString(display, EGL_EXTENSIONS).map { String(cString: $0) } ?? "").split(separator: " ").map(String.init))
        for needed in ["EGL_MESA_image_dma_buf_export", "EGL_KHR_gl_texture_2D_image"] where !extensions.contains(needed) {
            return .failure(BenchError("this display has no \(needed): nothing exports dma-bufs here"))
        }
        typealias CreateImage = @convention(c) (EGLDisplay?, EGLContext?, EGLenum, EGLClientBuffer?, UnsafePointer<EGLint>?) -> EGLImageKHR?
        typealias Query = @convention(c) (EGLDisplay?, EGLImageKHR?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?,
                                          UnsafeMutablePointer<UInt64>?) -> EGLBoolean
        typealias Export = @convention(c) (EGLDisplay?, EGLImageKHR?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<EGLint>?,
                                           UnsafeMutablePointer<EGLint>?) -> EGLBoolean
        typealias DestroyImage = @convention(c) (EGLDisplay?, EGLImageKHR?) -> EGLBoolean
        guard let createAddress = eglGetProcAddress("eglCreateImageKHR"),
              let queryAddress = eglGetProcAddress("eglExportDMABUFImageQueryMESA"),
              let exportAddress = eglGetProcAddress("eglExportDMABUFImageMESA"),
              let destroyAddress = eglGetProcAddress("eglDestroyImageKHR") else {
            return .failure(BenchError("the EGL export entry points are missing"))
        }

        // Drivers differ in what they export; each way is tried in turn and each refusal kept.
        var refusals: [String] = []
        for way in ExportSource.allCases {
            let name = makeQuadrants(way, width: width, height: height)
            let target = way == .renderbuffer ? EGL_GL_RENDERBUFFER_KHR : EGL_GL_TEXTURE_2D_KHR
            let attributes: [EGLint] = [EGL_NONE]
            guard let image = unsafeBitCast(createAddress, to: CreateImage.self)(
                display, eglContext, EGLenum(target), EGLClientBuffer(bitPattern: UInt(name)), attributes) else {
                refusals.append("\(way.rawValue): eglCreateImageKHR failed with EGL error 0x\(String(eglGetError(), radix: 16))")
                delete(way, name)
                continue
            }
            defer { _ = unsafeBitCast(destroyAddress, to: DestroyImage.self)(display, image) }
            var fourCC: Int32 = 0, planes: Int32 = 0
            var modifiers = [UInt64](repeating: 0, count: 4)
            guard unsafeBitCast(queryAddress, to: Query.self)(display, image, &fourCC, &planes, &modifiers) == EGL_TRUE else {
                refusals.append("\(way.rawValue): eglExportDMABUFImageQueryMESA failed with EGL error 0x\(String(eglGetError(), radix: 16))")
                delete(way, name)
                continue
            }
            let code = UInt32(bitPattern: fourCC)
            let fourCCName = String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: code >> (8 * $0)) }, as: UTF8.self)
            let queried = "'\(fourCCName)', \(planes) plane(s), modifier 0x\(String(modifiers[0], radix: 16))"
            var descriptors = [Int32](repeating: -1, count: 4)
            var strides = [EGLint](repeating: 0, count: 4), offsets = [EGLint](repeating: 0, count: 4)
            let exported = unsafeBitCast(exportAddress, to: Export.self)(display, image, &descriptors, &strides, &offsets) == EGL_TRUE
            let error = eglGetError()
            guard exported, planes == 1, descriptors[0] >= 0, let format = EngineDmaBuf.Format(drmFourCC: code) else {
                for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
                refusals.append("\(way.rawValue): queried \(queried); "
                                + (exported ? "a layout the canvas does not take" : "eglExportDMABUFImageMESA failed with EGL error 0x\(String(error, radix: 16))"))
                delete(way, name)
                continue
            }
            let buffer = EngineDmaBuf(format: format, width: width, height: height,
                                      plane: .init(fileDescriptor: descriptors[0], offset: Int(offsets[0]), bytesPerRow: Int(strides[0])),
                                      modifier: modifiers[0], firstRow: .bottom)
            return .success(Exported(buffer: buffer, fourCC: "\(fourCCName) from a \(way.rawValue)", name: name, madeWith: way))
        }
        return .failure(BenchError("no way of exporting worked: " + refusals.joined(separator: "; ")))
    }

    /// What the exported picture is drawn into.
    enum ExportSource: String, CaseIterable {
        case textureStorage = "texture (glTexStorage2D)"
        case textureImage = "texture (glTexImage2D)"
        case renderbuffer = "renderbuffer"
    }

    /// Draws the quadrants into a new GL object made `way`, bottom row first, and finishes.
    private static func makeQuadrants(_ way: ExportSource, width: Int, height: Int) -> GLuint {
        var name: GLuint = 0, framebuffer: GLuint = 0
        glGenFramebuffers(1, &framebuffer)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
        switch way {
        case .textureStorage, .textureImage:
            glGenTextures(1, &name)
            glBindTexture(GLenum(GL_TEXTURE_2D), name)
            if way == .textureStorage {
                glTexStorage2D(GLenum(GL_TEXTURE_2D), 1, GLenum(GL_RGBA8), GLsizei(width), GLsizei(height))
            } else {
                glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(width), GLsizei(height), 0, GLenum(GL_RGBA),
                             GLenum(GL_UNSIGNED_BYTE), nil)
                glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_NEAREST)
            }
            glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), name, 0)
            glBindTexture(GLenum(GL_TEXTURE_2D), 0)
        case .renderbuffer:
            glGenRenderbuffers(1, &name)
            glBindRenderbuffer(GLenum(GL_RENDERBUFFER), name)
            glRenderbufferStorage(GLenum(GL_RENDERBUFFER), GLenum(GL_RGBA8), GLsizei(width), GLsizei(height))
            glFramebufferRenderbuffer(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_RENDERBUFFER), name)
            glBindRenderbuffer(GLenum(GL_RENDERBUFFER), 0)
        }
        glViewport(0, 0, GLsizei(width), GLsizei(height))
        glEnable(GLenum(GL_SCISSOR_TEST))
        let halfWidth = GLsizei(width / 2), halfHeight = GLsizei(height / 2)
        // GL's rows run up: the top quadrants start at half the height; the buffer is bottom first.
        let origins: [(GLint, GLint)] = [(0, halfHeight), (halfWidth, halfHeight), (0, 0), (halfWidth, 0)]
        for (colour, origin) in zip(quadrants, origins) {
            glScissor(origin.0, origin.1, halfWidth, halfHeight)
            glClearColor(Float(colour.x / 255), Float(colour.y / 255), Float(colour.z / 255), 1)
            glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        }
        glDisable(GLenum(GL_SCISSOR_TEST))
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), 0)
        glDeleteFramebuffers(1, &framebuffer)
        glFinish()
        return name
    }

    /// Deletes what `makeQuadrants` made. Render thread.
    static func delete(_ way: ExportSource, _ name: GLuint) {
        var name = name
        if way == .renderbuffer { glDeleteRenderbuffers(1, &name) } else { glDeleteTextures(1, &name) }
    }

    /// The quadrants in a dma-buf of system memory: a sealed memfd handed to /dev/udmabuf.
    private static func exportUdmabuf(width: Int, height: Int) -> Result<Exported, BenchError> {
        typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>?, UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "memfd_create") else {
            return .failure(BenchError("no memfd_create for a udmabuf"))
        }
        let device = open("/dev/udmabuf", O_RDWR | O_CLOEXEC)
        guard device >= 0 else { return .failure(BenchError("no udmabuf either: /dev/udmabuf cannot be opened (errno \(errno))")) }
        defer { close(device) }
        let bytesPerRow = 4 * width
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let size = (bytesPerRow * height + pageSize - 1) / pageSize * pageSize
        // MFD_CLOEXEC | MFD_ALLOW_SEALING
        let memory = unsafeBitCast(symbol, to: MemfdCreate.self)("carwindow-bench-udmabuf", 0x0001 | 0x0002)
        guard memory >= 0 else { return .failure(BenchError("memfd_create failed (errno \(errno))")) }
        defer { close(memory) }
        let pixels = quadrantBytes(width: width, height: height, bytesPerRow: bytesPerRow, size: size)
        // F_ADD_SEALS with F_SEAL_SHRINK: udmabuf takes only memfds that cannot shrink.
        guard pixels.withUnsafeBytes({ write(memory, $0.baseAddress, size) }) == size,
              fcntl(memory, 1033, 0x0002) == 0 else {
            return .failure(BenchError("the memfd for a udmabuf could not be filled and sealed (errno \(errno))"))
        }
        // struct udmabuf_create { __u32 memfd; __u32 flags; __u64 offset; __u64 size; }, flags UDMABUF_FLAGS_CLOEXEC.
        var request: (UInt32, UInt32, UInt64, UInt64) = (UInt32(memory), 1, 0, UInt64(size))
        let buffer = ioctl(device, 0x4018_7542, &request)
        guard buffer >= 0 else { return .failure(BenchError("UDMABUF_CREATE failed (errno \(errno))")) }
        return .success(Exported(buffer: EngineDmaBuf(format: .abgr8888, width: width, height: height,
                                                      plane: .init(fileDescriptor: buffer, bytesPerRow: bytesPerRow),
                                                      modifier: 0, firstRow: .top),
                                 fourCC: "AB24 from udmabuf (system memory)"))
    }

    /// The quadrants in CUDA device memory exported as a dma-buf
    /// (`cuMemGetHandleForAddressRange`), as an engine that renders or decodes with CUDA would
    /// hand them over. libcuda comes with NVIDIA's driver; nothing here links it.
    private static func exportCUDA(width: Int, height: Int) -> Result<Exported, BenchError> {
        guard let cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) else {
            return .failure(BenchError("no CUDA export: libcuda.so.1 is not here"))
        }
        func function<T>(_ name: String, as type: T.Type) -> T? {
            dlsym(cuda, name).map { unsafeBitCast($0, to: type) }
        }
        typealias Initialise = @convention(c) (UInt32) -> Int32
        typealias DeviceGet = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
        typealias PrimaryRetain = @convention(c) (UnsafeMutablePointer<OpaquePointer?>, Int32) -> Int32
        typealias SetCurrent = @convention(c) (OpaquePointer?) -> Int32
        typealias Allocate = @convention(c) (UnsafeMutablePointer<UInt64>, Int) -> Int32
        typealias CopyIn = @convention(c) (UInt64, UnsafeRawPointer, Int) -> Int32
        typealias Handle = @convention(c) (UnsafeMutableRawPointer, UInt64, Int, Int32, UInt64) -> Int32
        typealias Free = @convention(c) (UInt64) -> Int32
        guard let initialise = function("cuInit", as: Initialise.self), let deviceGet = function("cuDeviceGet", as: DeviceGet.self),
              let retain = function("cuDevicePrimaryCtxRetain", as: PrimaryRetain.self),
              let setCurrent = function("cuCtxSetCurrent", as: SetCurrent.self),
              let allocate = function("cuMemAlloc_v2", as: Allocate.self), let copyIn = function("cuMemcpyHtoD_v2", as: CopyIn.self),
              let handle = function("cuMemGetHandleForAddressRange", as: Handle.self),
              let free = function("cuMemFree_v2", as: Free.self) else {
            return .failure(BenchError("no CUDA export: libcuda lacks cuMemGetHandleForAddressRange (CUDA 11.7 or later)"))
        }
        var device: Int32 = 0
        var context: OpaquePointer?
        var status = initialise(0)
        if status == 0 { status = deviceGet(&device, 0) }
        if status == 0 { status = retain(&context, device) }
        if status == 0 { status = setCurrent(context) }
        guard status == 0 else { return .failure(BenchError("no CUDA export: CUDA did not start (CUresult \(status))")) }
        // Rows on a 256-byte pitch and the range on 2 MiB, which the export asks of device memory.
        let bytesPerRow = (4 * width + 255) / 256 * 256
        let size = (bytesPerRow * height + (2 << 20) - 1) / (2 << 20) * (2 << 20)
        var memory: UInt64 = 0
        guard allocate(&memory, size) == 0 else { return .failure(BenchError("no CUDA export: cuMemAlloc failed")) }
        let pixels = quadrantBytes(width: width, height: height, bytesPerRow: bytesPerRow, size: size)
        status = pixels.withUnsafeBytes { copyIn(memory, $0.baseAddress!, size) }
        var descriptor: Int32 = -1
        // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1
        if status == 0 { status = handle(&descriptor, memory, size, 1, 0) }
        guard status == 0, descriptor >= 0 else {
            _ = free(memory)
            return .failure(BenchError("no CUDA export: cuMemGetHandleForAddressRange gave CUresult \(status)"))
        }
        let allocated = memory
        let release: @Sendable () -> Void = { _ = free(allocated) }
        return .success(Exported(buffer: EngineDmaBuf(format: .abgr8888, width: width, height: height,
                                                      plane: .init(fileDescriptor: descriptor, bytesPerRow: bytesPerRow),
                                                      modifier: 0, firstRow: .top),
                                 fourCC: "AB24 from CUDA device memory (linear, pitch \(bytesPerRow))", releaseMemory: release))
    }

    /// The quadrants as RGBA rows `bytesPerRow` apart, top row first, in `size` bytes (the rest zero).
    private static func quadrantBytes(width: Int, height: Int, bytesPerRow: Int, size: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: size)
        for y in 0..<height {
            for x in 0..<width {
                let colour = quadrants[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]
                let index = y * bytesPerRow + 4 * x
                (pixels[index], pixels[index + 1], pixels[index + 2], pixels[index + 3]) =
                    (UInt8(colour.x), UInt8(colour.y), UInt8(colour.z), 255)
            }
        }
        return pixels
    }
}

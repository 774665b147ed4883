internal import CEGL
internal import CGLES
import Logging
import CarWindowVideoCore

/// The render thread and its headless OpenGL ES context.
///
/// Every GL call of CarWindow runs inside this actor or inside an actor that shares its executor
/// (``MapRenderer``), so all of them run on the one thread that owns the context. Several maps,
/// of different sizes and styles, can share one context.
///
/// - Important: Thread-safe: it is an actor. Call ``shutdown()`` when done, so the context is
///   destroyed on its own thread and the thread ends.
public actor RenderContext {
    /// The thread every GL call runs on.
    package nonisolated let thread: RenderThread
    /// What the platform chain chose.
    public nonisolated let info: GLInfo
    /// The EGL display, for importing an encoder's dma-bufs (zero copy).
    nonisolated let display: EGLDisplayHandle
    /// Whether this context's EGL display imports dma-bufs (`EGL_EXT_image_dma_buf_import`):
    /// an engine's exported buffers are then converted with no copy; where not, linear buffers
    /// are read through a mapping, and an engine may as well hand over pixels.
    public nonisolated let importsDmaBufs: Bool
    /// The context every GL object of this render thread is made in.
    nonisolated let glContext: GLContextID
    /// Where programs linked on this context are kept for the next start; nil compiles them
    /// every time.
    nonisolated let programBinaries: ProgramBinaries?

    let egl: HeadlessEGL
    /// The same EGL objects, for the deinit alone, which hands them to the render thread: a
    /// deinit outside the actor cannot read `egl`, and an isolated one would have to reach the
    /// thread even when the context was shut down and the thread has ended.
    private nonisolated let eglForDeinit: RenderThreadHandOff<HeadlessEGL>
    let logger = Logger(label: "carwindow.gl")
    private var isShutDown = false

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        thread.asUnownedSerialExecutor()
    }

    /// Opens the first EGL platform that works (or the one `platform` or
    /// `CARWINDOW_EGL_PLATFORM` forces) and makes its context current on a new render thread.
    ///
    /// - Parameters:
    ///   - platform: The EGL platform to use instead of trying them in turn; nil tries GBM, an
    ///     EGL device, then surfaceless.
    ///   - programCache: Where linked GL programs are kept between starts, so the next start
    ///     links them from the driver's binaries instead of compiling its shaders;
    ///     ``ProgramBinaryCache/standard`` unless given (`CARWINDOW_PROGRAM_CACHE=off` turns it
    ///     off); nil compiles them at every start. A driver without program binaries ignores it.
    public init(platform: EGLPlatform? = nil, programCache: ProgramBinaryCache? = ProgramBinaryCache.standard)
        async throws(GLSetupError) {
        try await self.init(opening: platform, programCache: programCache)
    }

    // Why the public initializer only delegates: Swift 6.3.1 -O builds of any module that
    // inlines an allocation of this actor (an engine, the session, the benchmarks) crash with
    // "circular reference" while stack promotion asks for the isolation of its isolated deinit.
    // A private designated initializer keeps the allocation out of what other modules inline.
    private init(opening platform: EGLPlatform?, programCache: ProgramBinaryCache?) async throws(GLSetupError) {
        let forced = try HeadlessEGL.requestedPlatform(configured: platform)
        let egl = try HeadlessEGL(forced: forced)
        let thread = RenderThread()
        // Reading the GL strings needs the context current, which only the render thread may do.
        // The EGL objects are handed to that thread here and used nowhere else afterwards.
        nonisolated(unsafe) let handedOver = egl
        let opened: (info: GLInfo, binaryFormats: Int)? = await withCheckedContinuation { continuation in
            thread.enqueueTask {
                guard handedOver.makeCurrent() else { return continuation.resume(returning: nil) }
                var formats: GLint = 0
                glGetIntegerv(GLenum(GL_NUM_PROGRAM_BINARY_FORMATS), &formats)
                continuation.resume(returning: (GLInfo(
                    platform: handedOver.platform, device: handedOver.deviceName,
                    vendor: glString(GL_VENDOR), renderer: glString(GL_RENDERER), version: glString(GL_VERSION)),
                    Int(formats)))
            }
        }
        guard let (info, binaryFormats) = opened else {
            thread.stop()
            throw .noUsablePlatform(attempts: [PlatformAttempt(platform: egl.platform,
                                                               failure: "eglMakeCurrent without a surface failed")])
        }
        self.egl = egl
        eglForDeinit = RenderThreadHandOff(egl)
        self.thread = thread
        self.info = info
        programBinaries = binaryFormats > 0
            ? programCache.map { ProgramBinaries(cache: $0, driver: "\(info.vendor)\n\(info.renderer)\n\(info.version)") }
            : nil
        display = EGLDisplayHandle(raw: egl.display)
        importsDmaBufs = DMABufImport.displayImports(egl.display)
        glContext = GLContextID(raw: UInt(bitPattern: egl.context))
        GLObjectLedger.contextBegan(glContext)
    }

    /// A context dropped without ``shutdown()`` is destroyed on its render thread, which then
    /// ends. (It cannot be dropped while a renderer still uses it: renderers hold it.) A context
    /// that was shut down leaves nothing to do: no job may reach its ended thread then, since
    /// one would start a thread again while the process may be exiting.
    deinit {
        guard !isShutDown else { return }
        let handOff = eglForDeinit, context = glContext, thread = self.thread
        thread.enqueueTask {
            let egl = handOff.value
            glFinish()
            egl.releaseCurrent()
            GLObjectLedger.contextEnded(context)
            egl.destroy()
            thread.stop()
        }
    }

    /// Returns once every job queued on the render thread before the call has run: the
    /// isolated deinits of renderers released just before, say.
    package func waitForQueuedWork() {}

    /// Releases and destroys the context on the render thread and lets the thread end; the
    /// last context on the EGL display terminates it. When this returns, EGL is done with, so
    /// the process may exit at once. GL objects that maps still hold are freed with the
    /// context; maps released later delete nothing.
    public func shutdown() {
        if destroyContext() { thread.stop() }
    }

    /// The part of ``shutdown()`` on the render thread; false when it already ran.
    private func destroyContext() -> Bool {
        guard !isShutDown else { return false }
        isShutDown = true
        glFinish()
        egl.releaseCurrent()
        GLObjectLedger.contextEnded(glContext)
        egl.destroy()
        return true
    }

    /// The GL object names alive in this context, once the work already queued on the render
    /// thread (a released renderer's deinit, say) has run.
    package func liveGLObjects() -> GLObjectCensus {
        GLObjectLedger.census(of: glContext)
    }

    /// Releases of this context's GL objects that came on a thread where it was not current:
    /// names that could not be deleted. Zero unless an owner died off the render thread.
    package func strayGLReleases() -> Int {
        GLObjectLedger.strayReleases(of: glContext)
    }
}

/// A value handed to a render thread to be used there only (the context's EGL objects at
/// deinit): the type says it crosses threads once, by hand.
struct RenderThreadHandOff<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// An EGL display pointer that may be passed between the actors of one render thread.
struct EGLDisplayHandle: @unchecked Sendable {
    // Only used on the render thread; the pointer itself is an immutable handle.
    let raw: EGLDisplay
}

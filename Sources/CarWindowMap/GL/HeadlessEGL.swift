internal import CEGL
internal import CGBM
import Foundation
import CarWindowSystemSupport

/// The ways CarWindow can reach a GPU, or a software rasteriser, without a display.
public enum EGLPlatform: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A DRM render node (`/dev/dri/renderD*`) through GBM: Intel, AMD and other Mesa drivers.
    case gbm
    /// An EGL device from `EGL_EXT_platform_device`: how NVIDIA GPUs render headless.
    case device
    /// Mesa's surfaceless platform: llvmpipe on the CPU when no GPU is usable.
    case surfaceless

    /// The environment variable that forces one platform: `gbm`, `device` or `surfaceless`.
    public static let environmentVariable = "CARWINDOW_EGL_PLATFORM"

    public var description: String { rawValue }
}

/// Errors of headless EGL set-up.
public enum GLSetupError: Error, CustomStringConvertible, Equatable {
    /// No platform gave an OpenGL ES 3 context; each attempt and why it failed.
    case noUsablePlatform(attempts: [PlatformAttempt])
    /// `CARWINDOW_EGL_PLATFORM` held something other than gbm, device or surfaceless.
    case unknownPlatformName(String)
    /// No shader of this file name was embedded into the library: a shader file added without
    /// the build plugin running again.
    case shaderMissing(name: String)
    /// The GLSL compiler refused a shader; `log` is the driver's info log.
    case shaderCompilationFailed(file: String, log: String)
    /// Two compiled shaders did not link into a program; `log` is the driver's info log.
    case programLinkFailed(vertex: String, fragment: String, log: String)
    /// An offscreen target of this size cannot be made: each side must be 1...`maximum` pixels
    /// (`GL_MAX_RENDERBUFFER_SIZE`).
    case renderTargetSizeOutOfRange(width: Int, height: Int, maximum: Int)
    /// The framebuffer of an offscreen target is incomplete; `status` is what
    /// `glCheckFramebufferStatus` returned.
    case framebufferIncomplete(width: Int, height: Int, status: UInt32)
    /// A plane of the encoder's imported surface cannot be a framebuffer's colour attachment.
    case importedPlaneNotRenderable
    /// The pixel buffer holding a frame's NV12 readback could not be mapped.
    case readbackUnavailable

    public var description: String {
        switch self {
        case .noUsablePlatform(let attempts):
            let lines = attempts.map { "  - \($0.platform): \($0.failure)" }.joined(separator: "\n")
            return """
                no EGL platform gave an OpenGL ES 3 context. Tried:
                \(lines)
                Install Mesa's EGL and GLES drivers (apt-get install libegl1 libgles2 libegl-mesa0 \
                libgl1-mesa-dri), give the process access to /dev/dri/renderD*, or force a platform \
                with \(EGLPlatform.environmentVariable)=gbm|device|surfaceless.
                """
        case .unknownPlatformName(let name):
            return "\(EGLPlatform.environmentVariable)=\(name) is not a platform: use gbm, device or surfaceless."
        case .shaderMissing(let name):
            return "no shader named \(name) is embedded in the library; a shader file was added under shaders/ "
                + "without the build plugin running again: touch Package.swift and rebuild."
        case .shaderCompilationFailed(let file, let log):
            return "the GLSL compiler refused \(file): \(log). Check the shader with scripts/check-shaders.sh."
        case .programLinkFailed(let vertex, let fragment, let log):
            return "\(vertex) and \(fragment) did not link into a program: \(log). Check that their inputs and "
                + "outputs match (scripts/check-shaders.sh)."
        case .renderTargetSizeOutOfRange(let width, let height, let maximum):
            return "cannot make a \(width)x\(height) offscreen target: this GPU takes 1...\(maximum) pixels per side. "
                + "Choose a smaller size."
        case .framebufferIncomplete(let width, let height, let status):
            return "the \(width)x\(height) framebuffer is incomplete (glCheckFramebufferStatus 0x\(String(status, radix: 16))); "
                + "the driver cannot render to it: try another size or EGL platform (\(EGLPlatform.environmentVariable))."
        case .importedPlaneNotRenderable:
            return "a plane of the encoder's imported surface cannot be rendered to; the driver refuses it as a "
                + "framebuffer: encode with copies instead (another EGL platform than gbm, or the openh264 encoder)."
        case .readbackUnavailable:
            return "the NV12 readback buffer could not be mapped (the GL driver ran out of memory or lost the "
                + "context); the next frame tries again, and a session restarts the stream with an IDR."
        }
    }
}

/// One try of the platform chain and the reason it failed.
public struct PlatformAttempt: Sendable, Equatable, CustomStringConvertible {
    /// The platform that was tried.
    public var platform: EGLPlatform
    /// Why it could not be used.
    public var failure: String
    public var description: String { "\(platform): \(failure)" }
}

/// What the chosen platform turned out to be.
public struct GLInfo: Sendable, Equatable, CustomStringConvertible {
    /// The platform in use.
    public var platform: EGLPlatform
    /// The DRM node or EGL device that was used, when there was one.
    public var device: String?
    /// The driver's `GL_VENDOR` string.
    public var vendor: String
    /// The driver's `GL_RENDERER` string: the GPU or software rasteriser.
    public var renderer: String
    /// The driver's `GL_VERSION` string: the OpenGL ES version and driver release.
    public var version: String

    /// Whether the renderer is a CPU rasteriser (llvmpipe, softpipe, SwiftShader).
    public var isSoftwareRenderer: Bool {
        let name = renderer.lowercased()
        return ["llvmpipe", "softpipe", "swiftshader", "software"].contains { name.contains($0) }
    }

    public var description: String {
        "EGL platform \(platform)\(device.map { " (\($0))" } ?? ""): \(vendor), \(renderer), \(version)"
    }
}

/// An EGL display with an OpenGL ES 3 context and no surface: the start of every frame.
///
/// The chain follows kmscube's plain order: GBM on a render node, then an EGL device (hardware
/// before software), then Mesa's surfaceless platform. The context is current on no thread until
/// ``makeCurrent()`` is called on the thread that will own it.
final class HeadlessEGL {
    let display: EGLDisplay
    let context: EGLContext
    let platform: EGLPlatform
    let deviceName: String?
    private var gbmDevice: OpaquePointer?
    private var drmFileDescriptor: Int32 = -1
    private var isDestroyed = false

    /// Opens the first platform of the chain that gives a context, or the one `forced` names.
    init(forced: EGLPlatform?) throws(GLSetupError) {
        let order = forced.map { [$0] } ?? EGLPlatform.allCases
        var attempts: [PlatformAttempt] = []
        let extensions = Self.clientExtensions()
        for platform in order {
            do {
                let opened = try Self.open(platform, clientExtensions: extensions, allowSoftwareDevice: forced != nil)
                display = opened.display
                context = opened.context
                deviceName = opened.deviceName
                gbmDevice = opened.gbmDevice
                drmFileDescriptor = opened.fileDescriptor
                self.platform = platform
                return
            } catch {
                attempts.append(PlatformAttempt(platform: platform, failure: error.reason))
            }
        }
        throw .noUsablePlatform(attempts: attempts)
    }

    /// The platform the configuration or `CARWINDOW_EGL_PLATFORM` asks for, nil for the chain.
    static func requestedPlatform(configured: EGLPlatform?) throws(GLSetupError) -> EGLPlatform? {
        if let configured { return configured }
        guard let name = ProcessInfo.processInfo.environment[EGLPlatform.environmentVariable],
              !name.isEmpty else { return nil }
        guard let platform = EGLPlatform(rawValue: name.lowercased()) else {
            throw .unknownPlatformName(name)
        }
        return platform
    }

    func makeCurrent() -> Bool {
        eglMakeCurrent(display, nil, nil, context) == EGLBoolean(EGL_TRUE)
    }

    /// Unbinds the context from the calling thread, which must be the one it is current on.
    func releaseCurrent() {
        eglMakeCurrent(display, nil, nil, nil)
        eglReleaseThread()
    }

    /// Destroys the context and gives up the display; the last context on a display terminates
    /// it, which unloads the driver. The render thread calls this at shutdown, after releasing
    /// the context, so that all of it is over when `RenderContext.shutdown()` returns: a driver
    /// unloading later, on its own, would run its library destructors (`dlclose`) while the
    /// process may be in `exit`, running the same destructor list, and crash it.
    func destroy() {
        guard !isDestroyed else { return }
        isDestroyed = true
        eglDestroyContext(display, context)
        GLObjectLedger.contextDestroyed(GLContextID(raw: UInt(bitPattern: context)))
        EGLDisplayUse.end(display)
        if let gbmDevice { gbm_device_destroy(gbmDevice) }
        if drmFileDescriptor >= 0 { close(drmFileDescriptor) }
    }

    deinit {
        // Only a context that was never shut down gets here still open; it was released from
        // its thread, so destroying it is then safe from any thread.
        destroy()
    }

    // MARK: - The chain

    private struct Failure: Error { var reason: String }

    private struct Opened {
        var display: EGLDisplay
        var context: EGLContext
        var deviceName: String?
        var gbmDevice: OpaquePointer?
        var fileDescriptor: Int32 = -1
    }

    private static func clientExtensions() -> Set<String> {
        guard let string = eglQueryString(nil, EGL_EXTENSIONS) else { return [] }
        return Set(String(cString: string).split(separator: " ").map(String.init))
    }

    private static func open(_ platform: EGLPlatform, clientExtensions: Set<String>,
                             allowSoftwareDevice: Bool) throws(Failure) -> Opened {
        guard let getPlatformDisplay = EGLFunctions.getPlatformDisplay else {
            throw Failure(reason: "EGL lacks eglGetPlatformDisplayEXT (EGL_EXT_platform_base)")
        }
        switch platform {
        case .gbm:
            guard clientExtensions.contains("EGL_KHR_platform_gbm") || clientExtensions.contains("EGL_MESA_platform_gbm") else {
                throw Failure(reason: "EGL has no GBM platform (EGL_KHR_platform_gbm)")
            }
            let nodes = renderNodes()
            guard !nodes.isEmpty else { throw Failure(reason: "no /dev/dri/renderD* node") }
            var reasons: [String] = []
            for node in nodes {
                let fd = Foundation.open(node, O_RDWR | O_CLOEXEC)
                guard fd >= 0 else {
                    reasons.append("\(node): \(String(cString: strerror(errno)))")
                    continue
                }
                guard let device = gbm_create_device(fd) else {
                    close(fd)
                    reasons.append("\(node): gbm_create_device failed")
                    continue
                }
                do {
                    let display = getPlatformDisplay(EGLenum(EGL_PLATFORM_GBM_KHR), UnsafeMutableRawPointer(device), nil)
                    let context = try createContext(on: display)
                    return Opened(display: context.display, context: context.context, deviceName: node,
                                  gbmDevice: device, fileDescriptor: fd)
                } catch {
                    gbm_device_destroy(device)
                    close(fd)
                    reasons.append("\(node): \(error.reason)")
                }
            }
            throw Failure(reason: reasons.joined(separator: "; "))

        case .device:
            guard clientExtensions.contains("EGL_EXT_platform_device"),
                  let queryDevices = EGLFunctions.queryDevices else {
                throw Failure(reason: "EGL has no device platform (EGL_EXT_platform_device)")
            }
            var count: EGLint = 0
            guard queryDevices(0, nil, &count) == EGLBoolean(EGL_TRUE), count > 0 else {
                throw Failure(reason: "eglQueryDevicesEXT found no device")
            }
            var devices = [EGLDeviceEXT?](repeating: nil, count: Int(count))
            guard queryDevices(count, &devices, &count) == EGLBoolean(EGL_TRUE) else {
                throw Failure(reason: "eglQueryDevicesEXT failed (\(eglErrorName()))")
            }
            let described = devices.prefix(Int(count)).compactMap { $0 }.map(EGLDeviceDescription.init)
            // Hardware devices first: Mesa lists its software device too.
            let ordered = described.filter { !$0.isSoftware } + described.filter(\.isSoftware)
            var reasons: [String] = []
            for device in ordered {
                if device.isSoftware && !allowSoftwareDevice {
                    reasons.append("\(device.name) is a software device; the surfaceless platform covers it")
                    continue
                }
                do {
                    let display = getPlatformDisplay(EGLenum(EGL_PLATFORM_DEVICE_EXT), device.handle, nil)
                    let context = try createContext(on: display)
                    return Opened(display: context.display, context: context.context, deviceName: device.name)
                } catch {
                    reasons.append("\(device.name): \(error.reason)")
                }
            }
            throw Failure(reason: reasons.joined(separator: "; "))

        case .surfaceless:
            guard clientExtensions.contains("EGL_MESA_platform_surfaceless") else {
                throw Failure(reason: "EGL has no surfaceless platform (EGL_MESA_platform_surfaceless)")
            }
            let display = getPlatformDisplay(EGLenum(EGL_PLATFORM_SURFACELESS_MESA), nil, nil)
            let context = try createContext(on: display)
            return Opened(display: context.display, context: context.context)
        }
    }

    private static func renderNodes() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/dri")) ?? []
        return names.filter { $0.hasPrefix("renderD") }.sorted().map { "/dev/dri/\($0)" }
    }

    private static func createContext(on display: EGLDisplay?) throws(Failure) -> (display: EGLDisplay, context: EGLContext) {
        guard let display else { throw Failure(reason: "no display (\(eglErrorName()))") }
        var major: EGLint = 0, minor: EGLint = 0
        guard EGLDisplayUse.begin(display, major: &major, minor: &minor) else {
            throw Failure(reason: "eglInitialize failed (\(eglErrorName()))")
        }
        let displayExtensions = eglQueryString(display, EGL_EXTENSIONS).map { String(cString: $0) } ?? ""
        guard displayExtensions.contains("EGL_KHR_surfaceless_context") else {
            EGLDisplayUse.end(display)
            throw Failure(reason: "EGL \(major).\(minor) lacks EGL_KHR_surfaceless_context")
        }
        guard eglBindAPI(EGLenum(EGL_OPENGL_ES_API)) == EGLBoolean(EGL_TRUE) else {
            EGLDisplayUse.end(display)
            throw Failure(reason: "eglBindAPI(OpenGL ES) failed (\(eglErrorName()))")
        }
        // Without EGL_KHR_no_config_context a config is still needed, though no surface is made.
        var config: EGLConfig? = nil
        if !displayExtensions.contains("EGL_KHR_no_config_context") {
            let attributes: [EGLint] = [EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE]
            var found: EGLint = 0
            guard eglChooseConfig(display, attributes, &config, 1, &found) == EGLBoolean(EGL_TRUE), found > 0 else {
                EGLDisplayUse.end(display)
                throw Failure(reason: "no EGL config renders OpenGL ES 3")
            }
        }
        let contextAttributes: [EGLint] = [EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 0, EGL_NONE]
        guard let context = eglCreateContext(display, config, nil, contextAttributes) else {
            let reason = "eglCreateContext(OpenGL ES 3.0) failed (\(eglErrorName()))"
            EGLDisplayUse.end(display)
            throw Failure(reason: reason)
        }
        return (display, context)
    }
}

/// Counts the render contexts using each EGL display.
///
/// A platform display is one per process: every `RenderContext` on the surfaceless platform (or
/// on the same device) gets the same `EGLDisplay`, and `eglTerminate` ends it for all of them
/// (EGL 1.5 displays are not reference-counted). So a display is initialised by its first user
/// and terminated by its last; both happen under one lock, so a context being made never meets
/// a display another thread is terminating.
enum EGLDisplayUse {
    private static let users = LockedState<[UInt: Int]>([:])

    /// Initialises `display` if needed and counts one more user; false when eglInitialize failed.
    static func begin(_ display: EGLDisplay, major: inout EGLint, minor: inout EGLint) -> Bool {
        users.withLock { users in
            guard eglInitialize(display, &major, &minor) == EGLBoolean(EGL_TRUE) else { return false }
            users[UInt(bitPattern: display), default: 0] += 1
            return true
        }
    }

    /// The render contexts using `display` now.
    static func users(of display: EGLDisplay) -> Int {
        users.withLock { $0[UInt(bitPattern: display)] ?? 0 }
    }

    /// Counts one user less; the last one terminates the display.
    static func end(_ display: EGLDisplay) {
        users.withLock { users in
            let key = UInt(bitPattern: display)
            let remaining = (users[key] ?? 1) - 1
            users[key] = remaining > 0 ? remaining : nil
            if remaining <= 0 { eglTerminate(display) }
        }
    }
}

/// An EGL device with the name and kind it reports.
private struct EGLDeviceDescription {
    var handle: EGLDeviceEXT
    var name: String
    var isSoftware: Bool

    init(_ handle: EGLDeviceEXT) {
        self.handle = handle
        let query = EGLFunctions.queryDeviceString
        let extensions = query?(handle, EGL_EXTENSIONS).map { String(cString: $0) } ?? ""
        isSoftware = extensions.contains("EGL_MESA_device_software")
        let file = extensions.contains("EGL_EXT_device_drm")
            ? query?(handle, EGL_DRM_DEVICE_FILE_EXT).map { String(cString: $0) } : nil
        name = file ?? (isSoftware ? "software device" : "EGL device")
    }
}

/// Extension entry points, fetched once through eglGetProcAddress as kmscube does.
enum EGLFunctions {
    static let getPlatformDisplay: PFNEGLGETPLATFORMDISPLAYEXTPROC? = load("eglGetPlatformDisplayEXT")
    static let queryDevices: PFNEGLQUERYDEVICESEXTPROC? = load("eglQueryDevicesEXT")
    static let queryDeviceString: PFNEGLQUERYDEVICESTRINGEXTPROC? = load("eglQueryDeviceStringEXT")

    static func load<F>(_ name: String) -> F? {
        guard let pointer = eglGetProcAddress(name) else { return nil }
        return unsafeBitCast(pointer, to: F.self)
    }
}

/// The name of EGL's last error, for messages.
func eglErrorName() -> String {
    let code = eglGetError()
    let names: [EGLint: String] = [
        EGL_SUCCESS: "EGL_SUCCESS", EGL_NOT_INITIALIZED: "EGL_NOT_INITIALIZED", EGL_BAD_ACCESS: "EGL_BAD_ACCESS",
        EGL_BAD_ALLOC: "EGL_BAD_ALLOC", EGL_BAD_ATTRIBUTE: "EGL_BAD_ATTRIBUTE", EGL_BAD_CONFIG: "EGL_BAD_CONFIG",
        EGL_BAD_CONTEXT: "EGL_BAD_CONTEXT", EGL_BAD_DISPLAY: "EGL_BAD_DISPLAY", EGL_BAD_MATCH: "EGL_BAD_MATCH",
        EGL_BAD_PARAMETER: "EGL_BAD_PARAMETER", EGL_BAD_SURFACE: "EGL_BAD_SURFACE",
    ]
    return names[code] ?? String(format: "EGL error 0x%04X", code)
}

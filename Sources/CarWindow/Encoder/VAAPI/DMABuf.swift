import CEGL
import CGLES
import CVA
import Foundation

/// One plane of a DMA-BUF-backed picture, as EGL_EXT_image_dma_buf_import needs it.
public struct DMABufPlane: Sendable, Equatable {
    /// DRM fourcc of the plane: `R8` for luma, `GR88` for interleaved chroma.
    public var drmFourCC: UInt32
    /// Size of the plane in its own samples (chroma is half the luma size).
    public var width: Int
    public var height: Int
    /// The DMA-BUF file descriptor (possibly shared with the other plane).
    public var fileDescriptor: Int32
    public var offset: Int
    public var pitch: Int
    /// DRM format modifier (tiling); `DRMFormat.invalidModifier` when the layout is implicit.
    public var modifier: UInt64

    /// Describes one plane.
    public init(drmFourCC: UInt32, width: Int, height: Int, fileDescriptor: Int32, offset: Int, pitch: Int, modifier: UInt64) {
        self.drmFourCC = drmFourCC
        self.width = width
        self.height = height
        self.fileDescriptor = fileDescriptor
        self.offset = offset
        self.pitch = pitch
        self.modifier = modifier
    }
}

/// DRM format codes used here; drm_fourcc.h's macros do not import into Swift.
public enum DRMFormat {
    /// Makes a little-endian DRM fourcc.
    public static func fourCC(_ code: StaticString) -> UInt32 { VAFourCC.make(code) }
    /// One 8-bit channel: the luma plane.
    public static let r8 = fourCC("R8  ")
    /// Two 8-bit channels, red first in memory: the interleaved Cb, Cr plane.
    public static let gr88 = fourCC("GR88")
    /// `DRM_FORMAT_MOD_INVALID`: no modifier given.
    public static let invalidModifier: UInt64 = 0x00ff_ffff_ffff_ffff
}

/// The two planes of the encoder's NV12 input surface, exported for GL to render into.
///
/// The file descriptors belong to whoever holds this value; close them with
/// `closeFileDescriptors()` after importing (EGL keeps its own reference).
public struct DMABufPlanes: Sendable, Equatable {
    /// Luma (R8, full size).
    public var luma: DMABufPlane
    /// Chroma (GR88, half size).
    public var chroma: DMABufPlane
    /// Each exported descriptor once (the planes may share one).
    public var fileDescriptors: [Int32]

    /// Closes every exported descriptor once.
    public func closeFileDescriptors() {
        for descriptor in fileDescriptors { close(descriptor) }
    }

    /// Reads a `vaExportSurfaceHandle` result (separate layers); closes its descriptors and
    /// throws when it is not a two-layer R8 + GR88 export.
    init(descriptor: VADRMPRIMESurfaceDescriptor) throws(EncoderError) {
        var descriptor = descriptor
        // A Result, not a typed-throws closure: those crash Swift 6.3's IR generation here.
        let result = withUnsafeBytes(of: &descriptor) { raw -> Result<DMABufPlanes, EncoderError> in
            do throws(EncoderError) {
                return .success(try DMABufPlanes(descriptorBytes: raw))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Byte offsets inside `VADRMPRIMESurfaceDescriptor`: Swift cannot import its arrays of
    /// anonymous structs, so they are read by offset (checked against the C compiler in tests).
    enum DescriptorLayout {
        static let width = 4, height = 8, objectCount = 12
        static let objects = 16, objectStride = 16, objectModifier = 8
        static let layerCount = 80, layers = 84, layerStride = 56
        static let layerObjectIndex = 8, layerOffset = 24, layerPitch = 40
        static let size = 312
    }

    /// Reads the descriptor from its bytes.
    init(descriptorBytes raw: UnsafeRawBufferPointer) throws(EncoderError) {
        typealias Layout = DescriptorLayout
        guard raw.count >= Layout.size else {
            throw .backendUnavailable(.vaapi, "the surface descriptor is \(raw.count) bytes, expected \(Layout.size)")
        }
        func word(_ offset: Int) -> UInt32 { raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        let objectCount = min(Int(word(Layout.objectCount)), 4)
        let objects: [(fd: Int32, modifier: UInt64)] = (0..<objectCount).map { index in
            let base = Layout.objects + index * Layout.objectStride
            return (raw.loadUnaligned(fromByteOffset: base, as: Int32.self),
                    raw.loadUnaligned(fromByteOffset: base + Layout.objectModifier, as: UInt64.self))
        }
        let exported = Array(Set(objects.map(\.fd))).sorted()
        let layerCount = Int(word(Layout.layerCount))
        let width = Int(word(Layout.width)), height = Int(word(Layout.height))
        func plane(_ index: Int, format: UInt32, divisor: Int) -> DMABufPlane? {
            guard index < min(layerCount, 4) else { return nil }
            let base = Layout.layers + index * Layout.layerStride
            guard word(base) == format, word(base + 4) == 1 else { return nil }
            let objectIndex = Int(word(base + Layout.layerObjectIndex))
            guard objectIndex < objects.count else { return nil }
            return DMABufPlane(drmFourCC: format, width: width / divisor, height: height / divisor,
                               fileDescriptor: objects[objectIndex].fd, offset: Int(word(base + Layout.layerOffset)),
                               pitch: Int(word(base + Layout.layerPitch)), modifier: objects[objectIndex].modifier)
        }
        guard layerCount == 2, let luma = plane(0, format: DRMFormat.r8, divisor: 1),
              let chroma = plane(1, format: DRMFormat.gr88, divisor: 2) else {
            for descriptor in exported where descriptor >= 0 { close(descriptor) }
            let formats = (0..<min(layerCount, 4)).map { String(word(Layout.layers + $0 * Layout.layerStride), radix: 16) }
            throw .backendUnavailable(.vaapi, "the exported surface is not two layers R8 + GR88 (\(layerCount) layers, fourccs \(formats)); zero copy is off, upload frames instead")
        }
        self.luma = luma
        self.chroma = chroma
        fileDescriptors = exported
    }
}

/// Why a DMA-BUF plane could not become a GL texture.
public enum DMABufImportError: Error, Equatable, CustomStringConvertible {
    /// The EGL display or GL context lacks a needed extension or entry point.
    case extensionMissing(String)
    /// eglCreateImageKHR refused the plane; `eglError` is eglGetError().
    case imageCreationFailed(eglError: Int32)
    /// glEGLImageTargetTexture2DOES failed; `glError` is glGetError().
    case textureBindingFailed(glError: UInt32)

    public var description: String {
        switch self {
        case .extensionMissing(let name):
            "\(name) is missing: zero-copy encoding needs EGL on GBM with DMA-BUF import; the copying path still works"
        case .imageCreationFailed(let error):
            "eglCreateImageKHR failed with EGL error 0x\(String(error, radix: 16)); check the plane's fd, fourcc, pitch and modifier"
        case .textureBindingFailed(let error):
            "glEGLImageTargetTexture2DOES failed with GL error 0x\(String(error, radix: 16)); is a GLES context current?"
        }
    }
}

/// A plane imported into GL: the texture to attach to a framebuffer, and the image behind it.
public struct DMABufTexture {
    /// GL texture name, bound to the image; render into it through an FBO.
    public var texture: GLuint
    /// The EGL image; destroy it with `DMABufImport.destroy(_:display:)` after deleting the texture.
    public var image: EGLImageKHR
}

/// Imports DMA-BUF planes (such as the encoder's exported surface) as GL textures.
public enum DMABufImport {
    /// The EGL attribute list for one plane: size, fourcc, fd, offset, pitch, and the modifier
    /// split into halves unless it is `DRM_FORMAT_MOD_INVALID`.
    public static func attributes(for plane: DMABufPlane) -> [EGLint] {
        var list: [EGLint] = [
            EGL_WIDTH, EGLint(clamping: plane.width),
            EGL_HEIGHT, EGLint(clamping: plane.height),
            EGL_LINUX_DRM_FOURCC_EXT, EGLint(bitPattern: plane.drmFourCC),
            EGL_DMA_BUF_PLANE0_FD_EXT, plane.fileDescriptor,
            EGL_DMA_BUF_PLANE0_OFFSET_EXT, EGLint(clamping: plane.offset),
            EGL_DMA_BUF_PLANE0_PITCH_EXT, EGLint(clamping: plane.pitch),
        ]
        if plane.modifier != DRMFormat.invalidModifier {
            list += [EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, EGLint(bitPattern: UInt32(truncatingIfNeeded: plane.modifier)),
                     EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, EGLint(bitPattern: UInt32(truncatingIfNeeded: plane.modifier >> 32))]
        }
        return list + [EGL_NONE]
    }

    /// Creates an EGL image from `plane` and binds it to a new GL texture.
    ///
    /// Needs a current GLES context on `display` and the EGL_EXT_image_dma_buf_import extension
    /// (plus _modifiers when the plane has a modifier).
    public static func importPlane(_ plane: DMABufPlane, display: EGLDisplay) throws(DMABufImportError) -> DMABufTexture {
        let extensions = eglQueryString(display, EGL_EXTENSIONS).map { String(cString: $0) } ?? ""
        let names = Set(extensions.split(separator: " ").map(String.init))
        guard names.contains("EGL_EXT_image_dma_buf_import") else {
            throw .extensionMissing("EGL_EXT_image_dma_buf_import")
        }
        if plane.modifier != DRMFormat.invalidModifier, !names.contains("EGL_EXT_image_dma_buf_import_modifiers") {
            throw .extensionMissing("EGL_EXT_image_dma_buf_import_modifiers")
        }
        guard let createAddress = eglGetProcAddress("eglCreateImageKHR") else {
            throw .extensionMissing("eglCreateImageKHR")
        }
        guard let targetAddress = eglGetProcAddress("glEGLImageTargetTexture2DOES") else {
            throw .extensionMissing("glEGLImageTargetTexture2DOES")
        }
        typealias CreateImage = @convention(c) (EGLDisplay?, EGLContext?, EGLenum, EGLClientBuffer?, UnsafePointer<EGLint>?) -> EGLImageKHR?
        typealias TargetTexture = @convention(c) (GLenum, GLeglImageOES?) -> Void
        let createImage = unsafeBitCast(createAddress, to: CreateImage.self)
        let targetTexture = unsafeBitCast(targetAddress, to: TargetTexture.self)

        let attributes = attributes(for: plane)
        guard let image = createImage(display, nil, EGLenum(EGL_LINUX_DMA_BUF_EXT), nil, attributes) else {
            throw .imageCreationFailed(eglError: eglGetError())
        }
        var texture: GLuint = 0
        glGenTextures(1, &texture)
        glBindTexture(GLenum(GL_TEXTURE_2D), texture)
        while glGetError() != GLenum(GL_NO_ERROR) {}
        targetTexture(GLenum(GL_TEXTURE_2D), image)
        let error = glGetError()
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_NEAREST)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), GL_NEAREST)
        glBindTexture(GLenum(GL_TEXTURE_2D), 0)
        guard error == GLenum(GL_NO_ERROR), texture != 0 else {
            glDeleteTextures(1, &texture)
            destroy(image, display: display)
            throw .textureBindingFailed(glError: error == GLenum(GL_NO_ERROR) ? GLenum(GL_INVALID_OPERATION) : error)
        }
        return DMABufTexture(texture: texture, image: image)
    }

    /// Destroys an image made by `importPlane` (delete its texture first).
    public static func destroy(_ image: EGLImageKHR, display: EGLDisplay) {
        typealias DestroyImage = @convention(c) (EGLDisplay?, EGLImageKHR?) -> EGLBoolean
        guard let address = eglGetProcAddress("eglDestroyImageKHR") else { return }
        _ = unsafeBitCast(address, to: DestroyImage.self)(display, image)
    }
}

package import CEGL
package import CGLES
import CarWindowVideoCore

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
package struct DMABufTexture {
    /// GL texture name, bound to the image; render into it through an FBO.
    package var texture: GLuint
    /// The EGL image; destroy it with `DMABufImport.destroy(_:display:)` after deleting the texture.
    package var image: EGLImageKHR
}

/// Imports DMA-BUF planes (such as the encoder's exported surface) as GL textures.
package enum DMABufImport {
    /// The EGL attribute list for one plane: size, fourcc, fd, offset, pitch, and the modifier
    /// split into halves unless it is `DRM_FORMAT_MOD_INVALID`.
    package static func attributes(for plane: DMABufPlane) -> [EGLint] {
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

    /// Whether `display` offers EGL_EXT_image_dma_buf_import.
    package static func displayImports(_ display: EGLDisplay) -> Bool {
        let extensions = eglQueryString(display, EGL_EXTENSIONS).map { String(cString: $0) } ?? ""
        return extensions.split(separator: " ").contains("EGL_EXT_image_dma_buf_import")
    }

    /// Creates an EGL image from `plane` and binds it to a new GL texture.
    ///
    /// Needs a current GLES context on `display` and the EGL_EXT_image_dma_buf_import extension
    /// (plus _modifiers when the plane has a modifier).
    package static func importPlane(_ plane: DMABufPlane, display: EGLDisplay) throws(DMABufImportError) -> DMABufTexture {
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
    package static func destroy(_ image: EGLImageKHR, display: EGLDisplay) {
        typealias DestroyImage = @convention(c) (EGLDisplay?, EGLImageKHR?) -> EGLBoolean
        guard let address = eglGetProcAddress("eglDestroyImageKHR") else { return }
        _ = unsafeBitCast(address, to: DestroyImage.self)(display, image)
    }
}

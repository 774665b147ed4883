import Glibc

/// One plane of a DMA-BUF-backed picture, as EGL_EXT_image_dma_buf_import needs it.
public struct DMABufPlane: Sendable, Equatable {
    /// DRM fourcc of the plane: `R8` for luma, `GR88` for interleaved chroma.
    public var drmFourCC: UInt32
    /// Width of the plane in its own samples (chroma is half the luma size).
    public var width: Int
    /// Height of the plane in its own rows.
    public var height: Int
    /// The DMA-BUF file descriptor (possibly shared with the other plane).
    public var fileDescriptor: Int32
    /// Bytes from the start of the buffer to the plane's first row.
    public var offset: Int
    /// Bytes from the start of one row to the start of the next.
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
    /// Makes a little-endian DRM fourcc from four ASCII characters (drm_fourcc.h's
    /// `fourcc_code`).
    public static func fourCC(_ code: StaticString) -> UInt32 {
        code.withUTF8Buffer { bytes in
            bytes.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        }
    }
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

    /// Planes from their parts; `fileDescriptors` lists each descriptor the planes use once.
    public init(luma: DMABufPlane, chroma: DMABufPlane, fileDescriptors: [Int32]) {
        self.luma = luma
        self.chroma = chroma
        self.fileDescriptors = fileDescriptors
    }
}

import CEGL
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowMap

/// Importing DMA-BUF planes (as VA-API exports them) into EGL: the attributes and the typed error,
/// without a device.
@Suite struct DMABufImportTests {
    @Test("EGL attributes for a plane carry the modifier only when there is one")
    func dmaBufAttributes() throws {
        var plane = DMABufPlane(drmFourCC: DRMFormat.gr88, width: 400, height: 240, fileDescriptor: 42, offset: 384_000,
                                pitch: 832, modifier: DRMFormat.invalidModifier)
        #expect(DMABufImport.attributes(for: plane) == [
            EGL_WIDTH, 400, EGL_HEIGHT, 240, EGL_LINUX_DRM_FOURCC_EXT, 0x3838_5247,
            EGL_DMA_BUF_PLANE0_FD_EXT, 42, EGL_DMA_BUF_PLANE0_OFFSET_EXT, 384_000, EGL_DMA_BUF_PLANE0_PITCH_EXT, 832, EGL_NONE,
        ])
        plane.modifier = 0x0100_0000_0000_0002
        let withModifier = DMABufImport.attributes(for: plane)
        #expect(withModifier.count == 17)
        #expect(Array(withModifier[12..<16]) == [EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT, 2, EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT, 0x0100_0000])
        #expect(withModifier.last == EGL_NONE)
    }

    @Test("Importing into a display without DMA-BUF import is a typed error")
    func dmaBufImportWithoutExtension() throws {
        // Not a display EGL knows: both Mesa's and glvnd's libEGL look handles up before use,
        // so eglQueryString answers NULL (EGL_BAD_DISPLAY) and no extension is found.
        let unknownDisplay = try #require(EGLDisplay(bitPattern: 0x10))
        let plane = DMABufPlane(drmFourCC: DRMFormat.r8, width: 16, height: 16, fileDescriptor: -1, offset: 0, pitch: 16,
                                modifier: DRMFormat.invalidModifier)
        #expect(throws: DMABufImportError.extensionMissing("EGL_EXT_image_dma_buf_import")) {
            try DMABufImport.importPlane(plane, display: unknownDisplay)
        }
    }
}

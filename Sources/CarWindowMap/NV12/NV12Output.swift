internal import CGLES
import CarWindowVideoCore

/// How a canvas's pictures leave the GPU for a stream: converted to NV12 and read back through
/// the converter's two-slot ring, or converted straight into the encoder's input surface (zero
/// copy). The map and the engine's canvas each own one.
///
/// - Important: Render thread only; owned by a ``MapRenderer`` or an ``EngineCanvas``, whose
///   isolated deinit calls ``releaseImportedPlanes()``.
final class NV12Output {
    private let display: EGLDisplayHandle
    private let binaries: ProgramBinaries?
    /// Made on first use: only streaming canvases need it.
    private var converter: NV12Converter?
    /// An encoder surface imported for zero copy.
    private var importedPlanes: (planes: DMABufPlanes, luma: DMABufTexture, chroma: DMABufTexture, context: GLContextID)?

    init(display: EGLDisplayHandle, binaries: ProgramBinaries?) {
        self.display = display
        self.binaries = binaries
    }

    /// Made on first use: only a stream whose bitrate cannot carry its size needs it.
    private var reduction: ResolutionReduction?

    /// Converts `source` (RGBA, `width` x `height`) to NV12 and starts reading it back into
    /// `slot` (0 or 1) without waiting. `flipsRows` when the source's first row is the bottom;
    /// a `resolutionScale` below 1 keeps only that share of the picture's detail.
    func convert(source: GLuint, width: Int, height: Int, fullRange: Bool, flipsRows: Bool, slot: Int,
                 resolutionScale: Double = 1) throws(MapRenderError) {
        guard width % 2 == 0, height % 2 == 0 else {
            throw .invalidSize(width: width, height: height, reason: "NV12 needs even sides")
        }
        try nv12Converter().convert(source: reduced(source, width: width, height: height, scale: resolutionScale),
                                    width: width, height: height, fullRange: fullRange, flipsRows: flipsRows, slot: slot & 1)
    }

    /// `source`, or a copy of it with the detail of `scale` of its sides.
    private func reduced(_ source: GLuint, width: Int, height: Int, scale: Double) -> GLuint {
        guard scale > 0, scale < 1 else { return source }
        let reduction = self.reduction ?? ResolutionReduction()
        self.reduction = reduction
        return reduction.reduce(source: source, width: width, height: height, scale: scale) ?? source
    }

    /// The NV12 frame whose readback was started in `slot`, copied into `frame`'s storage; nil
    /// if nothing was started there or the frame's size differs.
    func collect(slot: Int, into frame: consuming NV12Frame) -> NV12Frame? {
        guard let converter, converter.collect(slot: slot & 1, into: &frame) else { return nil }
        return frame
    }

    /// Zero copy: converts `source` straight into the encoder's input surface, given as the
    /// dma-buf planes it exported. The planes are imported once and reused while they stay the
    /// same.
    func convert(source: GLuint, width: Int, height: Int, fullRange: Bool, flipsRows: Bool, into planes: DMABufPlanes,
                 resolutionScale: Double = 1) throws(MapRenderError) {
        if importedPlanes?.planes != planes {
            releaseImportedPlanes()
            do {
                let luma = try DMABufImport.importPlane(planes.luma, display: display.raw)
                let chroma = try DMABufImport.importPlane(planes.chroma, display: display.raw)
                importedPlanes = (planes, luma, chroma, GLObjectLedger.made(.texture, count: 2))
            } catch {
                throw .encoderSurfaceImport(error)
            }
        }
        guard let imported = importedPlanes else { return }
        let converter = try nv12Converter()
        do {
            try converter.convert(source: reduced(source, width: width, height: height, scale: resolutionScale),
                                  width: width, height: height, fullRange: fullRange, flipsRows: flipsRows,
                                  intoLuma: imported.luma.texture, chroma: imported.chroma.texture)
        } catch {
            throw .gl(error)
        }
    }

    private func nv12Converter() throws(MapRenderError) -> NV12Converter {
        if let converter { return converter }
        do {
            let made = try NV12Converter(binaries: binaries)
            converter = made
            return made
        } catch {
            throw .gl(error)
        }
    }

    /// Lets go of the imported encoder surface, if any.
    func releaseImportedPlanes() {
        guard let imported = importedPlanes else { return }
        let textures = [imported.luma.texture, imported.chroma.texture]
        GLObjectLedger.release(.texture, count: 2, madeIn: imported.context) { glDeleteTextures(2, textures) }
        for image in [imported.luma.image, imported.chroma.image] {
            DMABufImport.destroy(image, display: display.raw)
        }
        importedPlanes = nil
    }
}

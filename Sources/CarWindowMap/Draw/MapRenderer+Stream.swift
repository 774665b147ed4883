import CarWindowGeo
import CarWindowVideoCore

/// What one visit of a stream to the render thread did: the picture it drew (or why not), the
/// earlier picture it collected, and where the controls are.
package struct StreamDraw {
    /// Why the picture was not drawn and converted; nil when its readback started.
    package var error: MapRenderError?
    /// The earlier picture's NV12 frame, when the visit was asked to collect one.
    package var collected: Result<NV12Frame, MapRenderError>?
    /// The controls drawn, for haptic regions.
    package var controls: [MapControl]
    /// The camera transform of the picture drawn.
    package var transform: MapTransform
}

/// Drawing for a stream: what a projection session asks of the renderer once per picture.
extension MapRenderer {
    /// Draws `camera` and `overlays`, converts the picture to NV12 and starts reading it back
    /// into `slot` (0 or 1) without waiting; then, if asked, collects the picture read into the
    /// other slot by an earlier visit into `previous.frame`. Collecting one picture behind lets
    /// the GPU (or llvmpipe's rasterizer threads) finish it while this picture is submitted.
    package func drawStreamFrame(camera: Camera, overlays: MapOverlays, fullRange: Bool, readbackSlot slot: Int,
                                 collecting previous: (slot: Int, frame: NV12Frame)?, resolutionScale: Double = 1,
                                 tileArrived: @escaping @Sendable () -> Void) -> StreamDraw {
        var draw = drawForStream(camera: camera, overlays: overlays, tileArrived: tileArrived)
        do {
            try convertToNV12(fullRange: fullRange, slot: slot, resolutionScale: resolutionScale)
        } catch {
            draw.error = error
        }
        if let previous { draw.collected = collectStreamFrame(slot: previous.slot, into: previous.frame) }
        return draw
    }

    /// The picture whose readback a
    /// ``drawStreamFrame(camera:overlays:fullRange:readbackSlot:collecting:tileArrived:)`` started
    /// in `slot`, copied into `frame` (waiting for the GPU if it is still busy).
    package func collectStreamFrame(slot: Int, into frame: consuming NV12Frame) -> Result<NV12Frame, MapRenderError> {
        guard let filled = collectNV12(slot: slot, into: frame) else { return .failure(.gl(.readbackUnavailable)) }
        return .success(filled)
    }

    /// Zero copy: draws `camera` and `overlays` and converts the picture straight into an
    /// encoder's input surface (`planes`), in one visit to the render thread. Nothing is read
    /// back; the error, if any, says why the picture is not in the surface.
    package func drawStreamFrame(camera: Camera, overlays: MapOverlays, fullRange: Bool, into planes: DMABufPlanes,
                                 resolutionScale: Double = 1, tileArrived: @escaping @Sendable () -> Void) -> StreamDraw {
        var draw = drawForStream(camera: camera, overlays: overlays, tileArrived: tileArrived)
        do {
            try convertToNV12(into: planes, fullRange: fullRange, resolutionScale: resolutionScale)
        } catch {
            draw.error = error
        }
        return draw
    }

    /// Draws `camera` and `overlays`; the visit's record so far.
    private func drawForStream(camera: Camera, overlays: MapOverlays, tileArrived: @escaping @Sendable () -> Void) -> StreamDraw {
        setCamera(camera)
        if self.overlays != overlays { setOverlays(overlays) }
        renderFrame(tileArrived: tileArrived)
        return StreamDraw(error: nil, collected: nil, controls: controls, transform: transform)
    }
}

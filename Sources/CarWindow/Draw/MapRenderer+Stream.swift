/// Drawing for a stream: what a projection session asks of the renderer once per picture.
extension MapRenderer {
    /// One picture for a stream: draws `camera` and `overlays`, converts to NV12 and reads it
    /// back into `frame`, all in one visit to the render thread.
    package func drawStreamFrame(camera: Camera, overlays: MapOverlays, fullRange: Bool, into frame: consuming NV12Frame,
                         tileArrived: @escaping @Sendable () -> Void) -> (frame: Result<NV12Frame, MapRenderError>,
                                                                          controls: [MapControl], transform: MapTransform) {
        setCamera(camera)
        if self.overlays != overlays { setOverlays(overlays) }
        renderFrame(tileArrived: tileArrived)
        do {
            try convertToNV12(fullRange: fullRange, slot: 0)
        } catch {
            return (.failure(error), controls, transform)
        }
        guard let filled = collectNV12(slot: 0, into: frame) else {
            return (.failure(.gl(.readbackUnavailable)), controls, transform)
        }
        return (.success(filled), controls, transform)
    }
}

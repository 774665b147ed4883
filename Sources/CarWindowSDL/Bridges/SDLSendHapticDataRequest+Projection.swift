import CarWindowMap
import CarWindowProjection
import CarWindowSDLProtocol

// Between the session's haptic regions and SendHapticData's rectangles.
extension SDLSendHapticDataRequest {
    init(regions: [HapticRegion]) {
        self.init(rectangles: regions.map {
            HapticRect(id: $0.id, rect: Rect(x: $0.rect.x, y: $0.rect.y, width: $0.rect.width, height: $0.rect.height))
        })
    }

    package var regions: [HapticRegion] {
        hapticRectData.map {
            HapticRegion(id: $0.id, rect: ScreenRect(x: $0.rect.x, y: $0.rect.y, width: $0.rect.width, height: $0.rect.height))
        }
    }
}

import CarWindowProjection
import CarWindowSDLProtocol

// What the buttons mean to a projection session; the names themselves are the protocol's.
extension SDLButtonName {
    /// The keys that move the app's own focus on a head unit with neither touch nor haptic data,
    /// where they are the driver's direction pad; `OK` selects. The media keys (SEEK, TUNE)
    /// cannot stand in: SDL Core refuses them to an app that is not a media app. The diagonal
    /// pans, zoom, tilt, rotation and heading keys keep moving the map.
    public static let focusMoves: [SDLButtonName: FocusMove] = [
        .navPanUp: .up, .navPanDown: .down, .navPanLeft: .left, .navPanRight: .right,
    ]

    /// What each navigation button (RPC spec 6.0) does to the map.
    public static let navigationCommands: [SDLButtonName: MapCommand] = [
        .navCenterLocation: .recenter,
        .navZoomIn: .zoomIn,
        .navZoomOut: .zoomOut,
        .navPanUp: .pan(SIMD2(0, -1)),
        .navPanUpRight: .pan(SIMD2(1, -1)),
        .navPanRight: .pan(SIMD2(1, 0)),
        .navPanDownRight: .pan(SIMD2(1, 1)),
        .navPanDown: .pan(SIMD2(0, 1)),
        .navPanDownLeft: .pan(SIMD2(-1, 1)),
        .navPanLeft: .pan(SIMD2(-1, 0)),
        .navPanUpLeft: .pan(SIMD2(-1, -1)),
        .navTiltToggle: .tiltToggle,
        .navRotateClockwise: .rotate(clockwise: true),
        .navRotateCounterClockwise: .rotate(clockwise: false),
        .navHeadingToggle: .headingToggle,
    ]
}

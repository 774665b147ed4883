import CarWindowGeo
import CarWindowMap

/// What the next frame shows, as one value: the engine's and the user's calls change it on the
/// session's actor, and the frame loop reads it when it draws. It owns no resources, so it
/// lives through every state of the session (a camera set before `connect` is the first one
/// drawn).
struct SessionView {
    /// The camera of the next picture.
    var camera: Camera
    /// A camera move under way (``ProjectionSession/setCamera(_:transition:)``); the frame loop
    /// moves ``camera`` along it.
    var animation: CameraAnimation?
    /// A flung map gliding on; the frame loop pans ``camera`` along it.
    var glide: KineticPan?
    /// The vehicle between the engine's fixes, and the camera that follows it.
    var follow: FollowCamera?
    /// Whether the camera follows the vehicle now (not after the user moved the map, nor in an
    /// overview).
    var isFollowing = false
    /// Route, vehicle, controls and focus ring, drawn over the map.
    var overlays: MapOverlays
    /// Metres from the route's first point to each of its points, for finding the followed
    /// vehicle along it every frame without measuring the route again.
    var routeMetres: [Double] = []
    /// The route progress the engine last set; while a followed vehicle is on the route, the
    /// drawn split follows the vehicle shown instead.
    var engineRouteProgress = 0.0
    /// Touches turned into pans, pinches and taps.
    var gestures: GestureRecognizer
    /// Session-clock time of the last gesture tick, to move the recogniser's clock on.
    var lastGestureTick: Double?

    /// Ends an animation or a glide: the engine or the follow camera takes over the camera.
    mutating func stopCameraMotion() {
        animation = nil
        glide = nil
    }

    init(camera: Camera, overlays: MapOverlays, gestures: GestureRecognizer) {
        self.camera = camera
        self.overlays = overlays
        self.gestures = gestures
    }
}

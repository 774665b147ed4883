import Foundation
import CarWindowGeo
import CarWindowMap

/// Touches from the head unit: gestures, region taps and map movement.
extension ProjectionSession {
    /// Handles a touch event from the head unit, in head-unit pixels (divided by the display
    /// scale here). Taps on haptic regions become ``ProjectionSessionEvent/regionTapped(id:)``
    /// or control actions; pans, pinches and double taps elsewhere move the map (unless
    /// `mapGesturesEnabled` is off): a pan released with speed glides on until it slows to a
    /// stop or a finger touches again, and two fingers turning past
    /// ``GestureRecognizer/Configuration/rotationThreshold`` turn the map. Pan, pinch and
    /// rotation movement is applied once per drawn frame.
    /// Invalid events (ids outside 0...9, NaN coordinates...) and fingers going down off the
    /// screen are ignored with a warning; a finger that slides off the screen is held at its edge.
    public func handleTouch(_ event: TouchEvent) {
        var event = event
        if let screen = stream?.displaySize {
            do {
                event = try event.onScreen(width: screen.width, height: screen.height)
            } catch {
                emit(.warning(.touchIgnored(error)))
                return
            }
        }
        if event.type == .begin, view.glide != nil {
            // A finger on the glass stops a gliding map where it is.
            view.glide = nil
            emit(.cameraMovedByUser(view.camera))
        }
        let rejectedBefore = view.gestures.rejectedEventCount
        let gestures = view.gestures.handle(event.inRenderedPixels(scale: stream?.scale ?? 1))
        view.lastGestureTick = clock.now
        if view.gestures.rejectedEventCount != rejectedBefore, let rejection = view.gestures.lastRejection {
            emit(.warning(.touchIgnored(rejection)))
        }
        apply(gestures)
        if view.gestures.hasUnreportedMotion { changed() }
        if view.gestures.hasPendingTap { wake.signal() }
    }

    /// A haptic "select" from the head unit's controller (a rotary knob's press, say): acts like
    /// a tap at the centre of region `id`. Unknown ids are ignored with a warning.
    public func selectHapticRegion(id: Int) {
        guard let point = haptics.selectionPoint(for: id) else {
            emit(.warning(.hapticSelectIgnored(regionID: id)))
            return
        }
        apply([.tap(at: point)])
    }

    /// Delivers coalesced pan and pinch movement and taps whose double-tap window passed.
    func tickGestures(at now: Double) {
        let elapsed = view.lastGestureTick.map { (now - $0) * 1000 } ?? 0
        view.lastGestureTick = now
        apply(view.gestures.frameTick(elapsedMilliseconds: elapsed))
    }

    func apply(_ gestures: [Gesture]) {
        guard !gestures.isEmpty, let stream else { return }
        let width = stream.encodedSize.width, height = stream.encodedSize.height
        let actions = MapAction.actions(for: gestures, regions: haptics,
                                        mapGesturesEnabled: configuration.mapGesturesEnabled)
        var movedByUser = false
        for action in actions {
            switch action {
            case .move(let offset):
                if let moved = view.camera.panned(by: offset, width: width, height: height) {
                    view.stopCameraMotion()
                    view.camera = moved
                    movedByUser = true
                }
            case .zoom(let levels, let anchor):
                if let zoomed = view.camera.zoomed(by: levels, around: anchor, width: width, height: height) {
                    view.stopCameraMotion()
                    view.camera = zoomed
                    movedByUser = true
                }
            case .rotate(let degrees, let anchor):
                if let turned = view.camera.rotated(by: degrees, around: anchor, width: width, height: height) {
                    view.stopCameraMotion()
                    view.camera = turned
                    movedByUser = true
                }
            case .glide(let velocity):
                view.stopCameraMotion()
                view.glide = KineticPan(velocity: velocity, start: clock.now)
                // Following stops with the pan that came before; the glide itself is drawn by
                // the frame loop, which reports the camera where it comes to rest.
                changed()
            case .regionTapped(let id):
                if let control = MapControl.Kind.allCases.first(where: { HapticRegionSet.regionID(for: $0) == id }) {
                    controlTapped(control)
                } else if let index = HapticRegionSet.alternativeIndex(ofRegion: id) {
                    emit(.alternativeTapped(index: index))
                } else {
                    emit(.regionTapped(id: id))
                }
            case .mapTapped(let point):
                if let index = alternative(at: point, width: width, height: height) {
                    emit(.alternativeTapped(index: index))
                    continue
                }
                let coordinate = MapTransform(camera: view.camera, width: width, height: height).coordinate(at: point)
                emit(.mapTapped(point: point, coordinate: coordinate))
            }
        }
        if movedByUser {
            // The user looks elsewhere: the camera stops following until recenter.
            view.isFollowing = false
            emit(.cameraMovedByUser(view.camera))
            changed()
        }
    }

    /// A finger's width in rendered pixels: a tap this close to an alternative's line picks it.
    static let alternativeTapReach = 24.0

    /// The alternative whose line passes nearest `point` (rendered pixels), within reach.
    func alternative(at point: SIMD2<Double>, width: Int, height: Int) -> Int? {
        guard !alternativeRoutes.isEmpty else { return nil }
        let transform = MapTransform(camera: view.camera, width: width, height: height)
        var best: (index: Int, distance: Double)?
        for (index, route) in alternativeRoutes.enumerated() {
            var previous: SIMD2<Double>?
            for coordinate in route {
                let screen = transform.screenPoint(for: coordinate)
                defer { previous = screen }
                guard let a = previous, let b = screen else { continue }
                let d = b - a
                let lengthSquared = (d * d).sum()
                let t = lengthSquared > 0 ? min(max(((point - a) * d).sum() / lengthSquared, 0), 1) : 0
                let offset = point - (a + d * t)
                let distance = (offset * offset).sum().squareRoot()
                if distance <= Self.alternativeTapReach, distance < (best?.distance ?? .infinity) {
                    best = (index, distance)
                }
            }
        }
        return best?.index
    }

    /// The renderer's own buttons: zoom in and out here; recenter follows the vehicle again when
    /// the session follows one, and is otherwise the engine's to do.
    func controlTapped(_ control: MapControl.Kind) {
        switch control {
        case .zoomIn, .zoomOut:
            guard !view.isFollowing else {
                // The follow camera owns the zoom while following: the buttons shift its speed zoom.
                view.follow?.zoomOffset += control == .zoomIn ? 1 : -1
                changed()
                break
            }
            var target = view.animation?.to ?? view.camera
            target.zoom += control == .zoomIn ? 1 : -1
            setCamera(target, transition: .animated(duration: .milliseconds(300)))
        case .recenter:
            view.follow?.zoomOffset = 0
            resumeFollowing()
        }
        emit(.controlTapped(control))
    }
}

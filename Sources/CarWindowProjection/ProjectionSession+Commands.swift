import Foundation
import CarWindowGeo
import CarWindowVideoCore

/// A discrete camera command: what a head unit's hard keys or rotary knob ask of a map (SDL's
/// NAV_* buttons), or an engine's own buttons.
public enum MapCommand: Sendable, Equatable, CustomStringConvertible {
    /// Follow the vehicle again at the speed zoom (the recenter button).
    case recenter
    /// One zoom level closer.
    case zoomIn
    /// One zoom level further.
    case zoomOut
    /// Look further in a screen direction by a share of the screen: `(0, -1)` is up, `(1, 0)`
    /// right; each component is -1, 0 or 1 for the eight directions of a pan pad.
    case pan(SIMD2<Double>)
    /// Between the tilted view and a flat one.
    case tiltToggle
    /// Turn the map by ``MapCommand/rotationStep`` degrees; clockwise when true.
    case rotate(clockwise: Bool)
    /// Between heading-up and north-up.
    case headingToggle

    /// The share of the screen one pan command moves the view: a quarter, so the place that was
    /// at the edge comes well inside the screen.
    public static let panShare = 0.25
    /// Degrees one rotate command turns the map.
    public static let rotationStep = 15.0
    /// The pitch the tilt toggle gives a flat map when not following: a typical 3D
    /// navigation view.
    public static let tiltedPitch = 45.0

    /// `zoomIn`, `pan(0,-1)`, ...: the form logs use.
    public var description: String {
        switch self {
        case .recenter: "recenter"
        case .zoomIn: "zoomIn"
        case .zoomOut: "zoomOut"
        case .pan(let direction): "pan(\(Int(direction.x)),\(Int(direction.y)))"
        case .tiltToggle: "tiltToggle"
        case .rotate(let clockwise): clockwise ? "rotateClockwise" : "rotateCounterClockwise"
        case .headingToggle: "headingToggle"
        }
    }
}

extension ProjectionSession {
    /// How long a command's camera move takes: long enough to see where the map went.
    static let commandAnimation = Duration.milliseconds(300)

    /// Moves the camera as `command` asks, animated, and reports it with
    /// ``ProjectionSessionEvent/commandPerformed(_:)``.
    ///
    /// While the camera follows the vehicle, zoom shifts the speed zoom, tilt flattens or
    /// re-tilts the follow view and heading switches the follow camera between course-up and
    /// north-up, all without leaving follow mode; pans and rotations are the user looking
    /// elsewhere, so following stops (``ProjectionSessionEvent/cameraMovedByUser(_:)``) until
    /// ``MapCommand/recenter``. Recenter without ``followVehicle(_:)`` is left to the engine
    /// (the event still tells it). Nothing happens before a stream has a size.
    public func perform(_ command: MapCommand) {
        guard let stream else { return }
        let width = stream.encodedSize.width, height = stream.encodedSize.height
        var target = view.animation?.to ?? view.camera
        var leavesFollowing = false
        switch command {
        case .recenter:
            view.follow?.zoomOffset = 0
            resumeFollowing()
        case .zoomIn, .zoomOut:
            let levels = command == .zoomIn ? 1.0 : -1.0
            if view.isFollowing, view.follow != nil {
                view.follow?.zoomOffset += levels
                changed()
            } else {
                target.zoom += levels
                setCamera(target, transition: .animated(duration: Self.commandAnimation))
            }
        case .pan(let direction):
            guard direction.x.isFinite, direction.y.isFinite else { return }
            let step = SIMD2(min(max(direction.x, -1), 1) * Double(width), min(max(direction.y, -1), 1) * Double(height))
            // Looking further up moves the map content down.
            guard let moved = target.panned(by: -step * MapCommand.panShare, width: width, height: height) else { return }
            target = moved
            leavesFollowing = true
        case .tiltToggle:
            if view.isFollowing, view.follow != nil {
                view.follow?.isFlat.toggle()
                changed()
            } else {
                target.pitch = target.pitch > 1 ? 0 : MapCommand.tiltedPitch
                setCamera(target, transition: .animated(duration: Self.commandAnimation))
            }
        case .rotate(let clockwise):
            // The map turns clockwise when the view's bearing decreases.
            target.bearing += clockwise ? -MapCommand.rotationStep : MapCommand.rotationStep
            target.bearing = target.bearing.truncatingRemainder(dividingBy: 360)
            leavesFollowing = true
        case .headingToggle:
            if view.isFollowing, let configuration = view.follow?.configuration {
                var toggled = configuration
                toggled.orientation = configuration.orientation == .courseUp ? .northUp : .courseUp
                view.follow?.configuration = toggled
                changed()
            } else if target.bearing != 0 {
                target.bearing = 0
                setCamera(target, transition: .animated(duration: Self.commandAnimation))
            }
        }
        if leavesFollowing {
            view.isFollowing = false
            setCamera(target, transition: .animated(duration: Self.commandAnimation))
            emit(.cameraMovedByUser(target))
        }
        emit(.commandPerformed(command))
    }
}

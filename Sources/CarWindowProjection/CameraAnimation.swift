import Foundation
import CarWindowGeo

/// How a new camera takes effect.
public enum CameraTransition: Sendable, Equatable {
    /// At the next frame.
    case immediate
    /// Eased over `duration` from the camera on screen (ease-in-out), at the session's frame
    /// rate. Centre moves in Web Mercator, zoom linearly, bearing the short way round. A
    /// duration that is not positive is ``immediate``; one above ``longestAnimation`` takes that long.
    case animated(duration: Duration)

    /// The longest a camera animation takes: 30 seconds.
    public static let longestAnimation = Duration.seconds(30)
}

/// A camera moving from one view to another over a time span.
struct CameraAnimation: Sendable, Equatable {
    var from: Camera
    var to: Camera
    var start: Double
    var duration: Double

    /// Whether the animation has reached its end at `time`.
    func isFinished(at time: Double) -> Bool { time >= start + duration }

    /// The camera at `time` (seconds on the session clock).
    func camera(at time: Double) -> Camera {
        guard duration > 0 else { return to }
        let linear = min(max((time - start) / duration, 0), 1)
        // Smoothstep: no jolt when the map starts or stops moving.
        let t = linear * linear * (3 - 2 * linear)
        let a = WebMercator.project(from.center), b = WebMercator.project(to.center)
        var delta = b.x - a.x
        // Across the antimeridian the short way is through it.
        if delta > 0.5 { delta -= 1 } else if delta < -0.5 { delta += 1 }
        let world = SIMD2(a.x + delta * t, a.y + (b.y - a.y) * t)
        var turn = (to.bearing - from.bearing).truncatingRemainder(dividingBy: 360)
        if turn > 180 { turn -= 360 } else if turn < -180 { turn += 360 }
        return Camera(center: WebMercator.unproject(world),
                      zoom: from.zoom + (to.zoom - from.zoom) * t,
                      bearing: from.bearing + turn * t,
                      pitch: from.pitch + (to.pitch - from.pitch) * t).clamped
    }
}

/// A flung map gliding on after the finger lifted, slowing down exponentially as a scrolled
/// list does on a phone: it comes to rest at ``restingSpeed``, having glided ``timeConstant``
/// times the difference of the two speeds.
///
/// Its offsets are a function of the session clock alone: the same fling gives the same
/// cameras whatever the frame rate.
package struct KineticPan: Sendable, Equatable {
    /// Seconds for the speed to fall to 1/e: iOS's normal scroll deceleration (0.998 a millisecond).
    static let timeConstant = 0.5
    /// The fastest glide in rendered pixels a second; a head unit's odd timestamps can report more.
    static let maximumSpeed = 4000.0
    /// Below this speed in pixels a second the map is at rest.
    static let restingSpeed = 20.0

    package let velocity: SIMD2<Double>
    package let start: Double
    /// Seconds until the speed falls to ``restingSpeed``.
    package let duration: Double
    /// The offset already applied to the camera.
    private var applied = SIMD2<Double>.zero

    /// A glide from `velocity` (rendered pixels a second, capped at ``maximumSpeed``) starting
    /// at `start` on the session clock.
    package init(velocity: SIMD2<Double>, start: Double) {
        // Scaled first: squaring a head unit's 1e200 px/s would overflow to infinity.
        let largest = max(abs(velocity.x), abs(velocity.y))
        let speed = largest > 0 ? largest * ((velocity / largest) * (velocity / largest)).sum().squareRoot() : 0
        let capped = speed > Self.maximumSpeed ? velocity * (Self.maximumSpeed / speed) : velocity
        let cappedSpeed = min(speed, Self.maximumSpeed)
        self.velocity = capped
        self.start = start
        duration = cappedSpeed > Self.restingSpeed ? Self.timeConstant * log(cappedSpeed / Self.restingSpeed) : 0
    }

    /// The whole offset from the release to `time`.
    package func offset(at time: Double) -> SIMD2<Double> {
        let elapsed = min(max(time - start, 0), duration)
        return velocity * (Self.timeConstant * (1 - exp(-elapsed / Self.timeConstant)))
    }

    /// The offset to apply for `time` since the previous step.
    package mutating func step(to time: Double) -> SIMD2<Double> {
        let total = offset(at: time)
        defer { applied = total }
        return total - applied
    }

    /// Whether the glide has come to rest at `time`.
    package func isFinished(at time: Double) -> Bool { time >= start + duration }
}

extension Camera {
    /// The camera after the map content moved by `offset` rendered pixels (a pan: finger right,
    /// map right), or nil when the screen centre does not hit the ground.
    package func panned(by offset: SIMD2<Double>, width: Int, height: Int) -> Camera? {
        let transform = MapTransform(camera: self, width: width, height: height)
        let screenCenter = SIMD2(Double(width) / 2, Double(height) / 2)
        guard let center = transform.coordinate(at: screenCenter - offset) else { return nil }
        var moved = self
        moved.center = center
        return moved.clamped
    }

    /// The camera with the map content turned by `degrees` clockwise on screen, keeping the map
    /// point under `anchor` (rendered pixels) in place, or nil when the anchor does not hit the
    /// ground.
    package func rotated(by degrees: Double, around anchor: SIMD2<Double>, width: Int, height: Int) -> Camera? {
        let before = MapTransform(camera: self, width: width, height: height)
        guard let pinned = before.coordinate(at: anchor) else { return nil }
        var turned = self
        // The bearing is the direction at the top of the screen: content turning clockwise
        // brings a direction further anticlockwise up.
        turned.bearing -= degrees
        turned = turned.clamped
        let after = MapTransform(camera: turned, width: width, height: height)
        guard let landed = after.screenPoint(for: pinned) else { return turned }
        return turned.panned(by: anchor - landed, width: width, height: height) ?? turned
    }

    /// The camera zoomed by `levels` keeping the map point under `anchor` (rendered pixels) in
    /// place, or nil when the anchor does not hit the ground.
    package func zoomed(by levels: Double, around anchor: SIMD2<Double>, width: Int, height: Int) -> Camera? {
        let before = MapTransform(camera: self, width: width, height: height)
        guard let pinned = before.coordinate(at: anchor) else { return nil }
        var zoomed = self
        zoomed.zoom += levels
        zoomed = zoomed.clamped
        let after = MapTransform(camera: zoomed, width: width, height: height)
        guard let landed = after.screenPoint(for: pinned) else { return zoomed }
        // Move the map so the pinned point goes back under the anchor.
        return zoomed.panned(by: anchor - landed, width: width, height: height) ?? zoomed
    }
}

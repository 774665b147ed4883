import Foundation
import CarWindowGeo
import CarWindowMap

/// A position of the vehicle from the engine's positioning (GNSS or map-matched), typically
/// once a second.
public struct VehicleFix: Sendable, Equatable {
    /// Where the vehicle is.
    public var coordinate: GeoCoordinate
    /// Direction of travel in degrees clockwise from north.
    public var heading: Double
    /// Speed over ground in metres per second.
    public var speed: Double

    /// Makes a fix.
    public init(coordinate: GeoCoordinate, heading: Double, speed: Double) {
        self.coordinate = coordinate
        self.heading = heading
        self.speed = speed
    }

    var isUsable: Bool {
        coordinate.latitude.isFinite && coordinate.longitude.isFinite && abs(coordinate.latitude) <= 90
            && abs(coordinate.longitude) <= 180 && heading.isFinite && speed.isFinite && speed >= 0
    }
}

/// How the camera follows the vehicle: what is up, where the vehicle sits on the screen, and
/// how zoom and tilt follow the speed.
public struct FollowCameraConfiguration: Sendable, Equatable {
    /// What points up on the screen.
    public enum Orientation: Sendable, Equatable {
        /// The direction of travel, as most navigation screens show it.
        case courseUp
        /// North.
        case northUp
    }

    /// What points up; course-up by default.
    public var orientation: Orientation = .courseUp
    /// Where the vehicle sits, as fractions of the width and height from the top-left corner:
    /// by default centred and three quarters down, so the road ahead fills the screen.
    public var anchor = SIMD2<Double>(0.5, 0.75)
    /// Zoom at walking pace (at or below ``slowSpeed``).
    public var slowZoom = 17.5
    /// Zoom at motorway speed (at or above ``fastSpeed``); speeds between interpolate.
    public var fastZoom = 15.5
    /// Speed in metres per second up to which ``slowZoom`` applies (20 km/h by default).
    public var slowSpeed = 5.5
    /// Speed in metres per second from which ``fastZoom`` applies (100 km/h by default).
    public var fastSpeed = 28.0
    /// Tilt in degrees at walking pace.
    public var slowPitch = 40.0
    /// Tilt in degrees at motorway speed, to see farther ahead.
    public var fastPitch = 55.0
    /// Seconds over which a new fix's difference from the predicted position is blended in.
    public var correctionTime = 2.0
    /// Seconds the position is predicted past the last fix before the vehicle is shown standing
    /// (positioning lost in a tunnel, say).
    public var maximumPrediction = 3.0
    /// Seconds in which zoom and tilt close most of the way to a new speed's values.
    public var zoomSmoothing = 2.0
    /// Seconds in which the bearing closes most of the way to a new heading.
    public var bearingSmoothing = 0.6

    /// The defaults: course-up, vehicle three quarters down, 17.5 to 15.5 zoom from 20 to
    /// 100 km/h.
    public init() {}
}

/// The camera and vehicle marker that follow a moving vehicle smoothly between position fixes:
/// the position is predicted along the last fix's heading and speed, a new fix's difference is
/// blended in over ``FollowCameraConfiguration/correctionTime``, and the shown position never
/// goes back along the direction of travel. Zoom, tilt and bearing ease towards their targets.
///
/// Pure arithmetic on times the caller gives (seconds on any one clock), so it is tested with
/// exact times and a session drives it from its frame loop.
package struct FollowCamera: Sendable {
    package var configuration: FollowCameraConfiguration
    /// Zoom levels the user added with the zoom buttons while following, -3...3; eased in with
    /// the speed zoom.
    package var zoomOffset = 0.0 {
        didSet { zoomOffset = min(max(zoomOffset.isFinite ? zoomOffset : 0, -3), 3) }
    }
    /// Whether the user asked for a flat map (the tilt toggle): the speed tilt is ignored and
    /// the pitch eases to 0.
    package var isFlat = false
    private var fix: VehicleFix?
    private var fixTime = 0.0
    /// The shown position minus the new fix's prediction, in world units, when the fix came.
    private var correction = SIMD2<Double>(0, 0)
    private var shownPosition: SIMD2<Double>?
    private var shownBearing = 0.0
    private var shownZoom: Double?
    private var shownPitch: Double?
    private var lastTime: Double?

    package init(configuration: FollowCameraConfiguration) {
        self.configuration = configuration
    }

    /// Whether a fix came in yet.
    package var hasFix: Bool { fix != nil }

    /// Whether the view still changes at `time`: the vehicle moves or a correction or easing is
    /// under way.
    package func isMoving(at time: Double) -> Bool {
        guard let fix else { return false }
        let since = time - fixTime
        if fix.speed > 0.01 && since < configuration.maximumPrediction { return true }
        if since < configuration.correctionTime { return true }
        let target = targets(for: fix.speed)
        if let shownZoom, abs(shownZoom - target.zoom) > 0.01 { return true }
        if abs(Self.turn(from: shownBearing, to: fix.heading)) > 0.1 && configuration.orientation == .courseUp { return true }
        return false
    }

    /// Takes a new fix at `time`: the position shown now stays where it is and drifts onto the
    /// new track over the correction time.
    package mutating func update(_ newFix: VehicleFix, at time: Double) {
        let shownNow = shownPosition.map { _ in position(at: time) }
        if fix == nil { shownBearing = newFix.heading }
        fix = newFix
        fixTime = time
        correction = shownNow.map { $0 - predicted(newFix, seconds: 0) } ?? .zero
    }

    /// The camera and the vehicle marker at `time` for a `width` x `height` view; nil before the
    /// first fix. Times must not decrease from call to call.
    /// The anchor is taken within what `covered` leaves visible of the view.
    package mutating func state(at time: Double, width: Int, height: Int,
                                covered: ScreenInsets = .zero) -> (camera: Camera, vehicle: VehicleMarker)? {
        guard let fix else { return nil }
        let elapsed = lastTime.map { max(0, time - $0) } ?? 0
        lastTime = time
        var world = position(at: time)
        // Never back along the direction of travel: a fix behind the prediction only slows the
        // vehicle down until the track catches up.
        if let previous = shownPosition {
            let radians = fix.heading * .pi / 180
            let ahead = SIMD2(sin(radians), -cos(radians))
            let along = ((world - previous) * ahead).sum()
            if along < 0 { world -= ahead * along }
        }
        shownPosition = world
        let target = targets(for: fix.speed)
        let zoomBlend = Self.easing(elapsed, over: configuration.zoomSmoothing)
        shownZoom = shownZoom.map { $0 + (target.zoom - $0) * zoomBlend } ?? target.zoom
        shownPitch = shownPitch.map { $0 + (target.pitch - $0) * zoomBlend } ?? target.pitch
        shownBearing += Self.turn(from: shownBearing, to: fix.heading) * Self.easing(elapsed, over: configuration.bearingSmoothing)
        shownBearing = shownBearing.truncatingRemainder(dividingBy: 360)

        let vehicle = WebMercator.unproject(world)
        let bearing = configuration.orientation == .courseUp ? shownBearing : 0
        var camera = Camera(center: vehicle, zoom: shownZoom ?? target.zoom, bearing: bearing,
                            pitch: shownPitch ?? target.pitch).clamped
        // Move the centre so the vehicle lands on the anchor: the view is the same anywhere on
        // the map, so the ground under the anchor with the vehicle centred tells the offset.
        let visible = covered.visibleRect(width: width, height: height)
        let anchor = SIMD2(visible.x + visible.width * configuration.anchor.x, visible.y + visible.height * configuration.anchor.y)
        let centred = MapTransform(camera: camera, width: width, height: height)
        if let underAnchor = centred.coordinate(at: anchor) {
            let offset = world - WebMercator.project(underAnchor)
            camera.center = WebMercator.unproject(world + offset)
            camera = camera.clamped
        }
        return (camera, VehicleMarker(coordinate: vehicle, heading: shownBearing))
    }

    /// Where the vehicle is shown at `time`, before the never-back rule.
    private func position(at time: Double) -> SIMD2<Double> {
        guard let fix else { return shownPosition ?? .zero }
        let since = time - fixTime
        let seconds = min(max(since, 0), configuration.maximumPrediction)
        let blend = 1 - Self.smoothstep(since / max(configuration.correctionTime, 1e-3))
        return predicted(fix, seconds: seconds) + correction * blend
    }

    /// The fix moved `seconds` along its heading at its speed, in world units.
    private func predicted(_ fix: VehicleFix, seconds: Double) -> SIMD2<Double> {
        let start = WebMercator.project(fix.coordinate)
        // A world unit is the Earth's circumference at the equator, shrinking with latitude.
        let metresPerUnit = 2 * .pi * 6_378_137 * cos(fix.coordinate.latitude * .pi / 180)
        let radians = fix.heading * .pi / 180
        let metres = fix.speed * seconds
        return start + SIMD2(sin(radians), -cos(radians)) * (metres / max(metresPerUnit, 1))
    }

    private func targets(for speed: Double) -> (zoom: Double, pitch: Double) {
        let c = configuration
        let span = max(c.fastSpeed - c.slowSpeed, 1e-3)
        let t = min(max((speed - c.slowSpeed) / span, 0), 1)
        let pitch = isFlat ? 0 : c.slowPitch + (c.fastPitch - c.slowPitch) * t
        return (c.slowZoom + (c.fastZoom - c.slowZoom) * t + zoomOffset, pitch)
    }

    private static func smoothstep(_ x: Double) -> Double {
        let t = min(max(x, 0), 1)
        return t * t * (3 - 2 * t)
    }

    /// The share of a gap closed in `elapsed` seconds by an exponential ease with time constant `over`.
    private static func easing(_ elapsed: Double, over seconds: Double) -> Double {
        seconds > 0 ? 1 - exp(-elapsed / seconds) : 1
    }

    /// The signed short way from one bearing to another, in -180...180.
    private static func turn(from: Double, to: Double) -> Double {
        var turn = (to - from).truncatingRemainder(dividingBy: 360)
        if turn > 180 { turn -= 360 } else if turn < -180 { turn += 360 }
        return turn
    }
}

extension Camera {
    /// The camera that shows `coordinates` whole, north up and flat, in the part of the view
    /// `covered` leaves visible, with `padding` rendered pixels kept free on every side of it;
    /// nil when there are no finite coordinates.
    package static func fitting(_ coordinates: [GeoCoordinate], width: Int, height: Int, padding: Double,
                                covered: ScreenInsets = .zero) -> Camera? {
        var low = SIMD2<Double>(repeating: .infinity), high = SIMD2<Double>(repeating: -.infinity)
        for coordinate in coordinates where coordinate.latitude.isFinite && coordinate.longitude.isFinite {
            let world = WebMercator.project(coordinate)
            low = pointwiseMin(low, world)
            high = pointwiseMax(high, world)
        }
        guard low.x.isFinite, high.x.isFinite else { return nil }
        let visible = covered.visibleRect(width: width, height: height)
        let room = SIMD2(max(visible.width - 2 * padding, 1), max(visible.height - 2 * padding, 1))
        let span = pointwiseMax(high - low, SIMD2(1e-9, 1e-9))
        // A world unit is tileSize * 2^zoom pixels wide.
        let zoom = log2(min(room.x / span.x, room.y / span.y) / MapTransform.tileSize)
        let clampedZoom = Camera(center: WebMercator.unproject((low + high) / 2), zoom: zoom, bearing: 0, pitch: 0).clamped.zoom
        // North up and flat, so the centre moves by the pixels from the view's centre to the
        // visible part's, in world units at that zoom.
        let shift = (SIMD2(Double(width), Double(height)) / 2 - visible.center) / (MapTransform.tileSize * exp2(clampedZoom))
        return Camera(center: WebMercator.unproject((low + high) / 2 + shift), zoom: clampedZoom, bearing: 0, pitch: 0).clamped
    }
}

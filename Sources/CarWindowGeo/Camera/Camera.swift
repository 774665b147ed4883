import Foundation

/// Where the map is looked at from: Web Mercator centre, zoom, bearing and pitch.
///
/// Zoom follows MapLibre: at zoom `z` the world is `512 * 2^z` pixels wide, so the same numbers
/// give the same view in both renderers.
public struct Camera: Sendable, Hashable, CustomStringConvertible {
    /// The geographic point at the centre of the screen.
    public var center: GeoCoordinate
    /// Fractional zoom level, 0...22.
    public var zoom: Double
    /// Degrees clockwise from north of the direction that points up on the screen.
    public var bearing: Double
    /// Degrees the camera tilts away from looking straight down, 0...60.
    public var pitch: Double

    /// The largest pitch the renderer draws; higher values are clamped to it.
    public static let maximumPitch = 60.0
    /// The largest zoom level.
    public static let maximumZoom = 22.0
    /// Web Mercator's latitude limit.
    public static let maximumLatitude = 85.051128779806604

    /// Makes a camera over `center` at `zoom`, turned by `bearing` and tilted by `pitch` degrees.
    /// Values are stored as given; ``clamped`` brings them into range.
    public init(center: GeoCoordinate, zoom: Double, bearing: Double = 0, pitch: Double = 0) {
        self.center = center
        self.zoom = zoom
        self.bearing = bearing
        self.pitch = pitch
    }

    /// The same view with every value brought into range: zoom 0...22, pitch 0...60, bearing
    /// -180..<180, latitude within Web Mercator's limit, longitude wrapped. Non-finite values
    /// become 0.
    public var clamped: Camera {
        func finite(_ value: Double) -> Double { value.isFinite ? value : 0 }
        var bearing = finite(self.bearing).truncatingRemainder(dividingBy: 360)
        if bearing >= 180 { bearing -= 360 } else if bearing < -180 { bearing += 360 }
        var longitude = finite(center.longitude).truncatingRemainder(dividingBy: 360)
        if longitude > 180 { longitude -= 360 } else if longitude < -180 { longitude += 360 }
        return Camera(
            center: GeoCoordinate(
                latitude: min(max(finite(center.latitude), -Self.maximumLatitude), Self.maximumLatitude),
                longitude: longitude),
            zoom: min(max(finite(zoom), 0), Self.maximumZoom),
            bearing: bearing,
            pitch: min(max(finite(pitch), 0), Self.maximumPitch))
    }

    public var description: String {
        String(format: "lat %.6f lon %.6f zoom %.2f bearing %.1f pitch %.1f",
               center.latitude, center.longitude, zoom, bearing, pitch)
    }
}

/// Web Mercator in "world units": the whole world is the square 0..<1, x eastwards, y southwards.
package enum WebMercator {
    package static let earthRadius = 6_378_137.0

    package static func project(_ coordinate: GeoCoordinate) -> SIMD2<Double> {
        let latitude = min(max(coordinate.latitude, -Camera.maximumLatitude), Camera.maximumLatitude)
        let x = (coordinate.longitude + 180) / 360
        let sinLatitude = sin(latitude * .pi / 180)
        let y = 0.5 - log((1 + sinLatitude) / (1 - sinLatitude)) / (4 * .pi)
        return SIMD2(x, y)
    }

    package static func unproject(_ point: SIMD2<Double>) -> GeoCoordinate {
        let longitude = point.x * 360 - 180
        let latitude = 360 / .pi * atan(exp((0.5 - point.y) * 2 * .pi)) - 90
        return GeoCoordinate(latitude: latitude, longitude: longitude)
    }
}

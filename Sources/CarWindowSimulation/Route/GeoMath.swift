import Foundation
import CarWindowGeo

/// Small-distance geometry for routes, beside ``GeoCoordinate/offset(to:)`` and
/// ``GeoCoordinate/metres(to:)`` (the metric the map trims a driven route with): points a few
/// metres to a few hundred metres apart, where straight lines in degrees are close enough.
enum GeoMath {
    /// The point a fraction `t` of the way from `a` to `b`.
    @inline(__always)
    static func interpolate(_ a: GeoCoordinate, _ b: GeoCoordinate, _ t: Double) -> GeoCoordinate {
        GeoCoordinate(latitude: a.latitude + (b.latitude - a.latitude) * t,
                      longitude: a.longitude + (b.longitude - a.longitude) * t)
    }

    /// Degrees clockwise from north of a vector in metres east and north, in 0..<360.
    @inline(__always)
    static func heading(of vector: SIMD2<Double>) -> Double {
        let degrees = atan2(vector.x, vector.y) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// Whether `coordinate` is a finite position on the globe.
    static func isValid(_ coordinate: GeoCoordinate) -> Bool {
        coordinate.latitude.isFinite && coordinate.longitude.isFinite
            && (-90...90).contains(coordinate.latitude) && (-180...180).contains(coordinate.longitude)
    }
}

import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowProjection
import CarWindowSystemSupport

/// Small-distance geometry on the WGS 84 sphere approximation the map uses.
///
/// Routes are polylines of points a few metres to a few hundred metres apart, so a local
/// equirectangular projection at the pair's mean latitude is accurate to well under 0.1 % and far
/// cheaper than great-circle formulas.
enum GeoMath {
    static let earthRadius = GeoCoordinate.earthRadius
    static let metresPerDegree = GeoCoordinate.metresPerDegree

    /// The vector from `a` to `b` in metres, x east and y north.
    @inline(__always)
    static func offset(from a: GeoCoordinate, to b: GeoCoordinate) -> SIMD2<Double> { a.offset(to: b) }

    /// The distance from `a` to `b` in metres: the one the map trims a driven route with.
    @inline(__always)
    static func distance(_ a: GeoCoordinate, _ b: GeoCoordinate) -> Double { a.metres(to: b) }

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

import Foundation
/// A WGS 84 position in degrees.
public struct GeoCoordinate: Hashable, Sendable, CustomStringConvertible {
    /// Degrees north of the equator (negative south), -90...90.
    public var latitude: Double
    /// Degrees east of Greenwich (negative west), -180...180.
    public var longitude: Double

    /// Makes a position from latitude and longitude in degrees; nothing is clamped.
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    public var description: String { "(\(latitude), \(longitude))" }
}

extension GeoCoordinate {
    /// The sphere radius Web Mercator uses, so distances agree with the map's own scale.
    package static let earthRadius = 6_378_137.0
    package static let metresPerDegree = earthRadius * .pi / 180

    /// The vector from `self` to `other` in metres, x east and y north, in a local equirectangular
    /// projection at the pair's mean latitude: for the few metres to few hundred metres between
    /// route points it is accurate to well under 0.1 %, and far cheaper than great circles.
    @inline(__always)
    package func offset(to other: GeoCoordinate) -> SIMD2<Double> {
        let meanLatitude = (latitude + other.latitude) / 2 * .pi / 180
        return SIMD2((other.longitude - longitude) * Self.metresPerDegree * cos(meanLatitude),
                     (other.latitude - latitude) * Self.metresPerDegree)
    }

    /// The distance to `other` in metres, as ``offset(to:)`` measures it.
    @inline(__always)
    package func metres(to other: GeoCoordinate) -> Double {
        let vector = offset(to: other)
        return (vector * vector).sum().squareRoot()
    }
}

/// A latitude and longitude rectangle, as tile sources declare their coverage.
public struct GeoBounds: Hashable, Sendable {
    /// The south-west corner: the smallest latitude and longitude.
    public var southWest: GeoCoordinate
    /// The north-east corner: the largest latitude and longitude.
    public var northEast: GeoCoordinate

    /// Makes the rectangle between two corners.
    public init(southWest: GeoCoordinate, northEast: GeoCoordinate) {
        self.southWest = southWest
        self.northEast = northEast
    }

    /// The average of the corners' latitudes and longitudes; bounds that cross the
    /// antimeridian are not treated specially.
    public var center: GeoCoordinate {
        GeoCoordinate(latitude: (southWest.latitude + northEast.latitude) / 2,
                      longitude: (southWest.longitude + northEast.longitude) / 2)
    }
}

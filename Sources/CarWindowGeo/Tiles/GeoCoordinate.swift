import CarWindowSystemSupport
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

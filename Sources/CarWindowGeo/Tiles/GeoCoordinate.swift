import CarWindowSystemSupport
/// A WGS 84 position in degrees.
public struct GeoCoordinate: Hashable, Sendable, CustomStringConvertible {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    public var description: String { "(\(latitude), \(longitude))" }
}

/// A latitude and longitude rectangle, as tile sources declare their coverage.
public struct GeoBounds: Hashable, Sendable {
    public var southWest: GeoCoordinate
    public var northEast: GeoCoordinate

    public init(southWest: GeoCoordinate, northEast: GeoCoordinate) {
        self.southWest = southWest
        self.northEast = northEast
    }

    public var center: GeoCoordinate {
        GeoCoordinate(latitude: (southWest.latitude + northEast.latitude) / 2,
                      longitude: (southWest.longitude + northEast.longitude) / 2)
    }
}

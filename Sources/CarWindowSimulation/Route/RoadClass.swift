/// The kinds of drivable road the OpenMapTiles `transportation` layer tells apart, with the speeds
/// a simulated car drives on them.
///
/// The speeds are typical urban speeds, not legal limits (vector tiles carry no `maxspeed`):
///
/// | class     | km/h | OpenStreetMap highways                      |
/// |-----------|------|---------------------------------------------|
/// | motorway  | 80   | motorway, motorway_link                     |
/// | trunk     | 60   | trunk, trunk_link                           |
/// | primary   | 50   | primary, primary_link                       |
/// | secondary | 40   | secondary, secondary_link                   |
/// | tertiary  | 40   | tertiary, tertiary_link                     |
/// | minor     | 30   | residential, unclassified, living_street    |
/// | service   | 20   | service (driveways, parking aisles)         |
///
/// ``unknown`` marks segments of routes read from files that say nothing about roads.
package enum RoadClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case motorway
    case trunk
    case primary
    case secondary
    case tertiary
    case minor
    case service
    case unknown

    /// The class of a `transportation` feature's `class` value, or nil for ways a car does not
    /// drive on (paths, tracks, railways, ferries, roads under construction and the like).
    package init?(openMapTilesClass value: String) {
        switch value {
        case "motorway": self = .motorway
        case "trunk": self = .trunk
        case "primary": self = .primary
        case "secondary": self = .secondary
        case "tertiary": self = .tertiary
        case "minor": self = .minor
        case "service": self = .service
        default: return nil
        }
    }

    /// The speed driven on this class of road in kilometres per hour (see the table above).
    /// ``unknown`` uses 40 km/h, the speed most streets of a city allow.
    package var typicalSpeedKilometresPerHour: Double {
        switch self {
        case .motorway: 80
        case .trunk: 60
        case .primary: 50
        case .secondary, .tertiary: 40
        case .minor: 30
        case .service: 20
        case .unknown: 40
        }
    }

    /// ``typicalSpeedKilometresPerHour`` in metres per second.
    package var typicalSpeed: Double { typicalSpeedKilometresPerHour / 3.6 }

    /// Whether an intersection with this class of road is one where traffic lights are likely:
    /// tertiary roads and above.
    package var isMajor: Bool {
        switch self {
        case .motorway, .trunk, .primary, .secondary, .tertiary: true
        case .minor, .service, .unknown: false
        }
    }

    /// The OpenMapTiles class name.
    package var description: String { rawValue }
}

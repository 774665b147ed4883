import Foundation
import CarWindowGeo

/// Why the default drive could not be set up.
package enum DefaultDriveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The road graph could not be built from the tiles.
    case graph(RoadGraphError)
    /// No route joins the drive's ends.
    case route(RouteError)

    /// What went wrong and what to do about it, for logs and error messages.
    package var description: String {
        switch self {
        case .graph(let error): error.description
        case .route(let error): error.description
        }
    }
}

/// The drive `carwindow drive` shows when given no route: through central Helsinki, inside the
/// bundled `assets/helsinki.pmtiles` (which covers Kluuvi, Kaisaniemi, Kaartinkaupunki and
/// Hakaniemi, about 1 by 1.7 km, so the drive is short; benchmarks loop ``roundTrip(using:)``).
package enum HelsinkiDrive {
    /// Kasarmitori in Kaartinkaupunki, at the south edge of the bundled data.
    package static let start = GeoCoordinate(latitude: 60.1656, longitude: 24.9488)
    /// Hakaniemi square, at its north edge.
    package static let end = GeoCoordinate(latitude: 60.1786, longitude: 24.9506)

    /// The box the road graph is built over: the two ends with about 300 m to spare, so that
    /// routes may swing out around blocks.
    package static var graphBounds: GeoBounds {
        let margin = 300 / GeoCoordinate.metresPerDegree
        let longitudeMargin = margin / cos(start.latitude * .pi / 180)
        return GeoBounds(
            southWest: GeoCoordinate(latitude: min(start.latitude, end.latitude) - margin,
                                     longitude: min(start.longitude, end.longitude) - longitudeMargin),
            northEast: GeoCoordinate(latitude: max(start.latitude, end.latitude) + margin,
                                     longitude: max(start.longitude, end.longitude) + longitudeMargin))
    }

    /// The road graph of ``graphBounds`` from `source`.
    package static func graph(using source: any TileSource) throws(DefaultDriveError) -> RoadGraph {
        do { return try RoadGraph(source: source, bounds: graphBounds) } catch { throw .graph(error) }
    }

    /// The quickest route from ``start`` to ``end`` on the roads of `source`.
    package static func route(using source: any TileSource) throws(DefaultDriveError) -> DrivingRoute {
        let router = RoadRouter(graph: try graph(using: source))
        do { return try router.route(from: start, to: end) } catch { throw .route(error) }
    }

    /// ``start`` to ``end`` and back again, which ends where it began, so a long drive (a memory
    /// benchmark) can repeat it without the car jumping. The return leg is routed on its own and in
    /// the bundled data loops round a block at Hakaniemi instead of turning on the spot; the car's
    /// heading may differ between the end and the start of one lap.
    package static func roundTrip(using source: any TileSource) throws(DefaultDriveError) -> DrivingRoute {
        let router = RoadRouter(graph: try graph(using: source))
        do {
            let there = try router.route(from: start, to: end)
            let back = try router.route(from: end, to: start)
            return there.appending(back)
        } catch {
            throw .route(error)
        }
    }
}

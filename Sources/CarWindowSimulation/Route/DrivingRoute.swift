import CarWindowGeo
/// A route to drive: a polyline with the speed limit and road class of each of its segments and
/// the places where it crosses major roads.
///
/// Values are not checked when made; ``DrivePlan`` validates a route before driving it and says
/// what is wrong with one that cannot be driven.
package struct DrivingRoute: Sendable, Equatable {
    /// What is known about one segment of the polyline.
    package struct Segment: Sendable, Hashable {
        /// The speed not to exceed on the segment, in metres per second.
        package var speedLimit: Double
        /// The class of road the segment lies on; ``RoadClass/unknown`` for routes read from files.
        package var roadClass: RoadClass

        /// A segment with its limit in metres per second and its class.
        package init(speedLimit: Double, roadClass: RoadClass) {
            self.speedLimit = speedLimit
            self.roadClass = roadClass
        }
    }

    /// The polyline, first point first.
    package let points: [GeoCoordinate]
    /// Segment `i` joins `points[i]` and `points[i + 1]`; one fewer than the points.
    package let segments: [Segment]
    /// Ascending indices into ``points`` of interior points where the route crosses or meets a
    /// major road (tertiary or above): candidate places for traffic lights.
    package let majorIntersections: [Int]
    /// The length of the polyline in metres.
    package let length: Double

    /// A route from its parts; ``length`` is measured from `points`.
    package init(points: [GeoCoordinate], segments: [Segment], majorIntersections: [Int] = []) {
        self.points = points
        self.segments = segments
        self.majorIntersections = majorIntersections
        var length = 0.0
        for index in points.indices.dropFirst() {
            length += points[index - 1].metres(to: points[index])
        }
        self.length = length
    }

    /// A route whose segments all share one speed limit and class, as a route read from a file has.
    package init(points: [GeoCoordinate], speedLimit: Double, roadClass: RoadClass = .unknown) {
        let segment = Segment(speedLimit: speedLimit, roadClass: roadClass)
        self.init(points: points, segments: Array(repeating: segment, count: max(points.count - 1, 0)))
    }

    /// The straight-line distance from the first point to the last, in metres (0 for fewer than two points).
    package var straightLineDistance: Double {
        guard let first = points.first, let last = points.last else { return 0 }
        return first.metres(to: last)
    }

    /// This route followed by `other`, for round trips and long benchmark drives. When `other`
    /// starts where this route ends the shared point appears once; otherwise a straight segment at
    /// `other`'s first speed limit joins them.
    package func appending(_ other: DrivingRoute) -> DrivingRoute {
        guard let last = points.last, let first = other.points.first else {
            return points.isEmpty ? other : self
        }
        var points = self.points
        var segments = self.segments
        var intersections = majorIntersections
        let shared = last.metres(to: first) < 0.01
        if !shared {
            let joining = other.segments.first ?? segments.last ?? Segment(speedLimit: 40 / 3.6, roadClass: .unknown)
            segments.append(joining)
        }
        let offset = shared ? points.count - 1 : points.count
        points.append(contentsOf: shared ? other.points.dropFirst() : other.points[...])
        segments.append(contentsOf: other.segments)
        intersections.append(contentsOf: other.majorIntersections.map { $0 + offset })
        return DrivingRoute(points: points, segments: segments, majorIntersections: intersections)
    }
}

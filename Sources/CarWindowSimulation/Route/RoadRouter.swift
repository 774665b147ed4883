import CarWindowGeo
/// Why a route could not be found.
package enum RouteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The graph has no roads.
    case emptyGraph
    /// A start or end coordinate is NaN, infinite or outside the globe's ranges.
    case invalidCoordinate(GeoCoordinate)
    /// No node of the road network's largest component lies within `maximumDistance` metres.
    case noRoadNearby(GeoCoordinate, maximumDistance: Double)
    /// Start and end snap to the same node, so there is nothing to drive.
    case startEqualsEnd(GeoCoordinate)
    /// No path leads from start to end (cannot happen within one strongly connected component,
    /// kept so that a damaged graph reports instead of crashing).
    case noPath(from: GeoCoordinate, to: GeoCoordinate)

    /// What went wrong and what to do about it, for logs and error messages.
    package var description: String {
        switch self {
        case .emptyGraph:
            "The road graph has no drivable roads; build it over an area whose tiles carry a transportation layer."
        case .invalidCoordinate(let coordinate):
            "\(coordinate) is not a valid coordinate; pass a finite latitude in -90...90 and longitude in -180...180."
        case .noRoadNearby(let coordinate, let maximumDistance):
            "No road lies within \(Int(maximumDistance)) m of \(coordinate); pick a point inside the map data or widen the graph's box."
        case .startEqualsEnd(let coordinate):
            "Start and end both snap to the road node at \(coordinate); pick points further apart."
        case .noPath(let from, let to):
            "No drivable path leads from \(from) to \(to)."
        }
    }
}

/// Finds the quickest route between two coordinates on a ``RoadGraph`` with A*.
///
/// Start and end snap to the nearest node of the graph's largest strongly connected component, so a
/// route always exists and never starts on a stub that one-way rules make a dead end.
package struct RoadRouter: Sendable {
    /// Snapping further than this many metres is refused by default.
    package static let defaultMaximumSnapDistance = 250.0

    /// The roads routed on.
    package let graph: RoadGraph
    /// How far start and end may lie from the nearest usable road node, in metres.
    package var maximumSnapDistance: Double

    /// A router over `graph` that snaps ends within `maximumSnapDistance` metres.
    package init(graph: RoadGraph, maximumSnapDistance: Double = RoadRouter.defaultMaximumSnapDistance) {
        self.graph = graph
        self.maximumSnapDistance = maximumSnapDistance
    }

    /// The index of the node of the largest component nearest to `coordinate` (the lowest index of
    /// equally near ones).
    package func nearestNode(to coordinate: GeoCoordinate) throws(RouteError) -> Int {
        guard GeoMath.isValid(coordinate) else { throw .invalidCoordinate(coordinate) }
        guard graph.largestComponentSize > 0 else { throw .emptyGraph }
        var best: (node: Int, distance: Double)?
        for node in graph.nodes.indices where graph.isInLargestComponent(node) {
            let distance = coordinate.metres(to: graph.nodes[node])
            if distance < best?.distance ?? .infinity { best = (node, distance) }
        }
        guard let best, best.distance <= maximumSnapDistance else {
            throw .noRoadNearby(coordinate, maximumDistance: maximumSnapDistance)
        }
        return best.node
    }

    /// The quickest route from `start` to `end` (travel time at each class's typical speed).
    package func route(from start: GeoCoordinate, to end: GeoCoordinate) throws(RouteError) -> DrivingRoute {
        let startNode = try nearestNode(to: start)
        let endNode = try nearestNode(to: end)
        guard startNode != endNode else { throw .startEqualsEnd(graph.nodes[startNode]) }
        guard let path = shortestPath(from: startNode, to: endNode) else {
            throw .noPath(from: graph.nodes[startNode], to: graph.nodes[endNode])
        }
        return drivingRoute(along: path)
    }

    /// Node indices from `start` to `goal` inclusive, or nil when the goal cannot be reached.
    func shortestPath(from start: Int, to goal: Int) -> [Int]? {
        let nodeCount = graph.nodes.count
        let fastest = RoadClass.allCases.map(\.typicalSpeed).max() ?? 1
        let goalPosition = graph.nodes[goal]
        var cost = [Double](repeating: .infinity, count: nodeCount)
        var previousEdge = [Int](repeating: -1, count: nodeCount)
        var settled = [Bool](repeating: false, count: nodeCount)
        var queue = MinimumHeap()
        cost[start] = 0
        queue.push(priority: graph.nodes[start].metres(to: goalPosition) / fastest, node: start)
        while let (_, node) = queue.pop() {
            if settled[node] { continue }
            settled[node] = true
            if node == goal { break }
            let edgeRange = graph.edgeStarts[node]..<graph.edgeStarts[node + 1]
            for edgeIndex in edgeRange {
                let edge = graph.edgeList[edgeIndex]
                let candidate = cost[node] + edge.travelTime
                if candidate < cost[edge.to] {
                    cost[edge.to] = candidate
                    previousEdge[edge.to] = edgeIndex
                    // The straight-line time at the fastest speed never overestimates, so A* stays exact.
                    let estimate = graph.nodes[edge.to].metres(to: goalPosition) / fastest
                    queue.push(priority: candidate + estimate, node: edge.to)
                }
            }
        }
        guard settled[goal] else { return nil }
        var path = [goal]
        var node = goal
        while node != start {
            let edgeIndex = previousEdge[node]
            guard edgeIndex >= 0, path.count <= nodeCount else { return nil }
            node = graph.edgeList[edgeIndex].from
            path.append(node)
        }
        return path.reversed()
    }

    /// The route along `path`, its segments taking their edges' classes and typical speeds.
    func drivingRoute(along path: [Int]) -> DrivingRoute {
        var segments: [DrivingRoute.Segment] = []
        segments.reserveCapacity(path.count - 1)
        for index in path.indices.dropLast() {
            let from = path[index], to = path[index + 1]
            let roadClass = graph.edges(from: from).first { $0.to == to }?.roadClass ?? .unknown
            segments.append(DrivingRoute.Segment(speedLimit: roadClass.typicalSpeed, roadClass: roadClass))
        }
        let points = path.map { graph.nodes[$0] }
        // Dual carriageways give two close nodes per crossing; one traffic light stands for both.
        let minimumSpacing = 40.0
        var intersections: [Int] = []
        var distance = 0.0, lastKept = -Double.infinity
        for index in path.indices.dropFirst() {
            distance += points[index - 1].metres(to: points[index])
            guard index < path.count - 1, graph.isMajorIntersection(path[index]) else { continue }
            if distance - lastKept >= minimumSpacing {
                intersections.append(index)
                lastKept = distance
            }
        }
        return DrivingRoute(points: points, segments: segments, majorIntersections: intersections)
    }
}

/// A binary min-heap of (priority, node), ties broken by node index so that routes are deterministic.
struct MinimumHeap {
    private var items: [(priority: Double, node: Int)] = []

    private static func before(_ a: (priority: Double, node: Int), _ b: (priority: Double, node: Int)) -> Bool {
        a.priority < b.priority || (a.priority == b.priority && a.node < b.node)
    }

    mutating func push(priority: Double, node: Int) {
        items.append((priority, node))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (priority: Double, node: Int)? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < items.count, Self.before(items[left], items[smallest]) { smallest = left }
                if right < items.count, Self.before(items[right], items[smallest]) { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}

import Foundation
import CarWindowGeo

/// A polyline of road to put into a ``RoadGraph``, with its class and which ways it may be driven.
package struct RoadPolyline: Sendable, Hashable {
    /// Which directions a road may be driven along its points, as OpenMapTiles' `oneway` says.
    package enum Direction: Int, Sendable, Hashable {
        /// Both ways (no `oneway`, or `oneway` 0).
        case both = 0
        /// Only from the first point towards the last (`oneway` 1).
        case forward = 1
        /// Only from the last point towards the first (`oneway` -1).
        case reverse = -1
    }

    /// The road's vertices in the order its `oneway` refers to.
    package var points: [GeoCoordinate]
    /// What kind of road it is, which sets its speed.
    package var roadClass: RoadClass
    /// Which ways it may be driven.
    package var direction: Direction

    /// A road from its vertices, class and allowed directions.
    package init(points: [GeoCoordinate], roadClass: RoadClass, direction: Direction = .both) {
        self.points = points
        self.roadClass = roadClass
        self.direction = direction
    }
}

/// Why a ``RoadGraph`` could not be built.
package enum RoadGraphError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The box has a NaN or out-of-range corner, or its south-west corner is not south-west of its
    /// north-east corner (boxes across the antimeridian are not supported).
    case invalidBounds(GeoBounds)
    /// The box needs more tiles than the stated limit.
    case tooManyTiles(needed: Int, limit: Int)
    /// The zoom level asked for is one the source has no tiles at.
    case zoomOutOfRange(zoom: Int, available: ClosedRange<Int>)
    /// Reading or decoding a tile failed.
    case tileSource(TileSourceError)

    /// What went wrong and what to do about it, for logs and error messages.
    package var description: String {
        switch self {
        case .invalidBounds(let bounds):
            "The road graph's box \(bounds.southWest) to \(bounds.northEast) is not a valid south-west to north-east box; pass finite latitudes in -90...90 and longitudes in -180...180."
        case .tooManyTiles(let needed, let limit):
            "The road graph's box covers \(needed) tiles, more than the limit of \(limit); pass a smaller box or raise maximumTiles."
        case .zoomOutOfRange(let zoom, let available):
            "The tile source has no tiles at zoom \(zoom) (it has \(available.lowerBound)...\(available.upperBound)); build the graph at its highest zoom."
        case .tileSource(let error):
            "Reading tiles for the road graph failed: \(error)"
        }
    }
}

/// A directed graph of the drivable roads in an area, for routing a simulated car.
///
/// Every vertex of every road polyline is a node; every consecutive pair of vertices is an edge in
/// each direction the road may be driven. Vertices closer than ``mergeTolerance`` become one node, which
/// joins roads that vector tiles cut at tile edges and roads that meet at shared vertices. Nodes
/// are numbered in the order the roads are read (tiles in ``TileID`` order, features in file
/// order), so the same data always gives the same graph.
package struct RoadGraph: Sendable {
    /// One directed edge.
    package struct Edge: Sendable, Hashable {
        /// The index in ``RoadGraph/nodes`` the edge leaves.
        package let from: Int
        /// The index in ``RoadGraph/nodes`` the edge reaches.
        package let to: Int
        /// Metres.
        package let length: Double
        /// The class of the road the edge lies on.
        package let roadClass: RoadClass

        /// Seconds to drive the edge at its class's typical speed: the routing cost.
        package var travelTime: Double { length / roadClass.typicalSpeed }
    }

    /// Vertices closer than this many metres become one node. Tile coordinates of a z14 tile are
    /// about 0.3 m apart at Helsinki's latitude, so roads cut at a tile edge meet within it.
    package static let mergeTolerance = 0.5
    /// The most tiles ``init(source:bounds:zoom:maximumTiles:)`` reads unless told otherwise: a
    /// 6 x 6 block of z14 tiles, about 7 km across at Helsinki's latitude.
    package static let defaultMaximumTiles = 36

    /// The position of each node.
    package let nodes: [GeoCoordinate]
    /// Edges grouped by their `from` node; `edgeStarts[n]..<edgeStarts[n + 1]` are node n's.
    let edgeList: [Edge]
    let edgeStarts: [Int]
    /// The strongly connected component of each node; components are numbered in discovery order.
    let component: [Int]
    /// The component with the most nodes (the first of equals), or -1 for an empty graph.
    let largestComponentID: Int
    /// The node count of the largest strongly connected component.
    package let largestComponentSize: Int
    /// The node count of the largest component when one-way rules are ignored (weakly connected).
    package let largestWeakComponentSize: Int
    /// Whether each node joins at least three different non-service road neighbours and touches a
    /// major road (tertiary or above): a candidate place for traffic lights.
    let isMajorIntersection: [Bool]

    /// The number of directed edges.
    package var edgeCount: Int { edgeList.count }

    /// The edges leaving `node`, or none for an index outside the graph.
    package func edges(from node: Int) -> ArraySlice<Edge> {
        guard nodes.indices.contains(node) else { return [] }
        return edgeList[edgeStarts[node]..<edgeStarts[node + 1]]
    }

    /// Whether `node` belongs to the largest strongly connected component, where every node can
    /// reach every other while keeping to one-way rules.
    package func isInLargestComponent(_ node: Int) -> Bool {
        nodes.indices.contains(node) && component[node] == largestComponentID
    }

    /// Whether `node` is a candidate place for traffic lights (see ``DrivingRoute/majorIntersections``).
    package func isMajorIntersection(_ node: Int) -> Bool {
        nodes.indices.contains(node) && isMajorIntersection[node]
    }

    /// A graph of `roads`. Polylines with fewer than two points add nothing; points that are not
    /// finite positions on the globe break a polyline there.
    package init(roads: [RoadPolyline]) {
        let referenceLatitude = roads.lazy.compactMap { $0.points.first }.first { GeoMath.isValid($0) }?.latitude ?? 0
        var builder = Builder(referenceLatitude: referenceLatitude)
        for road in roads {
            var run: [SIMD2<Double>] = []
            for point in road.points {
                if GeoMath.isValid(point) {
                    run.append(WebMercator.project(point))
                } else {
                    builder.add(run, roadClass: road.roadClass, direction: road.direction)
                    run.removeAll(keepingCapacity: true)
                }
            }
            builder.add(run, roadClass: road.roadClass, direction: road.direction)
        }
        self.init(builder)
    }

    /// A graph of the drivable roads in the `transportation` layer of the tiles at `zoom` (by
    /// default the source's highest zoom, at most 14, where OpenMapTiles keeps every road) that
    /// cover `bounds`. Roads reaching outside the box are kept whole within their tiles.
    ///
    /// Throws ``RoadGraphError/tooManyTiles(needed:limit:)`` before reading anything when the box
    /// needs more than `maximumTiles` tiles. Tiles the source lacks are skipped.
    package init(source: any TileSource, bounds: GeoBounds, zoom: Int? = nil,
                maximumTiles: Int = RoadGraph.defaultMaximumTiles) throws(RoadGraphError) {
        let zoom = zoom ?? max(source.minZoom, min(source.maxZoom, 14))
        guard source.minZoom <= source.maxZoom, (source.minZoom...source.maxZoom).contains(zoom) else {
            throw .zoomOutOfRange(zoom: zoom, available: min(source.minZoom, source.maxZoom)...max(source.minZoom, source.maxZoom))
        }
        let tiles = try Self.tiles(covering: bounds, zoom: zoom, maximumTiles: maximumTiles)
        var builder = Builder(referenceLatitude: bounds.center.latitude)
        for tile in tiles {
            let data: Data?
            do { data = try source.data(for: tile) } catch { throw .tileSource(error) }
            guard let data, let layer = try Self.transportationLayer(in: data, tile: tile) else { continue }
            builder.add(layer, of: tile)
        }
        self.init(builder)
    }

    /// The tiles at `zoom` covering `bounds`, in ``TileID`` order, or a typed error for a bad box or
    /// one needing more than `maximumTiles` tiles.
    static func tiles(covering bounds: GeoBounds, zoom: Int, maximumTiles: Int) throws(RoadGraphError) -> [TileID] {
        let southWest = bounds.southWest, northEast = bounds.northEast
        guard GeoMath.isValid(southWest), GeoMath.isValid(northEast),
              southWest.latitude <= northEast.latitude, southWest.longitude <= northEast.longitude,
              (0...30).contains(zoom) else {
            throw .invalidBounds(bounds)
        }
        let count = Double(1 << zoom)
        let topLeft = WebMercator.project(GeoCoordinate(latitude: northEast.latitude, longitude: southWest.longitude)) * count
        let bottomRight = WebMercator.project(GeoCoordinate(latitude: southWest.latitude, longitude: northEast.longitude)) * count
        let last = Int(count) - 1
        let minX = min(max(Int(topLeft.x.rounded(.down)), 0), last), maxX = min(max(Int(bottomRight.x.rounded(.down)), 0), last)
        let minY = min(max(Int(topLeft.y.rounded(.down)), 0), last), maxY = min(max(Int(bottomRight.y.rounded(.down)), 0), last)
        let needed = (maxX - minX + 1) * (maxY - minY + 1)
        guard needed <= maximumTiles else { throw .tooManyTiles(needed: needed, limit: maximumTiles) }
        var tiles: [TileID] = []
        tiles.reserveCapacity(needed)
        for x in minX...maxX {
            for y in minY...maxY { tiles.append(TileID(z: zoom, x: x, y: y)) }
        }
        return tiles
    }

    /// Only the `transportation` layer of a tile is decoded: the decoder skips buildings and land
    /// cover, most of a city tile's bytes.
    static func transportationLayer(in data: Data, tile: TileID) throws(RoadGraphError) -> VectorTileLayer? {
        do {
            return try VectorTile(decoding: data, layers: ["transportation"]).layer(named: "transportation")
        } catch {
            throw .tileSource(.undecodableTile(tile, error))
        }
    }

    private init(_ builder: Builder) {
        let nodeCount = builder.positions.count
        nodes = builder.positions.map { WebMercator.unproject($0) }
        // Counting sort by `from` keeps each node's edges in the order they were read.
        var starts = [Int](repeating: 0, count: nodeCount + 1)
        for edge in builder.edges { starts[edge.from + 1] += 1 }
        for index in 0..<nodeCount { starts[index + 1] += starts[index] }
        var fill = starts
        var sorted = builder.edges
        for edge in builder.edges {
            sorted[fill[edge.from]] = edge
            fill[edge.from] += 1
        }
        edgeList = sorted
        edgeStarts = starts

        let components = Self.stronglyConnectedComponents(nodeCount: nodeCount, edges: sorted, starts: starts)
        component = components
        var sizes: [Int: Int] = [:]
        for id in components { sizes[id, default: 0] += 1 }
        let largest = sizes.max { a, b in a.value < b.value || (a.value == b.value && a.key > b.key) }
        largestComponentID = largest?.key ?? -1
        largestComponentSize = largest?.value ?? 0
        largestWeakComponentSize = Self.largestWeakComponent(nodeCount: nodeCount, edges: sorted)
        isMajorIntersection = Self.majorIntersections(nodeCount: nodeCount, edges: sorted)
    }

    /// Kosaraju's algorithm with explicit stacks, so that large graphs cannot overflow the call stack.
    private static func stronglyConnectedComponents(nodeCount: Int, edges: [Edge], starts: [Int]) -> [Int] {
        var reverseStarts = [Int](repeating: 0, count: nodeCount + 1)
        for edge in edges { reverseStarts[edge.to + 1] += 1 }
        for index in 0..<nodeCount { reverseStarts[index + 1] += reverseStarts[index] }
        var reverseFill = reverseStarts
        var reverseTargets = [Int](repeating: 0, count: edges.count)
        for edge in edges {
            reverseTargets[reverseFill[edge.to]] = edge.from
            reverseFill[edge.to] += 1
        }

        var visited = [Bool](repeating: false, count: nodeCount)
        var finishOrder: [Int] = []
        finishOrder.reserveCapacity(nodeCount)
        var stack: [(node: Int, nextEdge: Int)] = []
        for root in 0..<nodeCount where !visited[root] {
            visited[root] = true
            stack.append((root, starts[root]))
            while let top = stack.last {
                if top.nextEdge < starts[top.node + 1] {
                    stack[stack.count - 1].nextEdge += 1
                    let next = edges[top.nextEdge].to
                    if !visited[next] {
                        visited[next] = true
                        stack.append((next, starts[next]))
                    }
                } else {
                    finishOrder.append(top.node)
                    stack.removeLast()
                }
            }
        }

        var component = [Int](repeating: -1, count: nodeCount)
        var componentCount = 0
        var pending: [Int] = []
        for root in finishOrder.reversed() where component[root] < 0 {
            component[root] = componentCount
            pending.append(root)
            while let node = pending.popLast() {
                for index in reverseStarts[node]..<reverseStarts[node + 1] {
                    let previous = reverseTargets[index]
                    if component[previous] < 0 {
                        component[previous] = componentCount
                        pending.append(previous)
                    }
                }
            }
            componentCount += 1
        }
        return component
    }

    private static func largestWeakComponent(nodeCount: Int, edges: [Edge]) -> Int {
        var parent = Array(0..<nodeCount)
        func root(_ node: Int) -> Int {
            var node = node
            while parent[node] != node {
                parent[node] = parent[parent[node]]
                node = parent[node]
            }
            return node
        }
        for edge in edges {
            let a = root(edge.from), b = root(edge.to)
            if a != b { parent[max(a, b)] = min(a, b) }
        }
        var sizes = [Int](repeating: 0, count: nodeCount)
        for node in 0..<nodeCount { sizes[root(node)] += 1 }
        return sizes.max() ?? 0
    }

    private static func majorIntersections(nodeCount: Int, edges: [Edge]) -> [Bool] {
        var neighbours = [Set<Int>](repeating: [], count: nodeCount)
        var touchesMajor = [Bool](repeating: false, count: nodeCount)
        for edge in edges {
            if edge.roadClass != .service {
                neighbours[edge.from].insert(edge.to)
                neighbours[edge.to].insert(edge.from)
            }
            if edge.roadClass.isMajor {
                touchesMajor[edge.from] = true
                touchesMajor[edge.to] = true
            }
        }
        return (0..<nodeCount).map { touchesMajor[$0] && neighbours[$0].count >= 3 }
    }
}

extension RoadGraph {
    /// Collects nodes and edges while roads are read, merging nearby vertices through a hash grid
    /// of cells one tolerance wide (a vertex is compared with the nodes of its 3 x 3 cells).
    struct Builder {
        private struct EdgeKey: Hashable {
            let from: Int
            let to: Int
        }

        /// The merge tolerance in Web Mercator units (the world is 1 wide) at the reference latitude.
        let tolerance: Double
        private(set) var positions: [SIMD2<Double>] = []
        private(set) var edges: [Edge] = []
        private var cells: [SIMD2<Int64>: [Int]] = [:]
        private var edgeKeys: Set<EdgeKey> = []

        init(referenceLatitude: Double) {
            let metresPerWorld = 2 * Double.pi * GeoCoordinate.earthRadius * max(cos(referenceLatitude * .pi / 180), 0.01)
            tolerance = RoadGraph.mergeTolerance / metresPerWorld
        }

        mutating func node(at position: SIMD2<Double>) -> Int {
            let cell = SIMD2(Int64((position.x / tolerance).rounded(.down)), Int64((position.y / tolerance).rounded(.down)))
            var best: (node: Int, distanceSquared: Double)?
            for dx in Int64(-1)...1 {
                for dy in Int64(-1)...1 {
                    for candidate in cells[cell &+ SIMD2(dx, dy)] ?? [] {
                        let delta = positions[candidate] - position
                        let distanceSquared = (delta * delta).sum()
                        if distanceSquared <= tolerance * tolerance,
                           distanceSquared < best?.distanceSquared ?? .infinity {
                            best = (candidate, distanceSquared)
                        }
                    }
                }
            }
            if let best { return best.node }
            positions.append(position)
            cells[cell, default: []].append(positions.count - 1)
            return positions.count - 1
        }

        /// Adds a polyline given in Web Mercator units.
        mutating func add(_ line: [SIMD2<Double>], roadClass: RoadClass, direction: RoadPolyline.Direction) {
            guard line.count >= 2 else { return }
            var previous = node(at: line[0])
            for position in line.dropFirst() {
                let current = node(at: position)
                if current != previous {
                    switch direction {
                    case .both:
                        addEdge(from: previous, to: current, roadClass: roadClass)
                        addEdge(from: current, to: previous, roadClass: roadClass)
                    case .forward:
                        addEdge(from: previous, to: current, roadClass: roadClass)
                    case .reverse:
                        addEdge(from: current, to: previous, roadClass: roadClass)
                    }
                }
                previous = current
            }
        }

        private mutating func addEdge(from: Int, to: Int, roadClass: RoadClass) {
            guard edgeKeys.insert(EdgeKey(from: from, to: to)).inserted else { return }
            let length = WebMercator.unproject(positions[from]).metres(to: WebMercator.unproject(positions[to]))
            edges.append(Edge(from: from, to: to, length: length, roadClass: roadClass))
        }

        /// Adds the drivable lines of a `transportation` layer, each clipped to its tile's own square
        /// so that a road cut at a tile edge ends exactly on the edge in both tiles (the buffer
        /// beyond the edge holds pieces of the neighbour's roads, clipped at arbitrary points).
        mutating func add(_ layer: VectorTileLayer, of tile: TileID) {
            let extent = Double(layer.extent)
            let scale = 1 / (extent * Double(1 << tile.z))
            let origin = SIMD2(Double(tile.x), Double(tile.y)) * extent
            for feature in layer.features where feature.type == .lineString {
                guard case .string(let name)? = feature.properties["class"],
                      let roadClass = RoadClass(openMapTilesClass: name) else { continue }
                let oneway = feature.properties["oneway"]?.number ?? 0
                let direction: RoadPolyline.Direction = oneway == 1 ? .forward : oneway == -1 ? .reverse : .both
                for part in feature.geometry {
                    for run in Self.clip(part, extent: extent) {
                        add(run.map { ($0 + origin) * scale }, roadClass: roadClass, direction: direction)
                    }
                }
            }
        }

        /// The pieces of `line` inside the square 0...extent (Liang-Barsky per segment).
        static func clip(_ line: [TilePoint], extent: Double) -> [[SIMD2<Double>]] {
            var runs: [[SIMD2<Double>]] = []
            var current: [SIMD2<Double>] = []
            for index in line.indices.dropFirst() {
                let a = SIMD2(Double(line[index - 1].x), Double(line[index - 1].y))
                let b = SIMD2(Double(line[index].x), Double(line[index].y))
                guard let (enter, exit) = clipSegment(a, b, extent: extent) else {
                    if current.count >= 2 { runs.append(current) }
                    current = []
                    continue
                }
                if enter > 0 || current.isEmpty {
                    if current.count >= 2 { runs.append(current) }
                    current = [a + (b - a) * enter]
                }
                current.append(a + (b - a) * exit)
                if exit < 1 {
                    if current.count >= 2 { runs.append(current) }
                    current = []
                }
            }
            if current.count >= 2 { runs.append(current) }
            return runs
        }

        /// The parameters where segment a-b enters and leaves the square, or nil when it misses.
        private static func clipSegment(_ a: SIMD2<Double>, _ b: SIMD2<Double>, extent: Double) -> (Double, Double)? {
            var enter = 0.0, exit = 1.0
            let delta = b - a
            for (p, q) in [(-delta.x, a.x), (delta.x, extent - a.x), (-delta.y, a.y), (delta.y, extent - a.y)] {
                if p == 0 {
                    if q < 0 { return nil }
                } else {
                    let t = q / p
                    if p < 0 { enter = max(enter, t) } else { exit = min(exit, t) }
                }
            }
            return enter <= exit ? (enter, exit) : nil
        }
    }
}

import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSimulation
@testable import CarWindowTestSupport

/// The default drive's graph and route, built once for the tests that only read them.
private let defaultDrive: (graph: RoadGraph, route: DrivingRoute, buildSeconds: Double) = {
    do {
        let source = try openTileSource(at: TestPaths.tiles)
        let clock = ContinuousClock()
        var graph: RoadGraph?
        let elapsed = try clock.measure { graph = try HelsinkiDrive.graph(using: source) }
        let built = try #require(graph)
        let route = try RoadRouter(graph: built).route(from: HelsinkiDrive.start, to: HelsinkiDrive.end)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return (built, route, seconds)
    } catch {
        fatalError("the default drive cannot be built: \(error)")
    }
}()

/// Angle between two headings in degrees, 0...180.
private func headingDifference(_ a: Double, _ b: Double) -> Double {
    let difference = abs(a - b).truncatingRemainder(dividingBy: 360)
    return min(difference, 360 - difference)
}

/// A coordinate `east` and `north` metres from Helsinki's centre.
private func offset(east: Double, north: Double) -> GeoCoordinate {
    let metresPerDegree = GeoCoordinate.metresPerDegree
    return GeoCoordinate(latitude: helsinki.latitude + north / metresPerDegree,
                         longitude: helsinki.longitude + east / (metresPerDegree * cos(helsinki.latitude * .pi / 180)))
}

@Suite struct RouteGraphTests {
    @Test func defaultGraphHasOneLargeComponent() {
        let graph = defaultDrive.graph
        print("road graph of the default drive: \(graph.nodes.count) nodes, \(graph.edgeCount) edges, largest strongly connected \(graph.largestComponentSize), weakly \(graph.largestWeakComponentSize), built in \(defaultDrive.buildSeconds) s")
        #expect(graph.nodes.count > 1000)
        #expect(Double(graph.largestWeakComponentSize) >= 0.95 * Double(graph.nodes.count))
        #expect(Double(graph.largestComponentSize) >= 0.8 * Double(graph.nodes.count))
        for node in graph.nodes.indices {
            for edge in graph.edges(from: node) where edge.roadClass == .unknown || !(edge.length > 0) {
                Issue.record("edge \(edge) has no class or no length")
            }
        }
    }

    @Test func roadsCutAtTileEdgesJoinAcrossThem() throws {
        // All four z14 tiles of the bundled data: nodes on the shared edges of tiles
        // 9326/9327 and 4741/4742 must connect to roads on both sides, never end there.
        let source = try openTileSource(at: TestPaths.tiles)
        let graph = try RoadGraph(source: source, bounds: try #require(source.bounds))
        var neighbours = [Set<Int>](repeating: [], count: graph.nodes.count)
        for node in graph.nodes.indices {
            for edge in graph.edges(from: node) {
                neighbours[edge.from].insert(edge.to)
                neighbours[edge.to].insert(edge.from)
            }
        }
        var onEdges = 0, deadEnds = 0
        for node in graph.nodes.indices {
            let tileUnits = WebMercator.project(graph.nodes[node]) * Double(1 << 14) * 4096
            guard abs(tileUnits.x - 9327 * 4096) < 2 || abs(tileUnits.y - 4742 * 4096) < 2 else { continue }
            onEdges += 1
            if neighbours[node].count < 2 { deadEnds += 1 }
        }
        print("whole data: \(graph.nodes.count) nodes, largest weakly connected \(graph.largestWeakComponentSize); \(onEdges) nodes on interior tile edges, \(deadEnds) dead ends there")
        #expect(onEdges >= 10)
        #expect(deadEnds == 0)
        #expect(Double(graph.largestWeakComponentSize) >= 0.98 * Double(graph.nodes.count))
    }

    @Test func buildIsDeterministic() throws {
        let again = try HelsinkiDrive.graph(using: try openTileSource(at: TestPaths.tiles))
        #expect(again.nodes == defaultDrive.graph.nodes)
        #expect(again.edgeList == defaultDrive.graph.edgeList)
    }

    @Test func badBoxesAreRefused() throws {
        let source = try openTileSource(at: TestPaths.tiles)
        let wide = GeoBounds(southWest: GeoCoordinate(latitude: 60, longitude: 24),
                             northEast: GeoCoordinate(latitude: 61, longitude: 25))
        // Columns 9284...9329 and rows 4665...4757 at z14 (the XYZ formulas, computed in Python).
        #expect(throws: RoadGraphError.tooManyTiles(needed: 46 * 93, limit: 36)) {
            try RoadGraph(source: source, bounds: wide)
        }
        let nan = GeoBounds(southWest: GeoCoordinate(latitude: .nan, longitude: 24), northEast: helsinki)
        #expect { try RoadGraph(source: source, bounds: nan) } throws: { error in
            if case RoadGraphError.invalidBounds = error { true } else { false }
        }
        let flipped = GeoBounds(southWest: helsinki, northEast: offset(east: -100, north: -100))
        #expect(throws: RoadGraphError.invalidBounds(flipped)) { try RoadGraph(source: source, bounds: flipped) }
        #expect(throws: RoadGraphError.zoomOutOfRange(zoom: 18, available: 10...14)) {
            try RoadGraph(source: source, bounds: HelsinkiDrive.graphBounds, zoom: 18)
        }
    }

    @Test func onewayRulesAndVertexMerging() {
        let a = offset(east: 0, north: 0), b = offset(east: 100, north: 0), c = offset(east: 100, north: 100)
        let nearB = offset(east: 100.2, north: 0), farFromB = offset(east: 102, north: 0)
        let graph = RoadGraph(roads: [
            RoadPolyline(points: [a, b], roadClass: .primary, direction: .forward),
            RoadPolyline(points: [nearB, c], roadClass: .minor, direction: .reverse),
            RoadPolyline(points: [farFromB, offset(east: 200, north: 0)], roadClass: .service),
            RoadPolyline(points: [c, offset(east: 0, north: 100)], roadClass: .motorway),
        ])
        // a, b (nearB merged into it), c, farFromB, its end, and the motorway's far end.
        #expect(graph.nodes.count == 6)
        #expect(graph.edges(from: 0).map(\.to) == [1])
        #expect(graph.edges(from: 1).isEmpty)
        #expect(graph.edges(from: 2).map(\.to).sorted() == [1, 5])
        #expect(graph.edges(from: 3).map(\.to) == [4])
        #expect(graph.edges(from: 4).map(\.to) == [3])
        let edge = graph.edges(from: 0).first
        #expect(abs((edge?.length ?? 0) - 100) < 0.01)
        #expect(abs((edge?.travelTime ?? 0) - 100 / (50 / 3.6)) < 0.01)
    }
}

@Suite struct RouteRouterTests {
    @Test func defaultRouteIsPlausible() {
        let route = defaultDrive.route
        let ratio = route.length / route.straightLineDistance
        print("default route: \(route.points.count) points, \(route.length) m, straight line \(route.straightLineDistance) m, ratio \(ratio), \(route.majorIntersections.count) major intersections")
        #expect(route.points.count >= 10)
        #expect(route.segments.count == route.points.count - 1)
        #expect(ratio > 1 && ratio < 2)
        #expect(route.straightLineDistance > 1000)
        #expect(route.points[0].metres(to: HelsinkiDrive.start) < 100)
        #expect(route.points[route.points.count - 1].metres(to: HelsinkiDrive.end) < 100)
        #expect(!route.majorIntersections.isEmpty)
        #expect(route.majorIntersections == route.majorIntersections.sorted())
        #expect(route.segments.allSatisfy { $0.roadClass != .unknown && $0.speedLimit == $0.roadClass.typicalSpeed })
    }

    @Test func defaultRouteFollowsGraphEdgesInTheirAllowedDirection() throws {
        let graph = defaultDrive.graph
        var nodeIndex: [GeoCoordinate: Int] = [:]
        for (index, node) in graph.nodes.enumerated() { nodeIndex[node] = index }
        let route = defaultDrive.route
        for index in route.points.indices.dropFirst() {
            let from = try #require(nodeIndex[route.points[index - 1]])
            let to = try #require(nodeIndex[route.points[index]])
            let edge = graph.edges(from: from).first { $0.to == to }
            #expect(edge != nil, "route step \(index) is not an allowed edge")
            #expect(edge?.roadClass == route.segments[index - 1].roadClass)
        }
    }

    @Test func knownOnewayStreetIsNotDrivenBackwards() throws {
        // A one-way minor street in tile 14/9327/4742, south-bound: its first two vertices, read with
        // the mapbox-vector-tile Python package (oneway=1, 26.5 m apart).
        let north = GeoCoordinate(latitude: 60.17297753951754, longitude: 24.947344064712524)
        let south = GeoCoordinate(latitude: 60.172740071418076, longitude: 24.947370886802673)
        let router = RoadRouter(graph: defaultDrive.graph, maximumSnapDistance: 2)
        let forward = try router.route(from: north, to: south)
        #expect(forward.points.count == 2)
        #expect(abs(forward.length - 26.5) < 0.5)
        let backward = try router.route(from: south, to: north)
        #expect(backward.length > 60, "driving north means going round the block")
    }

    @Test func badRequestsGiveTypedErrors() {
        let router = RoadRouter(graph: defaultDrive.graph)
        #expect {
            try router.route(from: GeoCoordinate(latitude: .nan, longitude: 24.9), to: HelsinkiDrive.end)
        } throws: { error in
            if case RouteError.invalidCoordinate = error { true } else { false }
        }
        let outOfRange = GeoCoordinate(latitude: 60.17, longitude: 200)
        #expect(throws: RouteError.invalidCoordinate(outOfRange)) { try router.route(from: HelsinkiDrive.start, to: outOfRange) }
        let tampere = GeoCoordinate(latitude: 61.4978, longitude: 23.7610)
        #expect(throws: RouteError.noRoadNearby(tampere, maximumDistance: 250)) {
            try router.route(from: HelsinkiDrive.start, to: tampere)
        }
        #expect(throws: RouteError.self) { try router.route(from: HelsinkiDrive.start, to: HelsinkiDrive.start) }
        #expect(throws: RouteError.emptyGraph) {
            try RoadRouter(graph: RoadGraph(roads: [])).route(from: HelsinkiDrive.start, to: HelsinkiDrive.end)
        }
    }
}

@Suite struct RouteGeoJSONTests {
    private func read(_ text: String, maximumPoints: Int = 100) throws(GeoJSONRouteError) -> DrivingRoute {
        try DrivingRoute(geoJSON: Data(text.utf8), maximumPoints: maximumPoints)
    }

    @Test func readsLinesInEveryWrapper() throws {
        let line = #"{"type":"LineString","coordinates":[[24.94,60.17],[24.95,60.17,12.5],[24.95,60.18]]}"#
        let route = try read(line)
        #expect(route.points == [GeoCoordinate(latitude: 60.17, longitude: 24.94),
                                 GeoCoordinate(latitude: 60.17, longitude: 24.95),
                                 GeoCoordinate(latitude: 60.18, longitude: 24.95)])
        #expect(route.segments == Array(repeating: DrivingRoute.Segment(speedLimit: 40 / 3.6, roadClass: .unknown), count: 2))
        // 0.01 degrees of longitude at 60.17 N plus 0.01 of latitude on the 6378137 m sphere, computed
        // in Python as 0.01 * R * pi / 180 * (cos(60.17 degrees) + 1).
        #expect(abs(route.length - 1666.93) < 0.01)

        let multi = #"{"type":"MultiLineString","coordinates":[[[24.94,60.17],[24.95,60.17]],[[24.95,60.17],[24.95,60.18]]]}"#
        #expect(try read(multi).points == route.points)
        let feature = #"{"type":"Feature","properties":{},"geometry":\#(line)}"#
        #expect(try read(feature).points == route.points)
        let collection = #"""
        {"type":"FeatureCollection","features":[
          {"type":"Feature","geometry":{"type":"Point","coordinates":[24.9,60.1]}},
          \#(feature),
          {"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]}}]}
        """#
        #expect(try read(collection).points == route.points)
    }

    @Test func readsFiles() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("route-\(UUID().uuidString).geojson")
        try Data(#"{"type":"LineString","coordinates":[[24.94,60.17],[24.95,60.17]]}"#.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try DrivingRoute(geoJSONContentsOf: url, speedLimit: 5).segments.first?.speedLimit == 5)
        let missing = url.appendingPathExtension("missing")
        #expect(throws: GeoJSONRouteError.self) { try DrivingRoute(geoJSONContentsOf: missing) }
    }

    @Test func invalidDocumentsGiveTypedErrors() {
        func failure(_ text: String, maximumPoints: Int = 100) -> GeoJSONRouteError? {
            do { _ = try read(text, maximumPoints: maximumPoints); return nil } catch { return error }
        }
        if case .notJSON = failure("LINESTRING(24 60, 25 61)") {} else { Issue.record("WKT is not JSON") }
        if case .notJSON = failure(#"{"type":"LineString","coordinates":[[NaN,60],[24,60]]}"#) {} else {
            Issue.record("NaN is not JSON")
        }
        #expect(failure(#"{"type":"Point","coordinates":[24.9,60.1]}"#) == .noLine(found: "a Point"))
        #expect(failure(#"{"type":"Feature","geometry":null}"#) == .noLine(found: "a Feature without geometry"))
        #expect(failure(#"{"type":"FeatureCollection","features":[]}"#) == .noLine(found: "an empty FeatureCollection"))
        #expect(failure(#"{"type":"LineString","coordinates":[[24.9,60.1]]}"#) == .tooFewPoints(count: 1))
        #expect(failure(#"{"type":"LineString","coordinates":[[24.9,60.1],[24.9,60.1]]}"#) == .tooFewPoints(count: 1))
        #expect(failure(#"{"type":"LineString","coordinates":[[24.9,60.1],[60.1,124.9]]}"#)
                == .coordinateOutOfRange(index: 1, longitude: 60.1, latitude: 124.9))
        #expect(failure(#"{"type":"LineString","coordinates":[[1,1],[2,2],[3,3],[4,4]]}"#, maximumPoints: 3)
                == .tooManyPoints(count: 4, limit: 3))
        if case .malformed(let path, _) = failure(#"{"type":"LineString","coordinates":[[24.9,60.1],["a",60]]}"#) {
            #expect(path == "document.coordinates[1]")
        } else {
            Issue.record("a string longitude is malformed")
        }
        if case .malformed = failure(#"{"coordinates":[[1,1],[2,2]]}"#) {} else { Issue.record("no type is malformed") }
        if case .malformed = failure("[1, 2]") {} else { Issue.record("an array is not a GeoJSON object") }
        #expect(failure(#"{"type":"LineString","coordinates":[[24.9,60.1],[24.91,60.1]]}"#) == nil)
    }
}

@Suite struct RouteDrivePlanTests {
    /// Samples the plan at 10 Hz from before the start to after the end.
    private func samples(_ plan: DrivePlan) -> [(time: Double, state: VehicleState)] {
        stride(from: -1.0, through: plan.duration + 1, by: 0.1).map { ($0, plan.state(at: $0)) }
    }

    @Test func defaultDriveKeepsLimitsAccelerationAndSmoothHeading() throws {
        let plan = try DrivePlan(route: defaultDrive.route)
        print("default drive: \(plan.length) m in \(plan.duration) s, stops \(plan.stops.map { "\(Int($0.distance)) m for \(String(format: "%.1f", $0.dwell)) s" })")
        let states = samples(plan)
        var largestTurn = 0.0, fastest = 0.0
        for (index, (time, state)) in states.enumerated() {
            fastest = max(fastest, state.speed)
            #expect(state.speed >= 0)
            #expect(state.speed <= plan.speedLimit(atDistance: state.distance) + 1e-9, "too fast at \(time) s")
            guard index > 0 else { continue }
            let previous = states[index - 1].state
            let acceleration = (state.speed - previous.speed) / 0.1
            #expect(acceleration <= 1.5 + 1e-6 && acceleration >= -2.5 - 1e-6, "acceleration \(acceleration) at \(time) s")
            #expect(state.distance >= previous.distance - 1e-9)
            let turn = headingDifference(state.heading, previous.heading)
            largestTurn = max(largestTurn, turn)
        }
        print("largest heading change per 0.1 s: \(largestTurn) degrees; top speed \(fastest) m/s")
        #expect(largestTurn < 15)
        #expect(fastest > 10)
        #expect(plan.duration > plan.length / (50 / 3.6))
        #expect(!plan.stops.isEmpty)
    }

    @Test func stopsLastTheirDwellAndTheDriveEndsAtTheEnd() throws {
        let options = DriveOptions(trafficLightInterval: 0, stopDistances: [500, 1000], stopDwell: 12...12)
        let plan = try DrivePlan(route: defaultDrive.route, options: options)
        #expect(plan.stops.map(\.distance) == [500, 1000])
        for stop in plan.stops {
            #expect(stop.dwell == 12)
            let stoppedSamples = stride(from: stop.arrival - 5, through: stop.arrival + 17, by: 0.1)
                .filter { plan.state(at: $0).isStopped }
            #expect(abs(Double(stoppedSamples.count) * 0.1 - 12) <= 0.15)
            let during = plan.state(at: stop.arrival + 6)
            #expect(during.isStopped && during.speed == 0 && abs(during.distance - stop.distance) < 1e-6)
            #expect(plan.state(at: stop.arrival - 0.5).speed > 0)
            #expect(plan.state(at: stop.arrival + 12.5).speed > 0)
        }
        let end = plan.state(at: plan.duration)
        let last = try #require(defaultDrive.route.points.last)
        #expect(end.isFinished && end.isStopped)
        #expect(end.coordinate.metres(to: last) < 1e-6)
        #expect(abs(end.distance - defaultDrive.route.length) < 1e-6)
        #expect(!plan.state(at: plan.duration - 1).isFinished)
        #expect(plan.state(at: .infinity) == end)
        let start = plan.state(at: -3)
        #expect(start.isStopped && !start.isFinished && start.coordinate == defaultDrive.route.points[0])
    }

    @Test func seededDwellsAreDeterministic() throws {
        let route = defaultDrive.route
        let first = try DrivePlan(route: route, options: DriveOptions(trafficLightInterval: 1, seed: 7))
        let second = try DrivePlan(route: route, options: DriveOptions(trafficLightInterval: 1, seed: 7))
        let other = try DrivePlan(route: route, options: DriveOptions(trafficLightInterval: 1, seed: 8))
        #expect(first.stops == second.stops && first.duration == second.duration)
        #expect(first.stops.map(\.distance) == other.stops.map(\.distance))
        #expect(first.stops.map(\.dwell) != other.stops.map(\.dwell))
        #expect(first.stops.allSatisfy { (8...20).contains($0.dwell) })
        #expect(first.stops.count == route.majorIntersections.count)
        for time in stride(from: 0.0, through: first.duration, by: 7.3) {
            #expect(first.state(at: time) == second.state(at: time))
        }
    }

    @Test func straightRouteMatchesTheAnalyticTimeline() throws {
        // 1000 m at 10 m/s: 6.667 s to speed up over 33.3 m, 4 s to brake over 20 m, and 946.7 m of
        // cruising in 94.67 s, 105.333 s in all.
        let route = DrivingRoute(points: [offset(east: 0, north: 0), offset(east: 0, north: 1000)], speedLimit: 10)
        let plan = try DrivePlan(route: route, options: DriveOptions(trafficLightInterval: 0))
        #expect(abs(plan.length - 1000) < 1e-6)
        #expect(abs(plan.duration - (10 / 1.5 + 946.0 / 10 + 2.0 / 3.0 / 10 + 4)) < 1e-6)
        #expect(abs(plan.state(at: 10 / 1.5).distance - 100.0 / 3) < 1e-6)
        #expect(abs(plan.state(at: 50).speed - 10) < 1e-9)
        #expect(abs(plan.state(at: 50).heading) < 1e-6 || abs(plan.state(at: 50).heading - 360) < 1e-6)
    }

    @Test func sharpCornersAreTakenSlowly() throws {
        // Two 200 m legs at a right angle, 50 km/h: the corner arc touches chords 20 m long halfway,
        // so its radius is 10 m / tan(45 degrees) = 10 m and the corner speed sqrt(2 * 10) = 4.47 m/s.
        let route = DrivingRoute(points: [offset(east: 0, north: 0), offset(east: 0, north: 200), offset(east: 200, north: 200)],
                                 speedLimit: 50 / 3.6)
        let plan = try DrivePlan(route: route, options: DriveOptions(trafficLightInterval: 0))
        let states = samples(plan)
        let corner = try #require(states.min { abs($0.state.distance - 200) < abs($1.state.distance - 200) })
        #expect(abs(corner.state.speed - 20.0.squareRoot()) < 0.2)
        #expect(states.contains { abs($0.state.speed - 50 / 3.6) < 1e-9 })
        let headings = states.map(\.state.heading)
        #expect(headings.first.map { $0 < 1 || $0 > 359 } == true)
        #expect(abs((headings.last ?? 0) - 90) < 1e-6)
        var largest = 0.0
        for index in headings.indices.dropFirst() { largest = max(largest, headingDifference(headings[index], headings[index - 1])) }
        #expect(largest < 10)
    }

    /// The drive shows ``DrivePlan/points`` once and moves the route progress to the car's
    /// distance: the map trims at metres measured along those points with
    /// `GeoCoordinate.metres(to:)`, so the plan's distances must be that sum, and the car's
    /// distance must be where its coordinate lies on them.
    @Test func theCarsDistanceIsWhereTheMapTrimsTheRoute() throws {
        let plan = try DrivePlan(route: defaultDrive.route)
        let routeCount = defaultDrive.route.points.count
        #expect((routeCount...(routeCount + plan.stops.count)).contains(plan.points.count))
        var measured = 0.0
        for index in plan.points.indices.dropFirst() {
            measured += plan.points[index - 1].metres(to: plan.points[index])
            #expect(abs(measured - plan.distances[index]) < 0.01, "point \(index)")
        }
        var previous = -1.0
        for time in stride(from: 0.0, to: plan.duration, by: 5) {
            let state = plan.state(at: time)
            #expect(state.distance >= previous)
            previous = state.distance
            let segment = max(0, (plan.distances.lastIndex { $0 <= state.distance } ?? 0))
            let along = plan.distances[segment] + plan.points[segment].metres(to: state.coordinate)
            #expect(abs(along - state.distance) < 0.01, "at \(time) s")
        }
        #expect(plan.state(at: plan.duration).isFinished)
    }

    @Test func roundTripEndsWhereItStarts() throws {
        let route = try HelsinkiDrive.roundTrip(using: try openTileSource(at: TestPaths.tiles))
        #expect(route.points.first == route.points.last)
        #expect(route.length > 2 * defaultDrive.route.length * 0.8)
        let plan = try DrivePlan(route: route)
        print("round trip: \(route.length) m in \(plan.duration) s")
        #expect(plan.duration > 0)
    }

    @Test func undrivableRoutesGiveTypedErrors() {
        let a = offset(east: 0, north: 0), b = offset(east: 0, north: 100)
        func failure(_ route: DrivingRoute, _ options: DriveOptions = DriveOptions()) -> DrivePlanError? {
            do { _ = try DrivePlan(route: route, options: options); return nil } catch { return error }
        }
        #expect(failure(DrivingRoute(points: [a], speedLimit: 10)) == .tooFewPoints(count: 1))
        #expect(failure(DrivingRoute(points: [], speedLimit: 10)) == .tooFewPoints(count: 0))
        let nan = GeoCoordinate(latitude: .nan, longitude: 24.9)
        if case .invalidCoordinate(let index, _) = failure(DrivingRoute(points: [a, nan], speedLimit: 10)) {
            #expect(index == 1)
        } else {
            Issue.record("a NaN point must be refused")
        }
        #expect(failure(DrivingRoute(points: [a, GeoCoordinate(latitude: 91, longitude: 0)], speedLimit: 10))
                == .invalidCoordinate(index: 1, GeoCoordinate(latitude: 91, longitude: 0)))
        #expect(failure(DrivingRoute(points: [a, a, a], speedLimit: 10)) == .zeroLength)
        #expect(failure(DrivingRoute(points: [a, b], speedLimit: 0)) == .invalidSpeedLimit(index: 0, value: 0))
        #expect(failure(DrivingRoute(points: [a, b], segments: [])) == .segmentCountMismatch(points: 2, segments: 0))
        if case .invalidOption = failure(DrivingRoute(points: [a, b], speedLimit: 10), DriveOptions(acceleration: -1)) {} else {
            Issue.record("negative acceleration must be refused")
        }
        #expect(failure(DrivingRoute(points: [a, a, b], speedLimit: 10)) == nil)
    }
}

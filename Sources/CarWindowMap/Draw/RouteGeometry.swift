import Foundation
import CarWindowGeo

/// The route's points, prepared once per route: where each lies in the world, how far along
/// the route it is, and the bounds of each stretch of points, so that a view finds its part of a
/// million-point route without walking all of it.
struct RouteGeometry {
    /// Points per indexed stretch: a view walks the bounds of n / 64 stretches, then the
    /// segments of those that reach it.
    static let stretch = 64

    /// Web Mercator (0...1) of each point.
    let world: [SIMD2<Double>]
    /// Metres from the first point at each point, measured as the session measures progress
    /// (``GeoCoordinate/metres(to:)``), so a progress lands where the session meant it.
    let metres: [Double]
    /// (min x, min y, max x, max y) of the points of stretch s, s * ``stretch`` through
    /// (s + 1) * ``stretch``: the ends of its segments.
    private let bounds: [SIMD4<Double>]

    init(_ route: [GeoCoordinate]) {
        let count = route.count
        // Scalar arithmetic on buffers: this runs once per point of a million-point route on the
        // render thread, and generic SIMD operators cost tenfold in debug builds.
        let toRadians = Double.pi / 180, perDegree = GeoCoordinate.metresPerDegree
        var walked = 0.0
        let metres = [Double](unsafeUninitializedCapacity: count) { buffer, initialized in
            route.withUnsafeBufferPointer { points in
                for index in 0..<count {
                    if index > 0 {
                        // GeoCoordinate.metres(to:), as the session measures progress.
                        let a = points[index - 1], b = points[index]
                        let x = (b.longitude - a.longitude) * perDegree * cos((a.latitude + b.latitude) / 2 * toRadians)
                        let y = (b.latitude - a.latitude) * perDegree
                        walked += (x * x + y * y).squareRoot()
                    }
                    buffer[index] = walked
                }
            }
            initialized = count
        }
        var minX = 0.0, minY = 0.0, maxX = 0.0, maxY = 0.0
        var bounds: [SIMD4<Double>] = []
        bounds.reserveCapacity(max(count - 2, 0) / Self.stretch + 1)
        let world = [SIMD2<Double>](unsafeUninitializedCapacity: count) { buffer, initialized in
            route.withUnsafeBufferPointer { points in
                for index in 0..<count {
                    let point = WebMercator.project(points[index])
                    let x = point.x, y = point.y
                    buffer[index] = point
                    // A stretch's bounds take its last point, which starts the next stretch.
                    if index % Self.stretch == 0 {
                        if index > 0 { bounds.append(SIMD4(min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))) }
                        (minX, minY, maxX, maxY) = (x, y, x, y)
                    } else {
                        (minX, minY, maxX, maxY) = (min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))
                    }
                }
            }
            initialized = count
        }
        if count >= 2, (count - 1) % Self.stretch != 0 { bounds.append(SIMD4(minX, minY, maxX, maxY)) }
        self.world = world
        self.metres = metres
        self.bounds = bounds
    }

    var count: Int { world.count }
    var totalMetres: Double { metres.last ?? 0 }

    /// The points whose segments reach `box` (min x, min y, max x, max y), in order, each with
    /// the number of the run it belongs to: a run is a stretch of consecutive segments that
    /// reach the box, both ends of each included.
    func points(reaching box: SIMD4<Double>) -> (indices: [Int], runs: [Int]) {
        var indices: [Int] = [], runs: [Int] = []
        var run = -1
        for (stretchIndex, b) in bounds.enumerated() where b.x <= box.z && b.z >= box.x && b.y <= box.w && b.w >= box.y {
            let start = stretchIndex * Self.stretch, end = min(start + Self.stretch, world.count - 1)
            for segment in start..<end {
                let a = world[segment], c = world[segment + 1]
                guard min(a.x, c.x) <= box.z, max(a.x, c.x) >= box.x, min(a.y, c.y) <= box.w,
                      max(a.y, c.y) >= box.y else { continue }
                if indices.last != segment {
                    run += 1
                    indices.append(segment)
                    runs.append(run)
                }
                indices.append(segment + 1)
                runs.append(run)
            }
        }
        return (indices, runs)
    }

    /// The segment (its first point's index) that holds the point `metres` along the route, and
    /// how far along it that point lies (0...1); metres beyond either end are held to it.
    func segment(atMetres metres: Double) -> (index: Int, fraction: Double) {
        let distances = self.metres
        var low = 0, high = distances.count - 1
        while high - low > 1 {
            let middle = (low + high) / 2
            if distances[middle] <= metres { low = middle } else { high = middle }
        }
        let span = distances[low + 1] - distances[low]
        let fraction = span > 0 ? min(max((metres - distances[low]) / span, 0), 1) : 0
        return (low, fraction)
    }

    /// Where the point `metres` along the route lies in the world.
    func worldPoint(atMetres metres: Double) -> SIMD2<Double> {
        let (index, fraction) = segment(atMetres: metres)
        return world[index] + (world[index + 1] - world[index]) * fraction
    }
}

/// The part of the route a view can show, simplified for its zoom and tessellated: what the
/// overlay draws, whatever the route's length.
///
/// Its cost is bounded by what is drawn, not by the route: the route is cut to a window around
/// the view (the view and as much again on every side, so a moving car needs a new window only
/// after it crossed a view), thinned evenly to at most ``simplifiedPointLimit`` points, simplified
/// with the GeoJSON sources' bounded Douglas-Peucker to a fraction of a pixel, and thinned again to
/// at most ``drawnPointLimit`` points if a crafted line still keeps more.
struct RouteWindowMesh {
    /// Local units per world unit (the world is 0...1): about 0.6 m per unit at the equator.
    static let unitsPerWorld = Double(1 << 26)
    /// What simplification may be given: at most (``GeoJSONData/maximumSplitDepth`` + 1)
    /// distances each, about two million.
    static let simplifiedPointLimit = 65_536
    /// What is tessellated: a zig-zag's sharp turns take round fans of about 15 vertices a point,
    /// so about 60,000 vertices at most. A real route keeps a few hundred points in a view.
    static let drawnPointLimit = 4_096
    /// Points of the route closer than this to the simplified line may go, in pixels at one
    /// zoom level above the one the window was made for: a window serves until the view zooms
    /// in a whole level.
    static let tolerancePixels = 0.25

    /// The window the mesh covers, (min x, min y, max x, max y) in world units.
    let window: SIMD4<Double>
    /// The zoom it was simplified for.
    let zoom: Double
    /// The world point at the local frame's origin: the window's centre, so that float
    /// positions keep their precision at any zoom.
    let origin: SIMD2<Double>
    var tessellation = LineTessellation()
    /// For each drawn point: its index in the route, the mesh's distance there (local units) and
    /// whether a segment leads from it to the next drawn point (not where a run ends).
    private(set) var pointIndices: [Int] = []
    private(set) var pointUnits: [Double] = []
    private(set) var joinsNext: [Bool] = []
    /// Point-to-line distances simplification evaluated: tests hold the work to its bound.
    private(set) var simplificationWork = 0

    /// The mesh's length in local units: the last drawn point's distance.
    var totalUnits: Double { pointUnits.last ?? 0 }
    /// The route's index of the first and the last drawn point.
    var firstPointIndex: Int? { pointIndices.first }
    var lastPointIndex: Int? { pointIndices.last }

    /// The ground the view shows, as (min x, min y, max x, max y) in world units.
    static func viewBox(_ transform: MapTransform) -> SIMD4<Double> {
        let (a, b, c, d) = transform.visibleGroundQuad.corners
        let box = SIMD4(min(a.x, b.x, c.x, d.x), min(a.y, b.y, c.y, d.y), max(a.x, b.x, c.x, d.x), max(a.y, b.y, c.y, d.y))
        return box / transform.worldSize
    }

    /// The window made for a view box: the box, and its width and height again on each side.
    static func window(around view: SIMD4<Double>) -> SIMD4<Double> {
        let width = view.z - view.x, height = view.w - view.y
        return SIMD4(view.x - width, view.y - height, view.z + width, view.w + height)
    }

    /// Whether this mesh still serves a view: it lies within the window, and the zoom has not
    /// gone a level past the one the simplification was made for, either way.
    func serves(view: SIMD4<Double>, zoom: Double) -> Bool {
        view.x >= window.x && view.y >= window.y && view.z <= window.z && view.w <= window.w
            && abs(zoom - self.zoom) <= 1
    }

    /// Cuts, simplifies and tessellates the route for `window` at `zoom`.
    init(_ route: RouteGeometry, window: SIMD4<Double>, zoom: Double) {
        self.window = window
        self.zoom = zoom
        origin = SIMD2((window.x + window.z) / 2, (window.y + window.w) / 2)
        guard route.count >= 2, window.x.isFinite, window.y.isFinite, window.z.isFinite, window.w.isFinite else { return }
        var (indices, runs) = route.points(reaching: window)
        if indices.count > Self.simplifiedPointLimit {
            indices = indices.thinned(to: Self.simplifiedPointLimit)
            runs = runs.thinned(to: Self.simplifiedPointLimit)
        }

        // Simplified run by run, in world units.
        let tolerance = Self.tolerancePixels / (MapTransform.tileSize * exp2(min(max(zoom, 0), 30) + 1))
        var keptIndices: [Int] = [], keptRuns: [Int] = []
        var runStart = 0, work = 0
        while runStart < indices.count {
            var runEnd = runStart + 1
            while runEnd < indices.count, runs[runEnd] == runs[runStart] { runEnd += 1 }
            let points = indices[runStart..<runEnd].map { route.world[$0] }
            let keeps = GeoJSONData.simplificationKeeps(points, tolerance: tolerance, work: &work)
            for offset in keeps.indices where keeps[offset] {
                keptIndices.append(indices[runStart + offset])
                keptRuns.append(runs[runStart])
            }
            runStart = runEnd
        }
        simplificationWork = work
        if keptIndices.count > Self.drawnPointLimit {
            keptIndices = keptIndices.thinned(to: Self.drawnPointLimit)
            keptRuns = keptRuns.thinned(to: Self.drawnPointLimit)
        }
        tessellate(route, indices: keptIndices, runs: keptRuns)
    }

    /// One line a run, its distances carried on from the run before, so the shader's trim reads
    /// one distance along the whole mesh.
    private mutating func tessellate(_ route: RouteGeometry, indices: [Int], runs: [Int]) {
        pointIndices = indices
        pointUnits.reserveCapacity(indices.count)
        joinsNext.reserveCapacity(indices.count)
        var offset: Float = 0
        var runStart = 0
        var line: [SIMD2<Float>] = []
        while runStart < indices.count {
            var runEnd = runStart + 1
            while runEnd < indices.count, runs[runEnd] == runs[runStart] { runEnd += 1 }
            line.removeAll(keepingCapacity: true)
            for index in indices[runStart..<runEnd] {
                let local = (route.world[index] - origin) * Self.unitsPerWorld
                line.append(SIMD2(Float(local.x), Float(local.y)))
            }
            // The same float sums as the tessellation's, so a point's distance here is the
            // distance its vertices carry.
            var travelled: Float = 0
            for position in line.indices {
                if position > 0 {
                    let delta = line[position] - line[position - 1]
                    travelled += (delta * delta).sum().squareRoot()
                }
                pointUnits.append(Double(offset + travelled))
                joinsNext.append(runStart + position + 1 < runEnd)
            }
            let firstVertex = tessellation.vertices.count
            tessellation.addLine(line, join: .round, cap: .round)
            for vertex in firstVertex..<tessellation.vertices.count {
                tessellation.vertices[vertex].distance += offset
            }
            offset += travelled
            runStart = runEnd
        }
    }

    /// The mesh's distance (local units) at the point `metres` along the route, for the
    /// shader's trim: where that point falls on the drawn line (on the chord that stands in for
    /// it, where the line was simplified); -infinity before the mesh's first point, the end of
    /// a run where the point lies outside the window after it. No allocation: it runs for each
    /// part drawn, every frame.
    func trimUnits(atMetres metres: Double, of route: RouteGeometry) -> Double {
        guard route.count >= 2, !pointIndices.isEmpty else { return -.infinity }
        let (segment, fraction) = route.segment(atMetres: metres)
        guard pointIndices[0] <= segment else { return -.infinity }
        // The last drawn point at or before the segment's start.
        var low = 0, high = pointIndices.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if pointIndices[middle] <= segment { low = middle } else { high = middle }
        }
        guard joinsNext[low] else { return pointUnits[low] }
        let point = route.world[segment] + (route.world[segment + 1] - route.world[segment]) * fraction
        let a = route.world[pointIndices[low]], chord = route.world[pointIndices[low + 1]] - a
        let lengthSquared = (chord * chord).sum()
        let s = lengthSquared > 0 ? min(max(((point - a) * chord).sum() / lengthSquared, 0), 1) : 0
        return pointUnits[low] + (pointUnits[low + 1] - pointUnits[low]) * s
    }

    /// The world point the mesh's distance `units` falls on (for tests: where the trim cuts).
    func worldPoint(atUnits units: Double, of route: RouteGeometry) -> SIMD2<Double>? {
        guard let next = pointUnits.firstIndex(where: { $0 >= units }) else { return nil }
        let a = route.world[pointIndices[max(next - 1, 0)]], b = route.world[pointIndices[next]]
        guard next > 0, joinsNext[next - 1] else { return b }
        let span = pointUnits[next] - pointUnits[next - 1]
        return a + (b - a) * (span > 0 ? (units - pointUnits[next - 1]) / span : 0)
    }
}

import Foundation
import Logging
import CarWindowStyle

/// One vertex of a tessellated line, in the layout the line shader reads.
struct LineVertex: Equatable, Sendable {
    /// Point on the centre line, tile units.
    var position: SIMD2<Float>
    /// Offset from `position` in half widths, in the tile plane (y down): the shader draws the
    /// vertex at `position + extrude * halfWidth`, so one mesh serves every width.
    var extrude: SIMD2<Float>
    /// Anti-aliasing coordinates: `length(edge)` is 0 on the centre line and 1 at the outer edge.
    /// Straight parts carry (0, ±1); round cap and join fan vertices carry their unit direction.
    var edge: SIMD2<Float>
    /// Distance along the line from its start, tile units, for dash patterns.
    var distance: Float
}

/// Triangles that draw lines of any width: every vertex sits on the centre line and is pushed out
/// by the shader, so widths can change per zoom without re-tessellating.
///
/// Each segment is its own quad and each join fills only the gap on the outer side of the turn;
/// triangles overlap on the inner side, which the renderer's stencil/opaque passes draw once.
struct LineTessellation: Sendable {
    var vertices: [LineVertex] = []
    var indices: [UInt32] = []

    /// Round fans use one segment per this many radians at most, enough to look round at 40 px.
    static let roundStep = Float.pi / 9

    private static let logger = Logger(label: "carwindow.geometry")

    init() {}

    /// Appends the triangles of one line.
    ///
    /// - Parameters:
    ///   - points: the centre line in tile units; repeated points and non-finite points are dropped.
    ///   - join: how segments meet; miter joins longer than `miterLimit` half widths become bevels.
    ///   - cap: how an open line ends; closed lines have no caps.
    ///   - miterLimit: the longest miter, in half widths (the miter length is `1 / cos(turn / 2)`).
    ///   - roundLimit: round joins whose miter would be at most this long are drawn as miters,
    ///     which look the same there and need fewer triangles.
    ///   - closed: whether the last point connects back to the first (polygon outlines).
    mutating func addLine(_ points: [SIMD2<Float>], join: LineJoin, cap: LineCap, miterLimit: Float = 2,
                          roundLimit: Float = 1.05, closed: Bool = false) {
        var line: [SIMD2<Float>] = []
        line.reserveCapacity(points.count)
        for point in points where point.x.isFinite && point.y.isFinite && line.last != point {
            line.append(point)
        }
        if closed, line.count > 1, line.first == line.last {
            line.removeLast()
        }
        guard line.count >= 2 else { return }
        let isClosed = closed && line.count >= 3
        let segmentCount = isClosed ? line.count : line.count - 1

        // Worst case per point: a quad, a full fan for the join, and the caps.
        let fanVertices = Int((Float.pi / Self.roundStep).rounded(.up)) + 2
        let worstCase = segmentCount * 4 + line.count * fanVertices + 2 * fanVertices
        guard vertices.count + worstCase <= Int(UInt32.max) else {
            Self.logger.warning("Line of \(line.count) points skipped: the mesh would exceed 2^32 vertices; split the tile's lines into several meshes.")
            return
        }

        var directions: [SIMD2<Float>] = []
        var starts: [Float] = []
        directions.reserveCapacity(segmentCount)
        starts.reserveCapacity(segmentCount + 1)
        var travelled: Float = 0
        for index in 0..<segmentCount {
            let from = line[index], to = line[(index + 1) % line.count]
            let delta = to - from
            let length = (delta * delta).sum().squareRoot()
            directions.append(length > 0 ? delta / length : SIMD2(1, 0))
            starts.append(travelled)
            addSegment(from: from, to: to, direction: directions[index], startDistance: travelled,
                       endDistance: travelled + length)
            travelled += length
        }

        if isClosed {
            for index in 0..<line.count {
                let incoming = directions[(index + segmentCount - 1) % segmentCount]
                addJoin(at: line[index], incoming: incoming, outgoing: directions[index], distance: starts[index],
                        join: join, miterLimit: miterLimit, roundLimit: roundLimit)
            }
        } else {
            for index in 1..<(line.count - 1) {
                addJoin(at: line[index], incoming: directions[index - 1], outgoing: directions[index],
                        distance: starts[index], join: join, miterLimit: miterLimit, roundLimit: roundLimit)
            }
            addCap(at: line[0], outward: -directions[0], distance: 0, cap: cap)
            addCap(at: line[line.count - 1], outward: directions[segmentCount - 1], distance: travelled, cap: cap)
        }
    }

    // MARK: Pieces

    /// The left-hand normal in the tile plane's numbers: `direction` turned by +90 degrees.
    private static func normal(_ direction: SIMD2<Float>) -> SIMD2<Float> {
        SIMD2(-direction.y, direction.x)
    }

    private mutating func vertex(_ position: SIMD2<Float>, _ extrude: SIMD2<Float>, _ edge: SIMD2<Float>,
                                 _ distance: Float) -> UInt32 {
        vertices.append(LineVertex(position: position, extrude: extrude, edge: edge, distance: distance))
        return UInt32(vertices.count - 1)
    }

    private mutating func triangle(_ a: UInt32, _ b: UInt32, _ c: UInt32) {
        indices.append(a)
        indices.append(b)
        indices.append(c)
    }

    private mutating func addSegment(from: SIMD2<Float>, to: SIMD2<Float>, direction: SIMD2<Float>,
                                     startDistance: Float, endDistance: Float) {
        let side = Self.normal(direction)
        let a = vertex(from, side, SIMD2(0, 1), startDistance)
        let b = vertex(from, -side, SIMD2(0, -1), startDistance)
        let c = vertex(to, side, SIMD2(0, 1), endDistance)
        let d = vertex(to, -side, SIMD2(0, -1), endDistance)
        triangle(a, b, c)
        triangle(b, d, c)
    }

    /// Fills the wedge between two segment quads on the outer side of the turn.
    private mutating func addJoin(at point: SIMD2<Float>, incoming: SIMD2<Float>, outgoing: SIMD2<Float>,
                                  distance: Float, join: LineJoin, miterLimit: Float, roundLimit: Float) {
        let turnSine = incoming.x * outgoing.y - incoming.y * outgoing.x
        let turnCosine = (incoming * outgoing).sum()
        // Straight on: the quads already meet edge to edge.
        if abs(turnSine) < 1e-6 && turnCosine > 0 { return }

        // Turning towards the left normal puts the gap on the right, and the other way round.
        let side: Float = turnSine > 0 ? -1 : 1
        let first = Self.normal(incoming) * side
        let last = Self.normal(outgoing) * side
        let turnAngle = atan2(abs(turnSine), turnCosine)
        let halfCosine = cos(turnAngle / 2)
        let miterLength = halfCosine > 1e-6 ? 1 / halfCosine : .infinity

        var kind = join
        if kind == .round && miterLength <= roundLimit { kind = .miter }
        if kind == .miter && !(miterLength <= miterLimit) { kind = .bevel }

        let edge = SIMD2<Float>(0, side)
        let centre = vertex(point, .zero, .zero, distance)
        switch kind {
        case .bevel:
            triangle(centre, vertex(point, first, edge, distance), vertex(point, last, edge, distance))
        case .miter:
            let bisector = first + last
            let miter = bisector / (bisector * bisector).sum().squareRoot() * miterLength
            let a = vertex(point, first, edge, distance)
            let tip = vertex(point, miter, edge, distance)
            let b = vertex(point, last, edge, distance)
            triangle(centre, a, tip)
            triangle(centre, tip, b)
        case .round:
            // Sweep from `first` through the outside of the turn (forward, for a full U-turn) to `last`.
            addFan(centre: centre, at: point, from: first, sweep: -side * turnAngle, end: last, distance: distance)
        }
    }

    private mutating func addCap(at point: SIMD2<Float>, outward: SIMD2<Float>, distance: Float, cap: LineCap) {
        let side = Self.normal(outward)
        switch cap {
        case .butt:
            return
        case .square:
            let a = vertex(point, side, SIMD2(0, 1), distance)
            let b = vertex(point, -side, SIMD2(0, -1), distance)
            let c = vertex(point, outward + side, SIMD2(0, 1), distance)
            let d = vertex(point, outward - side, SIMD2(0, -1), distance)
            triangle(a, b, c)
            triangle(b, d, c)
        case .round:
            let centre = vertex(point, .zero, .zero, distance)
            // From the left side, clockwise in the plane's numbers through `outward`, to the right side.
            addFan(centre: centre, at: point, from: side, sweep: -Float.pi, end: -side, distance: distance)
        }
    }

    /// A fan around `point` from unit direction `from`, turning by `sweep` radians, ending exactly at `end`.
    private mutating func addFan(centre: UInt32, at point: SIMD2<Float>, from: SIMD2<Float>, sweep: Float,
                                 end: SIMD2<Float>, distance: Float) {
        let steps = max(1, Int((abs(sweep) / Self.roundStep).rounded(.up)))
        var previous = vertex(point, from, from, distance)
        for step in 1...steps {
            let direction: SIMD2<Float>
            if step == steps {
                direction = end
            } else {
                let angle = sweep * Float(step) / Float(steps)
                let c = cos(angle), s = sin(angle)
                direction = SIMD2(from.x * c - from.y * s, from.x * s + from.y * c)
            }
            let current = vertex(point, direction, direction, distance)
            triangle(centre, previous, current)
            previous = current
        }
    }
}

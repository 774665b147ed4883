import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Expected areas are worked out by hand for half width 1: a segment quad of length L covers 2L,
/// a square cap 2, a bevel at a 90-degree turn 1/2, a miter there 1 (its tip at distance sqrt 2),
/// a round fan of n steps over angle a covers n * sin(a / n) / 2.
@Suite struct LineTessellationTests {
    /// The drawn triangles for half width `halfWidth`, as corner triples.
    static func triangles(_ mesh: LineTessellation, halfWidth: Float = 1) -> [[SIMD2<Double>]] {
        stride(from: 0, to: mesh.indices.count, by: 3).map { start in
            (0..<3).map { corner in
                let vertex = mesh.vertices[Int(mesh.indices[start + corner])]
                return SIMD2<Double>(vertex.position + vertex.extrude * halfWidth)
            }
        }
    }

    static func area(_ mesh: LineTessellation) -> Double {
        triangles(mesh).reduce(0) { $0 + abs(PolygonValidity.cross($1[0], $1[1], $1[2])) / 2 }
    }

    static func mesh(_ points: [SIMD2<Float>], join: LineJoin = .miter, cap: LineCap = .butt,
                     miterLimit: Float = 2, closed: Bool = false) -> LineTessellation {
        var mesh = LineTessellation()
        mesh.addLine(points, join: join, cap: cap, miterLimit: miterLimit, closed: closed)
        return mesh
    }

    static func covers(_ triangles: [[SIMD2<Double>]], _ point: SIMD2<Double>) -> Bool {
        triangles.contains { t in
            let d1 = PolygonValidity.cross(t[0], t[1], point)
            let d2 = PolygonValidity.cross(t[1], t[2], point)
            let d3 = PolygonValidity.cross(t[2], t[0], point)
            return (d1 >= 0 && d2 >= 0 && d3 >= 0) || (d1 <= 0 && d2 <= 0 && d3 <= 0)
        }
    }

    static func distance(_ point: SIMD2<Double>, toSegment a: SIMD2<Double>, _ b: SIMD2<Double>) -> (Double, Bool) {
        let delta = b - a
        let t = ((point - a) * delta).sum() / (delta * delta).sum()
        let closest = a + delta * min(1, max(0, t))
        let offset = point - closest
        return ((offset * offset).sum().squareRoot(), t > 0 && t < 1)
    }

    /// Samples a grid around the line every 0.05 and counts the points that must be drawn but are
    /// not: those nearer than 0.98 half widths to a segment's interior, within `joinRadius` of a
    /// join and within `endRadius` of an open end. 0.98 leaves room for round fans' chords
    /// (cos 10 degrees); a bevel at 90 degrees reaches only cos 45 = 0.707 from its vertex.
    static func gaps(_ points: [SIMD2<Float>], _ mesh: LineTessellation, joinRadius: Double = 0.98,
                     endRadius: Double = 0, closed: Bool = false) -> Int {
        let line = points.map { SIMD2<Double>($0) }
        let tris = triangles(mesh)
        var segments = zip(line, line.dropFirst()).map { ($0, $1) }
        if closed, let first = line.first, let last = line.last { segments.append((last, first)) }
        let joins = closed ? line : Array(line.dropFirst().dropLast())
        let ends = closed ? [] : [line[0], line[line.count - 1]]
        func near(_ point: SIMD2<Double>, _ centres: [SIMD2<Double>], _ radius: Double) -> Bool {
            centres.contains { (($0 - point) * ($0 - point)).sum() < radius * radius }
        }
        let xs = line.map(\.x), ys = line.map(\.y)
        var missing = 0
        for x in stride(from: (xs.min() ?? 0) - 1.5, through: (xs.max() ?? 0) + 1.5, by: 0.05) {
            for y in stride(from: (ys.min() ?? 0) - 1.5, through: (ys.max() ?? 0) + 1.5, by: 0.05) {
                let point = SIMD2(x, y)
                let required = segments.contains { a, b in
                    let (d, interior) = distance(point, toSegment: a, b)
                    return d < 0.98 && interior
                } || near(point, joins, joinRadius) || near(point, ends, endRadius)
                if required && !covers(tris, point) { missing += 1 }
            }
        }
        return missing
    }

    @Test func straightLineCoversWidthTimesLength() {
        let line: [SIMD2<Float>] = [[0, 0], [10, 0]]
        #expect(abs(Self.area(Self.mesh(line, cap: .butt)) - 20) < 1e-5)
        #expect(abs(Self.area(Self.mesh(line, cap: .square)) - 24) < 1e-5)
        // Two round caps: 9 steps of 20 degrees each.
        let fan = 9 * sin(Double.pi / 9) / 2
        #expect(abs(Self.area(Self.mesh(line, cap: .round)) - (20 + 2 * fan)) < 1e-4)
        #expect(abs(2 * fan - Double.pi) < 0.07)
        // Butt caps add nothing beyond the ends; square caps reach half a width further.
        let square = Self.triangles(Self.mesh(line, cap: .square))
        #expect(Self.covers(square, [10.9, 0.9]) && Self.covers(square, [-0.9, -0.9]))
        #expect(!Self.covers(Self.triangles(Self.mesh(line, cap: .butt)), [10.1, 0]))
        #expect(Self.gaps(line, Self.mesh(line, cap: .round), endRadius: 0.98) == 0)
        #expect(Self.gaps(line, Self.mesh(line, cap: .butt), endRadius: 0.98) > 0, "the gap check can fail")
    }

    @Test func rightAngleJoins() {
        let line: [SIMD2<Float>] = [[0, 0], [10, 0], [10, 10]]
        let quads = 40.0
        let miter = Self.mesh(line, join: .miter)
        let bevel = Self.mesh(line, join: .bevel)
        let round = Self.mesh(line, join: .round)
        #expect(abs(Self.area(miter) - (quads + 1)) < 1e-5)
        #expect(abs(Self.area(bevel) - (quads + 0.5)) < 1e-5)
        // 90 degrees in 5 steps of 18 degrees.
        #expect(abs(Self.area(round) - (quads + 5 * sin(Double.pi / 10) / 2)) < 1e-5)

        // The turn is towards +y, so the outer corner is at (11, -1).
        #expect(miter.vertices.contains { vertex in
            vertex.position == [10, 0] && abs(vertex.extrude.x - 1) < 1e-5 && abs(vertex.extrude.y + 1) < 1e-5
                && vertex.edge == [0, -1] && vertex.distance == 10
        })
        #expect(bevel.vertices.allSatisfy { ($0.extrude * $0.extrude).sum() <= 1 + 1e-5 })
        #expect(Self.covers(Self.triangles(miter), [10.95, -0.95]))
        #expect(!Self.covers(Self.triangles(bevel), [10.9, -0.9]))
        #expect(Self.covers(Self.triangles(round), [10.65, -0.65]))
        #expect(!Self.covers(Self.triangles(round), [10.9, -0.9]))

        #expect(Self.gaps(line, miter) == 0)
        #expect(Self.gaps(line, round) == 0)
        #expect(Self.gaps(line, bevel, joinRadius: 0.69) == 0)
        #expect(Self.gaps(line, bevel) > 0, "a bevel does not reach round")
    }

    @Test func sharpTurnsFallBackToBevelWithoutSpikes() {
        // A 150-degree turn has a miter of 1 / cos 75 = 3.9 half widths, over the limit of 2.
        let sharp: [SIMD2<Float>] = [[0, 0], [10, 0], [10 - 10 * cos(Float.pi / 6), 10 * sin(Float.pi / 6)]]
        let mesh = Self.mesh(sharp, join: .miter)
        #expect(mesh.vertices.allSatisfy { ($0.extrude * $0.extrude).sum() <= 1 + 1e-5 })
        #expect(abs(Self.area(mesh) - (40 + sin(5 * Double.pi / 6) / 2)) < 1e-4)
        // With a generous limit the miter is kept.
        let long = Self.mesh(sharp, join: .miter, miterLimit: 4)
        #expect(long.vertices.contains { abs(($0.extrude * $0.extrude).sum().squareRoot() - 1 / cos(Float.pi * 5 / 12)) < 1e-3 })

        // A U-turn: no spike for miter, a half disk for round.
        let back: [SIMD2<Float>] = [[0, 0], [10, 0], [0, 0.001]]
        let uMiter = Self.mesh(back, join: .miter)
        #expect(uMiter.vertices.allSatisfy { ($0.extrude * $0.extrude).sum() <= 1 + 1e-5 })
        let uRound = Self.triangles(Self.mesh(back, join: .round))
        #expect(Self.covers(uRound, [10.9, 0]))
        #expect(!Self.covers(uRound, [11.01, 0]))
        let exact: [SIMD2<Float>] = [[0, 0], [10, 0], [0, 0]]
        #expect(Self.covers(Self.triangles(Self.mesh(exact, join: .round)), [10.9, 0]))
    }

    @Test func extrudeNeverExceedsMiterLimit() {
        var generator = SplitMix64(seed: 11)
        for join in [LineJoin.miter, .bevel, .round] {
            for cap in [LineCap.butt, .round, .square] {
                for _ in 0..<30 {
                    let points = (0..<8).map { _ in SIMD2<Float>(Float(generator.next() % 100), Float(generator.next() % 100)) }
                    let mesh = Self.mesh(points, join: join, cap: cap)
                    // Square caps reach diagonally sqrt 2 < 2 half widths.
                    #expect(mesh.vertices.allSatisfy { ($0.extrude * $0.extrude).sum().squareRoot() <= 2 + 1e-4 })
                    #expect(mesh.vertices.allSatisfy { ($0.edge * $0.edge).sum().squareRoot() <= 1 + 1e-5 })
                    #expect(mesh.indices.allSatisfy { Int($0) < mesh.vertices.count })
                    #expect(mesh.indices.count % 3 == 0)
                }
            }
        }
    }

    @Test func closedRingHasJoinsEverywhereAndNoCaps() {
        let square: [SIMD2<Float>] = [[0, 0], [10, 0], [10, 10], [0, 10]]
        let mesh = Self.mesh(square, join: .miter, cap: .round, closed: true)
        // Four quads of 20 and four miter squares of 1; the drawn outline is 12 x 12 minus 8 x 8.
        #expect(abs(Self.area(mesh) - 84) < 1e-4)
        let triangles = Self.triangles(mesh)
        #expect(Self.covers(triangles, [-0.95, -0.95]) && Self.covers(triangles, [10.95, 10.95]))
        #expect(!Self.covers(triangles, [5, 5]))
        #expect(Self.gaps(square, mesh, closed: true) == 0)
        // An explicitly repeated closing point changes nothing.
        #expect(Self.mesh(square + [[0, 0]], join: .miter, cap: .round, closed: true).vertices == mesh.vertices)
        // Round joins on a ring, no gaps either.
        let roundRing = Self.mesh(square, join: .round, cap: .butt, closed: true)
        #expect(Self.gaps(square, roundRing, closed: true) == 0)
    }

    @Test func distanceGrowsAlongTheLine() {
        let line: [SIMD2<Float>] = [[0, 0], [3, 4], [3, 10], [9, 18]]
        let mesh = Self.mesh(line, join: .round, cap: .round)
        let cumulative: [Float] = [0, 5, 11, 21]
        for vertex in mesh.vertices {
            guard let index = line.firstIndex(of: vertex.position) else {
                Issue.record("vertex off the centre line's points: \(vertex.position)")
                continue
            }
            #expect(abs(vertex.distance - cumulative[index]) < 1e-5)
        }
        #expect(mesh.vertices.map(\.distance).max() == 21)
    }

    @Test func degenerateLines() {
        #expect(Self.mesh([]).vertices.isEmpty)
        #expect(Self.mesh([[1, 1]], cap: .round).vertices.isEmpty)
        #expect(Self.mesh([[1, 1], [1, 1], [1, 1]], cap: .round).indices.isEmpty)
        #expect(Self.mesh([[1, 1], [.nan, 3]], cap: .round).indices.isEmpty)
        let repeated = Self.mesh([[0, 0], [0, 0], [10, 0], [10, 0]])
        #expect(repeated.vertices == Self.mesh([[0, 0], [10, 0]]).vertices)
        // Collinear points need no join geometry.
        #expect(Self.mesh([[0, 0], [5, 0], [10, 0]]).indices.count == 12)
        // Two meshes appended keep their indices apart.
        var both = LineTessellation()
        both.addLine([[0, 0], [10, 0]], join: .miter, cap: .butt)
        both.addLine([[0, 5], [10, 5]], join: .miter, cap: .butt)
        #expect(both.indices.suffix(6).allSatisfy { $0 >= 4 })
        #expect(abs(Self.area(both) - 40) < 1e-5)
    }

    @Test func edgeCoordinates() {
        let mesh = Self.mesh([[0, 0], [10, 0], [10, 10]], join: .round, cap: .round)
        for vertex in mesh.vertices {
            let extrudeLength = (vertex.extrude * vertex.extrude).sum().squareRoot()
            let edgeLength = (vertex.edge * vertex.edge).sum().squareRoot()
            // Centre vertices have both zero, every outer vertex of straight parts and fans both one.
            #expect(abs(extrudeLength - edgeLength) < 1e-5)
        }
    }
}

/// One vertex of an extruded polygon (buildings), in the layout the fill-extrusion shader reads.
struct ExtrusionVertex: Equatable, Sendable {
    /// Footprint point, tile units (y down).
    var position: SIMD2<Float>
    /// Walls: the outward horizontal unit normal in the tile plane (z 0). Roofs: (0, 0, 1).
    var normal: SIMD3<Float>
    /// 1 for vertices at the top (drawn at the feature's height), 0 at the base.
    var isTop: Float
}

/// Roof triangles and wall quads of extruded polygons; heights come from the shader, so one mesh
/// serves every zoom and height animation.
///
/// Every triangle is wound so that, in the numbers (x, y, z) with z up, the right-hand normal of
/// its edges points out of the solid: roofs have a positive shoelace sum, walls face their normal.
struct ExtrusionMesh: Sendable {
    var vertices: [ExtrusionVertex] = []
    var indices: [UInt32] = []

    init() {}

    /// The mesh of one polygon.
    init(rings: [[SIMD2<Float>]]) {
        addPolygon(rings)
    }

    /// Appends one polygon: exterior ring first, then holes, no repeated closing point.
    ///
    /// Ring orientation is taken from the data, not trusted: walls of the exterior face away from
    /// the polygon and walls of holes face into the hole whichever way each ring runs.
    mutating func addPolygon(_ rings: [[SIMD2<Float>]]) {
        let cleaned = rings.map(Self.withoutRepeats)
        guard let exterior = cleaned.first, exterior.count >= 3 else { return }
        let pointCount = cleaned.reduce(0) { $0 + $1.count }
        guard vertices.count + pointCount * 5 <= Int(UInt32.max) else { return }

        let roofBase = UInt32(vertices.count)
        let roof = Triangulation.triangulate(cleaned.map { ring in ring.map { SIMD2<Double>($0) } })
        for ring in cleaned {
            for point in ring {
                vertices.append(ExtrusionVertex(position: point, normal: SIMD3(0, 0, 1), isTop: 1))
            }
        }
        indices.append(contentsOf: roof.map { $0 + roofBase })

        for (ringIndex, ring) in cleaned.enumerated() where ring.count >= 2 {
            let area = Triangulation.shoelaceSum(ring.map { SIMD2<Double>($0) })
            guard area != 0 else { continue }
            // Exteriors run with a positive shoelace sum, holes negative; a ring that runs the other
            // way has its edges walked backwards so the wall faces the right side.
            let runsForward = (area > 0) == (ringIndex == 0)
            for index in ring.indices {
                let next = (index + 1) % ring.count
                let (from, to) = runsForward ? (ring[index], ring[next]) : (ring[next], ring[index])
                addWall(from: from, to: to)
            }
        }
    }

    /// One wall quad along edge from → to, whose outside is on the edge's right in the numbers
    /// (x, y): for a positive-shoelace ring that is away from its interior.
    private mutating func addWall(from: SIMD2<Float>, to: SIMD2<Float>) {
        let delta = to - from
        let length = (delta * delta).sum().squareRoot()
        guard length > 0 else { return }
        let normal = SIMD3<Float>(delta.y / length, -delta.x / length, 0)
        let base = UInt32(vertices.count)
        vertices.append(ExtrusionVertex(position: from, normal: normal, isTop: 0))
        vertices.append(ExtrusionVertex(position: to, normal: normal, isTop: 0))
        vertices.append(ExtrusionVertex(position: to, normal: normal, isTop: 1))
        vertices.append(ExtrusionVertex(position: from, normal: normal, isTop: 1))
        indices.append(contentsOf: [base, base + 1, base + 2, base, base + 2, base + 3])
    }

    private static func withoutRepeats(_ ring: [SIMD2<Float>]) -> [SIMD2<Float>] {
        var result: [SIMD2<Float>] = []
        result.reserveCapacity(ring.count)
        for point in ring where point.x.isFinite && point.y.isFinite && result.last != point {
            result.append(point)
        }
        while result.count > 1, result.first == result.last {
            result.removeLast()
        }
        return result
    }
}

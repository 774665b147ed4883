import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

@Suite struct ExtrusionMeshTests {
    static func square(_ x: Float, _ y: Float, _ size: Float) -> [SIMD2<Float>] {
        [[x, y], [x + size, y], [x + size, y + size], [x, y + size]]
    }

    /// Walls as (edge midpoint, normal) pairs.
    static func walls(_ mesh: ExtrusionMesh) -> [(SIMD2<Float>, SIMD3<Float>)] {
        let wallVertices = mesh.vertices.filter { $0.normal.z == 0 }
        return stride(from: 0, to: wallVertices.count, by: 4).map { start in
            ((wallVertices[start].position + wallVertices[start + 1].position) / 2, wallVertices[start].normal)
        }
    }

    static func roofArea(_ mesh: ExtrusionMesh) -> Double {
        stride(from: 0, to: mesh.indices.count, by: 3).reduce(0) { sum, start in
            let corners = (0..<3).map { mesh.vertices[Int(mesh.indices[start + $0])] }
            guard corners.allSatisfy({ $0.normal.z == 1 }) else { return sum }
            let p = corners.map { SIMD2<Double>($0.position) }
            return sum + PolygonValidity.cross(p[0], p[1], p[2]) / 2
        }
    }

    /// Each triangle's right-hand normal in (x, y, z), with tops at z = 1, agrees with its vertices' normal.
    static func windingAgrees(_ mesh: ExtrusionMesh) -> Bool {
        stride(from: 0, to: mesh.indices.count, by: 3).allSatisfy { start in
            let v = (0..<3).map { mesh.vertices[Int(mesh.indices[start + $0])] }
            let p = v.map { SIMD3<Float>($0.position.x, $0.position.y, $0.isTop) }
            let e1 = p[1] - p[0], e2 = p[2] - p[0]
            let n = SIMD3(e1.y * e2.z - e1.z * e2.y, e1.z * e2.x - e1.x * e2.z, e1.x * e2.y - e1.y * e2.x)
            return (n * v[0].normal).sum() > 0
        }
    }

    @Test func squareWallsFaceOutwards() {
        for ring in [Self.square(0, 0, 10), Self.square(0, 0, 10).reversed()] {
            let mesh = ExtrusionMesh(rings: [ring])
            let walls = Self.walls(mesh)
            #expect(walls.count == 4)
            for (midpoint, normal) in walls {
                // Outward: the centre (5, 5) lies behind the wall.
                let toCentre = SIMD2<Float>(5, 5) - midpoint
                #expect((toCentre * SIMD2(normal.x, normal.y)).sum() < 0)
                #expect(abs((normal * normal).sum() - 1) < 1e-6)
            }
            #expect(abs(Self.roofArea(mesh) - 100) < 1e-9)
            #expect(Self.windingAgrees(mesh))
            #expect(mesh.vertices.filter { $0.isTop == 0 }.count == 8)
        }
    }

    @Test func holeWallsFaceIntoTheHole() {
        let hole = Array(Self.square(3, 3, 4).reversed())
        for holeRing in [hole, Self.square(3, 3, 4)] {
            let mesh = ExtrusionMesh(rings: [Self.square(0, 0, 10), holeRing])
            let walls = Self.walls(mesh)
            #expect(walls.count == 8)
            for (midpoint, normal) in walls {
                let toCentre = SIMD2<Float>(5, 5) - midpoint
                let facing = (toCentre * SIMD2(normal.x, normal.y)).sum()
                let onHole = midpoint.x > 2 && midpoint.x < 8 && midpoint.y > 2 && midpoint.y < 8
                // Hole walls face the hole's centre, exterior walls away from it.
                #expect(onHole ? facing > 0 : facing < 0)
            }
            #expect(abs(Self.roofArea(mesh) - 84) < 1e-9)
            #expect(Self.windingAgrees(mesh))
        }
    }

    @Test func degeneratePolygons() {
        #expect(ExtrusionMesh(rings: []).indices.isEmpty)
        #expect(ExtrusionMesh(rings: [[[0, 0], [1, 1]]]).indices.isEmpty)
        var mesh = ExtrusionMesh()
        mesh.addPolygon([Self.square(0, 0, 1)])
        mesh.addPolygon([Self.square(5, 5, 2) + [[5, 5]]])
        #expect(Self.walls(mesh).count == 8)
        #expect(abs(Self.roofArea(mesh) - 5) < 1e-9)
        #expect(mesh.indices.allSatisfy { Int($0) < mesh.vertices.count })
    }
}

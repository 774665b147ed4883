/// OGC-style validity of a polygon given as rings (exterior first, then holes, no repeated
/// closing point), close to what GEOS/shapely's `is_valid` reports. Used by tests to tell which
/// polygons a triangulation must reproduce exactly; tile data itself is never rejected for it.
enum PolygonValidity {
    /// Whether the polygon is valid: every ring has at least 3 distinct points and non-zero area,
    /// no ring intersects itself (touching included), rings meet at most in single points and never
    /// cross, two rings touch in at most one point, and holes lie inside the exterior and outside
    /// each other.
    static func isValid(_ rings: [[SIMD2<Double>]]) -> Bool {
        let cleaned = rings.map(withoutRepeats)
        guard !cleaned.isEmpty else { return false }
        for ring in cleaned {
            guard ring.count >= 3, Triangulation.shoelaceSum(ring) != 0,
                  ring.allSatisfy({ $0.x.isFinite && $0.y.isFinite }),
                  !selfIntersects(ring) else { return false }
        }
        for first in cleaned.indices {
            for second in cleaned.indices where second > first {
                guard let touches = contacts(cleaned[first], cleaned[second]), touches <= 1 else { return false }
            }
        }
        let exterior = cleaned[0]
        for hole in cleaned.dropFirst() {
            // A hole vertex off the exterior's boundary decides the side: it must be inside.
            guard let probe = hole.first(where: { !onBoundary($0, of: exterior) }),
                  contains(exterior, probe) else { return false }
        }
        for first in cleaned.indices.dropFirst() {
            for second in cleaned.indices.dropFirst() where second != first {
                if let probe = cleaned[second].first(where: { !onBoundary($0, of: cleaned[first]) }),
                   contains(cleaned[first], probe) {
                    return false
                }
            }
        }
        return true
    }

    /// The ring without consecutive repeated points, closing repeat included.
    static func withoutRepeats(_ ring: [SIMD2<Double>]) -> [SIMD2<Double>] {
        var result: [SIMD2<Double>] = []
        result.reserveCapacity(ring.count)
        for point in ring where result.last != point {
            result.append(point)
        }
        while result.count > 1, result.first == result.last {
            result.removeLast()
        }
        return result
    }

    /// Whether `point` lies strictly inside `ring` (even-odd rule); boundary points are outside.
    static func contains(_ ring: [SIMD2<Double>], _ point: SIMD2<Double>) -> Bool {
        if onBoundary(point, of: ring) { return false }
        var inside = false
        var previous = ring[ring.count - 1]
        for current in ring {
            if (current.y > point.y) != (previous.y > point.y) {
                let x = current.x + (point.y - current.y) * (previous.x - current.x) / (previous.y - current.y)
                if point.x < x { inside.toggle() }
            }
            previous = current
        }
        return inside
    }

    static func onBoundary(_ point: SIMD2<Double>, of ring: [SIMD2<Double>]) -> Bool {
        var previous = ring[ring.count - 1]
        for current in ring {
            if cross(previous, current, point) == 0 && withinBox(previous, current, point) { return true }
            previous = current
        }
        return false
    }

    static func cross(_ a: SIMD2<Double>, _ b: SIMD2<Double>, _ c: SIMD2<Double>) -> Double {
        (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
    }

    private static func withinBox(_ a: SIMD2<Double>, _ b: SIMD2<Double>, _ p: SIMD2<Double>) -> Bool {
        p.x >= min(a.x, b.x) && p.x <= max(a.x, b.x) && p.y >= min(a.y, b.y) && p.y <= max(a.y, b.y)
    }

    /// How two segments meet.
    enum Contact: Equatable {
        case none
        /// They share exactly this point.
        case point(SIMD2<Double>)
        /// They cross properly or overlap along a stretch.
        case crossing
    }

    static func contact(_ a: SIMD2<Double>, _ b: SIMD2<Double>, _ c: SIMD2<Double>, _ d: SIMD2<Double>) -> Contact {
        let d1 = cross(c, d, a), d2 = cross(c, d, b), d3 = cross(a, b, c), d4 = cross(a, b, d)
        if d1 == 0 && d2 == 0 {
            // Collinear: overlap of their extents along the line.
            let useX = a.x != b.x
            func key(_ p: SIMD2<Double>) -> Double { useX ? p.x : p.y }
            let low = max(min(key(a), key(b)), min(key(c), key(d)))
            let high = min(max(key(a), key(b)), max(key(c), key(d)))
            if low > high { return .none }
            if low < high { return .crossing }
            for p in [a, b] where key(p) == low { return .point(p) }
            return .point(key(c) == low ? c : d)
        }
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) {
            return .crossing
        }
        if d1 == 0 && withinBox(c, d, a) { return .point(a) }
        if d2 == 0 && withinBox(c, d, b) { return .point(b) }
        if d3 == 0 && withinBox(a, b, c) { return .point(c) }
        if d4 == 0 && withinBox(a, b, d) { return .point(d) }
        return .none
    }

    private static func edges(_ ring: [SIMD2<Double>]) -> [(SIMD2<Double>, SIMD2<Double>)] {
        ring.indices.map { (ring[$0], ring[($0 + 1) % ring.count]) }
    }

    /// Whether a ring touches or crosses itself anywhere but at the shared ends of neighbouring edges.
    static func selfIntersects(_ ring: [SIMD2<Double>]) -> Bool {
        let list = edges(ring)
        let n = list.count
        for i in 0..<n {
            for j in (i + 1)..<n {
                let adjacent = j == i + 1 || (i == 0 && j == n - 1)
                switch contact(list[i].0, list[i].1, list[j].0, list[j].1) {
                case .none: continue
                case .crossing: return true
                case .point(let p):
                    if !adjacent { return true }
                    // Neighbours share one end; meeting anywhere else means they fold back on each other.
                    let shared = j == i + 1 ? list[i].1 : list[i].0
                    if p != shared { return true }
                }
            }
        }
        return false
    }

    /// The number of distinct points where two rings touch, or nil when they cross or overlap.
    static func contacts(_ first: [SIMD2<Double>], _ second: [SIMD2<Double>]) -> Int? {
        var points: [SIMD2<Double>] = []
        for (a, b) in edges(first) {
            for (c, d) in edges(second) {
                switch contact(a, b, c, d) {
                case .none: continue
                case .crossing: return nil
                case .point(let p):
                    if !points.contains(p) { points.append(p) }
                }
            }
        }
        // A ring passing through a vertex of the other, from one side to the other, is a crossing.
        if points.contains(where: { crossesAt($0, first, second) || crossesAt($0, second, first) }) {
            return nil
        }
        return points.count
    }

    /// Whether `other`'s boundary goes from inside `ring` to outside it at the touch `point`.
    private static func crossesAt(_ point: SIMD2<Double>, _ ring: [SIMD2<Double>], _ other: [SIMD2<Double>]) -> Bool {
        var sides = Set<Bool>()
        let n = other.count
        for index in other.indices {
            let a = other[index], b = other[(index + 1) % n]
            guard a == point || b == point || (cross(a, b, point) == 0 && withinBox(a, b, point)) else { continue }
            // Probe just off the touch point along this edge, on both ends.
            for end in [a, b] where end != point {
                let probe = point + (end - point) * 1e-6
                if !onBoundary(probe, of: ring) { sides.insert(contains(ring, probe)) }
            }
        }
        return sides.count > 1
    }
}

/// Triangulation of polygons with holes by ear clipping.
///
/// Holes are merged into the exterior through bridges (pairs of coincident edges), so the ear
/// clipper only ever sees one closed chain. For large chains a z-order (Morton) index limits the
/// "is any vertex inside this ear" search to the ear's bounding box. Degenerate input (repeated
/// points, collinear runs, touching holes, self-intersections) goes through escalating fallbacks:
/// dropping degenerate points, curing local self-intersections, and finally splitting the chain
/// along a valid diagonal. Every fallback strictly shrinks the problem, so triangulation ends.
enum Triangulation {
    /// Chains with more vertices than this use the z-order index; below it a linear scan is faster.
    static let zOrderThreshold = 80

    /// Triangulates one polygon.
    ///
    /// - Parameter rings: the exterior ring first, then holes; no repeated closing point.
    ///   Any orientation is accepted.
    /// - Returns: indices into the rings' points flattened in order, three per triangle. Triangles
    ///   have a positive shoelace sum (`x1*y2 - x2*y1` summed), like vector tile exterior rings.
    ///   Empty when the exterior has fewer than 3 points or a coordinate is not finite.
    static func triangulate(_ rings: [[SIMD2<Double>]]) -> [UInt32] {
        guard let exterior = rings.first, exterior.count >= 3 else { return [] }
        let total = rings.reduce(0) { $0 + $1.count }
        guard total < Int(Int32.max) / 2 else { return [] }
        for ring in rings {
            for point in ring where !(point.x.isFinite && point.y.isFinite) { return [] }
        }
        var clipper = EarClipper(capacity: total)
        return clipper.run(rings)
    }

    /// Twice the signed area of a ring: the shoelace sum `x1*y2 - x2*y1` over its edges, closing
    /// edge included. Positive for vector tile exterior rings (y grows downwards).
    static func shoelaceSum(_ ring: [SIMD2<Double>]) -> Double {
        guard ring.count >= 3 else { return 0 }
        var sum = 0.0
        var previous = ring[ring.count - 1]
        for point in ring {
            sum += previous.x * point.y - point.x * previous.y
            previous = point
        }
        return sum
    }

    /// The signed area of a ring (half the shoelace sum); positive for exterior rings of vector tiles.
    static func signedArea(_ ring: [SIMD2<Double>]) -> Double {
        shoelaceSum(ring) / 2
    }

    /// The area of a polygon: the exterior's area minus the holes' areas, whatever their orientation.
    static func polygonArea(_ rings: [[SIMD2<Double>]]) -> Double {
        guard let exterior = rings.first else { return 0 }
        return rings.dropFirst().reduce(abs(signedArea(exterior))) { $0 - abs(signedArea($1)) }
    }
}

/// The working state of one triangulation: a doubly linked circular chain of vertices stored as
/// parallel arrays (indices instead of object references keep it allocation-light and Sendable).
private struct EarClipper {
    private static let none: Int32 = -1

    private var xs: [Double] = []
    private var ys: [Double] = []
    /// The index of the point in the caller's flattened rings; bridge copies share it.
    private var source: [UInt32] = []
    private var prev: [Int32] = []
    private var next: [Int32] = []
    private var zKey: [UInt32] = []
    private var prevZ: [Int32] = []
    private var nextZ: [Int32] = []
    private var triangles: [UInt32] = []

    private var useZOrder = false
    private var minX = 0.0
    private var minY = 0.0
    private var zScale = 0.0

    init(capacity: Int) {
        // Bridges add two nodes per hole and splits two per split; reserve for the common case only.
        xs.reserveCapacity(capacity + 8)
        ys.reserveCapacity(capacity + 8)
        source.reserveCapacity(capacity + 8)
        prev.reserveCapacity(capacity + 8)
        next.reserveCapacity(capacity + 8)
        triangles.reserveCapacity(max(0, capacity - 2) * 3)
    }

    mutating func run(_ rings: [[SIMD2<Double>]]) -> [UInt32] {
        var offset: UInt32 = 0
        var outer: Int32 = Self.none
        var holeStarts: [Int32] = []
        for (ringIndex, ring) in rings.enumerated() {
            let wantPositive = ringIndex == 0
            let start = makeChain(ring, firstSource: offset, positive: wantPositive)
            offset += UInt32(ring.count)
            guard start != Self.none else { continue }
            if ringIndex == 0 {
                outer = start
            } else {
                // Holes that collapse to a line or a point after dropping degenerate points cover nothing.
                let hole = dropDegenerate(start)
                if next[Int(hole)] != prev[Int(hole)] { holeStarts.append(hole) }
            }
        }
        guard outer != Self.none, next[Int(outer)] != prev[Int(outer)] else { return [] }

        if !holeStarts.isEmpty {
            outer = mergeHoles(holeStarts, into: outer)
        }
        if xs.count > Triangulation.zOrderThreshold {
            prepareZOrder(rings)
        }
        clipAll(from: outer)
        return triangles
    }

    // MARK: Chain construction

    /// Links a ring into a circular chain with the requested orientation and returns one of its nodes.
    private mutating func makeChain(_ ring: [SIMD2<Double>], firstSource: UInt32, positive: Bool) -> Int32 {
        guard !ring.isEmpty else { return Self.none }
        let keepOrder = (Triangulation.shoelaceSum(ring) > 0) == positive
        var last: Int32 = Self.none
        let order: [Int] = keepOrder ? Array(ring.indices) : ring.indices.reversed()
        for index in order {
            last = insertNode(x: ring[index].x, y: ring[index].y, source: firstSource + UInt32(index), after: last)
        }
        // A ring closed explicitly would leave a zero-length edge; drop such duplicates right away.
        if last != Self.none, equal(last, next[Int(last)]) {
            let following = next[Int(last)]
            remove(last)
            last = following
        }
        return last
    }

    private mutating func insertNode(x: Double, y: Double, source index: UInt32, after node: Int32) -> Int32 {
        let new = Int32(xs.count)
        xs.append(x)
        ys.append(y)
        source.append(index)
        if node == Self.none {
            prev.append(new)
            next.append(new)
        } else {
            let after = next[Int(node)]
            prev.append(node)
            next.append(after)
            next[Int(node)] = new
            prev[Int(after)] = new
        }
        return new
    }

    private mutating func remove(_ node: Int32) {
        let p = prev[Int(node)], n = next[Int(node)]
        next[Int(p)] = n
        prev[Int(n)] = p
        if useZOrder {
            let pz = prevZ[Int(node)], nz = nextZ[Int(node)]
            if pz != Self.none { nextZ[Int(pz)] = nz }
            if nz != Self.none { prevZ[Int(nz)] = pz }
        }
    }

    // MARK: Geometry predicates

    private func equal(_ a: Int32, _ b: Int32) -> Bool {
        xs[Int(a)] == xs[Int(b)] && ys[Int(a)] == ys[Int(b)]
    }

    /// Twice the signed area of triangle a, b, c; positive when it turns the way the chain does.
    private func turn(_ a: Int32, _ b: Int32, _ c: Int32) -> Double {
        let ax = xs[Int(a)], ay = ys[Int(a)]
        return (xs[Int(b)] - ax) * (ys[Int(c)] - ay) - (ys[Int(b)] - ay) * (xs[Int(c)] - ax)
    }

    private static func turn(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double,
                             _ cx: Double, _ cy: Double) -> Double {
        (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    }

    /// Whether point p lies in the closed triangle a, b, c of either orientation.
    private static func inTriangle(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double,
                                   _ cx: Double, _ cy: Double, _ px: Double, _ py: Double) -> Bool {
        let d1 = turn(ax, ay, bx, by, px, py)
        let d2 = turn(bx, by, cx, cy, px, py)
        let d3 = turn(cx, cy, ax, ay, px, py)
        return (d1 >= 0 && d2 >= 0 && d3 >= 0) || (d1 <= 0 && d2 <= 0 && d3 <= 0)
    }

    private static func sign(_ value: Double) -> Int { value > 0 ? 1 : (value < 0 ? -1 : 0) }

    /// Whether q lies within the bounding box of collinear segment p–r.
    private func onSegment(_ p: Int32, _ q: Int32, _ r: Int32) -> Bool {
        xs[Int(q)] <= max(xs[Int(p)], xs[Int(r)]) && xs[Int(q)] >= min(xs[Int(p)], xs[Int(r)])
            && ys[Int(q)] <= max(ys[Int(p)], ys[Int(r)]) && ys[Int(q)] >= min(ys[Int(p)], ys[Int(r)])
    }

    /// Whether segments p1–q1 and p2–q2 share any point, touching and collinear overlap included.
    private func segmentsIntersect(_ p1: Int32, _ q1: Int32, _ p2: Int32, _ q2: Int32) -> Bool {
        let o1 = Self.sign(turn(p1, q1, p2))
        let o2 = Self.sign(turn(p1, q1, q2))
        let o3 = Self.sign(turn(p2, q2, p1))
        let o4 = Self.sign(turn(p2, q2, q1))
        if o1 != o2 && o3 != o4 { return true }
        if o1 == 0 && onSegment(p1, p2, q1) { return true }
        if o2 == 0 && onSegment(p1, q2, q1) { return true }
        if o3 == 0 && onSegment(p2, p1, q2) { return true }
        if o4 == 0 && onSegment(p2, q1, q2) { return true }
        return false
    }

    /// Whether the diagonal from a towards b starts into the polygon's interior at a.
    private func locallyInside(_ a: Int32, _ b: Int32) -> Bool {
        let before = prev[Int(a)], after = next[Int(a)]
        if turn(before, a, after) >= 0 {
            // Convex corner: b must lie strictly inside the wedge.
            return turn(a, after, b) > 0 && turn(before, a, b) > 0
        }
        // Reflex corner: the exterior wedge is convex; b must not lie in it (or on its sides).
        return !(turn(before, a, b) <= 0 && turn(a, after, b) <= 0)
    }

    /// Whether the midpoint of a–b lies inside the chain (even-odd rule).
    private func middleInside(_ a: Int32, _ b: Int32) -> Bool {
        let mx = (xs[Int(a)] + xs[Int(b)]) / 2, my = (ys[Int(a)] + ys[Int(b)]) / 2
        var inside = false
        var p = a
        repeat {
            let q = next[Int(p)]
            let px = xs[Int(p)], py = ys[Int(p)], qx = xs[Int(q)], qy = ys[Int(q)]
            if (py > my) != (qy > my), mx < (qx - px) * (my - py) / (qy - py) + px {
                inside.toggle()
            }
            p = q
        } while p != a
        return inside
    }

    /// Whether segment a–b crosses an edge of the chain other than those ending where a or b are.
    private func crossesChain(_ a: Int32, _ b: Int32) -> Bool {
        var p = a
        repeat {
            let q = next[Int(p)]
            if !equal(p, a) && !equal(p, b) && !equal(q, a) && !equal(q, b) && segmentsIntersect(p, q, a, b) {
                return true
            }
            p = q
        } while p != a
        return false
    }

    /// Whether a–b can split the chain into two chains that each still bound part of the polygon.
    private func isValidDiagonal(_ a: Int32, _ b: Int32) -> Bool {
        guard next[Int(a)] != b, prev[Int(a)] != b,
              source[Int(next[Int(a)])] != source[Int(b)], source[Int(prev[Int(a)])] != source[Int(b)],
              !crossesChain(a, b) else { return false }
        if equal(a, b) {
            // Two visits of one location (a self-touching chain): splitting there separates lobes.
            return turn(prev[Int(a)], a, next[Int(a)]) > 0 && turn(prev[Int(b)], b, next[Int(b)]) > 0
        }
        return locallyInside(a, b) && locallyInside(b, a) && middleInside(a, b)
    }

    // MARK: Degenerate point removal

    /// Removes repeated points and points on a straight run (including zero-width spikes) between
    /// `start` and `end`; returns a node still in the chain.
    @discardableResult
    private mutating func dropDegenerate(_ start: Int32, until end: Int32? = nil) -> Int32 {
        var end = end ?? start
        var p = start
        var removed: Bool
        repeat {
            removed = false
            let n = next[Int(p)]
            if n == p { return p }
            if equal(p, n) || turn(prev[Int(p)], p, n) == 0 {
                let before = prev[Int(p)]
                remove(p)
                p = before
                end = before
                if next[Int(p)] == p { return p }
                removed = true
            } else {
                p = n
            }
        } while removed || p != end
        return end
    }

    // MARK: Holes

    private mutating func mergeHoles(_ holes: [Int32], into outer: Int32) -> Int32 {
        var leftmost: [Int32] = []
        for hole in holes {
            var best = hole, p = next[Int(hole)]
            while p != hole {
                if xs[Int(p)] < xs[Int(best)] || (xs[Int(p)] == xs[Int(best)] && ys[Int(p)] < ys[Int(best)]) {
                    best = p
                }
                p = next[Int(p)]
            }
            leftmost.append(best)
        }
        // Merging from left to right keeps each bridge search from crossing holes merged later.
        leftmost.sort { xs[Int($0)] != xs[Int($1)] ? xs[Int($0)] < xs[Int($1)] : ys[Int($0)] < ys[Int($1)] }
        var outer = outer
        for hole in leftmost {
            outer = mergeHole(hole, into: outer)
        }
        return outer
    }

    private mutating func mergeHole(_ hole: Int32, into outer: Int32) -> Int32 {
        guard let bridge = findBridge(from: hole, in: outer) else {
            // No visible exterior point: the hole lies outside the exterior and is ignored.
            return outer
        }
        let copy = split(bridge, hole)
        dropDegenerate(copy, until: next[Int(copy)])
        return dropDegenerate(bridge, until: next[Int(bridge)])
    }

    /// Finds a chain vertex that the hole's leftmost vertex `hole` can see to its left
    /// (the classic ray cast towards negative x, then the visibility fix-up).
    private func findBridge(from hole: Int32, in outer: Int32) -> Int32? {
        let hx = xs[Int(hole)], hy = ys[Int(hole)]
        var nearestX = -Double.infinity
        var candidate: Int32?
        var p = outer
        repeat {
            let q = next[Int(p)]
            let px = xs[Int(p)], py = ys[Int(p)], qx = xs[Int(q)], qy = ys[Int(q)]
            // The chain runs with positive orientation, so edges facing the hole from its left run downwards in y.
            if hy <= py && hy >= qy && qy != py {
                let x = px + (hy - py) * (qx - px) / (qy - py)
                if x <= hx && x > nearestX {
                    nearestX = x
                    if x == hx {
                        // The hole touches this edge: bridge straight to the touching vertex if there is one.
                        if hy == py { return p }
                        if hy == qy { return q }
                    }
                    candidate = px < qx ? p : q
                }
            }
            p = q
        } while p != outer
        guard var best = candidate else { return nil }

        // Vertices inside the triangle (hole, ray hit, candidate) may block the view; the one with
        // the smallest angle to the ray is visible.
        let bx = xs[Int(best)], by = ys[Int(best)]
        var bestTangent = Double.infinity
        let stop = best
        p = best
        repeat {
            let px = xs[Int(p)], py = ys[Int(p)]
            if hx >= px && px >= bx && hx != px
                && Self.inTriangle(hx, hy, nearestX, hy, bx, by, px, py) {
                let tangent = abs(hy - py) / (hx - px)
                if locallyInside(p, hole) {
                    let better = tangent < bestTangent
                        || (tangent == bestTangent && (px > xs[Int(best)]
                            || (px == xs[Int(best)] && py == ys[Int(best)] && !locallyInside(best, hole))))
                    if better {
                        best = p
                        bestTangent = tangent
                    }
                }
            }
            p = next[Int(p)]
        } while p != stop
        return best
    }

    /// Connects a and b with two coincident edges, splitting one chain in two or merging two
    /// chains into one. Returns the copy of b, which starts the second chain in the split case.
    private mutating func split(_ a: Int32, _ b: Int32) -> Int32 {
        let aCopy = Int32(xs.count)
        xs.append(xs[Int(a)]); ys.append(ys[Int(a)]); source.append(source[Int(a)])
        prev.append(Self.none); next.append(Self.none)
        let bCopy = Int32(xs.count)
        xs.append(xs[Int(b)]); ys.append(ys[Int(b)]); source.append(source[Int(b)])
        prev.append(Self.none); next.append(Self.none)
        if useZOrder {
            zKey.append(zKey[Int(a)]); prevZ.append(Self.none); nextZ.append(Self.none)
            zKey.append(zKey[Int(b)]); prevZ.append(Self.none); nextZ.append(Self.none)
        }
        let afterA = next[Int(a)], beforeB = prev[Int(b)]
        next[Int(a)] = b; prev[Int(b)] = a
        next[Int(aCopy)] = afterA; prev[Int(afterA)] = aCopy
        next[Int(bCopy)] = aCopy; prev[Int(aCopy)] = bCopy
        next[Int(beforeB)] = bCopy; prev[Int(bCopy)] = beforeB
        return bCopy
    }

    // MARK: Z-order index

    private mutating func prepareZOrder(_ rings: [[SIMD2<Double>]]) {
        var loX = Double.infinity, loY = Double.infinity, hiX = -Double.infinity, hiY = -Double.infinity
        for ring in rings {
            for point in ring {
                loX = min(loX, point.x); loY = min(loY, point.y)
                hiX = max(hiX, point.x); hiY = max(hiY, point.y)
            }
        }
        let size = max(hiX - loX, hiY - loY)
        guard size > 0, size.isFinite else { return }
        useZOrder = true
        minX = loX
        minY = loY
        zScale = 32767 / size
        zKey = Array(repeating: 0, count: xs.count)
        prevZ = Array(repeating: Self.none, count: xs.count)
        nextZ = Array(repeating: Self.none, count: xs.count)
    }

    /// Builds the z-order list of the chain containing `start`.
    private mutating func indexChain(_ start: Int32) {
        var members: [Int32] = []
        var p = start
        repeat {
            zKey[Int(p)] = mortonKey(xs[Int(p)], ys[Int(p)])
            members.append(p)
            p = next[Int(p)]
        } while p != start
        members.sort { zKey[Int($0)] < zKey[Int($1)] }
        for (position, node) in members.enumerated() {
            prevZ[Int(node)] = position > 0 ? members[position - 1] : Self.none
            nextZ[Int(node)] = position + 1 < members.count ? members[position + 1] : Self.none
        }
    }

    /// Interleaves the bits of the point's 15-bit grid coordinates, so nearby points get nearby keys.
    private func mortonKey(_ x: Double, _ y: Double) -> UInt32 {
        func spread(_ value: Double) -> UInt32 {
            var v = UInt32(max(0, min(32767, value)))
            v = (v | (v << 8)) & 0x00FF_00FF
            v = (v | (v << 4)) & 0x0F0F_0F0F
            v = (v | (v << 2)) & 0x3333_3333
            v = (v | (v << 1)) & 0x5555_5555
            return v
        }
        return spread((x - minX) * zScale) | (spread((y - minY) * zScale) << 1)
    }

    // MARK: Ear clipping

    /// Whether node b, with its neighbours, forms a triangle that no other vertex intrudes into.
    private func isEar(_ b: Int32) -> Bool {
        let a = prev[Int(b)], c = next[Int(b)]
        if turn(a, b, c) <= 0 { return false }
        let ax = xs[Int(a)], ay = ys[Int(a)], bx = xs[Int(b)], by = ys[Int(b)], cx = xs[Int(c)], cy = ys[Int(c)]
        if useZOrder {
            let lowKey = mortonKey(min(ax, bx, cx), min(ay, by, cy))
            let highKey = mortonKey(max(ax, bx, cx), max(ay, by, cy))
            var p = prevZ[Int(b)]
            while p != Self.none && zKey[Int(p)] >= lowKey {
                if blocks(p, a, b, c) { return false }
                p = prevZ[Int(p)]
            }
            p = nextZ[Int(b)]
            while p != Self.none && zKey[Int(p)] <= highKey {
                if blocks(p, a, b, c) { return false }
                p = nextZ[Int(p)]
            }
            return true
        }
        var p = next[Int(c)]
        while p != a {
            if blocks(p, a, b, c) { return false }
            p = next[Int(p)]
        }
        return true
    }

    /// Whether vertex p prevents a, b, c from being clipped: a non-convex vertex inside the
    /// triangle. Copies of a and c (from bridges) sit on the triangle's corners and do not count.
    private func blocks(_ p: Int32, _ a: Int32, _ b: Int32, _ c: Int32) -> Bool {
        if p == a || p == b || p == c || equal(p, a) || equal(p, c) { return false }
        return Self.inTriangle(xs[Int(a)], ys[Int(a)], xs[Int(b)], ys[Int(b)], xs[Int(c)], ys[Int(c)],
                               xs[Int(p)], ys[Int(p)])
            && turn(prev[Int(p)], p, next[Int(p)]) <= 0
    }

    private mutating func emit(_ a: Int32, _ b: Int32, _ c: Int32) {
        triangles.append(source[Int(a)])
        triangles.append(source[Int(b)])
        triangles.append(source[Int(c)])
    }

    /// The stages a stuck chain goes through before being given up.
    private enum Stage { case plain, filtered, cured }

    /// Clips ears from every chain, starting with the one containing `start`. Chains produced by
    /// splits go on a work list instead of recursing, so adversarial input cannot exhaust the stack.
    private mutating func clipAll(from start: Int32) {
        var work: [(node: Int32, stage: Stage)] = [(dropDegenerate(start), .plain)]
        while let item = work.popLast() {
            clipChain(item.node, stage: item.stage, work: &work)
        }
    }

    private mutating func clipChain(_ start: Int32, stage: Stage, work: inout [(node: Int32, stage: Stage)]) {
        var stage = stage
        var ear = start
        if useZOrder { indexChain(ear) }
        var stop = ear
        while prev[Int(ear)] != next[Int(ear)] {
            let before = prev[Int(ear)], after = next[Int(ear)]
            if isEar(ear) {
                emit(before, ear, after)
                remove(ear)
                // Skipping one vertex after each clip avoids fans of thin slivers.
                ear = next[Int(after)]
                stop = ear
                continue
            }
            ear = after
            if ear != stop { continue }

            // A full round without an ear: escalate.
            switch stage {
            case .plain:
                ear = dropDegenerate(ear)
                stage = .filtered
            case .filtered:
                ear = cureLocalIntersections(ear)
                ear = dropDegenerate(ear)
                stage = .cured
            case .cured:
                splitChain(ear, work: &work)
                return
            }
            if useZOrder { indexChain(ear) }
            stop = ear
        }
    }

    /// Clips triangles where two edges one apart cross (a small bow tie), which breaks ear finding.
    private mutating func cureLocalIntersections(_ start: Int32) -> Int32 {
        var start = start
        var p = start
        repeat {
            let a = prev[Int(p)], pn = next[Int(p)], b = next[Int(pn)]
            if !equal(a, b) && properlyCross(a, p, pn, b) && locallyInside(a, b) && locallyInside(b, a) {
                emit(a, p, b)
                remove(p)
                remove(pn)
                p = b
                start = b
            }
            p = next[Int(p)]
        } while p != start && next[Int(p)] != p && next[Int(next[Int(p)])] != p
        return p
    }

    /// Whether segments a–b and c–d cross or touch anywhere.
    private func properlyCross(_ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) -> Bool {
        segmentsIntersect(a, b, c, d)
    }

    /// Splits a stuck chain along the first valid diagonal and queues both halves; a chain without
    /// a valid diagonal is left untriangulated (it encloses no area that can be drawn sensibly).
    private mutating func splitChain(_ start: Int32, work: inout [(node: Int32, stage: Stage)]) {
        var a = start
        repeat {
            var b = next[Int(next[Int(a)])]
            while b != prev[Int(a)] {
                if source[Int(a)] != source[Int(b)] && isValidDiagonal(a, b) {
                    let other = split(a, b)
                    let first = dropDegenerate(a, until: next[Int(a)])
                    let second = dropDegenerate(other, until: next[Int(other)])
                    work.append((first, .plain))
                    work.append((second, .plain))
                    return
                }
                b = next[Int(b)]
            }
            a = next[Int(a)]
        } while a != start
    }
}

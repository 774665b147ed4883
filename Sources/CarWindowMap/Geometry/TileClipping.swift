/// Cuts tile geometry to a box, in the tile's own units: GeoJSON cut into tiles, and a coarser
/// tile's features cut to the finer tile they are drawn in.
package enum TileClipping {
    /// The pieces of a line inside `box` (minX, minY, maxX, maxY), segment by segment
    /// (Liang-Barsky): a line that leaves and comes back gives two pieces.
    package static func line(_ line: [SIMD2<Double>], to box: SIMD4<Double>) -> [[SIMD2<Double>]] {
        var pieces: [[SIMD2<Double>]] = []
        var current: [SIMD2<Double>] = []
        for i in line.indices.dropFirst() {
            let a = line[i - 1], b = line[i]
            guard let (start, end) = segment(a, b, to: box) else {
                if current.count >= 2 { pieces.append(current) }
                current = []
                continue
            }
            if current.isEmpty || current.last != start {
                if current.count >= 2 { pieces.append(current) }
                current = [start]
            }
            current.append(end)
            if end != b {
                pieces.append(current)
                current = []
            }
        }
        if current.count >= 2 { pieces.append(current) }
        return pieces
    }

    /// The part of the segment from `a` to `b` inside `box`, nil when none is.
    package static func segment(_ a: SIMD2<Double>, _ b: SIMD2<Double>,
                                to box: SIMD4<Double>) -> (SIMD2<Double>, SIMD2<Double>)? {
        let d = b - a
        var t0 = 0.0, t1 = 1.0
        // The four edges as vectors, not an array of pairs: the haptic regions of alternative
        // routes clip every segment every frame, and this allocates nothing.
        let ps = SIMD4(-d.x, d.x, -d.y, d.y), qs = SIMD4(a.x - box.x, box.z - a.x, a.y - box.y, box.w - a.y)
        for edge in 0..<4 {
            let p = ps[edge], q = qs[edge]
            if p == 0 {
                if q < 0 { return nil }
            } else {
                let r = q / p
                if p < 0 { t0 = max(t0, r) } else { t1 = min(t1, r) }
                if t0 > t1 { return nil }
            }
        }
        return (t0 == 0 ? a : a + d * t0, t1 == 1 ? b : a + d * t1)
    }

    /// A ring cut to `box` (Sutherland-Hodgman against each edge); closed, or empty.
    package static func ring(_ ring: [SIMD2<Double>], to box: SIMD4<Double>) -> [SIMD2<Double>] {
        var points = ring
        if let first = points.first, first == points.last { points.removeLast() }
        for edge in 0..<4 {
            guard !points.isEmpty else { return [] }
            func inside(_ p: SIMD2<Double>) -> Bool {
                switch edge {
                case 0: p.x >= box.x
                case 1: p.x <= box.z
                case 2: p.y >= box.y
                default: p.y <= box.w
                }
            }
            func crossing(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> SIMD2<Double> {
                let t: Double
                switch edge {
                case 0: t = (box.x - a.x) / (b.x - a.x)
                case 1: t = (box.z - a.x) / (b.x - a.x)
                case 2: t = (box.y - a.y) / (b.y - a.y)
                default: t = (box.w - a.y) / (b.y - a.y)
                }
                return a + (b - a) * t
            }
            var output: [SIMD2<Double>] = []
            for i in points.indices {
                let current = points[i], previous = points[(i + points.count - 1) % points.count]
                if inside(current) {
                    if !inside(previous) { output.append(crossing(previous, current)) }
                    output.append(current)
                } else if inside(previous) {
                    output.append(crossing(previous, current))
                }
            }
            points = output
        }
        guard points.count >= 3 else { return [] }
        return points + [points[0]]
    }
}

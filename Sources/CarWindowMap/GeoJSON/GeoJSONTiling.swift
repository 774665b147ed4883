import CarWindowGeo
import CarWindowSystemSupport

extension GeoJSONData {
    /// Units per tile side of the layers cut from GeoJSON: sixteen times a vector tile's 4096,
    /// so a tile overzoomed four levels still places the engine's route to a pixel.
    static let extent = 65_536
    /// Geometry kept beyond each tile edge, as a fraction of the tile: lines and areas reach past
    /// the edge so their joins and outlines meet the next tile's.
    static let buffer = 1.0 / 32
    /// Points closer than this to the line between their neighbours are dropped (Douglas-Peucker),
    /// in layer units: a sixteenth of a pixel at the tile's own zoom.
    static let tolerance = 2.0

    /// The features that reach `tile`, clipped to it (plus a buffer), simplified for its zoom and
    /// in its coordinates: a vector tile layer called `name`. Nil when nothing reaches it.
    package func layer(for tile: TileID, name: String) -> VectorTileLayer? {
        let scale = Double(1 << tile.z)
        let origin = SIMD2(Double(tile.x), Double(tile.y)) / scale
        let side = 1 / scale
        let margin = side * Self.buffer
        let box = SIMD4(origin.x - margin, origin.y - margin, origin.x + side + margin, origin.y + side + margin)
        let extent = Double(Self.extent)
        func local(_ p: SIMD2<Double>) -> SIMD2<Double> { (p - origin) * scale * extent }
        let localBox = SIMD4(-margin * scale * extent, -margin * scale * extent,
                             (1 + Self.buffer) * extent, (1 + Self.buffer) * extent)
        var out: [VectorTileFeature] = []
        for feature in features {
            let b = feature.bounds
            guard b.z >= box.x, b.x <= box.z, b.w >= box.y, b.y <= box.w else { continue }
            var parts: [[TilePoint]] = []
            switch feature.type {
            case .point:
                for part in feature.parts {
                    let p = local(part[0])
                    guard p.x >= localBox.x, p.y >= localBox.y, p.x <= localBox.z, p.y <= localBox.w else { continue }
                    parts.append([TilePoint(x: Int32(p.x.rounded()), y: Int32(p.y.rounded()))])
                }
            case .lineString:
                for part in feature.parts {
                    for piece in Self.clipLine(part.map(local), to: localBox) {
                        let kept = Self.simplified(piece, tolerance: Self.tolerance)
                        if kept.count >= 2 { parts.append(Self.points(kept)) }
                    }
                }
            case .polygon:
                for (index, ring) in feature.parts.enumerated() {
                    let clipped = Self.clipRing(ring.map(local), to: localBox)
                    let kept = Self.simplified(clipped, tolerance: Self.tolerance)
                    // An outer ring cut away takes its holes with it.
                    if kept.count < 4 {
                        if index == 0 { break }
                        continue
                    }
                    parts.append(Self.points(kept))
                }
            default:
                continue
            }
            guard !parts.isEmpty else { continue }
            out.append(VectorTileFeature(id: feature.id, type: feature.type, properties: feature.properties, geometry: parts))
        }
        return out.isEmpty ? nil : VectorTileLayer(name: name, extent: Self.extent, features: out)
    }

    private static func points(_ path: [SIMD2<Double>]) -> [TilePoint] {
        path.map { TilePoint(x: Int32($0.x.rounded()), y: Int32($0.y.rounded())) }
    }

    /// The pieces of a line inside `box` (minX, minY, maxX, maxY), segment by segment
    /// (Liang-Barsky): a line that leaves and comes back gives two pieces.
    static func clipLine(_ line: [SIMD2<Double>], to box: SIMD4<Double>) -> [[SIMD2<Double>]] {
        var pieces: [[SIMD2<Double>]] = []
        var current: [SIMD2<Double>] = []
        for i in line.indices.dropFirst() {
            let a = line[i - 1], b = line[i]
            guard let (start, end) = clipSegment(a, b, to: box) else {
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

    private static func clipSegment(_ a: SIMD2<Double>, _ b: SIMD2<Double>,
                                    to box: SIMD4<Double>) -> (SIMD2<Double>, SIMD2<Double>)? {
        let d = b - a
        var t0 = 0.0, t1 = 1.0
        for (p, q) in [(-d.x, a.x - box.x), (d.x, box.z - a.x), (-d.y, a.y - box.y), (d.y, box.w - a.y)] {
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
    static func clipRing(_ ring: [SIMD2<Double>], to box: SIMD4<Double>) -> [SIMD2<Double>] {
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

    /// Douglas-Peucker with an explicit stack: ends always kept.
    static func simplified(_ path: [SIMD2<Double>], tolerance: Double) -> [SIMD2<Double>] {
        guard path.count > 2 else { return path }
        var keep = [Bool](repeating: false, count: path.count)
        keep[0] = true
        keep[path.count - 1] = true
        var stack = [(0, path.count - 1)]
        let limit = tolerance * tolerance
        while let (first, last) = stack.popLast() {
            guard last > first + 1 else { continue }
            let a = path[first], b = path[last]
            let d = b - a
            let lengthSquared = (d * d).sum()
            var farthest = first, farthestDistance = -1.0
            for i in (first + 1)..<last {
                let p = path[i] - a
                let distance: Double
                if lengthSquared == 0 {
                    distance = (p * p).sum()
                } else {
                    let t = max(0, min(1, (p * d).sum() / lengthSquared))
                    let q = p - d * t
                    distance = (q * q).sum()
                }
                if distance > farthestDistance {
                    farthestDistance = distance
                    farthest = i
                }
            }
            if farthestDistance > limit {
                keep[farthest] = true
                stack.append((first, farthest))
                stack.append((farthest, last))
            }
        }
        return path.indices.compactMap { keep[$0] ? path[$0] : nil }
    }
}

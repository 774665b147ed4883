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
                    for piece in TileClipping.line(part.map(local), to: localBox) {
                        let kept = Self.simplified(piece, tolerance: Self.tolerance)
                        if kept.count >= 2 { parts.append(Self.points(kept)) }
                    }
                }
            case .polygon:
                for (index, ring) in feature.parts.enumerated() {
                    let clipped = TileClipping.ring(ring.map(local), to: localBox)
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

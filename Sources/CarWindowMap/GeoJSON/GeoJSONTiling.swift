import CarWindowGeo

/// A GeoJSON source's layer for one tile, with what keeping it within the per-tile limits cut.
struct GeoJSONTileLayer {
    /// Nil when nothing reaches the tile.
    var layer: VectorTileLayer?
    /// What was left out or thinned, as a decoded vector tile reports it.
    var reductions = TileReductions()
    /// Point-to-line distances simplification evaluated: tests hold the work to its bound.
    var simplificationWork = 0
}

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
    /// How deep Douglas-Peucker splits before it finishes a stretch with one linear pass.
    ///
    /// Douglas-Peucker is quadratic when each split peels off one point (a zig-zag, whose points
    /// all lie about as far from every chord), and a crafted or careless engine route has that
    /// shape. The stretches split at one depth never overlap, so a depth bound D caps the work
    /// at (D + 1) distances per point, whatever the line. Balanced splits of the most a tile
    /// keeps (2^20 vertices) end by depth 20, and real lines rarely split much worse, so this
    /// bound only ever changes crafted lines.
    static let maximumSplitDepth = 32

    /// The features that reach `tile`, clipped to it (plus a buffer), simplified for its zoom and
    /// in its coordinates: a vector tile layer called `name`. Nil when nothing reaches it.
    package func layer(for tile: TileID, name: String) -> VectorTileLayer? {
        cut(for: tile, name: name).layer
    }

    /// ``layer(for:name:)`` within the limits a decoded vector tile keeps to: GeoJSON is as
    /// untrusted as a tile (an engine's route of a million points, or a file), and the layout
    /// budget assumes no layer holds more than a decoded tile could. Features, parts and vertices
    /// are counted after clipping, so only what reaches the tile counts; long parts are thinned
    /// evenly before they are simplified, which bounds simplification's work by the limits too.
    func cut(for tile: TileID, name: String, limits: VectorTileLimits = .standard) -> GeoJSONTileLayer {
        let scale = Double(1 << tile.z)
        let origin = SIMD2(Double(tile.x), Double(tile.y)) / scale
        let side = 1 / scale
        let margin = side * Self.buffer
        let box = SIMD4(origin.x - margin, origin.y - margin, origin.x + side + margin, origin.y + side + margin)
        let extent = Double(Self.extent)
        func local(_ p: SIMD2<Double>) -> SIMD2<Double> { (p - origin) * scale * extent }
        let localBox = SIMD4(-margin * scale * extent, -margin * scale * extent,
                             (1 + Self.buffer) * extent, (1 + Self.buffer) * extent)
        var result = GeoJSONTileLayer()

        // First what reaches the tile, clipped and counted against the limits.
        var clippedFeatures: [(source: Int, parts: [[SIMD2<Double>]], exterior: [Bool])] = []
        var partCount = 0
        for (index, feature) in features.enumerated() {
            let b = feature.bounds
            guard b.z >= box.x, b.x <= box.z, b.w >= box.y, b.y <= box.w else { continue }
            var parts: [[SIMD2<Double>]] = []
            // Per ring of a polygon: whether it starts a polygon (holes follow their exterior).
            var exterior: [Bool] = []
            switch feature.type {
            case .point:
                for part in feature.parts {
                    let p = local(part[0])
                    guard p.x >= localBox.x, p.y >= localBox.y, p.x <= localBox.z, p.y <= localBox.w else { continue }
                    parts.append([p])
                }
            case .lineString:
                for part in feature.parts {
                    parts += TileClipping.line(part.map(local), to: localBox).filter { $0.count >= 2 }
                }
            case .polygon:
                // Projection wound exteriors positive and holes negative; an exterior cut away
                // takes its holes with it.
                var exteriorKept = false
                for ring in feature.parts {
                    let isExterior = Self.signedArea(ring) > 0
                    if isExterior { exteriorKept = false } else if !exteriorKept { continue }
                    let clipped = TileClipping.ring(ring.map(local), to: localBox)
                    guard clipped.count >= 4 else { continue }
                    if isExterior { exteriorKept = true }
                    parts.append(clipped)
                    exterior.append(isExterior)
                }
            default:
                continue
            }
            guard !parts.isEmpty else { continue }
            guard clippedFeatures.count < limits.maximumFeatures else {
                result.reductions.droppedFeatures += 1
                continue
            }
            let room = limits.maximumParts - partCount
            guard room > 0 else {
                result.reductions.droppedFeatures += 1
                continue
            }
            if parts.count > room {
                result.reductions.droppedParts += parts.count - room
                parts.removeLast(parts.count - room)
                if !exterior.isEmpty { exterior.removeLast(exterior.count - room) }
            }
            partCount += parts.count
            clippedFeatures.append((index, parts, exterior))
        }
        guard !clippedFeatures.isEmpty else { return result }

        // Then the tile's vertices shared out as the decoder shares them, and what is kept simplified.
        let cap = Self.perPartCap(clippedFeatures.lazy.flatMap { $0.parts.lazy.map(\.count) },
                                  maximumVertices: limits.maximumVertices)
        var out: [VectorTileFeature] = []
        out.reserveCapacity(clippedFeatures.count)
        for (source, parts, exterior) in clippedFeatures {
            let feature = features[source]
            var geometry: [[TilePoint]] = []
            geometry.reserveCapacity(parts.count)
            var exteriorKept = false
            for (partIndex, part) in parts.enumerated() {
                var path = part
                if let cap, path.count > cap {
                    result.reductions.thinned(from: path.count, to: cap)
                    path = path.thinned(to: cap)
                }
                switch feature.type {
                case .point:
                    geometry.append(Self.points(path))
                case .lineString:
                    let kept = Self.simplified(path, tolerance: Self.tolerance, work: &result.simplificationWork)
                    if kept.count >= 2 { geometry.append(Self.points(kept)) }
                default:
                    if exterior[partIndex] { exteriorKept = false } else if !exteriorKept { continue }
                    let kept = Self.simplified(path, tolerance: Self.tolerance, work: &result.simplificationWork)
                    guard kept.count >= 4 else { continue }
                    if exterior[partIndex] { exteriorKept = true }
                    geometry.append(Self.points(kept))
                }
            }
            guard !geometry.isEmpty else { continue }
            out.append(VectorTileFeature(id: feature.id, type: feature.type, properties: feature.properties, geometry: geometry))
        }
        if !out.isEmpty { result.layer = VectorTileLayer(name: name, extent: Self.extent, features: out) }
        return result
    }

    /// The most vertices a part keeps so that the parts together keep at most `maximumVertices`:
    /// nil when all fit whole. The largest such cap (water-filling), so small parts stay whole and
    /// only outsized ones are thinned; never below three, as a decoded tile's parts.
    static func perPartCap(_ sizes: some Sequence<Int>, maximumVertices: Int) -> Int? {
        var total = 0, longest = 0
        for size in sizes {
            total += size
            longest = max(longest, size)
        }
        guard total > maximumVertices else { return nil }
        func kept(cap: Int) -> Int { sizes.reduce(0) { $0 + min($1, cap) } }
        var low = VertexPlan.fewestKeptVertices, high = max(longest, low)
        while low < high {
            let middle = low + (high - low + 1) / 2
            if kept(cap: middle) <= maximumVertices { low = middle } else { high = middle - 1 }
        }
        return low
    }

    private static func signedArea(_ ring: [SIMD2<Double>]) -> Double {
        var area = 0.0
        for i in ring.indices {
            let a = ring[i], b = ring[(i + 1) % ring.count]
            area += a.x * b.y - b.x * a.y
        }
        return area
    }

    private static func points(_ path: [SIMD2<Double>]) -> [TilePoint] {
        path.map { TilePoint(x: Int32($0.x.rounded()), y: Int32($0.y.rounded())) }
    }

    /// Douglas-Peucker with an explicit stack: ends always kept.
    static func simplified(_ path: [SIMD2<Double>], tolerance: Double) -> [SIMD2<Double>] {
        var work = 0
        return simplified(path, tolerance: tolerance, work: &work)
    }

    /// Douglas-Peucker to ``maximumSplitDepth``, adding the distances it evaluates to `work`:
    /// at most (``maximumSplitDepth`` + 1) per point. A stretch still unresolved at that depth
    /// keeps every point farther than `tolerance` from the point kept before it, so no point
    /// dropped there lies farther than `tolerance` from the line either.
    static func simplified(_ path: [SIMD2<Double>], tolerance: Double, work: inout Int) -> [SIMD2<Double>] {
        guard path.count > 2 else { return path }
        let keep = simplificationKeeps(path, tolerance: tolerance, work: &work)
        return path.indices.compactMap { keep[$0] ? path[$0] : nil }
    }

    /// ``simplified(_:tolerance:work:)`` as one flag a point, whether it is kept: the route
    /// overlay keeps the indices, which carry each point's distance along the route.
    static func simplificationKeeps(_ path: [SIMD2<Double>], tolerance: Double, work: inout Int) -> [Bool] {
        guard path.count > 2 else { return [Bool](repeating: true, count: path.count) }
        var keep = [Bool](repeating: false, count: path.count)
        keep[0] = true
        keep[path.count - 1] = true
        var stack = [(first: 0, last: path.count - 1, depth: 0)]
        let limit = tolerance * tolerance
        // Scalar arithmetic on the buffer: this loop runs (depth + 1) times per point of a
        // million-point line, and unspecialised SIMD operators cost tenfold in debug builds.
        path.withUnsafeBufferPointer { points in
            while let (first, last, depth) = stack.popLast() {
                guard last > first + 1 else { continue }
                work += last - first - 1
                if depth >= maximumSplitDepth {
                    var anchorX = points[first].x, anchorY = points[first].y
                    for i in (first + 1)..<last {
                        let dx = points[i].x - anchorX, dy = points[i].y - anchorY
                        if dx * dx + dy * dy > limit {
                            keep[i] = true
                            anchorX = points[i].x
                            anchorY = points[i].y
                        }
                    }
                    continue
                }
                let ax = points[first].x, ay = points[first].y
                let dx = points[last].x - ax, dy = points[last].y - ay
                let lengthSquared = dx * dx + dy * dy
                var farthest = first, farthestDistance = -1.0
                for i in (first + 1)..<last {
                    let px = points[i].x - ax, py = points[i].y - ay
                    var distance = px * px + py * py
                    if lengthSquared != 0 {
                        let t = max(0, min(1, (px * dx + py * dy) / lengthSquared))
                        let qx = px - dx * t, qy = py - dy * t
                        distance = qx * qx + qy * qy
                    }
                    if distance > farthestDistance {
                        farthestDistance = distance
                        farthest = i
                    }
                }
                if farthestDistance > limit {
                    keep[farthest] = true
                    stack.append((first, farthest, depth + 1))
                    stack.append((farthest, last, depth + 1))
                }
            }
        }
        return keep
    }
}

import Foundation
import Logging

/// Turns a decoded tile and a style into buckets: filters features, evaluates feature-dependent
/// paint, triangulates, tessellates and shapes labels. Pure CPU work that runs on any thread.
struct TileLayoutBuilder: Sendable {
    let style: Style
    let glyphs: GlyphAtlas
    let fonts: FontLibrary
    /// The source's highest zoom: its tiles are drawn at every zoom above it too.
    let sourceMaxZoom: Int

    func layout(_ tile: TileID, _ data: VectorTile) -> TileLayout {
        var buckets = [LayerBucket?](repeating: nil, count: style.layers.count)
        // Layers shown at any zoom this tile is drawn at: one zoom level, or all above maxzoom.
        let highestZoom = tile.z >= sourceMaxZoom ? Double(Camera.maximumZoom) + 1 : Double(tile.z + 1)
        let zoom = Double(tile.z)
        for (index, layer) in style.layers.enumerated() {
            guard layer.visibility == .visible, layer.type != .background,
                  layer.minZoom < highestZoom, layer.maxZoom > zoom,
                  let sourceLayerName = layer.sourceLayer,
                  let sourceLayer = data.layer(named: sourceLayerName) else { continue }
            let scale = Float(4096) / Float(sourceLayer.extent)
            // In cell order, so each bucket's meshes cut into spatial chunks.
            let features = sourceLayer.features
                .filter { layer.filter?.matches(EvaluationContext(zoom: zoom, feature: $0)) ?? true }
                .map { (Chunker.cell(of: $0, scale: scale), $0) }
                .sorted { $0.0 < $1.0 }
            guard !features.isEmpty else { continue }
            switch layer.type {
            case .fill:
                buckets[index] = fillBucket(layer, features, zoom: zoom, scale: scale).map(LayerBucket.fill)
            case .line:
                buckets[index] = lineBucket(layer, features, zoom: zoom, scale: scale).map(LayerBucket.line)
            case .fillExtrusion:
                buckets[index] = extrusionBucket(layer, features, zoom: zoom, scale: scale).map(LayerBucket.extrusion)
            case .symbol:
                buckets[index] = symbolBucket(layer, features, tile: tile, layerIndex: index, zoom: zoom, scale: scale)
                    .map(LayerBucket.symbol)
            case .background:
                break
            }
        }
        // Every bucket is scaled to 4096 units per tile side, whatever each source layer's extent.
        return TileLayout(tile: tile, extent: 4096, buckets: buckets)
    }

    // MARK: Fills

    private func fillBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], zoom: Double,
                            scale: Float) -> FillBucket? {
        guard let paint = layer.paint.fill else { return nil }
        let perVertexColor = paint.fillColor.dependsOnFeature || paint.fillOpacity.dependsOnFeature
        let antialias = paint.fillAntialias.evaluate(zoom: zoom)
        var bucket = FillBucket()
        if perVertexColor { bucket.colors = [] }
        var chunker = Chunker(), outlineChunker = Chunker()
        for (cell, feature) in features where feature.type == .polygon {
            let firstVertex = bucket.positions.count
            let color = perVertexColor
                ? paint.fillColor.evaluate(zoom: zoom, feature: feature)
                    .packed(opacity: Float(paint.fillOpacity.evaluate(zoom: zoom, feature: feature))) : 0
            for polygon in feature.polygons {
                let rings = polygon.map { ring in ring.map { SIMD2(Double($0.x), Double($0.y)) * Double(scale) } }
                let indices = Triangulation.triangulate(rings)
                guard !indices.isEmpty else { continue }
                var base = UInt32(bucket.positions.count)
                for ring in rings { for point in ring { bucket.positions.append(SIMD2(Float(point.x), Float(point.y))) } }
                bucket.indices.append(contentsOf: indices.lazy.map { $0 + base })
                guard antialias else { continue }
                // Outlines reuse the fill's vertices as line pairs around each ring.
                for ring in rings {
                    let count = UInt32(ring.count)
                    for i in 0..<count {
                        bucket.outlineIndices.append(base + i)
                        bucket.outlineIndices.append(base + (i + 1) % count)
                    }
                    base += count
                }
            }
            if perVertexColor {
                bucket.colors?.append(contentsOf: repeatElement(color, count: bucket.positions.count - firstVertex))
            }
            chunker.add(cell: cell, indexEnd: bucket.indices.count, points: bucket.positions[firstVertex...])
            outlineChunker.add(cell: cell, indexEnd: bucket.outlineIndices.count, points: bucket.positions[firstVertex...])
        }
        bucket.chunks = chunker.finish()
        bucket.outlineChunks = outlineChunker.finish()
        return bucket.indices.isEmpty ? nil : bucket
    }

    // MARK: Lines

    private func lineBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], zoom: Double,
                            scale: Float) -> LineBucket? {
        guard let paint = layer.paint.line, let layout = layer.layout.line else { return nil }
        let perVertexColor = paint.lineColor.dependsOnFeature || paint.lineOpacity.dependsOnFeature
        let perVertexWidth = paint.lineWidth.dependsOnFeature
        var bucket = LineBucket()
        if perVertexColor { bucket.colors = [] }
        if perVertexWidth { bucket.widths = [] }
        var chunker = Chunker()
        for (cell, feature) in features where feature.type == .lineString || feature.type == .polygon {
            let join = layout.lineJoin.evaluate(zoom: zoom, feature: feature)
            let cap = layout.lineCap.evaluate(zoom: zoom)
            let miterLimit = Float(layout.lineMiterLimit.evaluate(zoom: zoom))
            let roundLimit = Float(layout.lineRoundLimit.evaluate(zoom: zoom))
            let before = bucket.tessellation.vertices.count
            for part in feature.geometry {
                bucket.tessellation.addLine(part.map { SIMD2(Float($0.x), Float($0.y)) * scale }, join: join, cap: cap,
                                            miterLimit: miterLimit, roundLimit: roundLimit,
                                            closed: feature.type == .polygon)
            }
            let added = bucket.tessellation.vertices.count - before
            chunker.add(cell: cell, indexEnd: bucket.tessellation.indices.count,
                        points: bucket.tessellation.vertices[before...].lazy.map(\.position))
            if perVertexColor {
                let color = paint.lineColor.evaluate(zoom: zoom, feature: feature)
                    .packed(opacity: Float(paint.lineOpacity.evaluate(zoom: zoom, feature: feature)))
                bucket.colors?.append(contentsOf: repeatElement(color, count: added))
            }
            if perVertexWidth {
                let width = Float(paint.lineWidth.evaluate(zoom: zoom, feature: feature))
                bucket.widths?.append(contentsOf: repeatElement(width, count: added))
            }
        }
        bucket.chunks = chunker.finish()
        return bucket.tessellation.indices.isEmpty ? nil : bucket
    }

    // MARK: Extrusions

    private func extrusionBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], zoom: Double,
                                 scale: Float) -> ExtrusionBucket? {
        guard let paint = layer.paint.fillExtrusion else { return nil }
        let perVertexColor = paint.fillExtrusionColor.dependsOnFeature
        var bucket = ExtrusionBucket()
        if perVertexColor { bucket.colors = [] }
        var chunker = Chunker()
        for (cell, feature) in features where feature.type == .polygon {
            let height = Float(paint.fillExtrusionHeight.evaluate(zoom: zoom, feature: feature))
            let base = Float(paint.fillExtrusionBase.evaluate(zoom: zoom, feature: feature))
            let before = bucket.mesh.vertices.count
            for polygon in feature.polygons {
                bucket.mesh.addPolygon(polygon.map { ring in ring.map { SIMD2(Float($0.x), Float($0.y)) * scale } })
            }
            let added = bucket.mesh.vertices.count - before
            chunker.add(cell: cell, indexEnd: bucket.mesh.indices.count,
                        points: bucket.mesh.vertices[before...].lazy.map(\.position))
            bucket.heights.append(contentsOf: repeatElement(SIMD2(base, max(base, height)), count: added))
            if perVertexColor {
                let color = paint.fillExtrusionColor.evaluate(zoom: zoom, feature: feature).packed()
                bucket.colors?.append(contentsOf: repeatElement(color, count: added))
            }
        }
        bucket.chunks = chunker.finish()
        return bucket.mesh.indices.isEmpty ? nil : bucket
    }

    // MARK: Labels

    private func symbolBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], tile: TileID, layerIndex: Int,
                              zoom: Double, scale: Float) -> SymbolBucket? {
        guard let layout = layer.layout.symbol, let paint = layer.paint.symbol else { return nil }
        let textField = layout.textField
        var bucket = SymbolBucket()
        // Spacing is given in pixels at the tile's own zoom: 4096 units span 512 pixels.
        let unitsPerPixel = Float(4096) / Float(MapTransform.tileSize)
        for (featureIndex, (_, feature)) in features.enumerated() {
            let text = textField.evaluate(zoom: zoom, feature: feature).trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { continue }
            let font = fonts.resolve(layout.textFont.evaluate(zoom: zoom, feature: feature))
            let placement = layout.symbolPlacement.evaluate(zoom: zoom)
            let isLine = placement != .point && feature.type != .point
            let maxWidth = isLine ? nil : Float(layout.textMaxWidth.evaluate(zoom: zoom, feature: feature))
            guard let shaped = glyphs.shape(
                text, font: font, size: GlyphAtlas.baseSize, maxWidth: maxWidth,
                lineHeight: Float(layout.textLineHeight.evaluate(zoom: zoom)),
                letterSpacing: Float(layout.textLetterSpacing.evaluate(zoom: zoom, feature: feature)),
                anchor: isLine ? .center : layout.textAnchor.evaluate(zoom: zoom, feature: feature),
                transform: layout.textTransform.evaluate(zoom: zoom, feature: feature)),
                !shaped.glyphs.isEmpty else { continue }
            let fill = paint.textColor.dependsOnFeature ? paint.textColor.evaluate(zoom: zoom, feature: feature) : nil
            let halo = paint.textHaloColor.dependsOnFeature ? paint.textHaloColor.evaluate(zoom: zoom, feature: feature) : nil
            var hasher = Hasher()
            hasher.combine(layerIndex)
            hasher.combine(text)
            let textKey = hasher.finalize()
            if isLine {
                let spacing = max(Float(layout.symbolSpacing.evaluate(zoom: zoom)), 1) * unitsPerPixel
                // Overzoomed tiles are drawn up to this many levels above their own zoom.
                let levels = tile.z >= sourceMaxZoom ? Self.overzoomLevels : 0
                for part in feature.geometry {
                    let path = part.map { SIMD2(Float($0.x), Float($0.y)) * scale }
                    let length = Self.length(of: path)
                    guard length > 0 else { continue }
                    let pathIndex = bucket.paths.count
                    bucket.paths.append(path)
                    // Level 0 anchors sit at odd multiples of spacing/2; each finer level fills the
                    // midpoints of the one before, so no anchor repeats across levels.
                    for level in 0...levels {
                        let step = spacing / Float(1 << level)
                        var distance = level == 0 ? min(step / 2, length / 2) : step / 2
                        while distance < length {
                            defer { distance += level == 0 ? step : 2 * step }
                            // Anchors in the tile's buffer belong to the neighbouring tile.
                            guard Self.isInsideTile(Self.point(along: path, at: distance)) else { continue }
                            var keyHasher = hasher
                            keyHasher.combine(Int(distance / 16))
                            keyHasher.combine(path.first.map { Int($0.x) / 16 } ?? 0)
                            bucket.labels.append(LabelCandidate(
                                anchor: .line(path: pathIndex, distance: distance, level: level), text: shaped,
                                key: keyHasher.finalize(), textKey: textKey, fillColor: fill, haloColor: halo))
                        }
                    }
                }
            } else {
                let point: SIMD2<Float>
                if feature.type == .point, let first = feature.geometry.first?.first {
                    point = SIMD2(Float(first.x), Float(first.y)) * scale
                } else if let first = feature.geometry.first, !first.isEmpty {
                    point = first.reduce(SIMD2<Float>.zero) { $0 + SIMD2(Float($1.x), Float($1.y)) } / Float(first.count) * scale
                } else {
                    continue
                }
                guard Self.isInsideTile(point) else { continue }
                hasher.combine(featureIndex)
                bucket.labels.append(LabelCandidate(anchor: .point(point), text: shaped, key: hasher.finalize(),
                                                    textKey: textKey, fillColor: fill, haloColor: halo))
            }
        }
        return bucket.labels.isEmpty ? nil : bucket
    }

    /// How many zoom levels past its own an overzoomed tile gets extra line-label anchors for.
    static let overzoomLevels = 4

    static func isInsideTile(_ point: SIMD2<Float>) -> Bool {
        point.x >= 0 && point.y >= 0 && point.x < 4096 && point.y < 4096
    }

    /// The point `distance` tile units along `path` (its end when the path is shorter).
    static func point(along path: [SIMD2<Float>], at distance: Float) -> SIMD2<Float> {
        var remaining = distance
        for i in path.indices.dropFirst() {
            let d = path[i] - path[i - 1]
            let length = (d * d).sum().squareRoot()
            if remaining <= length, length > 0 { return path[i - 1] + d * (remaining / length) }
            remaining -= length
        }
        return path.last ?? .zero
    }

    static func length(of path: [SIMD2<Float>]) -> Float {
        var total: Float = 0
        for i in path.indices.dropFirst() {
            let d = path[i] - path[i - 1]
            total += (d * d).sum().squareRoot()
        }
        return total
    }
}

import Foundation
import Logging
import CarWindowGeo
import CarWindowStyle

/// Turns a decoded tile and a style into buckets: filters features, evaluates feature-dependent
/// paint, triangulates, tessellates and shapes labels. Pure CPU work that runs on any thread.
struct TileLayoutBuilder: Sendable {
    let style: Style
    let glyphs: GlyphAtlas
    let fonts: FontLibrary
    /// The source's highest zoom: its tiles are drawn at every zoom above it too.
    let sourceMaxZoom: Int
    /// The style's sprite images, for icons.
    var sprites: SpriteSheet = .empty
    /// The features of the style's GeoJSON sources, by source id.
    var geojson: [String: GeoJSONData] = [:]

    /// The name under which a GeoJSON source's features join a tile: no vector tile layer can
    /// have it, as tile layer names never start with a control character.
    static func geojsonLayerName(_ source: String) -> String { "\u{1}geojson:" + source }

    /// The style's vector sources bound to tile sources of their own instead of the basemap.
    var boundSources: Set<String> = []

    /// The tile layer `layer` draws from: its `source-layer` of the basemap or of its own bound
    /// source, or its GeoJSON source's layer.
    func sourceLayerName(of layer: StyleLayer) -> String? {
        guard let source = layer.source else { return layer.sourceLayer }
        if geojson[source] != nil { return Self.geojsonLayerName(source) }
        if boundSources.contains(source), let sourceLayer = layer.sourceLayer {
            return BoundTileSources.layerName(source: source, layer: sourceLayer)
        }
        return layer.sourceLayer
    }

    func layout(_ tile: TileID, _ tileData: VectorTile) -> TileLayout {
        // The GeoJSON sources' features that reach this tile join it as layers of their own.
        var data = tileData
        var geojsonReductions = TileReductions()
        for (source, features) in geojson.sorted(by: { $0.key < $1.key }) {
            let cut = features.cut(for: tile, name: Self.geojsonLayerName(source))
            if let layer = cut.layer { data.layers.append(layer) }
            geojsonReductions.merge(cut.reductions)
        }
        var buckets = [LayerBucket?](repeating: nil, count: style.layers.count)
        // Layers shown at any zoom this tile is drawn at: one zoom level, or all above maxzoom.
        let highestZoom = tile.z >= sourceMaxZoom ? Double(Camera.maximumZoom) + 1 : Double(tile.z + 1)
        let zoom = Double(tile.z)
        // First which features each layer draws, and what drawing them can cost at worst; then
        // the budget is shared out; then the buckets are built.
        var plans: [LayerPlan] = []
        var budget = TileLayoutBudget()
        // Features cut down to the budget, once for every layer that draws them.
        var cutFeatures: [String: [Int32: VectorTileFeature]] = [:]
        for (index, layer) in style.layers.enumerated() {
            guard layer.visibility == .visible, layer.type != .background,
                  layer.minZoom < highestZoom, layer.maxZoom > zoom,
                  let sourceLayerName = sourceLayerName(of: layer),
                  let sourceLayer = data.layer(named: sourceLayerName) else { continue }
            var drawn: [Int32] = []
            for (featureIndex, feature) in sourceLayer.features.enumerated()
            where Self.draws(layer.type, feature.type)
                && layer.filter?.matches(EvaluationContext(zoom: zoom, feature: feature)) ?? true {
                drawn.append(Int32(featureIndex))
            }
            guard !drawn.isEmpty else { continue }
            // Polygons too costly to triangulate lose their smallest holes or are thinned first,
            // so that the budget is shared out over what will be drawn.
            for featureIndex in drawn where cutFeatures[sourceLayerName]?[featureIndex] == nil {
                let feature = sourceLayer.features[Int(featureIndex)]
                if let bounded = Self.triangulable(feature, reductions: &budget.reductions) {
                    cutFeatures[sourceLayerName, default: [:]][featureIndex] = bounded
                }
            }
            plans.append(LayerPlan(styleIndex: index, sourceLayer: sourceLayer, features: drawn,
                                   cost: DrawCost.of(layer.type)))
        }
        let cap = Self.perPartCap(plans, cutFeatures, within: TileLayoutBudget.geometryBytes)
        var thinnedFeatures: [String: [Int32: VectorTileFeature]] = [:]
        for plan in plans {
            let layer = style.layers[plan.styleIndex]
            let scale = Float(4096) / Float(plan.sourceLayer.extent)
            // In cell order, so each bucket's meshes cut into spatial chunks.
            let features = plan.features
                .map { index in
                    let name = plan.sourceLayer.name
                    var feature = cutFeatures[name]?[index] ?? plan.sourceLayer.features[Int(index)]
                    if let thinned = thinnedFeatures[name]?[index] {
                        feature = thinned
                    } else if let cap, let thinned = Self.thinned(feature, cap: cap, reductions: &budget.reductions) {
                        thinnedFeatures[name, default: [:]][index] = thinned
                        feature = thinned
                    }
                    return (Chunker.cell(of: feature, scale: scale), feature)
                }
                .sorted { $0.0 < $1.0 }
            let index = plan.styleIndex
            switch layer.type {
            case .fill:
                buckets[index] = fillBucket(layer, features, zoom: zoom, scale: scale, budget: &budget).map(LayerBucket.fill)
            case .line:
                buckets[index] = lineBucket(layer, features, zoom: zoom, scale: scale, budget: &budget).map(LayerBucket.line)
            case .fillExtrusion:
                buckets[index] = extrusionBucket(layer, features, zoom: zoom, scale: scale, budget: &budget)
                    .map(LayerBucket.extrusion)
            case .symbol:
                buckets[index] = symbolBucket(layer, features, tile: tile, layerIndex: index, zoom: zoom, scale: scale,
                                              budget: &budget).map(LayerBucket.symbol)
            case .circle:
                buckets[index] = circleBucket(layer, features, zoom: zoom, scale: scale, budget: &budget)
                    .map(LayerBucket.circle)
            case .background:
                break
            }
        }
        // Every bucket is scaled to 4096 units per tile side, whatever each source layer's extent.
        return TileLayout(tile: tile, extent: 4096, buckets: buckets, reductions: budget.reductions,
                          geojsonReductions: geojsonReductions)
    }

    // MARK: Budget

    /// The features one style layer draws from its source layer, by index, and their worst-case cost.
    private struct LayerPlan {
        var styleIndex: Int
        var sourceLayer: VectorTileLayer
        var features: [Int32]
        var cost: DrawCost
    }

    /// Whether a layer of `type` draws features of geometry `geometry` at all.
    private static func draws(_ type: LayerType, _ geometry: GeometryType) -> Bool {
        switch type {
        case .fill, .fillExtrusion: geometry == .polygon
        case .line: geometry == .lineString || geometry == .polygon
        case .symbol: geometry != .unknown
        case .circle: geometry == .point
        case .background: false
        }
    }

    /// The most vertices a part (line or ring) keeps so that every layer's worst case fits in
    /// `bytes`: nil when everything fits whole. The cap is the largest that fits, so only parts
    /// longer than it are thinned; parts never go below three vertices, and features that still
    /// do not fit are dropped while building.
    private static func perPartCap(_ plans: [LayerPlan], _ cutFeatures: [String: [Int32: VectorTileFeature]],
                                   within bytes: Int) -> Int? {
        // Per source layer and feature: what one more kept vertex costs over every layer drawing it.
        var vertexCost: [String: [Int]] = [:]
        var fixed = 0, whole = 0, longest = 0
        for plan in plans {
            var costs = vertexCost[plan.sourceLayer.name] ?? [Int](repeating: 0, count: plan.sourceLayer.features.count)
            for index in plan.features {
                let feature = cutFeatures[plan.sourceLayer.name]?[index] ?? plan.sourceLayer.features[Int(index)]
                var vertices = 0
                for part in feature.geometry {
                    vertices += part.count
                    longest = max(longest, part.count)
                }
                costs[Int(index)] += plan.cost.perVertex
                fixed += plan.cost.perPart * feature.geometry.count + plan.cost.perFeature
                whole += plan.cost.perVertex * vertices
            }
            vertexCost[plan.sourceLayer.name] = costs
        }
        guard fixed + whole > bytes else { return nil }
        var layersByName: [String: VectorTileLayer] = [:]
        for plan in plans { layersByName[plan.sourceLayer.name] = plan.sourceLayer }
        func total(cap: Int) -> Int {
            var sum = fixed
            for (name, costs) in vertexCost {
                guard let layer = layersByName[name] else { continue }
                let cut = cutFeatures[name]
                for (index, cost) in costs.enumerated() where cost > 0 {
                    let feature = cut?[Int32(index)] ?? layer.features[index]
                    for part in feature.geometry { sum += cost * min(part.count, cap) }
                }
            }
            return sum
        }
        var low = VertexPlan.fewestKeptVertices, high = max(longest, low)
        while low < high {
            let middle = low + (high - low + 1) / 2
            if total(cap: middle) <= bytes { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// The feature with every part thinned to at most `cap` vertices, or nil when no part is longer.
    private static func thinned(_ feature: VectorTileFeature, cap: Int,
                                reductions: inout TileReductions) -> VectorTileFeature? {
        guard feature.geometry.contains(where: { $0.count > cap }) else { return nil }
        var result = feature
        result.geometry = feature.geometry.map { part in
            guard part.count > cap else { return part }
            reductions.thinned(from: part.count, to: cap)
            return part.thinned(to: cap)
        }
        return result
    }

    /// A polygon feature made cheap enough to triangulate, or nil when it already is (or is no
    /// polygon): its rings are regrouped as polygons, each bounded, and flattened back in the
    /// same order (exterior, then its holes).
    private static func triangulable(_ feature: VectorTileFeature, reductions: inout TileReductions) -> VectorTileFeature? {
        guard feature.type == .polygon else { return nil }
        let vertices = feature.geometry.reduce(0) { $0 + $1.count }
        let rings = feature.geometry.count
        // A whole feature within both bounds has every polygon of it within them too.
        guard vertices > TileLayoutBudget.maximumPolygonVertices
            || (rings - 1) * vertices > TileLayoutBudget.maximumHoleWork else { return nil }
        var result = feature
        result.geometry = feature.polygons.flatMap { triangulable($0, reductions: &reductions) }
        return result
    }

    /// Whether the worst case of drawing `feature` in a layer costing `cost` fits the budget;
    /// a feature that does not is dropped and counted.
    private static func takeRoom(for feature: VectorTileFeature, cost: DrawCost,
                                 budget: inout TileLayoutBudget) -> Bool {
        let vertices = feature.geometry.reduce(0) { $0 + $1.count }
        guard budget.take(cost.bytes(vertices: vertices, parts: feature.geometry.count)) else {
            budget.reductions.droppedFeatures += 1
            return false
        }
        return true
    }

    /// A polygon's rings made cheap enough to triangulate: thinned when they have more vertices
    /// than ``TileLayoutBudget/maximumPolygonVertices`` together, and the smallest holes dropped
    /// while holes times vertices exceed ``TileLayoutBudget/maximumHoleWork``.
    static func triangulable(_ polygon: [[TilePoint]], reductions: inout TileReductions) -> [[TilePoint]] {
        var rings = polygon
        var vertices = rings.reduce(0) { $0 + $1.count }
        if rings.count > 1 && (rings.count - 1) * vertices > TileLayoutBudget.maximumHoleWork {
            // Largest holes first; keep as many as the work allows.
            let holes = rings.dropFirst().sorted {
                abs(VectorTileFeature.signedAreaTimesTwo($0)) > abs(VectorTileFeature.signedAreaTimesTwo($1))
            }
            var kept = [rings[0]]
            var keptVertices = rings[0].count
            for hole in holes {
                let work = kept.count * (keptVertices + hole.count)
                guard work <= TileLayoutBudget.maximumHoleWork else { break }
                kept.append(hole)
                keptVertices += hole.count
            }
            reductions.droppedHoles += rings.count - kept.count
            rings = kept
            vertices = keptVertices
        }
        if vertices > TileLayoutBudget.maximumPolygonVertices {
            let share = Double(TileLayoutBudget.maximumPolygonVertices) / Double(vertices)
            rings = rings.map { ring in
                let keep = Swift.max(VertexPlan.fewestKeptVertices, Int(Double(ring.count) * share))
                guard keep < ring.count else { return ring }
                reductions.thinned(from: ring.count, to: keep)
                return ring.thinned(to: keep)
            }
        }
        return rings
    }

    // MARK: Fills

    private func fillBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], zoom: Double,
                            scale: Float, budget: inout TileLayoutBudget) -> FillBucket? {
        guard let paint = layer.paint.fill else { return nil }
        let perVertexColor = paint.fillColor.dependsOnFeature || paint.fillOpacity.dependsOnFeature
        let antialias = paint.fillAntialias.evaluate(zoom: zoom)
        var bucket = FillBucket()
        if perVertexColor { bucket.colors = [] }
        var chunker = Chunker(), outlineChunker = Chunker()
        let cost = DrawCost.of(.fill)
        for (cell, feature) in features where feature.type == .polygon {
            guard Self.takeRoom(for: feature, cost: cost, budget: &budget) else { continue }
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
                            scale: Float, budget: inout TileLayoutBudget) -> LineBucket? {
        guard let paint = layer.paint.line, let layout = layer.layout.line else { return nil }
        let perVertexColor = paint.lineColor.dependsOnFeature || paint.lineOpacity.dependsOnFeature
        let perVertexWidth = paint.lineWidth.dependsOnFeature
        var bucket = LineBucket()
        if perVertexColor { bucket.colors = [] }
        if perVertexWidth { bucket.widths = [] }
        var chunker = Chunker()
        let cost = DrawCost.of(.line)
        for (cell, feature) in features where feature.type == .lineString || feature.type == .polygon {
            guard Self.takeRoom(for: feature, cost: cost, budget: &budget) else { continue }
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
                                 scale: Float, budget: inout TileLayoutBudget) -> ExtrusionBucket? {
        guard let paint = layer.paint.fillExtrusion else { return nil }
        let perVertexColor = paint.fillExtrusionColor.dependsOnFeature
        var bucket = ExtrusionBucket()
        if perVertexColor { bucket.colors = [] }
        var chunker = Chunker()
        let cost = DrawCost.of(.fillExtrusion)
        for (cell, feature) in features where feature.type == .polygon {
            guard Self.takeRoom(for: feature, cost: cost, budget: &budget) else { continue }
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
                              zoom: Double, scale: Float, budget: inout TileLayoutBudget) -> SymbolBucket? {
        guard let layout = layer.layout.symbol, let paint = layer.paint.symbol else { return nil }
        let textField = layout.textField
        var bucket = SymbolBucket()
        let cost = DrawCost.of(.symbol)
        // Spacing is given in pixels at the tile's own zoom: 4096 units span 512 pixels.
        let unitsPerPixel = Float(4096) / Float(MapTransform.tileSize)
        var features = features
        if layout.symbolPlacement.evaluate(zoom: zoom) != .point {
            features = Self.mergedLines(features) { textField.evaluate(zoom: zoom, feature: $0) }
        }
        if let sortKey = layout.symbolSortKey {
            // MapLibre places a layer's symbols by ascending `symbol-sort-key`, so the first
            // wins a collision; feature order breaks ties. A NaN key counts as 0.
            features = features.enumerated().map { entry -> (key: Double, index: Int, feature: (Int, VectorTileFeature)) in
                let key = sortKey.evaluate(zoom: zoom, feature: entry.element.1)
                return (key.isNaN ? 0 : key, entry.offset, entry.element)
            }
            .sorted { ($0.key, $0.index) < ($1.key, $1.index) }
            .map(\.feature)
        }
        for (featureIndex, (_, feature)) in features.enumerated() {
            let text = textField.evaluate(zoom: zoom, feature: feature).trimmingCharacters(in: .whitespaces)
            let icon = iconCandidate(layout, paint, feature: feature, zoom: zoom)
            guard !text.isEmpty || icon != nil else { continue }
            let placement = layout.symbolPlacement.evaluate(zoom: zoom)
            let isLine = placement != .point && feature.type != .point
            // Where the label goes is found before its text is shaped, which is the costly part.
            var pointAnchor = SIMD2<Float>.zero
            if isLine {
                guard feature.geometry.contains(where: { $0.count >= 2 }) else { continue }
            } else {
                if feature.type == .point, let first = feature.geometry.first?.first {
                    pointAnchor = SIMD2(Float(first.x), Float(first.y)) * scale
                } else if let first = feature.geometry.first, !first.isEmpty {
                    pointAnchor = first.reduce(SIMD2<Float>.zero) { $0 + SIMD2(Float($1.x), Float($1.y)) }
                        / Float(first.count) * scale
                } else {
                    continue
                }
                guard Self.isInsideTile(pointAnchor) else { continue }
            }
            guard budget.labelCandidates < TileLayoutBudget.maximumLabelCandidates else {
                budget.reductions.droppedLabels += 1
                continue
            }
            // Text that follows its line is laid along it; text kept upright sits at the anchor.
            let followsLine = isLine && layout.textRotationAlignment.evaluate(zoom: zoom, feature: feature) != .viewport
            var shaped = ShapedText.empty
            // Point labels with variable anchors are shaped centred and moved to the anchor that fits.
            let variableAnchors = isLine ? nil : layout.textVariableAnchor.flatMap { property -> [TextAnchor]? in
                let anchors = property.evaluate(zoom: zoom, feature: feature).compactMap(TextAnchor.init(rawValue:))
                return anchors.isEmpty ? nil : anchors
            }
            if !text.isEmpty {
                let font = fonts.resolve(layout.textFont.evaluate(zoom: zoom, feature: feature))
                let maxWidth = followsLine ? nil : Float(layout.textMaxWidth.evaluate(zoom: zoom, feature: feature))
                let anchor = isLine || variableAnchors != nil ? .center : layout.textAnchor.evaluate(zoom: zoom, feature: feature)
                if let result = glyphs.shape(
                    text, font: font, size: GlyphAtlas.baseSize, maxWidth: maxWidth,
                    lineHeight: Float(layout.textLineHeight.evaluate(zoom: zoom)),
                    letterSpacing: Float(layout.textLetterSpacing.evaluate(zoom: zoom, feature: feature)),
                    anchor: anchor, justify: layout.textJustify.evaluate(zoom: zoom, feature: feature),
                    transform: layout.textTransform.evaluate(zoom: zoom, feature: feature)) {
                    shaped = result
                }
            }
            guard !shaped.glyphs.isEmpty || icon != nil else { continue }
            guard budget.takeLabelText(glyphs: shaped.glyphs.count) else {
                budget.reductions.droppedLabels += 1
                continue
            }
            bucket.textBytes += allocatedBytes(shaped.glyphs)
            let fill = paint.textColor.dependsOnFeature ? paint.textColor.evaluate(zoom: zoom, feature: feature) : nil
            let halo = paint.textHaloColor.dependsOnFeature ? paint.textHaloColor.evaluate(zoom: zoom, feature: feature) : nil
            let offset = layout.textOffset.evaluate(zoom: zoom, feature: feature)
            let textOffset = SIMD2(Float(offset.first ?? 0), Float(offset.dropFirst().first ?? 0))
            var hasher = Hasher()
            hasher.combine(layerIndex)
            hasher.combine(text)
            hasher.combine(icon?.image.x)
            hasher.combine(icon?.image.y)
            let textKey = hasher.finalize()
            if isLine {
                guard Self.takeRoom(for: feature, cost: cost, budget: &budget) else { continue }
                let spacing = max(Float(layout.symbolSpacing.evaluate(zoom: zoom)), 1) * unitsPerPixel
                // Overzoomed tiles are drawn up to this many levels above their own zoom.
                let levels = tile.z >= sourceMaxZoom ? Self.overzoomLevels : 0
                // The symbol's length along the line: an anchor must have half of it on either side.
                let textLength = shaped.width * Float(layout.textSize.evaluate(zoom: zoom, feature: feature)) / GlyphAtlas.baseSize
                let iconLength = icon.map {
                    $0.image.displaySize.x * ($0.size ?? Float(layout.iconSize.evaluate(zoom: zoom, feature: feature)))
                } ?? 0
                let halfLength = max(textLength, iconLength, 0) / 2 * unitsPerPixel
                parts: for (partIndex, part) in feature.geometry.enumerated() {
                    let path = part.map { SIMD2(Float($0.x), Float($0.y)) * scale }
                    let length = Self.length(of: path)
                    // Drawn `levels` above the tile's zoom, the symbol is that much shorter in tile units.
                    guard length > 0, length >= 2 * halfLength / Float(1 << levels) else { continue }
                    let anchors = Self.lineAnchors(length: length, halfLength: halfLength, spacing: spacing,
                                                   clearance: 2 * Self.labelEndClearance * unitsPerPixel, levels: levels,
                                                   continues: path.first.map { !Self.isInsideTile($0) || $0.x == 0 || $0.y == 0 } ?? false)
                    guard !anchors.isEmpty else { continue }
                    // Placing a label projects its whole path every frame, so a long path is cut
                    // into a stretch around each anchor; short ones, all real roads, are shared.
                    let isShared = path.count <= TileLayoutBudget.maximumLabelPathPoints
                    let sharedIndex = bucket.paths.count
                    if isShared { bucket.paths.append(path) }
                    var walker = PathWalker(path)
                    for (distance, level) in anchors {
                        // Anchors in the tile's buffer belong to the neighbouring tile.
                        guard Self.isInsideTile(walker.point(at: distance)) else { continue }
                        guard budget.takeLabelCandidate() else {
                            budget.reductions.droppedLabels += 1
                            break parts
                        }
                        // Pieces of several roads often start at one junction: the feature and
                        // part tell their symbols apart.
                        var keyHasher = hasher
                        keyHasher.combine(featureIndex)
                        keyHasher.combine(partIndex)
                        keyHasher.combine(Int(distance / 16))
                        var pathIndex = sharedIndex, anchorDistance = distance
                        if !isShared {
                            let stretch = walker.stretch(points: TileLayoutBudget.maximumLabelPathPoints)
                            pathIndex = bucket.paths.count
                            bucket.paths.append(stretch.path)
                            anchorDistance = distance - stretch.startDistance
                        }
                        bucket.labels.append(LabelCandidate(
                            anchor: .line(path: pathIndex, distance: anchorDistance, level: level), text: shaped,
                            textOffset: textOffset, icon: icon, key: keyHasher.finalize(), textKey: textKey,
                            fillColor: fill, haloColor: halo))
                    }
                }
            } else {
                guard budget.takeLabelCandidate() else {
                    budget.reductions.droppedLabels += 1
                    continue
                }
                hasher.combine(featureIndex)
                bucket.labels.append(LabelCandidate(anchor: .point(pointAnchor), text: shaped, textOffset: textOffset,
                                                    variableAnchors: variableAnchors,
                                                    radialOffset: Float(layout.textRadialOffset.evaluate(zoom: zoom, feature: feature)),
                                                    icon: icon, key: hasher.finalize(), textKey: textKey,
                                                    fillColor: fill, haloColor: halo))
            }
        }
        return bucket.labels.isEmpty ? nil : bucket
    }

    /// The feature's icon, when the layer has one and the sprite holds it. A name the sprite
    /// lacks is warned about once and the symbol goes on without an icon, as MapLibre does.
    private func iconCandidate(_ layout: SymbolLayout, _ paint: SymbolPaint, feature: VectorTileFeature,
                               zoom: Double) -> IconCandidate? {
        guard let iconImage = layout.iconImage else { return nil }
        let name = iconImage.evaluate(zoom: zoom, feature: feature, availableImages: sprites.names)
        guard !name.isEmpty else { return nil }
        guard let image = sprites.images[name] else {
            SpriteWarnings.missingImage(name)
            return nil
        }
        let offset = layout.iconOffset.evaluate(zoom: zoom, feature: feature)
        return IconCandidate(
            image: image, anchor: layout.iconAnchor.evaluate(zoom: zoom, feature: feature),
            offset: SIMD2(Float(offset.first ?? 0), Float(offset.dropFirst().first ?? 0)),
            rotate: Float(layout.iconRotate.evaluate(zoom: zoom, feature: feature)),
            size: layout.iconSize.dependsOnFeature ? Float(layout.iconSize.evaluate(zoom: zoom, feature: feature)) : nil,
            color: paint.iconColor.dependsOnFeature ? paint.iconColor.evaluate(zoom: zoom, feature: feature) : nil,
            haloColor: paint.iconHaloColor.dependsOnFeature
                ? paint.iconHaloColor.evaluate(zoom: zoom, feature: feature) : nil)
    }

    // MARK: Circles

    private func circleBucket(_ layer: StyleLayer, _ features: [(Int, VectorTileFeature)], zoom: Double, scale: Float,
                              budget: inout TileLayoutBudget) -> CircleBucket? {
        guard let paint = layer.paint.circle else { return nil }
        var bucket = CircleBucket()
        let colorsVary = paint.circleColor.dependsOnFeature || paint.circleOpacity.dependsOnFeature
        let strokesVary = paint.circleStrokeColor.dependsOnFeature || paint.circleStrokeOpacity.dependsOnFeature
        if colorsVary { bucket.colors = [] }
        if strokesVary { bucket.strokeColors = [] }
        if paint.circleRadius.dependsOnFeature { bucket.radii = [] }
        if paint.circleStrokeWidth.dependsOnFeature { bucket.strokeWidths = [] }
        let cost = DrawCost.of(.circle)
        for (_, feature) in features {
            guard Self.takeRoom(for: feature, cost: cost, budget: &budget) else { continue }
            for part in feature.geometry {
                for point in part {
                    let center = SIMD2(Float(point.x), Float(point.y)) * scale
                    // A point in the tile's buffer belongs to the neighbour, which draws it.
                    guard Self.isInsideTile(center) else { continue }
                    bucket.centers.append(center)
                    if colorsVary {
                        bucket.colors?.append(paint.circleColor.evaluate(zoom: zoom, feature: feature)
                            .packed(opacity: Float(paint.circleOpacity.evaluate(zoom: zoom, feature: feature))))
                    }
                    if strokesVary {
                        bucket.strokeColors?.append(paint.circleStrokeColor.evaluate(zoom: zoom, feature: feature)
                            .packed(opacity: Float(paint.circleStrokeOpacity.evaluate(zoom: zoom, feature: feature))))
                    }
                    bucket.radii?.append(Float(paint.circleRadius.evaluate(zoom: zoom, feature: feature)))
                    bucket.strokeWidths?.append(Float(paint.circleStrokeWidth.evaluate(zoom: zoom, feature: feature)))
                }
            }
        }
        return bucket.centers.isEmpty ? nil : bucket
    }

    /// Points at increasing distances along a path, each found from where the last one was, so
    /// that all anchors of a path cost one walk along it.
    struct PathWalker {
        private let path: [SIMD2<Float>]
        private var segmentEnd = 1
        private var segmentStart: Float = 0

        init(_ path: [SIMD2<Float>]) {
            self.path = path
        }

        /// At most `points` vertices of the path around the last point found, and the distance along
        /// the path at which they start.
        func stretch(points: Int) -> (path: [SIMD2<Float>], startDistance: Float) {
            let lower = max(0, min(segmentEnd - points / 2, path.count - points))
            let upper = min(path.count, lower + points)
            var start = segmentStart
            if lower == 0 {
                start = 0
            } else {
                for index in stride(from: min(segmentEnd, path.count) - 1, to: lower, by: -1) {
                    let d = path[index] - path[index - 1]
                    start -= (d * d).sum().squareRoot()
                }
            }
            return (Array(path[lower..<upper]), start)
        }

        /// The point `distance` tile units along the path (its end when the path is shorter);
        /// distances must not decrease from one call to the next.
        mutating func point(at distance: Float) -> SIMD2<Float> {
            while segmentEnd < path.count {
                let d = path[segmentEnd] - path[segmentEnd - 1]
                let length = (d * d).sum().squareRoot()
                let remaining = distance - segmentStart
                if remaining <= length, length > 0 { return path[segmentEnd - 1] + d * (remaining / length) }
                segmentStart += length
                segmentEnd += 1
            }
            return path.last ?? .zero
        }
    }

    /// How many zoom levels past its own an overzoomed tile gets extra line-label anchors for.
    static let overzoomLevels = 4

    /// Line features with the same label joined where one ends and the next begins, as
    /// MapLibre joins them before placing labels along lines: tiles cut a street into many short
    /// pieces at every junction, none long enough for its name. Features of other kinds, of
    /// several lines or without a label pass through; a joined feature keeps the first piece's
    /// attributes and place in the list.
    static func mergedLines(_ features: [(Int, VectorTileFeature)],
                            label: (VectorTileFeature) -> String) -> [(Int, VectorTileFeature)] {
        struct End: Hashable {
            var label: String
            var point: TilePoint
        }
        var merged: [(Int, VectorTileFeature)?] = []
        // Where a joined line starts and where it ends, by label: its index in `merged`.
        var byStart: [End: Int] = [:], byEnd: [End: Int] = [:]
        for (cell, feature) in features {
            guard feature.type == .lineString, feature.geometry.count == 1, let line = feature.geometry.first,
                  let first = line.first, let last = line.last, line.count >= 2 else {
                merged.append((cell, feature))
                continue
            }
            let label = label(feature)
            guard !label.isEmpty else {
                merged.append((cell, feature))
                continue
            }
            let start = End(label: label, point: first), end = End(label: label, point: last)
            let before = byEnd[start], after = byStart[end]
            switch (before, after) {
            case let (before?, after?) where before != after:
                // Joins two lines into one: the one before, this piece, the one after.
                guard let afterLine = merged[after]?.1.geometry.first else { continue }
                merged[before]?.1.geometry[0] += line.dropFirst() + afterLine.dropFirst()
                merged[after] = nil
                byEnd[start] = nil
                byStart[end] = nil
                if let newEnd = afterLine.last { byEnd[End(label: label, point: newEnd)] = before }
            case let (before?, _):
                merged[before]?.1.geometry[0] += line.dropFirst()
                byEnd[start] = nil
                byEnd[end] = before
            case let (_, after?):
                if let afterLine = merged[after]?.1.geometry.first {
                    merged[after]?.1.geometry[0] = line + afterLine.dropFirst()
                }
                byStart[end] = nil
                byStart[start] = after
            default:
                merged.append((cell, feature))
                byStart[start] = merged.count - 1
                byEnd[end] = merged.count - 1
            }
        }
        return merged.compactMap { $0 }
    }

    /// Where symbols go along a line of `length` tile units, and the overzoom level from which
    /// each is shown, as MapLibre places them at each zoom: the first just far enough along for
    /// the symbol (`halfLength` either side) and `clearance` to fit, or half a spacing in for a
    /// line that `continues` over the tile's edge, keeping its neighbour's rhythm; then one every
    /// `spacing`. Each finer level fills the midpoints of the levels before, so the anchors
    /// shown at any zoom are evenly spaced and none repeats; the symbol shrinks by half in tile
    /// units with each level, so a line too short for it at one level may take it at a finer
    /// one, at its middle when the even rhythm finds no room on it. Sorted by distance.
    static func lineAnchors(length: Float, halfLength: Float, spacing: Float, clearance: Float, levels: Int,
                            continues: Bool) -> [(distance: Float, level: Int)] {
        var anchors: [(distance: Float, level: Int)] = []
        guard length > 0, spacing > 0, halfLength >= 0, clearance >= 0 else { return anchors }
        let first = continues ? spacing / 2 : (halfLength + clearance).truncatingRemainder(dividingBy: spacing)
        for level in 0...max(levels, 0) {
            let scale = Float(1 << level)
            let half = halfLength / scale
            let step = spacing / scale
            var distance = level == 0 ? first : first + step
            var placed = false
            while distance + half <= length {
                if distance >= half {
                    anchors.append((distance, level))
                    placed = true
                }
                distance += level == 0 ? step : 2 * step
            }
            if !placed && anchors.isEmpty && !continues && length >= 2 * half {
                anchors.append((length / 2, level))
            }
        }
        // In order along the line, for a walker that only goes forward.
        anchors.sort { $0.distance < $1.distance }
        return anchors
    }

    /// Pixels MapLibre keeps between a line's start and the first symbol on it, on either side
    /// of the symbol's half length (a tenth of its 24 px glyph size).
    static let labelEndClearance: Float = 2.4

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

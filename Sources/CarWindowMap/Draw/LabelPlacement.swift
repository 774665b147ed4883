import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowSystemSupport

/// One corner of a glyph quad, in screen pixels; 32 bytes.
struct TextVertex {
    var position: SIMD2<Float>
    var texture: SIMD2<Float>
    var fill: PackedColor
    var halo: PackedColor
    /// x: screen pixels per atlas pixel; y: halo width in screen pixels.
    var parameters: SIMD2<Float>
}

/// Boxes already taken on the screen, bucketed in a coarse grid so a query looks at few boxes.
struct CollisionGrid {
    private static let cellSize: Float = 64
    private var columns = 0, rows = 0
    private var cells: [[Int32]] = []
    private var boxes: [SIMD4<Float>] = [] // minX, minY, maxX, maxY

    /// Empties the grid for a viewport, keeping every array's storage.
    mutating func reset(width: Int, height: Int) {
        let columns = Int((Float(width) / Self.cellSize).rounded(.up)) + 1
        let rows = Int((Float(height) / Self.cellSize).rounded(.up)) + 1
        if columns != self.columns || rows != self.rows {
            self.columns = columns
            self.rows = rows
            cells = Array(repeating: [], count: columns * rows)
        } else {
            for i in cells.indices { cells[i].removeAll(keepingCapacity: true) }
        }
        boxes.removeAll(keepingCapacity: true)
    }

    private func cellRange(_ box: SIMD4<Float>) -> (ClosedRange<Int>, ClosedRange<Int>)? {
        // A style may size labels beyond any screen (text-size 1e30): clamp while still a float,
        // since converting a float past Int's range traps. NaN boxes fail the comparisons.
        guard columns > 0, rows > 0, box.z >= 0, box.w >= 0, box.x <= box.z, box.y <= box.w,
              box.x < Float(columns) * Self.cellSize, box.y < Float(rows) * Self.cellSize else { return nil }
        func cell(_ value: Float, _ count: Int) -> Int {
            Int(min(max(value / Self.cellSize, 0), Float(count - 1)))
        }
        let x0 = cell(box.x, columns), y0 = cell(box.y, rows)
        let x1 = cell(box.z, columns), y1 = cell(box.w, rows)
        guard x0 <= x1, y0 <= y1 else { return nil }
        return (x0...x1, y0...y1)
    }

    func collides(_ box: SIMD4<Float>) -> Bool {
        guard let (xs, ys) = cellRange(box) else { return false }
        for y in ys {
            for x in xs {
                for index in cells[y * columns + x] {
                    let other = boxes[Int(index)]
                    if box.x < other.z && other.x < box.z && box.y < other.w && other.y < box.w { return true }
                }
            }
        }
        return false
    }

    mutating func insert(_ box: SIMD4<Float>) {
        guard let (xs, ys) = cellRange(box) else { return }
        let index = Int32(boxes.count)
        boxes.append(box)
        for y in ys { for x in xs { cells[y * columns + x].append(index) } }
    }
}

/// The style values a symbol layer has at the current zoom.
struct SymbolLayerPaint {
    var size: Float
    var fill: Color
    var halo: Color
    var haloWidth: Float
    var opacity: Float
    var maxAngle: Float
    var padding: Float
    var allowOverlap: Bool
    var isLine: Bool
    /// Screen pixels that must separate two labels with the same text.
    var repeatDistance: Float
}

/// Places labels on the screen each frame: projects anchors, lays line labels along their
/// road (upright, refused on sharp bends), and refuses any label that would overlap one placed
/// before it. Labels placed in the previous frame go first, so a moving camera does not make
/// labels flicker between neighbours.
///
/// Its arrays keep their storage from frame to frame: placement allocates nothing once warm.
struct LabelPlacer {
    private(set) var vertices: [TextVertex] = []
    private(set) var indices: [UInt32] = []
    private var grid = CollisionGrid()
    private var placedBefore: Set<Int> = []
    private var placedNow: Set<Int> = []
    private var glyphBoxes: [SIMD4<Float>] = []
    private var glyphPlacements: [(position: SIMD2<Float>, angle: Float)] = []
    private var screenPath: [SIMD2<Float>] = []
    private var screenScales: [Float] = []
    /// Where labels were placed this frame, by text, to keep repeats of a name apart.
    private var placedTexts: [(textKey: Int, position: SIMD2<Float>)] = []

    /// Labels placed since ``begin(width:height:)``.
    var placedCount: Int { placedNow.count }

    mutating func begin(width: Int, height: Int) {
        vertices.removeAll(keepingCapacity: true)
        indices.removeAll(keepingCapacity: true)
        grid.reset(width: width, height: height)
        swap(&placedBefore, &placedNow)
        placedNow.removeAll(keepingCapacity: true)
        placedTexts.removeAll(keepingCapacity: true)
    }

    private func repeatsNearby(_ textKey: Int, at position: SIMD2<Float>, within distance: Float) -> Bool {
        let limit = distance * distance
        for placed in placedTexts where placed.textKey == textKey {
            let d = placed.position - position
            if (d * d).sum() < limit { return true }
        }
        return false
    }

    /// Reserves a screen area no label may cover (controls, attribution).
    mutating func block(_ rect: ScreenRect) {
        grid.insert(SIMD4(Float(rect.x), Float(rect.y), Float(rect.x + rect.width), Float(rect.y + rect.height)))
    }

    /// Places one symbol layer of one tile; `project` maps tile units to screen pixels (x, y)
    /// and the perspective scale there (z: 1 at the centre of the view, smaller farther away).
    mutating func place(_ bucket: SymbolBucket, paint: SymbolLayerPaint, zoomAboveTile: Double, width: Int,
                        height: Int, project: (SIMD2<Float>) -> SIMD3<Float>?) {
        for pass in 0..<2 {
            for label in bucket.labels where placedBefore.contains(label.key) == (pass == 0) {
                guard !placedNow.contains(label.key) else { continue }
                let placed: Bool
                switch label.anchor {
                case .point(let point):
                    placed = placePoint(label, at: point, paint: paint, width: width, height: height, project: project)
                case .line(let path, let distance, let level):
                    guard Double(level) <= zoomAboveTile else { continue }
                    placed = placeAlongLine(label, path: bucket.paths[path], distance: distance, paint: paint,
                                            width: width, height: height, project: project)
                }
                if placed { placedNow.insert(label.key) }
            }
        }
    }

    /// Adds screen-space text (the attribution) without collision checks.
    mutating func addScreenText(_ text: ShapedText, at anchor: SIMD2<Float>, size: Float, fill: Color, halo: Color,
                                haloWidth: Float) {
        let scale = size / GlyphAtlas.baseSize
        for glyph in text.glyphs {
            emitQuad(glyph, origin: anchor + glyph.offset * scale, scale: scale, angle: 0, pivot: .zero,
                     fill: fill.packed(), halo: halo.packed(), haloWidth: haloWidth)
        }
    }

    // MARK: Points

    private mutating func placePoint(_ label: LabelCandidate, at point: SIMD2<Float>, paint: SymbolLayerPaint,
                                     width: Int, height: Int, project: (SIMD2<Float>) -> SIMD3<Float>?) -> Bool {
        guard let projected = project(point) else { return false }
        let anchor = SIMD2(projected.x, projected.y)
        if repeatsNearby(label.textKey, at: anchor, within: paint.repeatDistance) { return false }
        let scale = paint.size / GlyphAtlas.baseSize
        let origin = anchor + label.text.origin * scale
        let box = SIMD4(origin.x - paint.padding, origin.y - paint.padding,
                        origin.x + label.text.width * scale + paint.padding,
                        origin.y + label.text.height * scale + paint.padding)
        // Labels must sit wholly on the screen: a label cut by the edge reads badly and would
        // pop when the tile next door loads.
        guard box.x >= 0, box.y >= 0, box.z <= Float(width), box.w <= Float(height) else { return false }
        if !paint.allowOverlap && grid.collides(box) { return false }
        grid.insert(box)
        placedTexts.append((label.textKey, anchor))
        let fill = (label.fillColor ?? paint.fill).packed(opacity: paint.opacity)
        let halo = (label.haloColor ?? paint.halo).packed(opacity: paint.opacity)
        for glyph in label.text.glyphs {
            emitQuad(glyph, origin: anchor + glyph.offset * scale, scale: scale, angle: 0, pivot: .zero,
                     fill: fill, halo: halo, haloWidth: paint.haloWidth)
        }
        return true
    }

    // MARK: Lines

    private mutating func placeAlongLine(_ label: LabelCandidate, path: [SIMD2<Float>], distance: Float,
                                         paint: SymbolLayerPaint, width: Int, height: Int,
                                         project: (SIMD2<Float>) -> SIMD3<Float>?) -> Bool {
        // Project the path once; labels are short and so are the paths of one tile's roads.
        screenPath.removeAll(keepingCapacity: true)
        screenScales.removeAll(keepingCapacity: true)
        var anchorIndex = 0, anchorT: Float = 0, walked: Float = 0
        for i in path.indices {
            guard let point = project(path[i]) else { return false }
            screenPath.append(SIMD2(point.x, point.y))
            screenScales.append(point.z)
            if i > 0 {
                let segment = (path[i] - path[i - 1])
                let length = (segment * segment).sum().squareRoot()
                if walked <= distance && distance <= walked + length && length > 0 {
                    anchorIndex = i - 1
                    anchorT = (distance - walked) / length
                }
                walked += length
            }
        }
        guard screenPath.count >= 2 else { return false }
        let anchor = screenPath[anchorIndex] + (screenPath[anchorIndex + 1] - screenPath[anchorIndex]) * anchorT
        guard anchor.x >= 0, anchor.y >= 0, anchor.x <= Float(width), anchor.y <= Float(height) else { return false }
        if repeatsNearby(label.textKey, at: anchor, within: paint.repeatDistance) { return false }
        // Line labels lie on the map, as MapLibre's pitch-aligned ones do: smaller farther away.
        let perspective = min(max(screenScales[anchorIndex], 0.5), 1.5)
        let scale = paint.size / GlyphAtlas.baseSize * perspective
        let halfLength = label.text.width * scale / 2

        // Read left to right: if the line runs leftwards at the label, walk it the other way.
        guard let start = pointAlong(from: anchorIndex, t: anchorT, offset: -halfLength),
              let end = pointAlong(from: anchorIndex, t: anchorT, offset: halfLength) else { return false }
        let flip: Float = end.position.x < start.position.x ? -1 : 1

        glyphBoxes.removeAll(keepingCapacity: true)
        glyphPlacements.removeAll(keepingCapacity: true)
        let maxAngle = paint.maxAngle * .pi / 180
        var previousAngle: Float? = nil
        for glyph in label.text.glyphs {
            let along = (glyph.baselineCenterX * scale) * flip
            guard let placement = pointAlong(from: anchorIndex, t: anchorT, offset: along) else { return false }
            var angle = placement.angle
            if flip < 0 { angle += .pi }
            if let previousAngle {
                var turn = abs(angle - previousAngle)
                if turn > .pi { turn = 2 * .pi - turn }
                if turn > maxAngle { return false }
            }
            previousAngle = angle
            // The quad carries the distance field's spread around the ink; collide on the ink.
            let ink = max(glyph.size.x, glyph.size.y) - 2 * GlyphAtlas.spread
            let reach = max(ink, 4) * scale * 0.5 + paint.padding / 2
            let p = placement.position
            guard p.x - reach >= 0, p.y - reach >= 0, p.x + reach <= Float(width), p.y + reach <= Float(height) else {
                return false
            }
            let box = SIMD4(p.x - reach, p.y - reach, p.x + reach, p.y + reach)
            if !paint.allowOverlap && grid.collides(box) { return false }
            glyphBoxes.append(box)
            glyphPlacements.append((p, angle))
        }
        for box in glyphBoxes { grid.insert(box) }
        placedTexts.append((label.textKey, anchor))
        let fill = (label.fillColor ?? paint.fill).packed(opacity: paint.opacity)
        let halo = (label.haloColor ?? paint.halo).packed(opacity: paint.opacity)
        for (glyph, placement) in zip(label.text.glyphs, glyphPlacements) {
            // The quad is laid out around the glyph's baseline centre, then turned with the road.
            let pivot = SIMD2(glyph.baselineCenterX, 0) * scale
            emitQuad(glyph, origin: placement.position + glyph.offset * scale - pivot, scale: scale,
                     angle: placement.angle, pivot: placement.position,
                     fill: fill, halo: halo, haloWidth: paint.haloWidth)
        }
        return true
    }

    /// The point `offset` pixels along the projected path from the anchor, and the path's angle there.
    private func pointAlong(from index: Int, t: Float, offset: Float) -> (position: SIMD2<Float>, angle: Float)? {
        var i = index
        var position = screenPath[i] + (screenPath[i + 1] - screenPath[i]) * t
        var remaining = abs(offset)
        if offset >= 0 {
            while true {
                let next = screenPath[i + 1]
                let d = next - position
                let length = (d * d).sum().squareRoot()
                if remaining <= length {
                    let direction = length > 0 ? d / length : SIMD2(1, 0)
                    return (position + direction * remaining, atan2(direction.y, direction.x))
                }
                remaining -= length
                position = next
                i += 1
                if i + 1 >= screenPath.count { return nil }
            }
        } else {
            while true {
                let previous = screenPath[i]
                let d = position - previous
                let length = (d * d).sum().squareRoot()
                if remaining <= length {
                    let direction = length > 0 ? d / length : SIMD2(1, 0)
                    return (position - direction * remaining, atan2(direction.y, direction.x))
                }
                remaining -= length
                position = previous
                i -= 1
                if i < 0 { return nil }
            }
        }
    }

    // MARK: Quads

    private mutating func emitQuad(_ glyph: PositionedGlyph, origin: SIMD2<Float>, scale: Float, angle: Float,
                                   pivot: SIMD2<Float>, fill: PackedColor, halo: PackedColor, haloWidth: Float) {
        let size = glyph.size * scale
        let rect = glyph.atlasRect
        let t0 = SIMD2(Float(rect.x), Float(rect.y))
        let t1 = t0 + SIMD2(Float(rect.width), Float(rect.height))
        let cosine = cos(angle), sine = sin(angle)
        func turn(_ p: SIMD2<Float>) -> SIMD2<Float> {
            guard angle != 0 else { return p }
            let d = p - pivot
            return pivot + SIMD2(d.x * cosine - d.y * sine, d.x * sine + d.y * cosine)
        }
        let parameters = SIMD2(scale, haloWidth)
        let base = UInt32(vertices.count)
        vertices.append(TextVertex(position: turn(origin), texture: t0, fill: fill, halo: halo, parameters: parameters))
        vertices.append(TextVertex(position: turn(origin + SIMD2(size.x, 0)), texture: SIMD2(t1.x, t0.y), fill: fill,
                                   halo: halo, parameters: parameters))
        vertices.append(TextVertex(position: turn(origin + size), texture: t1, fill: fill, halo: halo,
                                   parameters: parameters))
        vertices.append(TextVertex(position: turn(origin + SIMD2(0, size.y)), texture: SIMD2(t0.x, t1.y), fill: fill,
                                   halo: halo, parameters: parameters))
        for corner: UInt32 in [0, 1, 2, 0, 2, 3] { indices.append(base + corner) }
    }
}

internal import CGLES
import Foundation
import CarWindowStyle

/// One corner of a glyph quad, in screen pixels; 32 bytes.
struct TextVertex {
    var position: SIMD2<Float>
    var texture: SIMD2<Float>
    var fill: PackedColor
    var halo: PackedColor
    /// x: screen pixels per atlas pixel; y: halo width in screen pixels.
    var parameters: SIMD2<Float>
}

/// One corner of an icon quad: the layout of a glyph quad's corner, read differently. `texture`
/// is in sprite sheet pixels; `fill` is an SDF icon's colour, or the opacity in every channel
/// (premultiplied white) for a picture; `parameters.x` is 1 for an SDF icon and 0 for a picture,
/// `parameters.y` how far below the outline its halo reaches, in distance-field units.
typealias IconVertex = TextVertex

extension GLVertexArray {
    /// Describes screen quads of ``TextVertex`` (glyphs and icons) in the bound array buffer.
    func describeScreenQuads() {
        let stride = MemoryLayout<TextVertex>.stride
        attribute(AttributeSlot.position, components: 2, stride: stride,
                  offset: MemoryLayout<TextVertex>.offset(of: \.position) ?? 0)
        attribute(AttributeSlot.textCoordinate, components: 2, stride: stride,
                  offset: MemoryLayout<TextVertex>.offset(of: \.texture) ?? 0)
        attribute(AttributeSlot.textFill, components: 4, type: GLenum(GL_UNSIGNED_BYTE), normalized: true,
                  stride: stride, offset: MemoryLayout<TextVertex>.offset(of: \.fill) ?? 0)
        attribute(AttributeSlot.textHalo, components: 4, type: GLenum(GL_UNSIGNED_BYTE), normalized: true,
                  stride: stride, offset: MemoryLayout<TextVertex>.offset(of: \.halo) ?? 0)
        attribute(AttributeSlot.textParameters, components: 2, stride: stride,
                  offset: MemoryLayout<TextVertex>.offset(of: \.parameters) ?? 0)
    }
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
    var textOptional = false
    var textIgnorePlacement = false
    /// Whether line labels bend along their line (`text-rotation-alignment` other than viewport).
    var textFollowsLine = true
    var icon = IconLayerPaint()
}

/// The icon values a symbol layer has at the current zoom.
struct IconLayerPaint {
    var size: Float = 1
    var opacity: Float = 1
    var color = Color.black
    var halo = Color.transparent
    var haloWidth: Float = 0
    var padding: Float = 2
    var allowOverlap = false
    var ignorePlacement = false
    var optional = false
    /// Whether the icon turns with the map (`icon-rotation-alignment` map, or auto along a line):
    /// with its line when placed on one, else with the map's bearing.
    var followsLine = true
    /// The map's bearing in radians, which map-aligned point icons turn against.
    var mapBearing: Float = 0
    var textFit = IconTextFit.none
    /// Top, right, bottom, left.
    var textFitPadding = SIMD4<Float>(0, 0, 0, 0)
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
    private(set) var iconVertices: [IconVertex] = []
    private(set) var iconIndices: [UInt32] = []
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
        iconVertices.removeAll(keepingCapacity: true)
        iconIndices.removeAll(keepingCapacity: true)
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
                    guard let projected = project(point) else { continue }
                    placed = placeSymbol(label, at: SIMD2(projected.x, projected.y), lineAngle: nil,
                                         perspective: Self.perspectiveScale(projected.z), paint: paint,
                                         width: width, height: height)
                case .line(let path, let distance, let level):
                    guard Double(level) <= zoomAboveTile else { continue }
                    if label.hasText && paint.textFollowsLine && paint.opacity > 0 && paint.size > 0 {
                        placed = placeAlongLine(label, path: bucket.paths[path], distance: distance, paint: paint,
                                                width: width, height: height, project: project)
                    } else {
                        // Upright text, or an icon alone (a one-way arrow), at the line's anchor.
                        guard let (anchorIndex, anchorT) = projectPath(bucket.paths[path], anchorAt: distance,
                                                                        project: project),
                              let along = pointAlong(from: anchorIndex, t: anchorT, offset: 0) else { continue }
                        placed = placeSymbol(label, at: along.position, lineAngle: along.angle,
                                             perspective: Self.perspectiveScale(screenScales[anchorIndex]), paint: paint,
                                             width: width, height: height)
                    }
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

    /// Places a symbol (text, icon or both) upright at a screen point: text and icon are one
    /// symbol for collision, as MapLibre places them, so a shield never shows without its number
    /// unless the style makes one of them optional. `lineAngle` is the line's direction at the
    /// anchor for line placement, which icons aligned with the map turn by.
    private mutating func placeSymbol(_ label: LabelCandidate, at anchor: SIMD2<Float>, lineAngle: Float?,
                                      perspective: Float, paint: SymbolLayerPaint, width: Int, height: Int) -> Bool {
        // Only text repeats are kept apart, as in MapLibre: one-way arrows and other icons
        // without text follow their spacing alone.
        if label.hasText && repeatsNearby(label.textKey, at: anchor, within: paint.repeatDistance) { return false }
        guard let anchors = label.variableAnchors, label.hasText else {
            return placeSymbol(label, at: anchor, textAnchor: nil, lineAngle: lineAngle, perspective: perspective,
                               paint: paint, width: width, height: height)
        }
        // Variable anchors: the first that fits wins, as MapLibre tries them.
        for textAnchor in anchors where placeSymbol(label, at: anchor, textAnchor: textAnchor, lineAngle: lineAngle,
                                                     perspective: perspective, paint: paint, width: width, height: height) {
            return true
        }
        return false
    }

    /// The text box of a label shaped centred, moved so that `textAnchor` sits on the point and
    /// pushed away from it by the radial offset (or `text-offset`'s part in that direction).
    static func variableTextOrigin(_ label: LabelCandidate, textAnchor: TextAnchor) -> SIMD2<Float> {
        let size = SIMD2(label.text.width, label.text.height)
        let moved = label.text.origin + anchorShift(textAnchor, size: size) - anchorShift(.center, size: size)
        let direction = SIMD2(0.5 - textAnchor.horizontalFraction, 0.5 - textAnchor.verticalFraction) * 2
        let isCorner = direction.x != 0 && direction.y != 0
        let offset: SIMD2<Float>
        if label.radialOffset != 0 {
            // Corners lie on the circle of the radial offset, as MapLibre puts them.
            offset = direction * label.radialOffset * (isCorner ? 1 / Float(2).squareRoot() : 1)
        } else {
            offset = direction * SIMD2(abs(label.textOffset.x), abs(label.textOffset.y))
        }
        return moved + offset * GlyphAtlas.baseSize
    }

    /// Places a symbol with its text at `textAnchor` (variable anchors), or as shaped (nil).
    private mutating func placeSymbol(_ label: LabelCandidate, at anchor: SIMD2<Float>, textAnchor: TextAnchor?,
                                      lineAngle: Float?, perspective: Float, paint: SymbolLayerPaint,
                                      width: Int, height: Int) -> Bool {
        let scale = paint.size * perspective / GlyphAtlas.baseSize
        var textBox: SIMD4<Float>?
        if label.hasText && paint.size > 0 && paint.opacity > 0 {
            let origin = textAnchor.map { anchor + Self.variableTextOrigin(label, textAnchor: $0) * scale }
                ?? anchor + label.text.origin * scale + label.textOffset * paint.size * perspective
            textBox = SIMD4(origin.x, origin.y, origin.x + label.text.width * scale,
                            origin.y + label.text.height * scale)
        }
        var icon: IconQuad?
        if let candidate = label.icon, paint.icon.opacity > 0 {
            let aligned = paint.icon.followsLine ? lineAngle ?? -paint.icon.mapBearing : 0
            let angle = aligned + candidate.rotate * .pi / 180
            var iconPaint = paint.icon
            iconPaint.size *= perspective
            var scaled = candidate
            scaled.size = candidate.size.map { $0 * perspective }
            icon = iconQuad(scaled, at: anchor, angle: angle, paint: iconPaint, fitting: textBox)
        }
        guard textBox != nil || icon != nil else { return false }
        let paddedText = textBox.map { $0 + SIMD4(-paint.padding, -paint.padding, paint.padding, paint.padding) }
        let paddedIcon = icon.map {
            $0.box + SIMD4(-paint.icon.padding, -paint.icon.padding, paint.icon.padding, paint.icon.padding)
        }
        // Symbols must sit wholly on the screen: one cut by the edge reads badly and would pop
        // when the tile next door loads.
        func isOnScreen(_ box: SIMD4<Float>) -> Bool {
            box.x >= 0 && box.y >= 0 && box.z <= Float(width) && box.w <= Float(height)
        }
        var showsText = paddedText.map { isOnScreen($0) && (paint.allowOverlap || !grid.collides($0)) } ?? false
        var showsIcon = paddedIcon.map { isOnScreen($0) && (paint.icon.allowOverlap || !grid.collides($0)) } ?? false
        if textBox != nil && icon != nil {
            // Either part may go alone only when the style says the other is optional.
            if !showsText && !paint.textOptional { showsIcon = false }
            if !showsIcon && !paint.icon.optional { showsText = false }
        }
        guard showsText || showsIcon else { return false }
        if showsText, let paddedText, !paint.textIgnorePlacement { grid.insert(paddedText) }
        if showsIcon, let paddedIcon, !paint.icon.ignorePlacement { grid.insert(paddedIcon) }
        placedTexts.append((label.textKey, anchor))
        if showsIcon, let icon, let candidate = label.icon { emitIcon(icon, candidate, paint: paint.icon) }
        if showsText, let textBox {
            let fill = (label.fillColor ?? paint.fill).packed(opacity: paint.opacity)
            let halo = (label.haloColor ?? paint.halo).packed(opacity: paint.opacity)
            let origin = SIMD2(textBox.x, textBox.y) - label.text.origin * scale
            for glyph in label.text.glyphs {
                emitQuad(glyph, origin: origin + glyph.offset * scale, scale: scale, angle: 0, pivot: .zero,
                         fill: fill, halo: halo, haloWidth: paint.haloWidth)
            }
        }
        return true
    }

    // MARK: Icons

    /// An icon's corners on the screen (top-left, top-right, bottom-right, bottom-left of the
    /// image), their bounding box, and screen pixels per sprite pixel.
    struct IconQuad {
        var corners: (SIMD2<Float>, SIMD2<Float>, SIMD2<Float>, SIMD2<Float>)
        var box: SIMD4<Float>
        var scale: Float
    }

    /// Where an icon goes: its natural size times `icon-size`, placed by `icon-anchor` and
    /// `icon-offset`, or stretched around `fitting` (the text's box) by `icon-text-fit`; then
    /// turned by `angle` (radians, clockwise on the screen) about the anchor.
    func iconQuad(_ icon: IconCandidate, at anchor: SIMD2<Float>, angle: Float, paint: IconLayerPaint,
                  fitting textBox: SIMD4<Float>?) -> IconQuad? {
        let size = icon.size ?? paint.size
        guard size > 0, size.isFinite else { return nil }
        let natural = icon.image.displaySize * size
        var low: SIMD2<Float>, high: SIMD2<Float>
        if paint.textFit != .none, let text = textBox {
            let p = paint.textFitPadding
            let centre = (SIMD2(text.x, text.y) + SIMD2(text.z, text.w)) / 2 - anchor
            low = centre - natural / 2
            high = centre + natural / 2
            if paint.textFit == .width || paint.textFit == .both {
                low.x = text.x - anchor.x - p.w
                high.x = text.z - anchor.x + p.y
            }
            if paint.textFit == .height || paint.textFit == .both {
                low.y = text.y - anchor.y - p.x
                high.y = text.w - anchor.y + p.z
            }
            // The sprite's content box, not the whole image, goes around the text: the rest of
            // the image (a shield's rim, a distance field's margin) grows outside it.
            if let content = icon.image.content {
                let imageSize = SIMD2(Float(icon.image.width), Float(icon.image.height))
                let contentLow = SIMD2(content.x, content.y), contentHigh = SIMD2(content.z, content.w)
                let perPixel = (high - low) / (contentHigh - contentLow)
                let fitsX = paint.textFit == .width || paint.textFit == .both
                let fitsY = paint.textFit == .height || paint.textFit == .both
                let stretch = SIMD2(fitsX ? perPixel.x : natural.x / imageSize.x, fitsY ? perPixel.y : natural.y / imageSize.y)
                if fitsX {
                    low.x -= contentLow.x * stretch.x
                    high.x += (imageSize.x - contentHigh.x) * stretch.x
                }
                if fitsY {
                    low.y -= contentLow.y * stretch.y
                    high.y += (imageSize.y - contentHigh.y) * stretch.y
                }
            }
        } else {
            low = Self.anchorShift(icon.anchor, size: natural) + icon.offset * size
            high = low + natural
        }
        let cosine = cos(angle), sine = sin(angle)
        func turn(_ p: SIMD2<Float>) -> SIMD2<Float> {
            anchor + (angle == 0 ? p : SIMD2(p.x * cosine - p.y * sine, p.x * sine + p.y * cosine))
        }
        let corners = (turn(low), turn(SIMD2(high.x, low.y)), turn(high), turn(SIMD2(low.x, high.y)))
        let lowest = pointwiseMin(pointwiseMin(corners.0, corners.1), pointwiseMin(corners.2, corners.3))
        let highest = pointwiseMax(pointwiseMax(corners.0, corners.1), pointwiseMax(corners.2, corners.3))
        let box = SIMD4(lowest.x, lowest.y, highest.x, highest.y)
        guard box.x.isFinite, box.y.isFinite, box.z.isFinite, box.w.isFinite else { return nil }
        let drawn = high - low
        let scale = min(drawn.x / max(icon.image.displaySize.x, 1e-3), drawn.y / max(icon.image.displaySize.y, 1e-3))
        return IconQuad(corners: corners, box: box, scale: scale)
    }

    /// The top-left corner of a box of `size` relative to its anchor point.
    static func anchorShift(_ anchor: TextAnchor, size: SIMD2<Float>) -> SIMD2<Float> {
        switch anchor {
        case .center: -size / 2
        case .left: SIMD2(0, -size.y / 2)
        case .right: SIMD2(-size.x, -size.y / 2)
        case .top: SIMD2(-size.x / 2, 0)
        case .bottom: SIMD2(-size.x / 2, -size.y)
        case .topLeft: .zero
        case .topRight: SIMD2(-size.x, 0)
        case .bottomLeft: SIMD2(0, -size.y)
        case .bottomRight: -size
        }
    }

    private mutating func emitIcon(_ quad: IconQuad, _ icon: IconCandidate, paint: IconLayerPaint) {
        let image = icon.image
        let fill: PackedColor, halo: PackedColor
        var parameters = SIMD2<Float>(0, 0)
        if image.isSDF {
            fill = (icon.color ?? paint.color).packed(opacity: paint.opacity)
            halo = (icon.haloColor ?? paint.halo).packed(opacity: paint.opacity)
            // Sprite distance fields change by 1/8 per sprite pixel (MapLibre's SDF icons).
            parameters = SIMD2(1, paint.haloWidth / (8 * max(quad.scale, 1e-3)))
        } else {
            fill = Color.white.packed(opacity: paint.opacity)
            halo = 0
        }
        let t0 = SIMD2(Float(image.x), Float(image.y))
        let t1 = t0 + SIMD2(Float(image.width), Float(image.height))
        let base = UInt32(iconVertices.count)
        iconVertices.append(IconVertex(position: quad.corners.0, texture: t0, fill: fill, halo: halo, parameters: parameters))
        iconVertices.append(IconVertex(position: quad.corners.1, texture: SIMD2(t1.x, t0.y), fill: fill, halo: halo,
                                       parameters: parameters))
        iconVertices.append(IconVertex(position: quad.corners.2, texture: t1, fill: fill, halo: halo, parameters: parameters))
        iconVertices.append(IconVertex(position: quad.corners.3, texture: SIMD2(t0.x, t1.y), fill: fill, halo: halo,
                                       parameters: parameters))
        for corner: UInt32 in [0, 1, 2, 0, 2, 3] { iconIndices.append(base + corner) }
    }

    // MARK: Lines

    private mutating func placeAlongLine(_ label: LabelCandidate, path: [SIMD2<Float>], distance: Float,
                                         paint: SymbolLayerPaint, width: Int, height: Int,
                                         project: (SIMD2<Float>) -> SIMD3<Float>?) -> Bool {
        guard let (anchorIndex, anchorT) = projectPath(path, anchorAt: distance, project: project) else { return false }
        let anchor = screenPath[anchorIndex] + (screenPath[anchorIndex + 1] - screenPath[anchorIndex]) * anchorT
        guard anchor.x >= 0, anchor.y >= 0, anchor.x <= Float(width), anchor.y <= Float(height) else { return false }
        if repeatsNearby(label.textKey, at: anchor, within: paint.repeatDistance) { return false }
        // Line labels lie on the map, as MapLibre's pitch-aligned ones do: laid out at the text
        // size over the half-damped perspective and then seen in full perspective, so larger
        // near the camera and smaller far off, and flattened onto the road.
        let perspective = Self.mapAlignedScale(screenScales[anchorIndex])
        let scale = paint.size / GlyphAtlas.baseSize * perspective
        let halfLength = label.text.width * scale / 2
        let ground = Self.groundMapping(at: path[anchorIndex] + (path[anchorIndex + 1] - path[anchorIndex]) * anchorT,
                                        project: project)

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
        // An icon with text along the line sits at the anchor, turned with the line.
        var icon: IconQuad?
        if let candidate = label.icon, paint.icon.opacity > 0,
           let angle = pointAlong(from: anchorIndex, t: anchorT, offset: 0)?.angle {
            let turn = (paint.icon.followsLine ? angle : 0) + candidate.rotate * .pi / 180
            icon = iconQuad(candidate, at: anchor, angle: turn, paint: paint.icon, fitting: nil)
            if let box = icon?.box {
                let padded = box + SIMD4(-paint.icon.padding, -paint.icon.padding, paint.icon.padding, paint.icon.padding)
                let fits = padded.x >= 0 && padded.y >= 0 && padded.z <= Float(width) && padded.w <= Float(height)
                    && (paint.icon.allowOverlap || !grid.collides(padded))
                if !fits {
                    guard paint.icon.optional else { return false }
                    icon = nil
                } else if !paint.icon.ignorePlacement {
                    grid.insert(padded)
                }
            }
        }
        if let icon, let candidate = label.icon { emitIcon(icon, candidate, paint: paint.icon) }
        if !paint.textIgnorePlacement {
            for box in glyphBoxes { grid.insert(box) }
        }
        placedTexts.append((label.textKey, anchor))
        let fill = (label.fillColor ?? paint.fill).packed(opacity: paint.opacity)
        let halo = (label.haloColor ?? paint.halo).packed(opacity: paint.opacity)
        for (glyph, placement) in zip(label.text.glyphs, glyphPlacements) {
            // The quad is laid out around the glyph's baseline centre, then laid along the road
            // on the ground: its up direction is the ground's, foreshortened under pitch.
            let pivot = SIMD2(glyph.baselineCenterX, 0) * scale
            let along = SIMD2(cos(placement.angle), sin(placement.angle))
            emitQuad(glyph, origin: placement.position + glyph.offset * scale - pivot, scale: scale,
                     axes: (along, Self.groundUp(along: along, ground)), pivot: placement.position,
                     fill: fill, halo: halo, haloWidth: paint.haloWidth)
        }
        return true
    }

    /// How much larger a label lying on a pitched map is drawn at a point (`z`: the perspective
    /// there, 1 at the centre of the view): MapLibre lays such text out at its size divided by
    /// the half-damped perspective and projects it, so it grows by z / (0.5 + 0.5 z): 1.2 times
    /// near the camera where z is 1.5, not 1.5 times.
    static func mapAlignedScale(_ z: Float) -> Float {
        guard z.isFinite, z > 0 else { return 1 }
        return min(max(z / (0.5 + 0.5 * z), 0.25), 2)
    }

    /// How the ground maps to the screen near `point` (tile units): the screen pixels one tile
    /// unit east and one south move, in the columns. Nil where the ground does not project (at
    /// the horizon).
    static func groundMapping(at point: SIMD2<Float>,
                              project: (SIMD2<Float>) -> SIMD3<Float>?) -> (east: SIMD2<Float>, south: SIMD2<Float>)? {
        let step: Float = 8
        guard let origin = project(point), let east = project(point + SIMD2(step, 0)),
              let south = project(point + SIMD2(0, step)) else { return nil }
        let columns = (SIMD2(east.x - origin.x, east.y - origin.y) / step, SIMD2(south.x - origin.x, south.y - origin.y) / step)
        let determinant = columns.0.x * columns.1.y - columns.0.y * columns.1.x
        guard determinant.isFinite, abs(determinant) > 1e-9 else { return nil }
        return columns
    }

    /// Where a glyph's "down" goes on the screen when the glyph lies on the ground with its
    /// baseline along `along` (a unit screen direction): the ground direction at right angles
    /// to the baseline, projected, at the scale the baseline has. Upright `(-y, x)` without a
    /// ground mapping, or on a flat map, where both agree.
    static func groundUp(along: SIMD2<Float>, _ ground: (east: SIMD2<Float>, south: SIMD2<Float>)?) -> SIMD2<Float> {
        let upright = SIMD2(-along.y, along.x)
        guard let (east, south) = ground else { return upright }
        // The baseline on the ground: the inverse of the mapping applied to `along`.
        let determinant = east.x * south.y - east.y * south.x
        let groundAlong = SIMD2(south.y * along.x - south.x * along.y, -east.y * along.x + east.x * along.y) / determinant
        let groundNormal = SIMD2(-groundAlong.y, groundAlong.x)
        var down = east * groundNormal.x + south * groundNormal.y
        // Both normals are taken a quarter turn from the baseline; a mirrored mapping flips it back.
        if (down * upright).sum() < 0 { down = -down }
        let baselineLength = ((east * groundAlong.x + south * groundAlong.y) * (east * groundAlong.x + south * groundAlong.y)).sum().squareRoot()
        guard baselineLength > 1e-6, down.x.isFinite, down.y.isFinite else { return upright }
        return down / baselineLength
    }

    /// How much larger a symbol facing the viewer is drawn at a point of a pitched map, from the
    /// perspective there (`z`: 1 at the centre of the view, smaller farther away): half way
    /// between constant size and full perspective, as MapLibre sizes viewport-aligned symbols.
    static func perspectiveScale(_ z: Float) -> Float {
        z.isFinite ? min(max(0.5 + 0.5 * z, 0), 4) : 1
    }

    /// Projects `path` into `screenPath` (and perspective scales into `screenScales`) and finds
    /// the segment and fraction of it `distance` tile units along; nil when a point does not project.
    private mutating func projectPath(_ path: [SIMD2<Float>], anchorAt distance: Float,
                                      project: (SIMD2<Float>) -> SIMD3<Float>?) -> (index: Int, t: Float)? {
        // Project the path once; labels are short and so are the paths of one tile's roads.
        screenPath.removeAll(keepingCapacity: true)
        screenScales.removeAll(keepingCapacity: true)
        var anchorIndex = 0, anchorT: Float = 0, walked: Float = 0
        for i in path.indices {
            guard let point = project(path[i]) else { return nil }
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
        guard screenPath.count >= 2 else { return nil }
        return (anchorIndex, anchorT)
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
        let cosine = cos(angle), sine = sin(angle)
        emitQuad(glyph, origin: origin, scale: scale, axes: (SIMD2(cosine, sine), SIMD2(-sine, cosine)), pivot: pivot,
                 fill: fill, halo: halo, haloWidth: haloWidth)
    }

    /// A glyph quad laid out at `origin` on upright screen axes, then carried onto `axes` (where
    /// the layout's x and y directions go) around `pivot`: a turn, or a turn with the ground's
    /// foreshortening.
    private mutating func emitQuad(_ glyph: PositionedGlyph, origin: SIMD2<Float>, scale: Float,
                                   axes: (SIMD2<Float>, SIMD2<Float>), pivot: SIMD2<Float>, fill: PackedColor,
                                   halo: PackedColor, haloWidth: Float) {
        let size = glyph.size * scale
        let rect = glyph.atlasRect
        let t0 = SIMD2(Float(rect.x), Float(rect.y))
        let t1 = t0 + SIMD2(Float(rect.width), Float(rect.height))
        let isUpright = axes.0 == SIMD2(1, 0) && axes.1 == SIMD2(0, 1)
        func turn(_ p: SIMD2<Float>) -> SIMD2<Float> {
            guard !isUpright else { return p }
            let d = p - pivot
            return pivot + axes.0 * d.x + axes.1 * d.y
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

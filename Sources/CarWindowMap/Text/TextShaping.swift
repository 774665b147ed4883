import Foundation
import CarWindowStyle
import CarWindowSystemSupport
import Logging

extension TextAnchor {
    /// Fraction of the box width left of the anchor: 0 for left anchors, 1 for right anchors.
    var horizontalFraction: Float {
        switch self {
        case .left, .topLeft, .bottomLeft: 0
        case .right, .topRight, .bottomRight: 1
        case .center, .top, .bottom: 0.5
        }
    }

    /// Fraction of the box height above the anchor: 0 for top anchors, 1 for bottom anchors.
    var verticalFraction: Float {
        switch self {
        case .top, .topLeft, .topRight: 0
        case .bottom, .bottomLeft, .bottomRight: 1
        case .center, .left, .right: 0.5
        }
    }
}

extension TextJustify {
    func fraction(for anchor: TextAnchor) -> Float {
        switch self {
        case .auto: anchor.horizontalFraction
        case .left: 0
        case .center: 0.5
        case .right: 1
        }
    }
}

/// One glyph quad of a shaped label, in pixels at the requested text size, y down, relative to the anchor.
struct PositionedGlyph: Hashable, Sendable {
    /// Where the glyph's distance field lies in the atlas, in atlas pixels.
    var atlasRect: AtlasRect
    /// Top-left corner of the quad; the quad includes the distance field's spread border.
    var offset: SIMD2<Float>
    /// Width and height of the quad (the atlas rect scaled from the 24 px base size).
    var size: SIMD2<Float>
    /// Horizontal advance of the glyph, without letter spacing or kerning.
    var advance: Float
    /// Middle of the glyph's advance along its baseline: line labels place each glyph by this
    /// distance along the path and draw the quad at `offset.x - baselineCenterX` from that point.
    var baselineCenterX: Float
    /// The y of the glyph's baseline.
    var baselineY: Float
    /// Which line of the label the glyph is on, from 0.
    var line: Int
}

/// A label laid out for drawing and collision.
struct ShapedText: Sendable {
    /// No text: the symbol is an icon alone.
    static let empty = ShapedText(glyphs: [], origin: .zero, width: 0, height: 0, lineCount: 0)

    /// Quads of the glyphs with ink, in reading order (spaces have none).
    var glyphs: [PositionedGlyph]
    /// Top-left of the text box relative to the anchor, in pixels.
    var origin: SIMD2<Float>
    /// Width of the widest line, in pixels (advances, kerning and letter spacing; no spread border).
    var width: Float
    /// `lineCount * lineHeight * size`, in pixels.
    var height: Float
    var lineCount: Int
}

/// Scalars that no loaded font has, each warned about once per process.
private let warnedMissingScalars = LockedState<Set<UInt32>>([])

/// Labels longer than this are cut: no map label is this long, and the cap bounds the work per label.
private let maximumLabelScalars = 500

/// A glyph of the text, before lines are laid out.
private struct ShapingItem {
    var key: GlyphKey
    var atlasGlyph: AtlasGlyph?
    /// In ems.
    var advance: Float
    /// A break may replace this item (a space, which disappears at the line end).
    var isSpace: Bool
    /// A break may follow this item (a hyphen or slash, which stays at the line end).
    var breaksAfter: Bool
}

extension GlyphAtlas {
    /// Lays out a label left to right (Latin, Cyrillic, Greek; no complex shaping) with FreeType
    /// advances and `kern` table kerning, scaled from the 24 px base size.
    ///
    /// - Parameters:
    ///   - size: Text size in pixels (`text-size`).
    ///   - maxWidth: Width in ems beyond which point labels wrap at spaces and after hyphens and
    ///     slashes (`text-max-width`); lines are balanced so they have similar widths. nil for no wrapping.
    ///   - lineHeight: Distance between baselines in ems (`text-line-height`).
    ///   - letterSpacing: Extra space between glyphs in ems (`text-letter-spacing`).
    /// - Returns: nil when nothing of the text can be drawn (empty, only spaces, no font has its
    ///   characters, or a size that is not a positive finite number).
    func shape(_ text: String, font: FontID, size: Float, maxWidth: Float? = nil, lineHeight: Float = 1.2,
               letterSpacing: Float = 0, anchor: TextAnchor = .center, justify: TextJustify = .auto,
               transform: TextTransform = .none) -> ShapedText? {
        guard size.isFinite, size > 0, size <= 1000, library.isValid(font) else { return nil }
        let lineHeight = lineHeight.isFinite ? lineHeight : 1.2
        let letterSpacing = letterSpacing.isFinite ? letterSpacing : 0
        let maxWidth = maxWidth.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }

        let transformed = switch transform {
        case .none: text
        case .uppercase: text.uppercased()
        case .lowercase: text.lowercased()
        }
        // Spaces and line breaks at either end are dropped, as MapLibre trims a label: a
        // "{name:latin}\n{name:nonlatin}" label without a non-Latin name has one line, not two.
        // Decomposed input ("a" + U+0308) must find the precomposed glyphs the fonts carry.
        let scalars = Array(transformed.trimmingCharacters(in: .whitespacesAndNewlines)
            .precomposedStringWithCanonicalMapping.unicodeScalars
            .prefix(maximumLabelScalars))

        var hardLines: [[ShapingItem]] = [[]]
        for scalar in scalars {
            if scalar == "\n" {
                hardLines.append([])
                continue
            }
            if scalar.properties.generalCategory == .control || scalar.properties.isDefaultIgnorableCodePoint {
                continue
            }
            let isSpace = scalar.properties.isWhitespace && scalar != "\u{00A0}"
            let lookup: Unicode.Scalar = isSpace ? " " : scalar
            guard let found = library.glyph(for: lookup, preferring: font) else {
                let firstTime = warnedMissingScalars.withLock { $0.insert(scalar.value).inserted }
                if firstTime {
                    let code = "U+" + String(scalar.value, radix: 16, uppercase: true)
                    textLogger.warning("No loaded font has \(code) ('\(scalar)'); it is left out of labels")
                }
                continue
            }
            let key = GlyphKey(font: found.font, glyph: found.glyph)
            let atlasGlyph = glyph(key)
            let advance = atlasGlyph.map { $0.advance / Self.baseSize }
                ?? library.advance(of: key.glyph, in: key.font)
            let breaksAfter = ["-", "/", "\u{2010}", "\u{2013}", "\u{200B}"].contains(scalar)
            hardLines[hardLines.count - 1].append(
                ShapingItem(key: key, atlasGlyph: atlasGlyph, advance: advance, isSpace: isSpace,
                            breaksAfter: breaksAfter))
        }

        // Pen positions in ems along each hard line, then soft lines as item ranges.
        var lines: [(items: [ShapingItem], pens: [Float], range: Range<Int>)] = []
        for items in hardLines {
            let pens = penPositions(items, letterSpacing: letterSpacing)
            let ranges = maxWidth.map { breakLines(items, pens: pens, maxWidth: $0) }
                ?? [trimmed(items, 0..<items.count)]
            for range in ranges { lines.append((items, pens, range)) }
        }

        let lineWidths = lines.map { width(of: $0.range, items: $0.items, pens: $0.pens) * size }
        let boxWidth = lineWidths.max() ?? 0
        let lineHeightPixels = lineHeight * size
        let boxHeight = Float(lines.count) * lineHeightPixels
        let origin = SIMD2<Float>(-boxWidth * anchor.horizontalFraction, -boxHeight * anchor.verticalFraction)
        let metrics = library.verticalMetrics(of: font)
        // The font's ascender-to-descender span is centred in each line box.
        let baselineInLine = (lineHeightPixels - (metrics.ascender - metrics.descender) * size) / 2
            + metrics.ascender * size
        let justifyFraction = justify.fraction(for: anchor)
        let scale = size / Self.baseSize

        var glyphs: [PositionedGlyph] = []
        for (lineIndex, line) in lines.enumerated() {
            let lineX = origin.x + (boxWidth - lineWidths[lineIndex]) * justifyFraction
            let baselineY = origin.y + Float(lineIndex) * lineHeightPixels + baselineInLine
            let lineStartPen = line.range.isEmpty ? 0 : line.pens[line.range.lowerBound]
            for index in line.range {
                let item = line.items[index]
                guard let atlasGlyph = item.atlasGlyph, let rect = atlasGlyph.rect else { continue }
                let penX = lineX + (line.pens[index] - lineStartPen) * size
                let advance = item.advance * size
                glyphs.append(PositionedGlyph(
                    atlasRect: rect,
                    offset: SIMD2(penX + atlasGlyph.bearingLeft * scale, baselineY - atlasGlyph.bearingTop * scale),
                    size: SIMD2(Float(rect.width), Float(rect.height)) * scale,
                    advance: advance,
                    baselineCenterX: penX + advance / 2,
                    baselineY: baselineY,
                    line: lineIndex))
            }
        }
        guard !glyphs.isEmpty else { return nil }
        return ShapedText(glyphs: glyphs, origin: origin, width: boxWidth, height: boxHeight, lineCount: lines.count)
    }

    /// Pen position of each item (and one past the end) in ems, with kerning and letter spacing.
    private func penPositions(_ items: [ShapingItem], letterSpacing: Float) -> [Float] {
        var pens: [Float] = [0]
        pens.reserveCapacity(items.count + 1)
        for (index, item) in items.enumerated() {
            var pen = pens[index] + item.advance + letterSpacing
            if index + 1 < items.count, items[index + 1].key.font == item.key.font {
                pen += library.kerning(between: item.key.glyph, and: items[index + 1].key.glyph, in: item.key.font)
            }
            pens.append(pen)
        }
        return pens
    }

    /// Width in ems of a line: from its first pen position to the end of its last glyph's advance.
    private func width(of range: Range<Int>, items: [ShapingItem], pens: [Float]) -> Float {
        guard let last = range.last else { return 0 }
        return pens[last] - pens[range.lowerBound] + items[last].advance
    }

    /// The range without spaces at either end.
    private func trimmed(_ items: [ShapingItem], _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound, upper = range.upperBound
        while lower < upper, items[lower].isSpace { lower += 1 }
        while upper > lower, items[upper - 1].isSpace { upper -= 1 }
        return lower..<upper
    }

    /// Splits one hard line into lines no wider than `maxWidth` where possible, as balanced as
    /// possible: the fewest lines greedy wrapping needs, then the breaks minimising the squared
    /// difference of each line from the average width.
    private func breakLines(_ items: [ShapingItem], pens: [Float], maxWidth: Float) -> [Range<Int>] {
        let whole = trimmed(items, 0..<items.count)
        // Break opportunities: (end of the line before, start of the line after).
        var breaks: [(end: Int, next: Int)] = []
        for index in whole {
            if items[index].isSpace, index > whole.lowerBound, !items[index - 1].isSpace {
                breaks.append((index, index + 1))
            } else if items[index].breaksAfter, index + 1 < whole.upperBound, !items[index + 1].isSpace {
                breaks.append((index + 1, index + 1))
            }
        }
        guard !breaks.isEmpty,
              width(of: whole, items: items, pens: pens) > maxWidth else { return [whole] }

        // Segment starts: 0 is the line start, k + 1 is the start after break k.
        let starts = [whole.lowerBound] + breaks.map(\.next)
        let ends = breaks.map(\.end) + [whole.upperBound]
        func lineWidth(from start: Int, to end: Int) -> Float {
            width(of: trimmed(items, starts[start]..<ends[end]), items: items, pens: pens)
        }
        let segmentCount = starts.count

        // Greedy wrapping gives the fewest lines.
        var greedyLines = 1
        var lineStart = 0
        for end in 0..<segmentCount where end > lineStart && lineWidth(from: lineStart, to: end) > maxWidth {
            greedyLines += 1
            lineStart = end
        }
        let target = width(of: whole, items: items, pens: pens) / Float(greedyLines)

        // cost[i]: best cost of laying out segments 0..<i; a line spans segments start...end.
        var cost = [Float](repeating: .infinity, count: segmentCount + 1)
        var lineCount = [Int](repeating: 0, count: segmentCount + 1)
        var previous = [Int](repeating: 0, count: segmentCount + 1)
        cost[0] = 0
        for end in 1...segmentCount {
            for start in stride(from: end - 1, through: 0, by: -1) where cost[start].isFinite {
                let lineWidthEms = lineWidth(from: start, to: end - 1)
                let overflow = lineWidthEms > maxWidth && end - 1 > start
                if overflow { break }
                let deviation = lineWidthEms - target
                // Lines beyond the greedy count cost extra, so balancing never adds a line.
                let candidate = cost[start] + deviation * deviation + (lineCount[start] >= greedyLines ? 1e6 : 0)
                if candidate < cost[end] {
                    cost[end] = candidate
                    lineCount[end] = lineCount[start] + 1
                    previous[end] = start
                }
            }
        }
        var ranges: [Range<Int>] = []
        var end = segmentCount
        while end > 0 {
            let start = previous[end]
            ranges.append(trimmed(items, starts[start]..<ends[end - 1]))
            end = start
        }
        return ranges.reversed()
    }
}

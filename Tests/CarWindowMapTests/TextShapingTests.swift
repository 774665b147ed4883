import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

@Suite struct TextShapingTests {
    let atlas = GlyphAtlas(library: bundledFonts)
    let regular = bundledFonts.resolve(["Noto Sans Regular"])

    /// The width is the sum of the glyph advances, computed here from the font's units through
    /// CFreeType (Noto Sans has no `kern` table, so no kerning is added).
    @Test func widthIsTheSumOfFreeTypeAdvances() throws {
        let text = "Mannerheimintie"
        let shaped = try #require(atlas.shape(text, font: regular, size: 16))
        let oracle = FreeTypeOracle(fontFile: "NotoSans-Regular.ttf")
        let expected = text.unicodeScalars.map { oracle.advanceUnits(of: $0) }.reduce(0, +) / oracle.unitsPerEm * 16
        #expect(abs(shaped.width - expected) < 0.001, "\(shaped.width) vs \(expected)")
        #expect(expected > 100 && expected < 140)
        #expect(shaped.lineCount == 1)
        #expect(abs(shaped.height - 1.2 * 16) < 0.001)
        #expect(shaped.glyphs.count == text.count)
        // Each glyph's advance, scaled from 24 px, matches the font too.
        let firstAdvance = oracle.advanceUnits(of: "M") / oracle.unitsPerEm * 16
        #expect(abs(shaped.glyphs[0].advance - firstAdvance) < 0.001)
        // The quad is the 24 px bitmap (spread included) scaled by 16/24.
        let quad = shaped.glyphs[0]
        #expect(abs(quad.size.x - Float(quad.atlasRect.width) * 16 / 24) < 0.001)
        #expect(quad.size.x > firstAdvance, "the spread border makes the quad wider than the glyph")
    }

    /// "{name:latin}\n{name:nonlatin}" without a non-Latin name leaves a line break at the end:
    /// one line, placed as "Helsinki" alone (MapLibre trims labels the same way).
    @Test func breaksAndSpacesAtTheEndsAreTrimmed() throws {
        let plain = try #require(atlas.shape("Helsinki", font: regular, size: 16))
        let trailing = try #require(atlas.shape(" Helsinki\n", font: regular, size: 16))
        #expect(trailing.lineCount == 1 && abs(trailing.height - plain.height) < 0.001)
        #expect(abs(trailing.width - plain.width) < 0.001 && trailing.origin == plain.origin)
        #expect(try #require(atlas.shape("Helsinki\nHelsingfors", font: regular, size: 16)).lineCount == 2)
        #expect(atlas.shape("\n \n", font: regular, size: 16) == nil)
    }

    /// Labels on a pitched map lie on the ground: their "down" is the ground's, foreshortened
    /// and sheared as the camera sees it, and their size follows MapLibre's pitch-aligned text.
    @Test func labelsOnThePitchedGroundAreForeshortened() {
        // Flat and turned: the upright normal, unit length.
        let turned = (east: SIMD2<Float>(0.6, 0.8) * 2, south: SIMD2<Float>(-0.8, 0.6) * 2)
        let along = SIMD2<Float>(0.6, 0.8)
        let flatDown = LabelPlacer.groundUp(along: along, turned)
        #expect(abs(flatDown.x + 0.8) < 1e-5 && abs(flatDown.y - 0.6) < 1e-5)
        // Pitched, north up: south squashed to 0.5 of east. A label along a road running east has
        // its height halved; one along a road running south is not foreshortened across it.
        let pitched = (east: SIMD2<Float>(2, 0), south: SIMD2<Float>(0, 1))
        let eastward = LabelPlacer.groundUp(along: SIMD2(1, 0), pitched)
        #expect(abs(eastward.x) < 1e-5 && abs(eastward.y - 0.5) < 1e-5)
        let southward = LabelPlacer.groundUp(along: SIMD2(0, 1), pitched)
        #expect(abs(southward.x + 2) < 1e-5 && abs(southward.y) < 1e-5)
        #expect(LabelPlacer.groundUp(along: SIMD2(1, 0), nil) == SIMD2(0, 1))
        // Size: 1.2 times near the camera (z 1.5), 1 at the centre, 2/3 far off (z 0.5).
        #expect(abs(LabelPlacer.mapAlignedScale(1.5) - 1.2) < 1e-5)
        #expect(LabelPlacer.mapAlignedScale(1) == 1 && abs(LabelPlacer.mapAlignedScale(0.5) - 2.0 / 3) < 1e-5)
        #expect(LabelPlacer.mapAlignedScale(.nan) == 1)
    }

    @Test func letterSpacingWidensTheLineBetweenGlyphsOnly() throws {
        let plain = try #require(atlas.shape("Kallio", font: regular, size: 20))
        let spaced = try #require(atlas.shape("Kallio", font: regular, size: 20, letterSpacing: 0.1))
        // Five gaps between six letters, 0.1 em each at 20 px.
        #expect(abs(spaced.width - plain.width - 5 * 0.1 * 20) < 0.001)
    }

    /// Word widths in ems (Noto Sans Regular advances summed from the font's units with a small
    /// FreeType C program): Helsingin 4.409, yliopiston 4.567, Kaisaniemen 6.035,
    /// kasvitieteellinen 7.586, puutarha 4.365, space 0.260.
    @Test func longNamesWrapIntoBalancedLinesWithinMaxWidth() throws {
        let text = "Helsingin yliopiston Kaisaniemen kasvitieteellinen puutarha"
        let size: Float = 16, maxWidth: Float = 10
        let single = try #require(atlas.shape(text, font: regular, size: size))
        #expect(single.lineCount == 1)
        #expect(abs(single.width / size - (4.409 + 4.567 + 6.035 + 7.586 + 4.365 + 4 * 0.260)) < 0.002)
        // At 10 ems no two of the last three words fit together: four lines.
        let wrapped = try #require(atlas.shape(text, font: regular, size: size, maxWidth: maxWidth))
        #expect(wrapped.lineCount == 4)
        #expect(wrapped.width <= maxWidth * size)
        #expect(abs(wrapped.height - 4 * 1.2 * size) < 0.001)
        // Nothing is lost: every letter is drawn once, lines in reading order.
        #expect(wrapped.glyphs.count == text.unicodeScalars.filter { $0 != " " }.count)
        #expect(wrapped.glyphs.map(\.line) == wrapped.glyphs.map(\.line).sorted())
        let lineWidths = (0..<wrapped.lineCount).map { line in
            let glyphs = wrapped.glyphs.filter { $0.line == line }
            let first = glyphs.first.map { $0.baselineCenterX - $0.advance / 2 } ?? 0
            let last = glyphs.last.map { $0.baselineCenterX + $0.advance / 2 } ?? 0
            return last - first
        }
        #expect(lineWidths.allSatisfy { $0 <= maxWidth * size + 0.001 })
        #expect(abs(lineWidths[0] / size - (4.409 + 0.260 + 4.567)) < 0.002, "\(lineWidths)")
        // Centre justification: every line is centred on the anchor.
        for line in 0..<wrapped.lineCount {
            let glyphs = wrapped.glyphs.filter { $0.line == line }
            let left = (glyphs.first?.baselineCenterX ?? 0) - (glyphs.first?.advance ?? 0) / 2
            let right = (glyphs.last?.baselineCenterX ?? 0) + (glyphs.last?.advance ?? 0) / 2
            #expect(abs(left + right) < 0.01)
        }

        // Balancing: greedy filling at 14 ems gives "Kaisaniemen kasvitieteellinen" (13.88) over
        // "puutarha" (4.37); the balanced break puts "Kaisaniemen" (6.04) over the rest (12.21).
        let balanced = try #require(atlas.shape("Kaisaniemen kasvitieteellinen puutarha", font: regular,
                                                size: size, maxWidth: 14))
        #expect(balanced.lineCount == 2)
        #expect(balanced.glyphs.filter { $0.line == 0 }.count == "Kaisaniemen".count)
        #expect(abs(balanced.width / size - (7.586 + 0.260 + 4.365)) < 0.002)
        // Left anchors justify left: every line starts at the anchor.
        let left = try #require(atlas.shape("Kaisaniemen kasvitieteellinen puutarha", font: regular,
                                            size: size, maxWidth: 14, anchor: .left))
        let lineStarts = (0..<2).compactMap { line in
            left.glyphs.first { $0.line == line }.map { $0.baselineCenterX - $0.advance / 2 }
        }
        #expect(lineStarts.count == 2 && lineStarts.allSatisfy { abs($0) < 0.001 })
        // A word longer than the limit stays whole on its own line.
        let long = try #require(atlas.shape("Kasvitieteellinen", font: regular, size: size, maxWidth: 3))
        #expect(long.lineCount == 1)
        // Explicit newlines always break.
        #expect(atlas.shape("Ylä\nAla", font: regular, size: size)?.lineCount == 2)
    }

    @Test func anchorsShiftTheBox() throws {
        let center = try #require(atlas.shape("Töölö", font: regular, size: 16, anchor: .center))
        let (width, height) = (center.width, center.height)
        #expect(center.origin == SIMD2(-width / 2, -height / 2))
        let expectedOrigins: [TextAnchor: SIMD2<Float>] = [
            .top: [-width / 2, 0], .bottom: [-width / 2, -height], .left: [0, -height / 2],
            .right: [-width, -height / 2], .topLeft: [0, 0], .topRight: [-width, 0],
            .bottomLeft: [0, -height], .bottomRight: [-width, -height],
        ]
        for (anchor, origin) in expectedOrigins {
            let shaped = try #require(atlas.shape("Töölö", font: regular, size: 16, anchor: anchor))
            #expect(shaped.origin == origin, "\(anchor)")
            let shift = origin - center.origin
            for (glyph, reference) in zip(shaped.glyphs, center.glyphs) {
                #expect(abs(glyph.offset.x - reference.offset.x - shift.x) < 0.001)
                #expect(abs(glyph.offset.y - reference.offset.y - shift.y) < 0.001)
            }
        }
        // The baseline sits inside the box, below its middle, and the ink of a capital is above it.
        let topLeft = try #require(atlas.shape("H", font: regular, size: 24, anchor: .topLeft))
        let glyph = try #require(topLeft.glyphs.first)
        #expect(glyph.baselineY > topLeft.height / 2 && glyph.baselineY < topLeft.height)
        let inkTop = glyph.offset.y + GlyphAtlas.spread
        let capHeight = FreeTypeOracle(fontFile: "NotoSans-Regular.ttf").outlineExtent(of: "H").height
        #expect(abs(glyph.baselineY - inkTop - capHeight) <= 1)
    }

    @Test func lineLabelCentresRunAlongTheBaseline() throws {
        let shaped = try #require(atlas.shape("Aleksanterinkatu", font: regular, size: 14))
        let centres = shaped.glyphs.map(\.baselineCenterX)
        #expect(centres == centres.sorted())
        let first = try #require(shaped.glyphs.first)
        #expect(abs(first.baselineCenterX - (shaped.origin.x + first.advance / 2)) < 0.001)
        let last = try #require(shaped.glyphs.last)
        #expect(abs(last.baselineCenterX + last.advance / 2 - (shaped.origin.x + shaped.width)) < 0.001)
    }

    @Test func nordicLettersArePresentAndDistinct() throws {
        let shaped = try #require(atlas.shape("ä ö å", font: regular, size: 16))
        #expect(shaped.glyphs.count == 3)
        let plain = try #require(atlas.shape("aoa", font: regular, size: 16))
        #expect(Set(shaped.glyphs.map(\.atlasRect)).count == 3)
        #expect(Set(shaped.glyphs.map(\.atlasRect)).isDisjoint(with: plain.glyphs.map(\.atlasRect)))
        // Dots and rings make the quads taller than the plain letters'.
        #expect(shaped.glyphs[0].size.y > plain.glyphs[0].size.y)
        // Decomposed input (a + combining diaeresis) finds the same precomposed glyph.
        let decomposed = try #require(atlas.shape("a\u{308}", font: regular, size: 16))
        #expect(decomposed.glyphs.map(\.atlasRect) == [shaped.glyphs[0].atlasRect])
        // Transforms change case before shaping.
        let upper = try #require(atlas.shape("ä", font: regular, size: 16, transform: .uppercase))
        let capital = try #require(atlas.shape("Ä", font: regular, size: 16))
        #expect(upper.glyphs.map(\.atlasRect) == capital.glyphs.map(\.atlasRect))
        // Cyrillic and Greek shape too.
        #expect(atlas.shape("Хельсинки Ελσίνκι", font: regular, size: 16)?.glyphs.count == 16)
    }

    @Test func unsupportedScalarsAreSkippedAndNothingDrawableGivesNil() throws {
        let shaped = try #require(atlas.shape("A😀B漢", font: regular, size: 16))
        #expect(shaped.glyphs.count == 2)
        #expect(atlas.shape("", font: regular, size: 16) == nil)
        #expect(atlas.shape("   ", font: regular, size: 16) == nil)
        #expect(atlas.shape("😀", font: regular, size: 16) == nil)
        #expect(atlas.shape("Kamppi", font: regular, size: 0) == nil)
        #expect(atlas.shape("Kamppi", font: regular, size: .nan) == nil)
        #expect(atlas.shape("Kamppi", font: FontID(index: 99), size: 16) == nil)
        // Absurd options fall back to defaults instead of producing NaN geometry.
        let odd = try #require(atlas.shape("Kamppi", font: regular, size: 16, maxWidth: .infinity,
                                           lineHeight: .nan, letterSpacing: .infinity))
        #expect(odd.width.isFinite && odd.height.isFinite)
        // Labels are cut at a bounded length.
        let huge = try #require(atlas.shape(String(repeating: "ab ", count: 10_000), font: regular, size: 16))
        #expect(huge.glyphs.count < 1000)
    }

    @Test func shapingFromManyTasksAtOnceIsConsistent() async throws {
        let shared = GlyphAtlas(library: bundledFonts)
        let names = ["Mannerheimintie", "Hämeentie", "Pohjoisesplanadi", "Fredrikinkatu", "Сибелиус",
                     "Ελσίνκι", "Länsiväylä", "Itäväylä", "Runeberginkatu", "Töölönlahti", "Kaivokatu",
                     "Unioninkatu"]
        let regular = regular, bold = bundledFonts.resolve(["Noto Sans Bold"])
        let concurrent = await withTaskGroup(of: [String: [AtlasRect]].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var results: [String: [AtlasRect]] = [:]
                    for (index, name) in names.enumerated() {
                        let font = (index + task).isMultiple(of: 2) ? regular : bold
                        let key = "\(name)|\(font.index)"
                        results[key] = shared.shape(name, font: font, size: 12 + Float(task))?.glyphs.map(\.atlasRect)
                    }
                    return results
                }
            }
            var merged: [[String: [AtlasRect]]] = []
            for await result in group { merged.append(result) }
            return merged
        }
        // Every task saw the same atlas rects for the same text and font, and they match a serial run.
        for font in [regular, bold] {
            for name in names {
                let serial = shared.shape(name, font: font, size: 16)?.glyphs.map(\.atlasRect)
                #expect(serial != nil)
                for result in concurrent {
                    if let rects = result["\(name)|\(font.index)"] { #expect(rects == serial) }
                }
            }
        }
        let rects = shared.packedRects
        #expect(rects.count == Set(rects).count)
        #expect(!rects.enumerated().contains { index, rect in rects[(index + 1)...].contains { $0.intersects(rect) } })
    }
}

import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Sprites, icons and circles: the sheet loader against the bundled sprite and broken ones,
/// icon placement as one symbol with its text, and frames drawn with icons and circles.
@Suite(.serialized) struct SpriteAndIconTests {
    static let spriteBase = TestPaths.assets.appendingPathComponent("sprites/carwindow").path

    static func style(sprite: String? = spriteBase, layers: String) throws -> Style {
        let spriteMember = sprite.map { "\"sprite\": \"\($0)\"," } ?? ""
        let json = """
        {"version": 8, \(spriteMember)
         "sources": {"openmaptiles": {"type": "vector", "url": "pmtiles://helsinki.pmtiles"}},
         "layers": [{"id": "background", "type": "background", "paint": {"background-color": "#ffffff"}}, \(layers)]}
        """
        return try Style(data: Data(json.utf8))
    }

    // MARK: Loading sprites

    @Test func theBundledSpriteLoadsAtBothPixelRatios() throws {
        let style = try Self.style(layers: "{\"id\": \"x\", \"type\": \"background\"}")
        let (sheet, failures, skipped) = SpriteSheet.load(for: style)
        #expect(failures.isEmpty)
        #expect(skipped.isEmpty)
        let hospital = try #require(sheet.images["hospital"])
        #expect(hospital.pixelRatio == 1 && !hospital.isSDF)
        #expect(hospital.displaySize == SIMD2(17, 17))
        #expect(sheet.images["oneway"]?.isSDF == true)
        let (sharp, _, _) = SpriteSheet.load(for: style, pixelRatio: 2)
        let sharpHospital = try #require(sharp.images["hospital"])
        #expect(sharpHospital.pixelRatio == 2 && sharpHospital.width == 34)
        // The same size on the screen either way.
        #expect(sharpHospital.displaySize == hospital.displaySize)
        #expect(sheet.names == Set(sheet.images.keys))
    }

    @Test func severalSpritesKeepTheirIdsAsPrefixes() throws {
        let json = """
        {"version": 8, "sprite": [{"id": "default", "url": "\(Self.spriteBase)"}, {"id": "extra", "url": "\(Self.spriteBase)"}],
         "sources": {}, "layers": []}
        """
        let style = try Style(data: Data(json.utf8))
        #expect(style.sprites.map(\.id) == ["default", "extra"])
        let (sheet, failures, _) = SpriteSheet.load(for: style)
        #expect(failures.isEmpty)
        let plain = try #require(sheet.images["fuel"]), prefixed = try #require(sheet.images["extra:fuel"])
        // Stacked: the second sprite's images lie below the first.
        #expect(prefixed.y >= plain.y + 1 && prefixed.x == plain.x)
    }

    @Test func brokenSpritesAreTypedErrorsAndBadEntriesAreLeftOut() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sprite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let image = RGBAImage(width: 8, height: 8, pixels: [UInt8](repeating: 200, count: 8 * 8 * 4))
        try image.writePNG(to: folder.appendingPathComponent("s.png"))
        try Data("""
        {"good": {"x": 0, "y": 0, "width": 4, "height": 4},
         "outside": {"x": 6, "y": 0, "width": 4, "height": 4},
         "negative": {"x": -1, "y": 0, "width": 2, "height": 2},
         "ratio": {"x": 0, "y": 0, "width": 2, "height": 2, "pixelRatio": 1e9},
         "text": "no"}
        """.utf8).write(to: folder.appendingPathComponent("s.json"))
        var style = try Self.style(sprite: folder.appendingPathComponent("s").path, layers: "{\"id\": \"x\", \"type\": \"background\"}")
        var (sheet, failures, skipped) = SpriteSheet.load(for: style)
        #expect(failures.isEmpty)
        #expect(Set(sheet.images.keys) == ["good"])
        #expect(skipped.count == 4)
        // Premultiplied: 200 * 200 / 255.
        #expect(sheet.pixels[0] == 157 && sheet.pixels[3] == 200)

        try Data("[1, 2]".utf8).write(to: folder.appendingPathComponent("s.json"))
        (sheet, failures, _) = SpriteSheet.load(for: style)
        #expect(sheet.images.isEmpty)
        guard case .invalidIndex? = failures.first else { Issue.record("\(failures)"); return }

        // A sheet wider than any texture is refused before its pixels are decoded.
        try RGBAImage(width: SpriteSheet.maximumSide + 1, height: 1,
                      pixels: [UInt8](repeating: 0, count: (SpriteSheet.maximumSide + 1) * 4))
            .writePNG(to: folder.appendingPathComponent("wide.png"))
        try Data("{}".utf8).write(to: folder.appendingPathComponent("wide.json"))
        style = try Self.style(sprite: folder.appendingPathComponent("wide").path, layers: "{\"id\": \"x\", \"type\": \"background\"}")
        (_, failures, _) = SpriteSheet.load(for: style)
        guard case .invalidImage? = failures.first else { Issue.record("\(failures)"); return }

        style = try Self.style(sprite: "https://example.org/sprite", layers: "{\"id\": \"x\", \"type\": \"background\"}")
        #expect(SpriteSheet.load(for: style).failures == [.remote(url: "https://example.org/sprite")])
        style = try Self.style(sprite: folder.appendingPathComponent("absent").path, layers: "{\"id\": \"x\", \"type\": \"background\"}")
        guard case .unreadable? = SpriteSheet.load(for: style).failures.first else { Issue.record("no error"); return }
    }

    @Test func relativeSpritePathsResolveAgainstTheStyleFile() throws {
        let style = try Style(contentsOf: TestPaths.style("day"))
        #expect(style.sprites == [SpriteReference(id: "default", url: "../sprites/carwindow")])
        let (sheet, failures, _) = SpriteSheet.load(for: style)
        #expect(failures.isEmpty)
        #expect(sheet.images["parking"] != nil)
    }

    // MARK: Placement

    static func glyphText(width: Float) -> ShapedText {
        let glyph = PositionedGlyph(atlasRect: AtlasRect(x: 0, y: 0, width: 10, height: 10), offset: SIMD2(0, -8),
                                    size: SIMD2(10, 10), advance: 8, baselineCenterX: 4, baselineY: 0, line: 0)
        return ShapedText(glyphs: [glyph], origin: SIMD2(-width / 2, -8), width: width, height: 16, lineCount: 1)
    }

    static func candidate(text: ShapedText, key: Int) -> LabelCandidate {
        let image = SpriteImage(x: 0, y: 0, width: 20, height: 20, pixelRatio: 1, isSDF: false)
        return LabelCandidate(anchor: .point(.zero), text: text,
                              icon: IconCandidate(image: image, anchor: .bottom, offset: .zero, rotate: 0),
                              key: key, textKey: key)
    }

    static func paint(iconOptional: Bool = false, textOptional: Bool = false) -> SymbolLayerPaint {
        var paint = SymbolLayerPaint(size: 24, fill: .black, halo: .white, haloWidth: 0, opacity: 1, maxAngle: 45,
                                     padding: 0, allowOverlap: false, isLine: false, repeatDistance: 0)
        paint.textOptional = textOptional
        paint.icon.optional = iconOptional
        paint.icon.padding = 0
        return paint
    }

    /// An icon above its anchor (icon-anchor bottom) and text centred on it: a box blocking the
    /// icon alone stops the whole symbol unless the icon is optional.
    @Test(arguments: [(false, 0, 0), (true, 0, 1)])
    func textAndIconCollideAsOneSymbol(iconOptional: Bool, expectedIcons: Int, expectedGlyphs: Int) {
        var placer = LabelPlacer()
        placer.begin(width: 400, height: 240)
        placer.block(ScreenRect(x: 190, y: 95, width: 20, height: 10)) // over the icon, above the text
        var bucket = SymbolBucket()
        bucket.labels = [Self.candidate(text: Self.glyphText(width: 30), key: 1)]
        placer.place(bucket, paint: Self.paint(iconOptional: iconOptional), zoomAboveTile: 0, width: 400, height: 240) {
            SIMD3($0.x + 200, $0.y + 120, 1)
        }
        #expect(placer.iconVertices.count == expectedIcons * 4)
        #expect(placer.vertices.count == expectedGlyphs * 4)
    }

    @Test func anUnblockedSymbolDrawsItsIconAndText() {
        var placer = LabelPlacer()
        placer.begin(width: 400, height: 240)
        var bucket = SymbolBucket()
        bucket.labels = [Self.candidate(text: Self.glyphText(width: 30), key: 1)]
        placer.place(bucket, paint: Self.paint(), zoomAboveTile: 0, width: 400, height: 240) {
            SIMD3($0.x + 200, $0.y + 120, 1)
        }
        #expect(placer.iconVertices.count == 4 && placer.vertices.count == 4)
        // icon-anchor bottom: the icon ends at the anchor and is centred over it.
        let corners = placer.iconVertices.map(\.position)
        #expect(corners.map(\.y).max() == 120 && corners.map(\.y).min() == 100)
        #expect(corners.map(\.x).min() == 190 && corners.map(\.x).max() == 210)
    }

    @Test func iconTextFitStretchesTheIconAroundItsTextWithPadding() throws {
        let placer = LabelPlacer()
        let icon = Self.candidate(text: .empty, key: 1).icon!
        var paint = IconLayerPaint()
        paint.textFit = .both
        paint.textFitPadding = SIMD4(2, 4, 6, 8) // top, right, bottom, left
        let text = SIMD4<Float>(100, 50, 160, 70)
        let quad = try #require(placer.iconQuad(icon, at: SIMD2(130, 60), angle: 0, paint: paint, fitting: text))
        #expect(quad.box == SIMD4(92, 48, 164, 76))
        paint.textFit = .width
        let wide = try #require(placer.iconQuad(icon, at: SIMD2(130, 60), angle: 0, paint: paint, fitting: text))
        // Width from the text, height the icon's own 20 pixels centred on the text.
        #expect(wide.box == SIMD4(92, 50, 164, 70))
        // With a content box (a shield's inside), the content fits the text and the rim lies outside.
        var shield = icon
        shield.image.content = SIMD4(5, 5, 15, 15) // 10 of 20 pixels each way
        paint.textFit = .both
        let rimmed = try #require(placer.iconQuad(shield, at: SIMD2(130, 60), angle: 0, paint: paint, fitting: text))
        // Fitted box 92...164 x 48...76 (72 x 28) is the content: the image is twice as large.
        #expect(rimmed.box == SIMD4<Float>(92 - 36, 48 - 14, 164 + 36, 76 + 14))
        // A quarter turn swaps the box's sides.
        paint.textFit = .none
        let turned = try #require(placer.iconQuad(Self.candidate(text: .empty, key: 1).icon.map {
            var icon = $0; icon.image.width = 40; icon.anchor = .center; return icon
        }!, at: SIMD2(100, 100), angle: .pi / 2, paint: paint, fitting: nil))
        #expect(abs(turned.box.z - turned.box.x - 20) < 1e-3 && abs(turned.box.w - turned.box.y - 40) < 1e-3)
    }

    /// text-variable-anchor: the first anchor whose box is free wins; a blocked one passes to
    /// the next, and the text sits the radial offset away in the anchor's direction.
    @Test func variableAnchorsTryEachInTurn() {
        func place(blocking: ScreenRect?) -> [SIMD2<Float>] {
            var placer = LabelPlacer()
            placer.begin(width: 400, height: 240)
            if let blocking { placer.block(blocking) }
            var label = Self.candidate(text: Self.glyphText(width: 30), key: 1)
            label.icon = nil
            label.variableAnchors = [.top, .bottom, .left]
            label.radialOffset = 0.5
            var bucket = SymbolBucket()
            bucket.labels = [label]
            placer.place(bucket, paint: Self.paint(), zoomAboveTile: 0, width: 400, height: 240) {
                SIMD3($0.x + 200, $0.y + 120, 1)
            }
            return placer.vertices.map(\.position)
        }
        // The glyph box is 30 x 16 at 24 px; half an em is 12 px.
        let free = place(blocking: nil)
        #expect(free.count == 4)
        let freeTop: Float = free.map(\.y).min() ?? 0
        #expect(freeTop >= 131, "top anchor: the text below the point, \(free)")
        let belowBlocked = place(blocking: ScreenRect(x: 150, y: 125, width: 100, height: 40))
        #expect(belowBlocked.count == 4)
        let aboveBottom: Float = belowBlocked.map(\.y).max() ?? 999
        #expect(aboveBottom <= 109, "bottom anchor: the text above, \(belowBlocked)")
        let bothBlocked = place(blocking: ScreenRect(x: 150, y: 60, width: 60, height: 120))
        let rightOfPoint: Float = bothBlocked.map(\.x).min() ?? 0
        #expect(rightOfPoint >= 211, "left anchor: the text to the right, \(bothBlocked)")
        #expect(place(blocking: ScreenRect(x: 100, y: 60, width: 200, height: 120)).isEmpty)
        // Without a radial offset, text-offset's parts apply in the anchor's direction.
        var label = Self.candidate(text: Self.glyphText(width: 30), key: 1)
        label.textOffset = SIMD2(-1, -2)
        #expect(LabelPlacer.variableTextOrigin(label, textAnchor: .topLeft) == SIMD2(24, 48))
        #expect(LabelPlacer.variableTextOrigin(label, textAnchor: .bottom) == SIMD2<Float>(-15, -64))
    }

    @Test func anchorsPlaceTheBoxAsMapLibreDoes() {
        let size = SIMD2<Float>(10, 6)
        #expect(LabelPlacer.anchorShift(.center, size: size) == SIMD2(-5, -3))
        #expect(LabelPlacer.anchorShift(.topLeft, size: size) == SIMD2(0, 0))
        #expect(LabelPlacer.anchorShift(.bottomRight, size: size) == SIMD2(-10, -6))
        #expect(LabelPlacer.anchorShift(.left, size: size) == SIMD2(0, -3))
        #expect(LabelPlacer.anchorShift(.top, size: size) == SIMD2(-5, 0))
    }

    // MARK: Frames

    static func render(_ style: Style, zoom: Double = 14) async throws -> RGBAImage {
        try await renderOnce(style, camera: Camera(center: helsinki, zoom: zoom))
    }

    /// Pixels within 40/255 per channel of `color` (opaque).
    static func count(_ image: RGBAImage, near color: SIMD3<Int>) -> Int {
        var count = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let p = image.pixel(x: x, y: y)
                let d = SIMD3(Int(p.x), Int(p.y), Int(p.z)) &- color
                if abs(d.x) <= 40 && abs(d.y) <= 40 && abs(d.z) <= 40 { count += 1 }
            }
        }
        return count
    }

    /// One-way arrows over the bundled roads: an SDF icon takes the colour the style gives it.
    @Test func sdfIconsTakeTheStylesColour() async throws {
        func arrows(_ color: String) throws -> Style {
            try Self.style(layers: """
            {"id": "arrows", "type": "symbol", "source": "openmaptiles", "source-layer": "transportation",
             "filter": ["in", ["get", "oneway"], ["literal", [1, -1]]],
             "layout": {"symbol-placement": "line", "symbol-spacing": 60, "icon-image": "oneway", "icon-size": 1.5},
             "paint": {"icon-color": "\(color)"}}
            """)
        }
        let red = try await Self.render(try arrows("#ff0000"), zoom: 16)
        let blue = try await Self.render(try arrows("#0000ff"), zoom: 16)
        let redCount = Self.count(red, near: SIMD3(255, 0, 0)), blueCount = Self.count(blue, near: SIMD3(0, 0, 255))
        #expect(redCount > 200, "red arrow pixels: \(redCount)")
        #expect(blueCount > 200, "blue arrow pixels: \(blueCount)")
        #expect(Self.count(red, near: SIMD3(0, 0, 255)) == 0)
    }

    /// Place points with the hospital icon (a red badge): drawn where the sprite has it; a
    /// missing image draws nothing and is warned about once.
    @Test func pointIconsDrawFromTheSpriteAndMissingOnesAreSkipped() async throws {
        func places(_ icon: String) throws -> Style {
            try Self.style(layers: """
            {"id": "places", "type": "symbol", "source": "openmaptiles", "source-layer": "place",
             "layout": {"icon-image": "\(icon)", "icon-allow-overlap": true, "icon-size": 2}}
            """)
        }
        let drawn = try await Self.render(try places("hospital"))
        let badgeRed = SIMD3(200, 48, 48)
        #expect(Self.count(drawn, near: badgeRed) > 100)
        let missing = try await Self.render(try places("no-such-icon"))
        #expect(Self.count(missing, near: badgeRed) == 0)
        #expect(SpriteWarnings.wasWarned("no-such-icon"))
        // coalesce over images falls through to one that exists.
        let fallback = try await Self.render(try Self.style(layers: """
        {"id": "places", "type": "symbol", "source": "openmaptiles", "source-layer": "place",
         "layout": {"icon-image": ["coalesce", ["image", "no-such-icon"], ["image", "hospital"]],
                    "icon-allow-overlap": true, "icon-size": 2}}
        """))
        #expect(Self.count(fallback, near: badgeRed) > 100)
    }

    /// A shield behind a number grows with the number (icon-text-fit).
    @Test func shieldsStretchAroundTheirText() async throws {
        func shields(_ text: String) throws -> Style {
            try Self.style(layers: """
            {"id": "places", "type": "symbol", "source": "openmaptiles", "source-layer": "place",
             "filter": ["==", ["get", "class"], "suburb"],
             "layout": {"text-field": "\(text)", "text-font": ["Noto Sans Bold"], "text-size": 14,
                        "icon-image": "shield", "icon-text-fit": "both", "icon-text-fit-padding": [2, 4, 2, 4],
                        "text-allow-overlap": true, "icon-allow-overlap": true},
             "paint": {"icon-color": "#00c000", "text-color": "#000000"}}
            """)
        }
        // At zoom 13 the suburb's point lies near the middle, with room for the long shield.
        let short = Self.count(try await Self.render(try shields("1"), zoom: 13), near: SIMD3(0, 192, 0))
        let long = Self.count(try await Self.render(try shields("E18 E75"), zoom: 13), near: SIMD3(0, 192, 0))
        #expect(short > 50, "short shield pixels: \(short)")
        #expect(Double(long) > 2.5 * Double(short), "long \(long) vs short \(short)")
    }

    /// Fill and background patterns repeat a sprite image; a missing image leaves the layer out
    /// rather than painting it in its colour.
    @Test func patternsRepeatTheSpriteImageAndMissingOnesDrawNothing() async throws {
        func buildings(_ pattern: String) throws -> Style {
            try Self.style(layers: """
            {"id": "buildings", "type": "fill", "source": "openmaptiles", "source-layer": "building",
             "paint": {"fill-pattern": "\(pattern)", "fill-color": "#000000"}}
            """)
        }
        let badgeRed = SIMD3(200, 48, 48)
        let drawn = try await Self.render(try buildings("hospital"), zoom: 16)
        #expect(Self.count(drawn, near: badgeRed) > 500)
        let missing = try await Self.render(try buildings("no-such-pattern"), zoom: 16)
        #expect(Self.count(missing, near: badgeRed) == 0)
        #expect(Self.count(missing, near: SIMD3(0, 0, 0)) < 50, "the fill colour must not stand in for the pattern")
        // A background pattern covers the whole map.
        let background = try await Self.render(try Style(data: Data("""
            {"version": 8, "sprite": "\(Self.spriteBase)", "sources": {"openmaptiles": {"type": "vector", "url": "x"}},
             "layers": [{"id": "bg", "type": "background", "paint": {"background-pattern": "hospital"}}]}
            """.utf8)), zoom: 16)
        #expect(Self.count(background, near: badgeRed) > 400 * 240 / 3)
    }

    /// A line painted with a sprite image (line-pattern) shows the image along the road, not
    /// its line colour; a missing image leaves the layer out, as MapLibre does.
    @Test func linePatternsRepeatTheImageAlongTheLineAndMissingOnesDrawNothing() async throws {
        func roads(_ pattern: String) throws -> Style {
            try Self.style(layers: """
            {"id": "roads", "type": "line", "source": "openmaptiles", "source-layer": "transportation",
             "paint": {"line-pattern": "\(pattern)", "line-color": "#000000", "line-width": 16}}
            """)
        }
        let badgeRed = SIMD3(200, 48, 48)
        let drawn = try await Self.render(try roads("hospital"), zoom: 16)
        #expect(Self.count(drawn, near: badgeRed) > 300)
        #expect(Self.count(drawn, near: SIMD3(0, 0, 0)) < 50, "the line colour must not show under the pattern")
        let missing = try await Self.render(try roads("no-such-pattern"), zoom: 16)
        #expect(Self.count(missing, near: badgeRed) == 0)
        #expect(Self.count(missing, near: SIMD3(0, 0, 0)) < 50)
        // The same roads in their colour, for scale: the pattern covers about as much.
        let plain = try await Self.render(try Self.style(layers: """
            {"id": "roads", "type": "line", "source": "openmaptiles", "source-layer": "transportation",
             "paint": {"line-color": "#000000", "line-width": 16}}
            """), zoom: 16)
        #expect(Self.count(plain, near: SIMD3(0, 0, 0)) > Self.count(drawn, near: badgeRed))
    }

    /// Anchors along a line as MapLibre puts them at each zoom: evenly spaced at every level,
    /// the first where the symbol just fits, a short piece at its middle once the symbol fits.
    @Test func lineAnchorsAreEvenAtEveryLevelAndShortPiecesGetTheirMiddle() {
        let single = TileLayoutBuilder.lineAnchors(length: 1000, halfLength: 20, spacing: 300, clearance: 10, levels: 0,
                                                   continues: false)
        #expect(single.map(\.distance) == [30, 330, 630, 930] && single.allSatisfy { $0.level == 0 })
        let deep = TileLayoutBuilder.lineAnchors(length: 1000, halfLength: 20, spacing: 300, clearance: 10, levels: 2,
                                                 continues: false)
        for level in 0...2 {
            // What is shown at a level: it and every coarser one, one anchor per spacing / 2^level.
            let shown = deep.filter { $0.level <= level }.map(\.distance)
            let gaps = zip(shown.dropFirst(), shown).map { $0 - $1 }
            #expect(gaps.allSatisfy { abs($0 - 300 / Float(1 << level)) < 0.001 }, "level \(level): \(shown)")
        }
        // 30 units long: the symbol (40) does not fit at the tile's zoom, its half (20) does one level up.
        let short = TileLayoutBuilder.lineAnchors(length: 30, halfLength: 20, spacing: 300, clearance: 10, levels: 4,
                                                  continues: false)
        #expect(short.first.map { $0.distance == 15 && $0.level == 1 } == true, "\(short)")
        // A line coming in over the tile's edge keeps its neighbour's rhythm: half a spacing in.
        let continued = TileLayoutBuilder.lineAnchors(length: 1000, halfLength: 20, spacing: 300, clearance: 10,
                                                      levels: 0, continues: true)
        #expect(continued.map(\.distance) == [150, 450, 750])
    }

    /// Pieces of one street are joined end to start before labels are placed along them, as
    /// MapLibre joins them; other names, lines running the other way and multi-lines stay apart.
    @Test func piecesOfOneStreetAreJoinedForItsLabel() {
        func line(_ name: String, _ points: [(Int32, Int32)], parts: Int = 1) -> (Int, VectorTileFeature) {
            let part = points.map { TilePoint(x: $0.0, y: $0.1) }
            return (0, VectorTileFeature(type: .lineString, properties: ["name": .string(name)],
                                         geometry: Array(repeating: part, count: parts)))
        }
        let features = [
            line("Aleksanterinkatu", [(0, 0), (10, 0)]), line("Aleksanterinkatu", [(20, 0), (30, 5)]),
            line("Mikonkatu", [(10, 0), (10, 40)]), line("Aleksanterinkatu", [(10, 0), (20, 0)]),
            line("Aleksanterinkatu", [(50, 0), (30, 5)]), line("Aleksanterinkatu", [(30, 5), (40, 5)], parts: 2),
        ]
        let merged = TileLayoutBuilder.mergedLines(features) {
            if case .string(let name)? = $0.properties["name"] { name } else { "" }
        }
        let lines = merged.map { $0.1.geometry[0].map { [$0.x, $0.y] } }
        #expect(lines == [[[0, 0], [10, 0], [20, 0], [30, 5]], [[10, 0], [10, 40]], [[50, 0], [30, 5]], [[30, 5], [40, 5]]],
                "\(lines)")
    }

    /// One-way arrows along the bundled roads at z16: every piece of road gets its arrows, even
    /// where several pieces start at one junction, and icons without text are not kept apart
    /// like repeated labels (that left half of MapLibre's arrows out).
    @Test func everyOneWayPieceGetsItsArrows() async throws {
        let style = try Self.style(layers: """
            {"id": "arrows", "type": "symbol", "source": "openmaptiles", "source-layer": "transportation",
             "filter": ["==", ["get", "oneway"], 1],
             "layout": {"symbol-placement": "line", "symbol-spacing": 75, "icon-image": "oneway", "icon-size": 0.5}}
            """)
        let context = try await RenderContext()
        let renderer = try await MapRenderer(context: context, width: 800, height: 480, style: style,
                                             tiles: try openTileSource(at: TestPaths.tiles), fonts: bundledFonts,
                                             camera: Camera(center: helsinki, zoom: 16))
        await renderer.setOverlays(MapOverlays(showsControls: false))
        let report = await renderer.renderWhenLoaded()
        await context.shutdown()
        // 35 were placed before; MapLibre Native draws about 60 arrows over this view.
        #expect(report.labels >= 55, "\(report.labels) arrows")
    }

    /// Circles at place points: fill and ring in their colours, the radius following the zoom.
    @Test func circlesDrawWithTheirStrokeAndZoomDependentRadius() async throws {
        func circles(radius: String) throws -> Style {
            try Self.style(layers: """
            {"id": "dots", "type": "circle", "source": "openmaptiles", "source-layer": "place",
             "paint": {"circle-radius": \(radius), "circle-color": "#0000ff", "circle-stroke-color": "#ff0000",
                       "circle-stroke-width": 3}}
            """)
        }
        let small = try await Self.render(try circles(radius: "6"))
        let blueSmall = Self.count(small, near: SIMD3(0, 0, 255)), redSmall = Self.count(small, near: SIMD3(255, 0, 0))
        #expect(blueSmall > 0 && redSmall > 0)
        let large = try await Self.render(try circles(radius: "[\"interpolate\", [\"linear\"], [\"zoom\"], 10, 2, 14, 12]"))
        let blueLarge = Self.count(large, near: SIMD3(0, 0, 255))
        // Radius 12 against 6: about four times the disc.
        #expect(Double(blueLarge) > 3 * Double(blueSmall), "large \(blueLarge) vs small \(blueSmall)")
    }
}

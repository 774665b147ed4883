import CFreeType
import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The bundled fonts, found relative to this file (package root is three levels up).
let bundledFontsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("assets/fonts")

/// One library for the whole test run: loading is cheap, but sharing it also exercises thread safety.
let bundledFonts: FontLibrary = {
    do {
        return try FontLibrary(directory: bundledFontsDirectory)
    } catch {
        fatalError("assets/fonts cannot be loaded: \(error)")
    }
}()

/// Reads a glyph directly with FreeType, independently of the code under test.
struct FreeTypeOracle: ~Copyable {
    private var library: FT_Library?
    private var face: FT_Face?

    init(fontFile: String, pixelSize: UInt32 = 24) {
        FT_Init_FreeType(&library)
        FT_New_Face(library, bundledFontsDirectory.appendingPathComponent(fontFile).path, 0, &face)
        FT_Set_Pixel_Sizes(face, 0, pixelSize)
    }

    deinit {
        FT_Done_Face(face)
        FT_Done_FreeType(library)
    }

    var unitsPerEm: Float { Float(face?.pointee.units_per_EM ?? 0) }

    /// Advance of a character in font units, unscaled and unhinted.
    func advanceUnits(of character: Unicode.Scalar) -> Float {
        let glyph = FT_Get_Char_Index(face, FT_ULong(character.value))
        FT_Load_Glyph(face, glyph, FT_Int32(FT_LOAD_NO_SCALE))
        return Float(face?.pointee.glyph.pointee.advance.x ?? 0)
    }

    /// FreeType's anti-aliased coverage bitmap of a character: (left, top, width, height, bytes).
    func coverage(of character: Unicode.Scalar) -> (left: Int, top: Int, width: Int, height: Int, bytes: [UInt8]) {
        let glyph = FT_Get_Char_Index(face, FT_ULong(character.value))
        FT_Load_Glyph(face, glyph, FT_Int32(FT_LOAD_NO_HINTING))
        guard let slot = face?.pointee.glyph, FT_Render_Glyph(slot, FT_RENDER_MODE_NORMAL) == 0 else {
            return (0, 0, 0, 0, [])
        }
        let bitmap = slot.pointee.bitmap
        let (width, height, pitch) = (Int(bitmap.width), Int(bitmap.rows), Int(bitmap.pitch))
        let bytes = (0..<height).flatMap { row in (0..<width).map { bitmap.buffer[row * pitch + $0] } }
        return (Int(slot.pointee.bitmap_left), Int(slot.pointee.bitmap_top), width, height, bytes)
    }

    /// Left bearing and width of a character's outline at the pixel size, unhinted, in pixels.
    func outlineExtent(of character: Unicode.Scalar) -> (left: Float, width: Float, top: Float, height: Float) {
        let glyph = FT_Get_Char_Index(face, FT_ULong(character.value))
        FT_Load_Glyph(face, glyph, FT_Int32(FT_LOAD_NO_HINTING))
        guard let metrics = face?.pointee.glyph.pointee.metrics else { return (0, 0, 0, 0) }
        return (Float(metrics.horiBearingX) / 64, Float(metrics.width) / 64,
                Float(metrics.horiBearingY) / 64, Float(metrics.height) / 64)
    }
}

/// Latin-1, Latin Extended-A, Greek and Cyrillic letters: several hundred distinct glyphs.
let manyScalars: [Unicode.Scalar] = [0x21...0x7E, 0xC0...0x17F, 0x391...0x3C9, 0x410...0x44F]
    .flatMap { $0.compactMap(Unicode.Scalar.init) }
    .filter { $0.properties.generalCategory != .unassigned }

@Suite struct GlyphAtlasTests {
    // MARK: Fonts

    @Test func loadsBundledFontsUnderMapLibreNames() {
        #expect(bundledFonts.fontNames.sorted() == ["Noto Sans Bold", "Noto Sans Regular"])
        let bold = bundledFonts.resolve(["Noto Sans Bold"])
        #expect(bundledFonts.name(of: bold) == "Noto Sans Bold")
        let regular = bundledFonts.resolve(["Open Sans Semibold", "Noto Sans Regular"])
        #expect(bundledFonts.name(of: regular) == "Noto Sans Regular")
        #expect(bold != regular)
        // An unknown stack falls back to the Regular face rather than to the alphabetically first Bold.
        #expect(bundledFonts.resolve(["Metropolis Black Italic"]) == regular)
        #expect(bundledFonts.resolve([]) == regular)
    }

    @Test func missingFolderIsATypedError() {
        let missing = URL(fileURLWithPath: "/nonexistent/carwindow-fonts")
        #expect {
            _ = try FontLibrary(directory: missing)
        } throws: { error in
            guard case .directoryUnreadable(let path, _) = error as? FontError else { return false }
            return path == missing.path
        }
    }

    @Test func folderWithoutFontsIsATypedError() throws {
        let folder = try temporaryFolder(files: ["README.txt": Data("no fonts here".utf8)])
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: FontError.noFonts(path: folder.path)) { try FontLibrary(directory: folder) }
    }

    @Test func corruptFontIsATypedErrorNamingFreeTypesCode() throws {
        let folder = try temporaryFolder(files: ["Broken.ttf": Data(repeating: 0x42, count: 300)])
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect {
            _ = try FontLibrary(directory: folder)
        } throws: { error in
            guard case .unreadableFace(let path, let code, let name) = error as? FontError else { return false }
            // 0x02 is FT_Err_Unknown_File_Format in fterrdef.h.
            return path.hasSuffix("Broken.ttf") && code == 0x02 && name == "Unknown_File_Format"
                && (error as? FontError)?.description.contains("Broken.ttf") == true
        }
    }

    // MARK: Packing

    @Test func hundredsOfGlyphsPackWithoutOverlapAndTheAtlasGrows() throws {
        let atlas = GlyphAtlas(library: bundledFonts, initialSize: 128, maximumSize: 4096)
        #expect(atlas.size == (128, 128))
        let fonts = [bundledFonts.resolve(["Noto Sans Regular"]), bundledFonts.resolve(["Noto Sans Bold"])]
        var keys: Set<GlyphKey> = []
        for font in fonts {
            for scalar in manyScalars {
                let found = try #require(bundledFonts.glyph(for: scalar, preferring: font))
                let key = GlyphKey(font: found.font, glyph: found.glyph)
                keys.insert(key)
                #expect(atlas.glyph(key) != nil, "\(scalar)")
            }
        }
        let rects = atlas.packedRects
        #expect(rects.count == keys.count)
        #expect(rects.count > 800)
        // About 900 glyphs of about 30x36 px (24 px plus the spread on each side): the 128 px wide
        // atlas reaches the maximum height first, then adds width.
        let (width, height) = atlas.size
        #expect(height == 4096 && width == 256, "\(width)x\(height)")
        for rect in rects {
            #expect(rect.x >= GlyphAtlas.padding && rect.y >= GlyphAtlas.padding)
            #expect(rect.x + rect.width + GlyphAtlas.padding <= width)
            #expect(rect.y + rect.height + GlyphAtlas.padding <= height)
        }
        // No overlap even when each rect is widened by the padding: neighbours keep a blank texel between them.
        let sorted = rects.sorted { ($0.y, $0.x) < ($1.y, $1.x) }
        var overlaps = 0
        for (index, rect) in sorted.enumerated() {
            let padded = AtlasRect(x: rect.x, y: rect.y, width: rect.width + GlyphAtlas.padding,
                                   height: rect.height + GlyphAtlas.padding)
            for other in sorted[(index + 1)...] where other.y < padded.y + padded.height {
                if padded.intersects(other) { overlaps += 1 }
            }
            for other in sorted[..<index] where padded.intersects(other) { overlaps += 1 }
        }
        #expect(overlaps == 0)

        // Growth kept the pixels: an early glyph still holds exactly FreeType's raster.
        let aGlyph = try #require(bundledFonts.glyph(for: "a", preferring: fonts[0]))
        let raster = try bundledFonts.rasterize(aGlyph.glyph, in: aGlyph.font)
        let rect = try #require(atlas.glyph(GlyphKey(font: aGlyph.font, glyph: aGlyph.glyph))?.rect)
        let copied = atlas.withBitmap { width, _, bytes in
            (0..<rect.height).flatMap { row in
                (0..<rect.width).map { bytes[(rect.y + row) * width + rect.x + $0] }
            }
        }
        #expect(copied == raster.pixels)
    }

    @Test func fullAtlasRefusesNewGlyphsWithoutCrashing() throws {
        let atlas = GlyphAtlas(library: bundledFonts, initialSize: 64, maximumSize: 128)
        let font = bundledFonts.defaultFont
        var placed = 0, refused = 0
        for scalar in manyScalars {
            let found = try #require(bundledFonts.glyph(for: scalar, preferring: font))
            if atlas.glyph(GlyphKey(font: found.font, glyph: found.glyph)) != nil { placed += 1 } else { refused += 1 }
        }
        #expect(atlas.size == (128, 128))
        #expect(placed > 5 && refused > 100)
        let generation = atlas.generation
        let late = try #require(bundledFonts.glyph(for: "Ж", preferring: font))
        _ = atlas.glyph(GlyphKey(font: late.font, glyph: late.glyph))
        #expect(atlas.generation == generation, "a refused glyph does not change the bitmap")
    }

    @Test func generationCountsBitmapChangesOnly() throws {
        let atlas = GlyphAtlas(library: bundledFonts)
        let font = bundledFonts.defaultFont
        #expect(atlas.generation == 0)
        let glyphs = atlas.glyphs(for: "Töölö", font: font)
        #expect(glyphs.count == 3, "T, ö, l")
        #expect(atlas.generation == 3)
        #expect(atlas.glyphCount == 3)
        _ = atlas.glyphs(for: "Töölö", font: font)
        #expect(atlas.generation == 3, "cached glyphs are not rasterised again")
        let space = try #require(atlas.glyphs(for: " ", font: font)[" "])
        #expect(space.rect == nil && space.advance > 0)
        #expect(atlas.generation == 3, "a space has no ink and takes no atlas room")
        _ = atlas.glyphs(for: "x", font: font)
        #expect(atlas.generation == 4)
    }

    @Test func withBitmapHandsOverTheWholeBitmap() {
        let atlas = GlyphAtlas(library: bundledFonts)
        _ = atlas.glyphs(for: "Kamppi", font: bundledFonts.defaultFont)
        let (count, nonZero) = atlas.withBitmap { width, height, bytes in
            (width * height == bytes.count ? bytes.count : -1, bytes.contains { $0 != 0 })
        }
        #expect(count == 512 * 512)
        #expect(nonZero)
    }

    // MARK: Distance field

    /// The ring of an 'o': its counter and surroundings are outside, its stroke inside, and the
    /// outline lies at `sdfEdgeValue`. Expected edge positions come from FreeType's outline metrics
    /// (unhinted, 24 px), read independently through CFreeType.
    @Test func distanceFieldIsInsideOnTheStrokeAndOutsideInTheCounter() throws {
        let font = bundledFonts.resolve(["Noto Sans Regular"])
        let found = try #require(bundledFonts.glyph(for: "o", preferring: font))
        let raster = try bundledFonts.rasterize(found.glyph, in: found.font)
        let oracle = FreeTypeOracle(fontFile: "NotoSans-Regular.ttf")
        let outline = oracle.outlineExtent(of: "o")

        // The bitmap carries the spread on every side of the outline's box.
        let spread = Int(GlyphAtlas.spread)
        #expect(abs(Float(raster.width) - (outline.width + 2 * GlyphAtlas.spread)) <= 2)
        #expect(abs(Float(raster.height) - (outline.height + 2 * GlyphAtlas.spread)) <= 2)
        #expect(abs(Float(raster.left) - (outline.left - GlyphAtlas.spread)) <= 1)
        #expect(abs(Float(raster.top) - (outline.top + GlyphAtlas.spread)) <= 1)

        func value(_ column: Int, _ row: Int) -> UInt8 { raster.pixels[row * raster.width + column] }
        let middleRow = raster.height / 2
        let centre = value(raster.width / 2, middleRow)
        #expect(centre < GlyphAtlas.sdfEdgeValue, "the counter of the 'o' is outside the glyph")
        #expect(value(0, 0) == 0, "far outside saturates at 0")
        let rowValues = (0..<raster.width).map { value($0, middleRow) }
        #expect(rowValues.contains { $0 > GlyphAtlas.sdfEdgeValue + 8 }, "the stroke is inside")

        // Sample the field where the outline's left edge is (bitmap x = outline.left - raster.left;
        // texel c covers c...c+1, so its centre is at c + 0.5) by linear interpolation.
        let edgeX = outline.left - Float(raster.left) - 0.5
        let lower = Int(edgeX.rounded(.down))
        let fraction = edgeX - Float(lower)
        let interpolated = Float(rowValues[lower]) * (1 - fraction) + Float(rowValues[lower + 1]) * fraction
        #expect(abs(interpolated - Float(GlyphAtlas.sdfEdgeValue)) <= 8, "outline at \(interpolated)")
        // One pixel further out the value drops by about 128 / spread.
        let slope = Float(rowValues[lower + 1]) - Float(rowValues[lower])
        #expect(abs(slope - GlyphAtlas.sdfValuesPerPixel) <= 3, "slope \(slope) per pixel")
        #expect(spread == 8)
    }

    /// Composite glyphs overlap their parts (the cedilla under the C of Ç); FreeType's outline SDF
    /// renderer leaves outside-valued seams there. Every pixel FreeType's own anti-aliased rendering
    /// covers to at least 75 % must be inside (>= 128) in the field, and every uncovered one outside.
    @Test func overlappingComponentsHaveNoSeams() throws {
        let bold = bundledFonts.resolve(["Noto Sans Bold"])
        let oracle = FreeTypeOracle(fontFile: "NotoSans-Bold.ttf")
        for character: Unicode.Scalar in ["Ç", "Į", "ą", "ę", "Å", "ø"] {
            let found = try #require(bundledFonts.glyph(for: character, preferring: bold))
            let raster = try bundledFonts.rasterize(found.glyph, in: found.font)
            let coverage = oracle.coverage(of: character)
            var wrong = 0
            for row in 0..<coverage.height {
                for column in 0..<coverage.width {
                    let x = column + coverage.left - raster.left, y = raster.top - coverage.top + row
                    guard (0..<raster.width).contains(x), (0..<raster.height).contains(y) else {
                        wrong += 1
                        continue
                    }
                    let covered = coverage.bytes[row * coverage.width + column]
                    let field = raster.pixels[y * raster.width + x]
                    if covered >= 192 && field < GlyphAtlas.sdfEdgeValue { wrong += 1 }
                    if covered == 0 && field >= GlyphAtlas.sdfEdgeValue { wrong += 1 }
                }
            }
            #expect(wrong == 0, "\(character): \(wrong) pixels on the wrong side")
        }
    }

    // MARK: Helpers

    private func temporaryFolder(files: [String: Data]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-fonts-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, data) in files { try data.write(to: folder.appendingPathComponent(name)) }
        return folder
    }
}

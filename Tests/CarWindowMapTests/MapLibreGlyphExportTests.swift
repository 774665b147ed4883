import Foundation
import Testing
@testable import CarWindowMap

/// The glyph PBFs the benchmark hands MapLibre Native: MapLibre's format, read back by a decoder
/// written here from the format's description (glyphs.proto), not by the writer's code.
@Suite struct MapLibreGlyphExportTests {
    struct Glyph { var id: Int; var bitmap: [UInt8]; var width: Int; var height: Int; var left: Int; var top: Int; var advance: Int }
    struct Stack { var name = ""; var range = ""; var glyphs: [Int: Glyph] = [:] }

    private var regular: FontID { bundledFonts.resolve(["Noto Sans Regular"]) }

    @Test func theFirstRangeIsOneStackNamedAfterTheFaceWithAWellFormedRecordPerGlyph() throws {
        let data = try #require(try MapLibreGlyphExport.range(startingAt: 0, of: regular, in: bundledFonts))
        let stacks = try Self.decode([UInt8](data))
        #expect(stacks.count == 1)
        let stack = try #require(stacks.first)
        #expect(stack.name == "Noto Sans Regular")
        #expect(stack.range == "0-255")
        for character in "Aä ,Helsinki" {
            #expect(stack.glyphs[Int(character.unicodeScalars.first!.value)] != nil, "no glyph for \(character)")
        }
        #expect(stack.glyphs.keys.allSatisfy { (0...255).contains($0) })
        for glyph in stack.glyphs.values {
            let expected = glyph.width == 0 ? 0 : (glyph.width + 6) * (glyph.height + 6)
            #expect(glyph.bitmap.count == expected, "glyph \(glyph.id): \(glyph.bitmap.count) bytes for \(glyph.width)x\(glyph.height)")
        }
    }

    /// node-fontnik's PBF of the same font gives 'A' 15x17 px, left 0, top -9 (its top is the
    /// glyph's from the face's ascender), advance 15, and a space top -26 and advance 6: ours must
    /// agree within the pixel FreeType's bitmap bounds may add.
    @Test func metricsAgreeWithNodeFontnikWithinAPixel() throws {
        let data = try #require(try MapLibreGlyphExport.range(startingAt: 0, of: regular, in: bundledFonts))
        let glyphs = try #require(try Self.decode([UInt8](data)).first).glyphs
        let a = try #require(glyphs[0x41])
        #expect(abs(a.width - 15) <= 1 && abs(a.height - 17) <= 1, "\(a.width)x\(a.height)")
        #expect(abs(a.left - 0) <= 1 && abs(a.top - -9) <= 1, "left \(a.left), top \(a.top)")
        #expect(a.advance == 15)
        let space = try #require(glyphs[0x20])
        #expect(space.width == 0 && space.bitmap.isEmpty && space.top == -26 && space.advance == 6)
    }

    /// MapLibre draws the outline where the field is 192 (a 0.25 cutoff) and counts 32 values a
    /// pixel: across the stem of 'l', the three-pixel border reads about 96 and the stem's middle
    /// passes 192.
    @Test func theFieldHasMapLibresEdgeAndSlope() throws {
        let data = try #require(try MapLibreGlyphExport.range(startingAt: 0, of: regular, in: bundledFonts))
        let l = try #require(try Self.decode([UInt8](data)).first?.glyphs[0x6C])
        let stride = l.width + 6, row = (l.height + 6) / 2
        let line = Array(l.bitmap[(row * stride)..<((row + 1) * stride)])
        #expect((70...130).contains(Int(line.first!)) && (70...130).contains(Int(line.last!)), "\(line)")
        #expect(line.max()! > 192, "\(line)")
        let rising = zip(line, line.dropFirst()).prefix(3).map { Int($1) - Int($0) }
        #expect(rising.allSatisfy { (28...36).contains($0) }, "steps \(rising) in \(line)")
    }

    @Test func aRangeTheFaceHasNoGlyphInIsNotWritten() throws {
        #expect(try MapLibreGlyphExport.range(startingAt: 0x4E00, of: regular, in: bundledFonts) == nil)
    }

    @Test func writingMakesAFolderPerFaceWithItsRanges() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("glyph-export-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try MapLibreGlyphExport.write(bundledFonts, to: folder)
        for face in bundledFonts.fontNames {
            let ranges = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(face).path)
            #expect(ranges.contains("0-255.pbf") && ranges.contains("8192-8447.pbf"), "\(face): \(ranges.sorted())")
        }
        #expect(files >= 2 * 3)
    }

    // MARK: - A decoder of glyphs.proto of our own

    struct Malformed: Error {}

    static func decode(_ bytes: [UInt8]) throws -> [Stack] {
        var stacks: [Stack] = []
        try fields(bytes) { field, value, payload in
            guard field == 1, let payload else { return }
            var stack = Stack()
            try fields(payload) { field, _, payload in
                switch (field, payload) {
                case (1, let text?): stack.name = String(decoding: text, as: UTF8.self)
                case (2, let text?): stack.range = String(decoding: text, as: UTF8.self)
                case (3, let record?):
                    var glyph = Glyph(id: -1, bitmap: [], width: 0, height: 0, left: 0, top: 0, advance: 0)
                    try fields(record) { field, value, payload in
                        let signed = Int(Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1))
                        switch field {
                        case 1: glyph.id = Int(value)
                        case 2: glyph.bitmap = payload ?? []
                        case 3: glyph.width = Int(value)
                        case 4: glyph.height = Int(value)
                        case 5: glyph.left = signed
                        case 6: glyph.top = signed
                        case 7: glyph.advance = Int(value)
                        default: throw Malformed()
                        }
                    }
                    stack.glyphs[glyph.id] = glyph
                default: throw Malformed()
                }
            }
            stacks.append(stack)
        }
        return stacks
    }

    /// Calls `body` with each field's number and its varint value, or its bytes when length-delimited.
    static func fields(_ bytes: [UInt8], _ body: (Int, UInt64, [UInt8]?) throws -> Void) throws {
        var index = 0
        func varint() throws -> UInt64 {
            var value: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 64 else { throw Malformed() }
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }
        while index < bytes.count {
            let key = try varint()
            switch key & 7 {
            case 0: try body(Int(key >> 3), try varint(), nil)
            case 2:
                let length = Int(try varint())
                guard length <= bytes.count - index else { throw Malformed() }
                try body(Int(key >> 3), 0, Array(bytes[index..<(index + length)]))
                index += length
            default: throw Malformed()
            }
        }
    }
}

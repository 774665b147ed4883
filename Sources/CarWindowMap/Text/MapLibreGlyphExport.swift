import Foundation

/// Writes the faces of a ``FontLibrary`` as MapLibre glyph PBFs (`<fontstack>/<start>-<end>.pbf`),
/// so MapLibre Native draws labels with the same fonts as CarWindow without node-fontnik.
///
/// The benchmark's MapLibre Native peer needs them on machines that have only the bundled fonts.
/// MapLibre's format differs from our atlas in three ways this converts: a 3-pixel border instead
/// of our 8, the outline at byte 192 with 32 values a pixel instead of 128 and 16 (a 0.25 cutoff
/// over an 8-pixel radius, as fontnik writes), and `top` measured from the face's ascender rather
/// than the baseline.
package enum MapLibreGlyphExport {
    /// Code points a range file covers.
    package static let rangeSize = 256
    /// MapLibre asks for ranges of the Basic Multilingual Plane only.
    package static let lastCodePoint = 0xFFFF

    private static let border = 3
    private static let edgeValue = 192
    private static let valuesPerPixel = 32

    /// Writes every range of every face that holds at least one glyph into `directory`, one folder
    /// per face named as the face ("Noto Sans Regular"). Returns how many range files it wrote.
    package static func write(_ fonts: FontLibrary, to directory: URL) throws -> Int {
        var written = 0
        for index in fonts.fontNames.indices {
            let font = FontID(index: index)
            let folder = directory.appendingPathComponent(fonts.name(of: font), isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for start in stride(from: 0, through: lastCodePoint, by: rangeSize) {
                guard let data = try range(startingAt: start, of: font, in: fonts) else { continue }
                try data.write(to: folder.appendingPathComponent("\(start)-\(start + rangeSize - 1).pbf"))
                written += 1
            }
        }
        return written
    }

    /// One range file's bytes, or nil when the face has no glyph in the range.
    package static func range(startingAt start: Int, of font: FontID, in fonts: FontLibrary) throws -> Data? {
        let ascender = Int((fonts.verticalMetrics(of: font).ascender * Float(GlyphRaster.baseSize)).rounded(.up))
        var glyphs = ProtobufWriter()
        for value in start..<(start + rangeSize) {
            guard let scalar = Unicode.Scalar(value),
                  let found = fonts.glyph(for: scalar, preferring: font), found.font == font else { continue }
            let raster = try fonts.rasterize(found.glyph, in: font)
            let advance = Int((fonts.advance(of: found.glyph, in: font) * Float(GlyphRaster.baseSize)).rounded())
            glyphs.message(field: 3, glyphRecord(value, raster, advance: advance, ascender: ascender))
        }
        guard !glyphs.bytes.isEmpty else { return nil }
        var stack = ProtobufWriter()
        stack.string(field: 1, fonts.name(of: font))
        stack.string(field: 2, "\(start)-\(start + rangeSize - 1)")
        stack.bytes.append(contentsOf: glyphs.bytes)
        var file = ProtobufWriter()
        file.message(field: 1, stack)
        return Data(file.bytes)
    }

    private static func glyphRecord(_ codePoint: Int, _ raster: GlyphRaster, advance: Int, ascender: Int) -> ProtobufWriter {
        var glyph = ProtobufWriter()
        glyph.unsigned(field: 1, UInt64(codePoint))
        let trim = GlyphRaster.spread - border
        let width = raster.width - 2 * GlyphRaster.spread, height = raster.height - 2 * GlyphRaster.spread
        guard width > 0, height > 0 else {
            // An outline-less glyph (a space) still carries its advance and the face's ascender.
            glyph.unsigned(field: 3, 0)
            glyph.unsigned(field: 4, 0)
            glyph.signed(field: 5, 0)
            glyph.signed(field: 6, Int64(-ascender))
            glyph.unsigned(field: 7, UInt64(max(advance, 0)))
            return glyph
        }
        var bitmap: [UInt8] = []
        bitmap.reserveCapacity((width + 2 * border) * (height + 2 * border))
        for row in trim..<(raster.height - trim) {
            for column in trim..<(raster.width - trim) {
                let ours = Int(raster.pixels[row * raster.width + column]) - Int(GlyphAtlas.sdfEdgeValue)
                let theirs = edgeValue + ours * valuesPerPixel / Int(GlyphAtlas.sdfValuesPerPixel)
                bitmap.append(UInt8(clamping: theirs))
            }
        }
        glyph.lengthDelimited(field: 2, bitmap)
        glyph.unsigned(field: 3, UInt64(width))
        glyph.unsigned(field: 4, UInt64(height))
        glyph.signed(field: 5, Int64(raster.left + GlyphRaster.spread))
        glyph.signed(field: 6, Int64(raster.top - GlyphRaster.spread - ascender))
        glyph.unsigned(field: 7, UInt64(max(advance, 0)))
        return glyph
    }
}

/// The few protobuf encodings a glyph PBF uses: varints, zigzag varints and length-delimited fields.
private struct ProtobufWriter {
    var bytes: [UInt8] = []

    mutating func unsigned(field: Int, _ value: UInt64) {
        varint(UInt64(field << 3))
        varint(value)
    }

    mutating func signed(field: Int, _ value: Int64) {
        unsigned(field: field, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func lengthDelimited(field: Int, _ content: [UInt8]) {
        varint(UInt64(field << 3 | 2))
        varint(UInt64(content.count))
        bytes.append(contentsOf: content)
    }

    mutating func string(field: Int, _ text: String) { lengthDelimited(field: field, Array(text.utf8)) }

    mutating func message(field: Int, _ message: ProtobufWriter) { lengthDelimited(field: field, message.bytes) }

    private mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }
}

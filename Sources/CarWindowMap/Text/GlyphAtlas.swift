import CarWindowSystemSupport
import Logging

/// A rectangle of the glyph atlas, in atlas pixels with y down from the first row.
struct AtlasRect: Hashable, Sendable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int

    init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    func intersects(_ other: AtlasRect) -> Bool {
        x < other.x + other.width && other.x < x + width && y < other.y + other.height && other.y < y + height
    }
}

/// A glyph placed in the atlas, with metrics in pixels at ``GlyphAtlas/baseSize``.
struct AtlasGlyph: Hashable, Sendable {
    /// Where the distance field lies in the atlas; nil for glyphs without ink (spaces).
    var rect: AtlasRect?
    /// Left edge of the bitmap right of the pen position (negative: it starts left of the pen);
    /// includes the spread border.
    var bearingLeft: Float
    /// Top edge of the bitmap above the baseline; includes the spread border.
    var bearingTop: Float
    /// Unhinted horizontal advance.
    var advance: Float
}

/// Identifies one rasterisation: a glyph index of one face.
struct GlyphKey: Hashable, Sendable {
    var font: FontID
    var glyph: UInt32
}

/// The single-channel texture holding every label glyph as a signed distance field.
///
/// Several tile workers add glyphs while the render thread uploads, so all state sits behind a mutex.
/// Glyphs are never evicted: the atlas grows (height first, then width, each by doubling) up to
/// ``maximumSize``; when full, new glyphs are refused with one warning and labels simply lack them.
final class GlyphAtlas: Sendable {
    /// Pixel size the glyphs are rasterised at (MapLibre's glyph size).
    static let baseSize = Float(GlyphRaster.baseSize)
    /// Width, in base-size pixels, of the distance ramp on each side of a glyph's outline; glyph
    /// bitmaps carry this border so halos up to this width fit.
    static let spread = Float(GlyphRaster.spread)
    /// Byte value on the outline: the shader's edge threshold is `sdfEdgeValue / 255` (0.502). Inside
    /// the glyph is brighter. Measured: FreeType 2.12's SDF renderer maps distance `d` (base-size
    /// pixels, positive inside) to `128 + d * 128 / spread`, clamped to 0...255.
    static let sdfEdgeValue: UInt8 = 128
    /// How many byte values one base-size pixel of distance spans (128 / spread = 16); a halo of `h`
    /// pixels at text size `s` moves the threshold by `h * baseSize / s * sdfValuesPerPixel / 255`.
    static let sdfValuesPerPixel = Float(sdfEdgeValue) / spread
    /// Empty texels between glyphs, so linear filtering never bleeds a neighbour in.
    static let padding = 1
    /// Glyph bitmaps bigger than this (in either direction) are refused: no Latin, Greek or Cyrillic
    /// glyph comes close at 24 px, so such a glyph is a broken font that would waste the atlas.
    static let maximumGlyphSide = 160

    /// A row of glyphs of similar height, filled left to right up to `limitX`.
    private struct Shelf {
        var y: Int
        var height: Int
        var usedX: Int
        var limitX: Int
    }

    /// A vertical band of the bitmap that stacks shelves from the top. Growing the height extends
    /// every column; growing the width adds a new column on the right, so tall glyphs find room too.
    private struct Column {
        var x: Int
        var width: Int
        var nextShelfY: Int
    }

    private struct State {
        var width: Int
        var height: Int
        var pixels: [UInt8]
        var columns: [Column]
        var shelves: [Shelf] = []
        var glyphs: [GlyphKey: AtlasGlyph?] = [:]
        var generation = 0
        var warnedFull = false
    }

    let library: FontLibrary
    /// Largest width and height the bitmap may grow to.
    let maximumSize: Int
    private let state: LockedState<State>

    /// An empty atlas of `initialSize` squared (rounded to a power of two, at least 64) that grows
    /// to at most `maximumSize` squared.
    init(library: FontLibrary, initialSize: Int = 512, maximumSize: Int = 4096) {
        let initial = max(64, Self.powerOfTwo(atLeast: min(initialSize, 4096)))
        self.library = library
        self.maximumSize = max(initial, Self.powerOfTwo(atLeast: min(maximumSize, 16384)))
        self.state = LockedState(State(width: initial, height: initial,
                                 pixels: [UInt8](repeating: 0, count: initial * initial),
                                 columns: [Column(x: 0, width: initial, nextShelfY: Self.padding)]))
    }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        var result = 1
        while result < value { result <<= 1 }
        return result
    }

    /// Increases whenever the bitmap changes (a glyph added or the bitmap grown); the renderer
    /// re-uploads when it differs from what it uploaded last. Read it before ``withBitmap(_:)``.
    var generation: Int { state.withLock { $0.generation } }

    /// Current bitmap size in pixels.
    var size: (width: Int, height: Int) { state.withLock { ($0.width, $0.height) } }

    /// Number of glyphs rasterised so far, including inkless ones.
    var glyphCount: Int { state.withLock { $0.glyphs.values.count { $0 != nil } } }

    /// Runs `body` with the bitmap (row-major, one byte per texel, `width * height` bytes) while no
    /// glyph can be added, for the texture upload.
    func withBitmap<R>(_ body: (_ width: Int, _ height: Int, _ bytes: UnsafeRawBufferPointer) -> R) -> R {
        // The result stays on the calling thread; collecting it outside the lock closure keeps the
        // mutex's `sending` result rule out of the caller's way.
        var result: R?
        state.withLock { state in
            let (width, height) = (state.width, state.height)
            state.pixels.withUnsafeBytes { bytes in result = body(width, height, bytes) }
        }
        guard let result else { preconditionFailure("withLock runs its body exactly once") }
        return result
    }

    /// The rasterised glyph of a (face, glyph index), rendering and packing it on first use; nil when
    /// it cannot be rendered or the atlas is full.
    func glyph(_ key: GlyphKey) -> AtlasGlyph? {
        if let cached = state.withLock({ $0.glyphs[key] }) { return cached }
        // Rendering holds only the FreeType lock, so uploads are not blocked by it. Two workers asking
        // for the same new glyph at once may both render it; only the first copy is packed.
        let raster: GlyphRaster
        do {
            raster = try library.rasterize(key.glyph, in: key.font)
        } catch {
            textLogger.warning("Glyph \(key.glyph) of \(library.name(of: key.font)) cannot be rendered: \(error)")
            state.withLock { $0.glyphs[key] = .some(nil) }
            return nil
        }
        let advance = library.advance(of: key.glyph, in: key.font) * Self.baseSize
        return state.withLock { state -> AtlasGlyph? in
            // Another thread may have packed it meanwhile.
            if let cached = state.glyphs[key] { return cached }
            let placed = Self.insert(raster, advance: advance, key: key, into: &state,
                                     maximumSize: maximumSize, fontName: library.name(of: key.font))
            state.glyphs[key] = .some(placed)
            return placed
        }
    }

    /// The glyphs of every scalar of `text` in `font` (falling back to the library's other fonts),
    /// keyed by scalar; scalars no font has are left out.
    func glyphs(for text: String, font: FontID) -> [Unicode.Scalar: AtlasGlyph] {
        var result: [Unicode.Scalar: AtlasGlyph] = [:]
        for scalar in text.unicodeScalars where result[scalar] == nil {
            guard let found = library.glyph(for: scalar, preferring: font),
                  let glyph = glyph(GlyphKey(font: found.font, glyph: found.glyph))
            else { continue }
            result[scalar] = glyph
        }
        return result
    }

    /// The atlas rectangles of every glyph packed so far, for checks.
    var packedRects: [AtlasRect] {
        state.withLock { state in state.glyphs.values.compactMap { $0?.rect } }
    }

    private static func insert(_ raster: GlyphRaster, advance: Float, key: GlyphKey, into state: inout State,
                               maximumSize: Int, fontName: String) -> AtlasGlyph? {
        var glyph = AtlasGlyph(rect: nil, bearingLeft: Float(raster.left), bearingTop: Float(raster.top),
                               advance: advance)
        guard raster.width > 0, raster.height > 0 else { return glyph }
        guard raster.width <= maximumGlyphSide, raster.height <= maximumGlyphSide else {
            textLogger.warning("Glyph \(key.glyph) of \(fontName) is \(raster.width)x\(raster.height) px at 24 px; refusing it")
            return nil
        }
        guard let origin = allocate(width: raster.width, height: raster.height, in: &state, maximumSize: maximumSize)
        else {
            if !state.warnedFull {
                state.warnedFull = true
                textLogger.warning(
                    "Glyph atlas is full at \(state.width)x\(state.height); new glyphs will be missing from labels")
            }
            return nil
        }
        for row in 0..<raster.height {
            let target = (origin.y + row) * state.width + origin.x
            let source = row * raster.width
            state.pixels.replaceSubrange(target..<(target + raster.width),
                                         with: raster.pixels[source..<(source + raster.width)])
        }
        state.generation += 1
        glyph.rect = AtlasRect(x: origin.x, y: origin.y, width: raster.width, height: raster.height)
        return glyph
    }

    /// Shelf packing: the shelf that wastes the least height, else a new shelf, else grow and retry.
    private static func allocate(width: Int, height: Int, in state: inout State,
                                 maximumSize: Int) -> (x: Int, y: Int)? {
        let paddedWidth = width + padding, paddedHeight = height + padding
        while true {
            var best: Int?
            for (index, shelf) in state.shelves.enumerated()
            where shelf.height >= paddedHeight && shelf.limitX - shelf.usedX >= paddedWidth {
                if let current = best, state.shelves[current].height <= shelf.height { continue }
                best = index
            }
            let column = state.columns.firstIndex { column in
                state.height - column.nextShelfY >= paddedHeight && column.width - padding >= paddedWidth
            }
            // A shelf much taller than the glyph would waste most of its height; a new shelf is
            // better unless no column has room left for one.
            if let index = best, state.shelves[index].height * 2 <= paddedHeight * 3 || column == nil {
                let x = state.shelves[index].usedX
                state.shelves[index].usedX += paddedWidth
                return (x, state.shelves[index].y)
            }
            if let column {
                let x = state.columns[column].x + padding, y = state.columns[column].nextShelfY
                state.columns[column].nextShelfY += paddedHeight
                state.shelves.append(Shelf(y: y, height: paddedHeight, usedX: x + paddedWidth,
                                           limitX: state.columns[column].x + state.columns[column].width))
                return (x, y)
            }
            guard grow(&state, maximumSize: maximumSize) else { return nil }
        }
    }

    /// Doubles the height (rows are appended, so placed glyphs keep their coordinates), or once the
    /// height is at the maximum, the width (rows are re-laid out and the new half becomes a column).
    private static func grow(_ state: inout State, maximumSize: Int) -> Bool {
        if state.height < maximumSize {
            state.height *= 2
            state.pixels.append(contentsOf: repeatElement(0, count: state.width * state.height / 2))
        } else if state.width < maximumSize {
            let oldWidth = state.width
            let newWidth = oldWidth * 2
            var pixels = [UInt8](repeating: 0, count: newWidth * state.height)
            for row in 0..<state.height {
                pixels.replaceSubrange(row * newWidth..<(row * newWidth + oldWidth),
                                       with: state.pixels[row * oldWidth..<((row + 1) * oldWidth)])
            }
            state.pixels = pixels
            state.width = newWidth
            state.columns.append(Column(x: oldWidth, width: oldWidth, nextShelfY: padding))
        } else {
            return false
        }
        state.generation += 1
        return true
    }
}

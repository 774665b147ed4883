internal import CFreeType
import Foundation
import Logging
import CarWindowSystemSupport

let textLogger = Logger(label: "carwindow.text")

/// Identifies one face loaded by a ``FontLibrary``; only meaningful with the library that issued it.
public struct FontID: Hashable, Sendable, CustomStringConvertible {
    /// Position of the face in the library's load order.
    public let index: Int

    init(index: Int) {
        self.index = index
    }

    /// "font #<index>", for logs.
    public var description: String { "font #\(index)" }
}

/// Why fonts could not be loaded or used.
public enum FontError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The font folder does not exist or cannot be listed.
    case directoryUnreadable(path: String, reason: String)
    /// The folder exists but holds no `.ttf` or `.otf` file.
    case noFonts(path: String)
    /// A font file could not be opened as a face by FreeType (corrupt, truncated or not a font).
    case unreadableFace(path: String, code: Int32, name: String)
    /// A FreeType call other than opening a face failed.
    case freeType(operation: String, code: Int32, name: String)

    /// What went wrong and what to do about it.
    public var description: String {
        switch self {
        case let .directoryUnreadable(path, reason):
            "Font folder \(path) cannot be read (\(reason)); pass the folder holding the .ttf/.otf files, "
                + "for example assets/fonts."
        case let .noFonts(path):
            "Font folder \(path) contains no .ttf or .otf file; copy at least one font there "
                + "(for example NotoSans-Regular.ttf)."
        case let .unreadableFace(path, code, name):
            "Font file \(path) cannot be opened by FreeType (error \(code) \(name)); replace or remove it."
        case let .freeType(operation, code, name):
            "FreeType call \(operation) failed with error \(code) \(name)."
        }
    }

    /// FreeType's own name for an error code (its error strings are usually compiled out).
    static func name(ofFreeTypeError code: FT_Error) -> String {
        if let cString = FT_Error_String(code) { return String(cString: cString) }
        return switch code {
        case 0x01: "Cannot_Open_Resource"
        case 0x02: "Unknown_File_Format"
        case 0x03: "Invalid_File_Format"
        case 0x04: "Invalid_Version"
        case 0x05: "Lower_Module_Version"
        case 0x06: "Invalid_Argument"
        case 0x07: "Unimplemented_Feature"
        case 0x08: "Invalid_Table"
        case 0x09: "Invalid_Offset"
        case 0x0A: "Array_Too_Large"
        case 0x0B: "Missing_Module"
        case 0x0C: "Missing_Property"
        case 0x10: "Invalid_Glyph_Index"
        case 0x11: "Invalid_Character_Code"
        case 0x12: "Invalid_Glyph_Format"
        case 0x13: "Cannot_Render_Glyph"
        case 0x14: "Invalid_Outline"
        case 0x15: "Invalid_Composite"
        case 0x16: "Too_Many_Hints"
        case 0x17: "Invalid_Pixel_Size"
        case 0x20: "Invalid_Handle"
        case 0x21: "Invalid_Library_Handle"
        case 0x23: "Invalid_Face_Handle"
        case 0x40: "Out_Of_Memory"
        case 0x51: "Cannot_Open_Stream"
        case 0x52: "Invalid_Stream_Seek"
        case 0x53: "Invalid_Stream_Skip"
        case 0x54: "Invalid_Stream_Read"
        case 0x55: "Invalid_Stream_Operation"
        case 0x8E: "Table_Missing"
        default: "Unknown_Error"
        }
    }

    static func freeType(_ operation: String, _ code: FT_Error) -> FontError {
        .freeType(operation: operation, code: code, name: name(ofFreeTypeError: code))
    }
}

/// One glyph rasterised as a signed distance field at ``GlyphRaster/baseSize`` pixels.
struct GlyphRaster: Sendable {
    /// Pixel size the glyphs are rasterised at, as in MapLibre's glyph PBFs.
    static let baseSize = 24
    /// Distance in base-size pixels covered by the field on each side of the outline; the bitmap
    /// carries this much border around the glyph. FreeType's default is 2; 8 matches MapLibre's radius.
    static let spread = 8

    var width: Int
    var height: Int
    /// Left edge of the bitmap relative to the pen position, base-size pixels (includes the spread).
    var left: Int
    /// Top edge of the bitmap above the baseline, base-size pixels (includes the spread).
    var top: Int
    /// Row-major, `width * height` bytes, no row padding.
    var pixels: [UInt8]
}

/// Vertical metrics of a face, in ems.
struct FaceVerticalMetrics: Sendable {
    var ascender: Float
    var descender: Float
}

/// The FreeType state; used only while holding the ``FontLibrary`` mutex because FreeType is not thread safe.
private final class FreeTypeState {
    var library: FT_Library?
    var faces: [FT_Face] = []

    init() {}

    deinit {
        for face in faces { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }
}

/// Loads every font of a folder and answers glyph questions about them for labels.
///
/// All FreeType use goes through one mutex, so the library can be shared by the tile workers.
public final class FontLibrary: Sendable {
    /// Names of the loaded faces, "<family> <style>" (for example "Noto Sans Bold"), in load order;
    /// a ``FontID``'s index points into this array.
    public let fontNames: [String]
    /// The font used when no name of a font stack is loaded: the first "Regular" face, else the first face.
    public let defaultFont: FontID

    private let state: LockedState<FreeTypeState>
    private let idsByName: [String: FontID]
    private let idsByLowercasedName: [String: FontID]
    private let unitsPerEm: [Float]
    private let verticalMetrics: [FaceVerticalMetrics]
    private let hasKerningTable: [Bool]
    private let warnedStacks = LockedState<Set<[String]>>([])

    /// Loads every `.ttf` and `.otf` file of `directory` (sorted by file name, every face of each file).
    ///
    /// Two faces with the same name keep the first one, with a warning.
    public init(directory: URL) throws(FontError) {
        let files: [URL]
        do {
            files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        } catch {
            throw .directoryUnreadable(path: directory.path, reason: error.localizedDescription)
        }
        let fontFiles = files
            .filter { ["ttf", "otf"].contains($0.pathExtension.lowercased()) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        guard !fontFiles.isEmpty else { throw .noFonts(path: directory.path) }

        let state = FreeTypeState()
        var library: FT_Library?
        let initError = FT_Init_FreeType(&library)
        guard initError == 0, let library else { throw .freeType("FT_Init_FreeType", initError) }
        state.library = library
        var spread = FT_Int(GlyphRaster.spread)
        for module in ["sdf", "bsdf"] {
            let error = FT_Property_Set(library, module, "spread", &spread)
            guard error == 0 else { throw .freeType("FT_Property_Set(\(module), spread)", error) }
        }

        var names: [String] = []
        var idsByName: [String: FontID] = [:]
        var idsByLowercasedName: [String: FontID] = [:]
        var unitsPerEm: [Float] = []
        var verticalMetrics: [FaceVerticalMetrics] = []
        var hasKerningTable: [Bool] = []
        // Collections can hold many faces; a label font folder never needs more than this per file.
        let maximumFacesPerFile = 64
        for file in fontFiles {
            var faceIndex = 0
            var faceCount = 1
            while faceIndex < min(faceCount, maximumFacesPerFile) {
                var face: FT_Face?
                let error = FT_New_Face(library, file.path, FT_Long(faceIndex), &face)
                guard error == 0, let face else {
                    throw .unreadableFace(path: file.path, code: error,
                                          name: FontError.name(ofFreeTypeError: error))
                }
                faceCount = Int(face.pointee.num_faces)
                faceIndex += 1
                let upem = face.pointee.units_per_EM
                guard face.pointee.face_flags & FT_Long(FT_FACE_FLAG_SCALABLE) != 0, upem > 0 else {
                    textLogger.warning("Skipping \(file.lastPathComponent): not a scalable outline font")
                    FT_Done_Face(face)
                    continue
                }
                let sizeError = FT_Set_Pixel_Sizes(face, 0, FT_UInt(GlyphRaster.baseSize))
                guard sizeError == 0 else {
                    FT_Done_Face(face)
                    throw .freeType("FT_Set_Pixel_Sizes(\(file.lastPathComponent))", sizeError)
                }
                let family = face.pointee.family_name.map { String(cString: $0) }
                    ?? file.deletingPathExtension().lastPathComponent
                let style = face.pointee.style_name.map { String(cString: $0) } ?? "Regular"
                let name = "\(family) \(style)"
                if idsByName[name] != nil {
                    textLogger.warning("Font \(name) in \(file.lastPathComponent) is already loaded; ignoring it")
                    FT_Done_Face(face)
                    continue
                }
                let id = FontID(index: names.count)
                state.faces.append(face)
                names.append(name)
                idsByName[name] = id
                idsByLowercasedName[name.lowercased()] = idsByLowercasedName[name.lowercased()] ?? id
                let em = Float(upem)
                unitsPerEm.append(em)
                verticalMetrics.append(FaceVerticalMetrics(ascender: Float(face.pointee.ascender) / em,
                                                           descender: Float(face.pointee.descender) / em))
                hasKerningTable.append(face.pointee.face_flags & FT_Long(FT_FACE_FLAG_KERNING) != 0)
            }
        }
        guard !names.isEmpty else { throw .noFonts(path: directory.path) }

        self.fontNames = names
        self.idsByName = idsByName
        self.idsByLowercasedName = idsByLowercasedName
        self.unitsPerEm = unitsPerEm
        self.verticalMetrics = verticalMetrics
        self.hasKerningTable = hasKerningTable
        self.defaultFont = names.firstIndex { $0.hasSuffix(" Regular") }.map { FontID(index: $0) }
            ?? FontID(index: 0)
        self.state = LockedState(state)
    }

    /// The first font of a style's `text-font` stack that is loaded (exact name, then ignoring case);
    /// otherwise ``defaultFont``, with a warning logged once per stack.
    public func resolve(_ fontStack: [String]) -> FontID {
        for name in fontStack {
            if let id = idsByName[name] ?? idsByLowercasedName[name.lowercased()] { return id }
        }
        let firstTime = warnedStacks.withLock { $0.insert(fontStack).inserted }
        if firstTime {
            textLogger.warning(
                "No font of \(fontStack) is loaded; using \(fontNames[defaultFont.index]) (loaded: \(fontNames))")
        }
        return defaultFont
    }

    /// The name of a loaded face, "<family> <style>".
    public func name(of font: FontID) -> String {
        fontNames.indices.contains(font.index) ? fontNames[font.index] : "unknown \(font)"
    }

    func isValid(_ font: FontID) -> Bool {
        fontNames.indices.contains(font.index)
    }

    /// Ascender and descender of a face in ems (descender negative).
    func verticalMetrics(of font: FontID) -> FaceVerticalMetrics {
        verticalMetrics[font.index]
    }

    /// The glyph for a scalar in `font`, else in the other fonts in load order; nil when none has it.
    func glyph(for scalar: Unicode.Scalar, preferring font: FontID) -> (font: FontID, glyph: UInt32)? {
        state.withLock { state -> (font: FontID, glyph: UInt32)? in
            let preferred = state.faces.indices.contains(font.index) ? font.index : 0
            let glyph = FT_Get_Char_Index(state.faces[preferred], FT_ULong(scalar.value))
            if glyph != 0 { return (FontID(index: preferred), UInt32(glyph)) }
            for index in state.faces.indices where index != preferred {
                let glyph = FT_Get_Char_Index(state.faces[index], FT_ULong(scalar.value))
                if glyph != 0 { return (FontID(index: index), UInt32(glyph)) }
            }
            return nil
        }
    }

    /// Unhinted horizontal advance of a glyph in ems, exact from the font's units.
    func advance(of glyph: UInt32, in font: FontID) -> Float {
        let units = state.withLock { state -> FT_Fixed in
            guard state.faces.indices.contains(font.index) else { return 0 }
            // FT_Get_Advance lives in a header the CFreeType module does not include; loading the
            // glyph unscaled gives the same font-unit advance.
            let face = state.faces[font.index]
            let error = FT_Load_Glyph(face, FT_UInt(glyph), FT_Int32(FT_LOAD_NO_SCALE | FT_LOAD_NO_HINTING))
            guard error == 0, let slot = face.pointee.glyph else { return 0 }
            return slot.pointee.advance.x
        }
        return Float(units) / unitsPerEm[font.index]
    }

    /// Kerning between two glyphs of the same face in ems, from the `kern` table (GPOS is not read).
    func kerning(between left: UInt32, and right: UInt32, in font: FontID) -> Float {
        // Most fonts (Noto included) kern through GPOS only; skip the lock when there is no table.
        guard hasKerningTable.indices.contains(font.index), hasKerningTable[font.index] else { return 0 }
        let units = state.withLock { state -> FT_Pos in
            let face = state.faces[font.index]
            var kerning = FT_Vector()
            let error = FT_Get_Kerning(face, FT_UInt(left), FT_UInt(right),
                                       FT_UInt(FT_KERNING_UNSCALED.rawValue), &kerning)
            return error == 0 ? kerning.x : 0
        }
        return Float(units) / unitsPerEm[font.index]
    }

    /// Renders a glyph as a signed distance field at ``GlyphRaster/baseSize`` pixels, unhinted so the
    /// shape scales faithfully: byte 128 on the outline, 16 values per pixel, brighter inside. Glyphs without an outline (spaces) give an empty raster.
    func rasterize(_ glyph: UInt32, in font: FontID) throws(FontError) -> GlyphRaster {
        let result = state.withLock { state -> Result<GlyphRaster, FontError> in
            guard state.faces.indices.contains(font.index) else {
                return .failure(.freeType("rasterize(\(font))", 0x23))
            }
            let face = state.faces[font.index]
            let loadError = FT_Load_Glyph(face, FT_UInt(glyph), FT_Int32(FT_LOAD_NO_HINTING))
            guard loadError == 0, let slot = face.pointee.glyph else {
                return .failure(.freeType("FT_Load_Glyph(\(glyph))", loadError))
            }
            if slot.pointee.format == FT_GLYPH_FORMAT_OUTLINE, slot.pointee.outline.n_points == 0 {
                return .success(GlyphRaster(width: 0, height: 0, left: 0, top: 0, pixels: []))
            }
            // Anti-aliased coverage first, then the distance field from that bitmap ('bsdf'). The
            // outline renderer ('sdf') draws seams where composite parts overlap (the cedilla of
            // Ç, the ogonek of Į) and is 3-4 times slower at spread 8 (8.7 against 2.6 ms a glyph);
            // the bitmap path differs from it by about one byte value (1/16 px) near the edge.
            let coverageError = FT_Render_Glyph(slot, FT_RENDER_MODE_NORMAL)
            guard coverageError == 0 else {
                return .failure(.freeType("FT_Render_Glyph(\(glyph), NORMAL)", coverageError))
            }
            let renderError = FT_Render_Glyph(slot, FT_RENDER_MODE_SDF)
            guard renderError == 0 else {
                return .failure(.freeType("FT_Render_Glyph(\(glyph), SDF)", renderError))
            }
            let bitmap = slot.pointee.bitmap
            let width = Int(bitmap.width), height = Int(bitmap.rows), pitch = Int(bitmap.pitch)
            guard bitmap.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue), width > 0, height > 0,
                  abs(pitch) >= width, let buffer = bitmap.buffer
            else {
                return .success(GlyphRaster(width: 0, height: 0, left: 0, top: 0, pixels: []))
            }
            var pixels = [UInt8](repeating: 0, count: width * height)
            for row in 0..<height {
                // A negative pitch means the rows are stored bottom-up.
                let sourceRow = pitch > 0 ? row : height - 1 - row
                let source = buffer + sourceRow * abs(pitch)
                for column in 0..<width { pixels[row * width + column] = source[column] }
            }
            return .success(GlyphRaster(width: width, height: height, left: Int(slot.pointee.bitmap_left),
                                        top: Int(slot.pointee.bitmap_top), pixels: pixels))
        }
        return try result.get()
    }
}

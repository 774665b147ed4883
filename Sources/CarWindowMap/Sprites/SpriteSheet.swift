internal import CPNG
import Foundation
import Logging
import CarWindowStyle
import CarWindowSystemSupport

/// One image of a sprite: where it lies in the ``SpriteSheet`` and how it is drawn.
public struct SpriteImage: Sendable, Equatable {
    /// Left edge in sheet pixels.
    public var x: Int
    /// Top edge in sheet pixels.
    public var y: Int
    /// Width in sheet pixels.
    public var width: Int
    /// Height in sheet pixels.
    public var height: Int
    /// Sheet pixels per screen pixel at `icon-size` 1 (2 for an `@2x` sprite).
    public var pixelRatio: Double
    /// Whether the image is a signed distance field, recoloured by `icon-color` and
    /// `icon-halo-*`, rather than a picture in its own colours.
    public var isSDF: Bool
    /// The part of the image text goes in when `icon-text-fit` stretches it (the sprite's
    /// `content`: left, top, right, bottom in image pixels from its top-left); nil for the whole image.
    public var content: SIMD4<Float>? = nil

    /// The size the image is drawn at with `icon-size` 1, in screen pixels.
    public var displaySize: SIMD2<Float> {
        SIMD2(Float(width), Float(height)) / Float(max(pixelRatio, 0.01))
    }
}

/// Why a sprite gave no images.
public enum SpriteError: Error, Equatable, CustomStringConvertible {
    /// The index or the image could not be read.
    case unreadable(path: String, reason: String)
    /// The sprite lives on a server; sprites are read from files for now.
    case remote(url: String)
    /// The index is not the JSON object of images MapLibre reads.
    case invalidIndex(path: String, reason: String)
    /// The image is not a PNG this library decodes, or it is too large.
    case invalidImage(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read the sprite file \(path): \(reason). Put the sprite's .json and .png beside the style, or fix the style's \"sprite\" path."
        case .remote(let url):
            "the sprite \(url) is on a server and the map reads sprites from files: fetch the style's sprites first with StyleResources.fetch(for:fetcher:into:) (CarWindowRemoteTiles; the carwindow CLI does), or give the style a path"
        case .invalidIndex(let path, let reason):
            "the sprite index \(path) is not usable: \(reason). It must be a JSON object of images with x, y, width and height."
        case .invalidImage(let path, let reason):
            "the sprite image \(path) is not usable: \(reason)"
        }
    }
}

/// The images of a style's sprites in one premultiplied RGBA sheet, ready for one texture.
///
/// Several sprites (the style's array form) are stacked top to bottom; their images keep the
/// names the style uses (`id:name` for sprites other than `default`).
public struct SpriteSheet: Sendable {
    /// Sheets larger than this on a side are refused: every GL ES 3 device takes this size.
    public static let maximumSide = 4096
    /// An index larger than this is not a sprite index.
    public static let maximumIndexBytes = 8 << 20

    /// Width of the sheet in pixels.
    public let width: Int
    /// Height of the sheet in pixels.
    public let height: Int
    /// `width * height * 4` premultiplied RGBA bytes, rows top to bottom.
    let pixels: [UInt8]
    /// The images by the name `icon-image` gives.
    public let images: [String: SpriteImage]
    /// The names of ``images``, for the `image` expression.
    public let names: Set<String>

    /// A sheet without images.
    public static let empty = SpriteSheet(width: 0, height: 0, pixels: [], images: [:])

    init(width: Int, height: Int, pixels: [UInt8], images: [String: SpriteImage]) {
        self.width = width
        self.height = height
        self.pixels = pixels
        self.images = images
        names = Set(images.keys)
    }

    /// Builds a sheet from one sprite's index (the `.json`) and its image, naming images with
    /// `reference`'s id. Index entries that fall outside the image or lack a field are left out
    /// and reported in `skipped`.
    public init(index: Data, image: RGBAImage, reference: SpriteReference = SpriteReference(id: "default", url: ""),
                indexPath: String = "sprite.json", skipped: inout [String]) throws(SpriteError) {
        let parts = try Self.entries(index, path: indexPath, imageWidth: image.width, imageHeight: image.height,
                                     yOffset: 0, reference: reference, skipped: &skipped)
        self.init(width: image.width, height: image.height, pixels: Self.premultiplied(image.pixels), images: parts)
    }

    /// Loads every sprite `style` names, choosing `@2x` files when `pixelRatio` is above 1 (and
    /// falling back to the other resolution when one is missing). A sprite that cannot be read
    /// is reported in `failures` and the others still load; images the index describes badly are
    /// reported in `skipped`.
    public static func load(for style: Style, pixelRatio: Double = 1) -> (sheet: SpriteSheet, failures: [SpriteError],
                                                                             skipped: [String]) {
        var failures: [SpriteError] = []
        var skipped: [String] = []
        var loaded: [(reference: SpriteReference, index: Data, indexPath: String, image: RGBAImage)] = []
        for reference in style.sprites {
            do throws(SpriteError) {
                let base = try fileBase(reference.url, relativeTo: style.baseURL)
                let variants = pixelRatio > 1 ? ["@2x", ""] : ["", "@2x"]
                var lastError: SpriteError?
                var found = false
                for variant in variants {
                    let indexURL = URL(fileURLWithPath: base + variant + ".json")
                    let imageURL = URL(fileURLWithPath: base + variant + ".png")
                    guard FileManager.default.fileExists(atPath: indexURL.path) else {
                        lastError = .unreadable(path: indexURL.path, reason: "no such file")
                        continue
                    }
                    let index = try readIndex(indexURL)
                    let image = try readImage(imageURL)
                    loaded.append((reference, index, indexURL.path, image))
                    found = true
                    break
                }
                if !found, let lastError { throw lastError }
            } catch {
                failures.append(error)
            }
        }
        // Stack the sprites into one sheet.
        let width = loaded.map(\.image.width).max() ?? 0
        var height = 0
        var images: [String: SpriteImage] = [:]
        var kept: [(image: RGBAImage, y: Int)] = []
        for sprite in loaded {
            guard height + sprite.image.height <= maximumSide else {
                failures.append(.invalidImage(path: sprite.indexPath, reason: "the style's sprites together are taller than \(maximumSide) pixels; this one is left out"))
                continue
            }
            do throws(SpriteError) {
                let entries = try Self.entries(sprite.index, path: sprite.indexPath, imageWidth: sprite.image.width,
                                               imageHeight: sprite.image.height, yOffset: height,
                                               reference: sprite.reference, skipped: &skipped)
                images.merge(entries) { first, _ in first }
                kept.append((sprite.image, height))
                height += sprite.image.height
            } catch {
                failures.append(error)
            }
        }
        guard width > 0, height > 0 else { return (.empty, failures, skipped) }
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for (image, y) in kept {
            let premultiplied = premultiplied(image.pixels)
            for row in 0..<image.height {
                let source = row * image.width * 4
                let target = ((y + row) * width) * 4
                pixels.replaceSubrange(target..<(target + image.width * 4),
                                       with: premultiplied[source..<(source + image.width * 4)])
            }
        }
        return (SpriteSheet(width: width, height: height, pixels: pixels, images: images), failures, skipped)
    }

    /// The file path of a sprite without suffix: a plain or `file://` path, relative ones
    /// against the style's folder.
    static func fileBase(_ url: String, relativeTo base: URL?) throws(SpriteError) -> String {
        let lowered = url.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || lowered.hasPrefix("mapbox://") {
            throw .remote(url: url)
        }
        var path = url
        if lowered.hasPrefix("file://") {
            path = URL(string: url)?.path ?? String(url.dropFirst("file://".count))
        }
        if path.hasPrefix("/") { return path }
        let folder = base?.deletingLastPathComponent() ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return folder.appendingPathComponent(path).path
    }

    private static func readIndex(_ url: URL) throws(SpriteError) -> Data {
        do {
            return Data(try InputFile.read(url.path, limit: maximumIndexBytes))
        } catch {
            if let (size, limit) = error.tooLarge {
                throw .invalidIndex(path: url.path, reason: "it has \(size) bytes, more than the \(limit) a sprite index may have")
            }
            throw .unreadable(path: url.path, reason: error.reason)
        }
    }

    /// Decodes a PNG, refusing one whose header promises more pixels than a sheet may have
    /// before any pixel memory is taken.
    static func readImage(_ url: URL) throws(SpriteError) -> RGBAImage {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw .unreadable(path: url.path, reason: "no such file")
        }
        guard png_image_begin_read_from_file(&image, url.path) != 0 else {
            throw .invalidImage(path: url.path, reason: pngMessage(&image))
        }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width <= maximumSide, height <= maximumSide else {
            png_image_free(&image)
            throw .invalidImage(path: url.path, reason: "it is \(width)x\(height) pixels; a sprite sheet may have at most \(maximumSide) on a side")
        }
        image.format = carwindow_png_format_rgba()
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
        guard ok != 0 else { throw .invalidImage(path: url.path, reason: pngMessage(&image)) }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }

    private static func pngMessage(_ image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The index's images that lie wholly inside the image, moved down by `yOffset`.
    private static func entries(_ data: Data, path: String, imageWidth: Int, imageHeight: Int, yOffset: Int,
                                reference: SpriteReference,
                                skipped: inout [String]) throws(SpriteError) -> [String: SpriteImage] {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: data)
        } catch {
            throw .invalidIndex(path: path, reason: "it is not JSON (\(error))")
        }
        guard case .object(let members) = json else {
            throw .invalidIndex(path: path, reason: "it is \(json.typeName), not an object")
        }
        var images: [String: SpriteImage] = [:]
        for member in members {
            guard case .object(let fields) = member.value else {
                skipped.append("\(path): \"\(member.key)\" is \(member.value.typeName), not an object; the image is left out")
                continue
            }
            func integer(_ key: String) -> Int? {
                guard case .number(let value)? = fields[key], value.isFinite, value >= 0, value <= Double(maximumSide),
                      value == value.rounded() else { return nil }
                return Int(value)
            }
            guard let x = integer("x"), let y = integer("y"), let width = integer("width"),
                  let height = integer("height"), width > 0, height > 0,
                  x + width <= imageWidth, y + height <= imageHeight else {
                skipped.append("\(path): \"\(member.key)\" needs whole non-negative x, y, width and height inside the \(imageWidth)x\(imageHeight) image; it is left out")
                continue
            }
            var pixelRatio = 1.0
            if case .number(let ratio)? = fields["pixelRatio"] {
                guard ratio.isFinite, ratio >= 0.25, ratio <= 8 else {
                    skipped.append("\(path): \"\(member.key)\" has pixelRatio \(ratio); it must lie in 0.25...8; the image is left out")
                    continue
                }
                pixelRatio = ratio
            }
            var isSDF = false
            if case .bool(let flag)? = fields["sdf"] { isSDF = flag }
            var content: SIMD4<Float>?
            if case .array(let edges)? = fields["content"] {
                let numbers = edges.compactMap { edge -> Float? in
                    guard case .number(let value) = edge, value.isFinite else { return nil }
                    return Float(value)
                }
                // Left < right and top < bottom, inside the image; anything else is ignored.
                if numbers.count == 4, numbers[0] >= 0, numbers[1] >= 0, numbers[0] < numbers[2], numbers[1] < numbers[3],
                   numbers[2] <= Float(width), numbers[3] <= Float(height) {
                    content = SIMD4(numbers[0], numbers[1], numbers[2], numbers[3])
                } else {
                    skipped.append("\(path): \"\(member.key)\" has a content box outside the image; the whole image holds its text")
                }
            }
            images[reference.imageName(member.key)] = SpriteImage(x: x, y: y + yOffset, width: width, height: height,
                                                                 pixelRatio: pixelRatio, isSDF: isSDF, content: content)
        }
        return images
    }

    /// Straight-alpha RGBA to premultiplied, as the renderer blends.
    static func premultiplied(_ pixels: [UInt8]) -> [UInt8] {
        var result = pixels
        for i in stride(from: 0, to: result.count - 3, by: 4) {
            let alpha = UInt16(result[i + 3])
            guard alpha < 255 else { continue }
            for c in 0..<3 { result[i + c] = UInt8((UInt16(result[i + c]) * alpha + 127) / 255) }
        }
        return result
    }
}

let spriteLogger = Logger(label: "carwindow.sprite")

/// Images a style asked for that its sprite lacks: each is warned about once per process, as
/// MapLibre reports a missing image once, however many features use it.
enum SpriteWarnings {
    /// Past this many names nothing more is recorded or logged: the names come from tiles.
    private static let limit = 1_000
    private static let warned = LockedState<Set<String>>([])

    static func missingImage(_ name: String) {
        let isNew = warned.withLock { names in
            guard names.count < limit else { return false }
            return names.insert(name).inserted
        }
        if isNew {
            spriteLogger.warning("the style asks for the image \"\(name)\", which its sprite does not have; symbols that need it are drawn without an icon (MapLibre skips it too)")
        }
    }

    /// Whether `name` was warned about, for tests.
    static func wasWarned(_ name: String) -> Bool { warned.withLock { $0.contains(name) } }
}

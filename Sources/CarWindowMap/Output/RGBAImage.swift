internal import CPNG
import Foundation

/// An 8-bit RGBA picture, rows top to bottom, premultiplied as the renderer draws it (opaque
/// map frames are the same either way).
public struct RGBAImage: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// `width * height * 4` bytes.
    public var pixels: [UInt8]

    /// Wraps `pixels`, which must hold `width * height * 4` bytes (a precondition).
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4, "pixel count does not match \(width)x\(height)")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The RGBA bytes of the pixel at (x, y).
    public func pixel(x: Int, y: Int) -> SIMD4<UInt8> {
        let i = (y * width + x) * 4
        return SIMD4(pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }

    /// The picture upside down: GL reads rows bottom first.
    func flippedVertically() -> RGBAImage {
        let rowBytes = width * 4
        var flipped = [UInt8](repeating: 0, count: pixels.count)
        for row in 0..<height {
            let from = row * rowBytes, to = (height - 1 - row) * rowBytes
            flipped[to..<to + rowBytes] = pixels[from..<from + rowBytes]
        }
        return RGBAImage(width: width, height: height, pixels: flipped)
    }

    /// The picture with each pixel's first and third bytes swapped (BGRA <-> RGBA).
    func swappingRedAndBlue() -> RGBAImage {
        var swapped = self
        for i in stride(from: 0, to: swapped.pixels.count, by: 4) { swapped.pixels.swapAt(i, i + 2) }
        return swapped
    }
}

/// Failures reading or writing PNG files.
public enum PNGError: Error, CustomStringConvertible, Equatable {
    case cannotRead(path: String, reason: String)
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotRead(let path, let reason): "cannot read PNG \(path): \(reason)"
        case .cannotWrite(let path, let reason): "cannot write PNG \(path): \(reason); check the folder exists and is writable"
        }
    }
}

extension RGBAImage {
    /// Reads a PNG file of any colour type into RGBA.
    public init(contentsOfPNG url: URL) throws(PNGError) {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_file(&image, url.path) != 0 else {
            throw .cannotRead(path: url.path, reason: Self.message(of: &image))
        }
        image.format = carwindow_png_format_rgba()
        let width = Int(image.width), height = Int(image.height)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
        guard ok != 0 else { throw .cannotRead(path: url.path, reason: Self.message(of: &image)) }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// Writes the picture as an RGBA PNG.
    public func writePNG(to url: URL) throws(PNGError) {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = carwindow_png_format_rgba()
        let ok = pixels.withUnsafeBytes { png_image_write_to_file(&image, url.path, 0, $0.baseAddress, 0, nil) }
        guard ok != 0 else { throw .cannotWrite(path: url.path, reason: Self.message(of: &image)) }
    }

    private static func message(of image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

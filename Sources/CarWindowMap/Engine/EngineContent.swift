/// The framebuffer an engine's GL draw callback draws one picture into.
///
/// The callback runs on the session's render thread with CarWindow's OpenGL ES 3 context
/// current and this framebuffer bound, its viewport set to the whole picture. Draw in GL's own
/// orientation (the first row is the bottom); CarWindow turns the picture upright when it
/// converts it. The framebuffer keeps what was drawn last, so an engine may redraw only what
/// changed; it is cleared to opaque black when made and at each resize.
///
/// Values are valid during the callback only: the framebuffer is CarWindow's and may be
/// replaced at a resize.
public struct EngineGLFrame: Sendable, Equatable {
    /// The GL framebuffer name to draw into (bound when the callback starts).
    public var framebuffer: UInt32
    /// Width of the picture in pixels: the stream's encoded width.
    public var width: Int
    /// Height of the picture in pixels.
    public var height: Int
    /// Display pixels per picture pixel (SmartDeviceLink's scale): the head unit shows the
    /// picture `scale` times larger than it is drawn, and touches and haptic rectangles are
    /// converted by it. Size text and controls for the magnified picture.
    public var scale: Double
    /// Counts the pictures drawn in this canvas, from 1.
    public var pictureNumber: UInt64

    /// Describes one picture's framebuffer.
    public init(framebuffer: UInt32, width: Int, height: Int, scale: Double, pictureNumber: UInt64) {
        self.framebuffer = framebuffer
        self.width = width
        self.height = height
        self.scale = scale
        self.pictureNumber = pictureNumber
    }
}

/// An engine's GL drawing: called on the render thread, with the context current, each time the
/// session draws a picture. Throwing skips the picture (the stream keeps the last one) and
/// reports the error.
public typealias EngineGLDraw = @Sendable (EngineGLFrame) throws -> Void

/// A picture an engine drew with anything (Cairo, Skia, Qt's raster engine), handed over as
/// bytes: uploaded once, then converted to NV12 on the GPU like the map.
public struct EnginePixels: Sendable, Equatable {
    /// The order of each pixel's four bytes in memory. The fourth byte is not used: the picture
    /// is taken as opaque (premultiplied colours show as they would over black).
    public enum Format: String, Sendable, Equatable, CaseIterable {
        /// Red, green, blue, then alpha or padding.
        case rgba
        /// Blue, green, red, then alpha or padding: Cairo's ARGB32 and RGB24 and Skia's
        /// BGRA_8888 on a little-endian machine.
        case bgra
    }

    /// Each pixel's byte order.
    public var format: Format
    /// Width in pixels; must be the stream's encoded width.
    public var width: Int
    /// Height in pixels; must be the stream's encoded height.
    public var height: Int
    /// Bytes from the start of one row to the start of the next (at least `4 * width`, a
    /// multiple of 4). Rows run top to bottom.
    public var bytesPerRow: Int
    /// The rows; at least `bytesPerRow * (height - 1) + 4 * width` bytes.
    public var bytes: [UInt8]

    /// Describes a picture; ``validate(width:height:)`` checks it against the stream.
    public init(format: Format, width: Int, height: Int, bytesPerRow: Int, bytes: [UInt8]) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.bytes = bytes
    }

    /// Checks that the picture is `width` x `height` and that its rows lie inside ``bytes``.
    public func validate(width expectedWidth: Int, height expectedHeight: Int) throws(EngineContentError) {
        _ = try Self.rowsByteCount(width: width, height: height, bytesPerRow: bytesPerRow, available: bytes.count,
                                   expectedWidth: expectedWidth, expectedHeight: expectedHeight)
    }

    /// The bytes from the first row's start to the last row's end of a `width` x `height`
    /// picture whose rows are `bytesPerRow` apart, once it is checked against the stream's size
    /// and the `available` bytes; overflowing arithmetic is refused, never trapped.
    package static func rowsByteCount(width: Int, height: Int, bytesPerRow: Int, available: Int,
                                      expectedWidth: Int, expectedHeight: Int) throws(EngineContentError) -> Int {
        guard width == expectedWidth, height == expectedHeight else {
            throw .pixelSizeMismatch(width: width, height: height, expectedWidth: expectedWidth,
                                     expectedHeight: expectedHeight)
        }
        let (rowBytes, rowOverflow) = width.multipliedReportingOverflow(by: 4)
        guard !rowOverflow, bytesPerRow >= rowBytes else {
            throw .rowBytesTooSmall(bytesPerRow: bytesPerRow, minimum: rowOverflow ? Int.max : rowBytes)
        }
        guard bytesPerRow % 4 == 0 else { throw .rowBytesNotAligned(bytesPerRow: bytesPerRow) }
        let (rows, rowsOverflow) = bytesPerRow.multipliedReportingOverflow(by: max(height - 1, 0))
        let (needed, neededOverflow) = rows.addingReportingOverflow(rowBytes)
        guard !rowsOverflow, !neededOverflow, available >= needed else {
            throw .bufferTooShort(bytes: available, needed: rowsOverflow || neededOverflow ? Int.max : needed)
        }
        return needed
    }
}

/// What went wrong with what an engine drew or handed over, each saying what to do.
public enum EngineContentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Pixels of another size than the stream's.
    case pixelSizeMismatch(width: Int, height: Int, expectedWidth: Int, expectedHeight: Int)
    /// Rows shorter than four bytes a pixel.
    case rowBytesTooSmall(bytesPerRow: Int, minimum: Int)
    /// Rows whose length is not a multiple of 4 bytes.
    case rowBytesNotAligned(bytesPerRow: Int)
    /// Fewer bytes than the rows described.
    case bufferTooShort(bytes: Int, needed: Int)
    /// The engine's draw callback threw; the picture was not sent.
    case drawFailed(String)
    /// The engine's draw callback has not returned for `seconds`: the render thread waits for
    /// it, and the session keeps the last picture alive meanwhile.
    case drawStalled(seconds: Double)
    /// The call does not fit the session's content (pixels pushed to a session whose engine
    /// draws with GL, say).
    case wrongContent(operation: String, content: String)
    /// The session is not streaming or ready: it has no stream size to check pixels against.
    case noStream
    /// Converting the engine's picture for the encoder failed.
    case output(MapRenderError)

    public var description: String {
        switch self {
        case .pixelSizeMismatch(let width, let height, let expectedWidth, let expectedHeight):
            "pixels of \(width)x\(height) handed over, but the stream is \(expectedWidth)x\(expectedHeight); "
                + "draw at the size of the last streamStarted event"
        case .rowBytesTooSmall(let bytesPerRow, let minimum):
            "bytesPerRow \(bytesPerRow) is less than the \(minimum) bytes of a row of 4-byte pixels"
        case .rowBytesNotAligned(let bytesPerRow):
            "bytesPerRow \(bytesPerRow) is not a multiple of 4; pad each row to a multiple of 4 bytes"
        case .bufferTooShort(let bytes, let needed):
            "the pixel buffer holds \(bytes) bytes, but its rows need \(needed); check height and bytesPerRow"
        case .drawFailed(let message):
            "the engine's draw callback failed: \(message); the head unit keeps the last picture"
        case .drawStalled(let seconds):
            "the engine's draw callback has not returned for \((seconds * 10).rounded() / 10) s; the head unit keeps the last "
                + "picture alive, and the render thread (with every session on its context) waits until the draw returns"
        case .wrongContent(let operation, let content):
            "cannot \(operation): this session shows \(content); choose the content in the session's configuration"
        case .noStream:
            "no stream size yet: connect the session to a head unit first, then draw at the size of its streamStarted event"
        case .output(let error):
            "the engine's picture could not be converted for the encoder: \(error)"
        }
    }
}

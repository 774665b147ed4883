import CarWindowVideoCore

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

/// A picture an engine drew with anything (Cairo, Skia, Qt's raster engine, a video decoder),
/// handed over as bytes: uploaded once, then converted to NV12 on the GPU like the map.
///
/// RGBA and BGRA pictures are one plane of 4-byte pixels. NV12 and I420 pictures are a luma
/// plane at the start of ``bytes`` and chroma planes of half the width and height (rounded up)
/// at ``chromaOffset`` (and ``crOffset`` for I420), taken as BT.601 limited range, as software
/// decoders and cameras give them.
public struct EnginePixels: Sendable, Equatable {
    /// How the picture's bytes are laid out.
    public enum Format: String, Sendable, Equatable, CaseIterable {
        /// Red, green, blue, then alpha or padding. The fourth byte is not used: the picture is
        /// taken as opaque (premultiplied colours show as they would over black).
        case rgba
        /// Blue, green, red, then alpha or padding: Cairo's ARGB32 and RGB24 and Skia's
        /// BGRA_8888 on a little-endian machine.
        case bgra
        /// A luma plane, then one plane of interleaved Cb, Cr pairs at ``EnginePixels/chromaOffset``.
        case nv12
        /// A luma plane, then a Cb plane at ``EnginePixels/chromaOffset`` and a Cr plane at
        /// ``EnginePixels/crOffset``, both ``EnginePixels/chromaBytesPerRow`` wide.
        case i420

        /// Whether the picture is luma and chroma planes rather than 4-byte pixels.
        public var isPlanar: Bool { self == .nv12 || self == .i420 }
    }

    /// How the bytes are laid out.
    public var format: Format
    /// Width in pixels; must be the stream's encoded width.
    public var width: Int
    /// Height in pixels; must be the stream's encoded height.
    public var height: Int
    /// Bytes from the start of one row to the start of the next, in the first plane (the
    /// pixels, or the luma). At least `4 * width` and a multiple of 4 for RGBA and BGRA, at
    /// least `width` for NV12 and I420. Rows run top to bottom.
    public var bytesPerRow: Int
    /// Where the chroma plane starts in ``bytes`` (NV12's Cb, Cr pairs, I420's Cb); 0 for RGBA
    /// and BGRA.
    public var chromaOffset: Int
    /// Bytes from one chroma row to the next: at least `2 * ((width + 1) / 2)` for NV12, at
    /// least `(width + 1) / 2` for I420 (both its chroma planes); 0 for RGBA and BGRA.
    public var chromaBytesPerRow: Int
    /// Where I420's Cr plane starts in ``bytes``; 0 otherwise.
    public var crOffset: Int
    /// The planes.
    public var bytes: [UInt8]

    /// Describes a picture; ``validate(width:height:)`` checks it against the stream.
    ///
    /// For NV12 and I420, the chroma layout left out is the packed one: the chroma plane right
    /// after the luma rows, with rows as long as the luma's (NV12) or half as long, rounded up
    /// (I420), and I420's Cr plane right after the Cb plane.
    public init(format: Format, width: Int, height: Int, bytesPerRow: Int, chromaOffset: Int? = nil,
                chromaBytesPerRow: Int? = nil, crOffset: Int? = nil, bytes: [UInt8]) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.bytes = bytes
        let packed = Self.packedChroma(format: format, height: height, bytesPerRow: bytesPerRow)
        self.chromaOffset = chromaOffset ?? packed.offset
        self.chromaBytesPerRow = chromaBytesPerRow ?? packed.bytesPerRow
        let chromaRows = (height + 1) / 2
        let cbBytes = self.chromaBytesPerRow.multipliedReportingOverflow(by: chromaRows)
        let packedCr = self.chromaOffset.addingReportingOverflow(cbBytes.partialValue)
        self.crOffset = crOffset ?? (format == .i420 ? (cbBytes.overflow || packedCr.overflow ? Int.max : packedCr.partialValue) : 0)
    }

    /// Checks that the picture is `width` x `height` and that its planes lie inside ``bytes``.
    public func validate(width expectedWidth: Int, height expectedHeight: Int) throws(EngineContentError) {
        _ = try layout.byteCount(available: bytes.count, expectedWidth: expectedWidth, expectedHeight: expectedHeight)
    }

    /// The picture's layout, without its bytes.
    package var layout: PixelLayout {
        PixelLayout(format: format, width: width, height: height, bytesPerRow: bytesPerRow, chromaOffset: chromaOffset,
                    chromaBytesPerRow: chromaBytesPerRow, crOffset: crOffset)
    }

    private static func packedChroma(format: Format, height: Int, bytesPerRow: Int) -> (offset: Int, bytesPerRow: Int) {
        guard format.isPlanar else { return (0, 0) }
        let (offset, overflow) = bytesPerRow.multipliedReportingOverflow(by: max(height, 0))
        return (overflow ? Int.max : offset, format == .nv12 ? bytesPerRow : bytesPerRow / 2 + bytesPerRow % 2)
    }
}

/// Where the planes of a picture lie in its bytes, whatever holds them (an array, a C caller's
/// buffer, a mapped dma-buf).
package struct PixelLayout: Sendable, Equatable {
    package var format: EnginePixels.Format
    package var width: Int
    package var height: Int
    package var bytesPerRow: Int
    package var chromaOffset = 0
    package var chromaBytesPerRow = 0
    package var crOffset = 0

    package init(format: EnginePixels.Format, width: Int, height: Int, bytesPerRow: Int, chromaOffset: Int = 0,
                 chromaBytesPerRow: Int = 0, crOffset: Int = 0) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.chromaOffset = chromaOffset
        self.chromaBytesPerRow = chromaBytesPerRow
        self.crOffset = crOffset
    }

    /// Half the size, rounded up: the chroma planes' samples.
    package var chromaWidth: Int { width / 2 + width % 2 }
    package var chromaHeight: Int { height / 2 + height % 2 }

    /// The bytes from the buffer's start to the end of its last plane's last row, once the
    /// picture is checked against the stream's size and the `available` bytes; arithmetic that
    /// would overflow is refused, never trapped.
    package func byteCount(available: Int, expectedWidth: Int, expectedHeight: Int) throws(EngineContentError) -> Int {
        guard width == expectedWidth, height == expectedHeight else {
            throw .pixelSizeMismatch(width: width, height: height, expectedWidth: expectedWidth,
                                     expectedHeight: expectedHeight)
        }
        switch format {
        case .rgba, .bgra:
            let (rowBytes, overflow) = width.multipliedReportingOverflow(by: 4)
            guard !overflow, bytesPerRow >= rowBytes else {
                throw .rowBytesTooSmall(bytesPerRow: bytesPerRow, minimum: overflow ? Int.max : rowBytes)
            }
            guard bytesPerRow % 4 == 0 else { throw .rowBytesNotAligned(bytesPerRow: bytesPerRow) }
            return try Self.planeEnd(offset: 0, bytesPerRow: bytesPerRow, rowBytes: rowBytes, rows: height,
                                     available: available)
        case .nv12, .i420:
            guard bytesPerRow >= width else { throw .rowBytesTooSmall(bytesPerRow: bytesPerRow, minimum: width) }
            let chromaRowBytes = format == .nv12 ? 2 * chromaWidth : chromaWidth
            guard chromaBytesPerRow >= chromaRowBytes else {
                throw .rowBytesTooSmall(bytesPerRow: chromaBytesPerRow, minimum: chromaRowBytes)
            }
            var end = try Self.planeEnd(offset: 0, bytesPerRow: bytesPerRow, rowBytes: width, rows: height,
                                        available: available)
            end = max(end, try Self.planeEnd(offset: chromaOffset, bytesPerRow: chromaBytesPerRow,
                                             rowBytes: chromaRowBytes, rows: chromaHeight, available: available))
            if format == .i420 {
                end = max(end, try Self.planeEnd(offset: crOffset, bytesPerRow: chromaBytesPerRow,
                                                 rowBytes: chromaRowBytes, rows: chromaHeight, available: available))
            }
            return end
        }
    }

    /// Where a plane's last row ends, checked against the `available` bytes.
    private static func planeEnd(offset: Int, bytesPerRow: Int, rowBytes: Int, rows: Int,
                                 available: Int) throws(EngineContentError) -> Int {
        guard offset >= 0 else { throw .planeOffsetNegative(offset: offset) }
        let (rowsBytes, rowsOverflow) = bytesPerRow.multipliedReportingOverflow(by: max(rows - 1, 0))
        let (lastRow, lastOverflow) = rowsBytes.addingReportingOverflow(rowBytes)
        let (end, endOverflow) = offset.addingReportingOverflow(lastRow)
        guard !rowsOverflow, !lastOverflow, !endOverflow, available >= end else {
            throw .bufferTooShort(bytes: available, needed: rowsOverflow || lastOverflow || endOverflow ? Int.max : end)
        }
        return end
    }
}

/// A picture in a GPU buffer the engine exported from its own context or process (a Linux
/// dma-buf): imported as an EGL image and converted with no copy where the driver imports
/// dma-bufs, read through a mapping of the buffer where it does not and the buffer is linear.
///
/// The session duplicates the file descriptors when the buffer is handed over: close yours when
/// you like. It reads the buffer when it draws the next picture, so draw into another buffer
/// (two or three in turn, as a swap chain) until a later one has been handed over.
public struct EngineDmaBuf: Sendable, Equatable {
    /// The buffer's pixel layout, by its DRM name (drm_fourcc.h), whose bits read little-endian.
    public enum Format: String, Sendable, Equatable, CaseIterable {
        /// `DRM_FORMAT_ABGR8888`: bytes red, green, blue, alpha. What GL's RGBA8 exports as.
        case abgr8888
        /// `DRM_FORMAT_XBGR8888`: bytes red, green, blue, padding.
        case xbgr8888
        /// `DRM_FORMAT_ARGB8888`: bytes blue, green, red, alpha.
        case argb8888
        /// `DRM_FORMAT_XRGB8888`: bytes blue, green, red, padding.
        case xrgb8888
        /// `DRM_FORMAT_NV12`: a luma plane and an interleaved Cb, Cr plane (BT.601 limited range).
        case nv12

        /// The format of a DRM fourcc code, nil for one CarWindow does not take.
        public init?(drmFourCC: UInt32) {
            guard let format = Self.allCases.first(where: { $0.drmFourCC == drmFourCC }) else { return nil }
            self = format
        }

        /// The DRM fourcc code.
        public var drmFourCC: UInt32 {
            switch self {
            case .abgr8888: DRMFormat.fourCC("AB24")
            case .xbgr8888: DRMFormat.fourCC("XB24")
            case .argb8888: DRMFormat.fourCC("AR24")
            case .xrgb8888: DRMFormat.fourCC("XR24")
            case .nv12: DRMFormat.fourCC("NV12")
            }
        }

        /// How many planes a buffer of this format has.
        public var planeCount: Int { self == .nv12 ? 2 : 1 }
    }

    /// One plane: its file descriptor and where its rows lie in that buffer.
    public struct Plane: Sendable, Equatable {
        /// The dma-buf file descriptor (planes may share one).
        public var fileDescriptor: Int32
        /// Bytes from the start of the buffer to the plane's first row.
        public var offset: Int
        /// Bytes from one row to the next (the pitch or stride).
        public var bytesPerRow: Int

        /// Describes one plane.
        public init(fileDescriptor: Int32, offset: Int = 0, bytesPerRow: Int) {
            self.fileDescriptor = fileDescriptor
            self.offset = offset
            self.bytesPerRow = bytesPerRow
        }
    }

    /// Which row of the picture the buffer holds first.
    public enum FirstRow: String, Sendable, Equatable {
        /// The top row first: pixels drawn by a CPU, or a video decoder's.
        case top
        /// The bottom row first: a picture GL drew in its own orientation.
        case bottom
    }

    /// The pixel layout.
    public var format: Format
    /// Width in pixels; must be the stream's encoded width.
    public var width: Int
    /// Height in pixels; must be the stream's encoded height.
    public var height: Int
    /// The first plane: the pixels, or NV12's luma.
    public var plane: Plane
    /// NV12's chroma plane; nil for the single-plane formats.
    public var chromaPlane: Plane?
    /// The DRM format modifier (tiling and compression), as the exporter gave it;
    /// `DRMFormat.invalidModifier` when the layout is the driver's implicit one.
    public var modifier: UInt64
    /// Which row the buffer holds first.
    public var firstRow: FirstRow

    /// Describes an exported buffer; ``validate(width:height:)`` checks it against the stream.
    public init(format: Format, width: Int, height: Int, plane: Plane, chromaPlane: Plane? = nil,
                modifier: UInt64 = DRMFormat.invalidModifier, firstRow: FirstRow = .top) {
        self.format = format
        self.width = width
        self.height = height
        self.plane = plane
        self.chromaPlane = chromaPlane
        self.modifier = modifier
        self.firstRow = firstRow
    }

    /// Checks the buffer's description against the stream's size: its planes, their file
    /// descriptors, offsets and row lengths (which must fit EGL's 32-bit attributes).
    public func validate(width expectedWidth: Int, height expectedHeight: Int) throws(EngineContentError) {
        guard width == expectedWidth, height == expectedHeight else {
            throw .pixelSizeMismatch(width: width, height: height, expectedWidth: expectedWidth,
                                     expectedHeight: expectedHeight)
        }
        guard (chromaPlane != nil) == (format.planeCount == 2) else {
            throw .dmaBufPlanes("\(format.rawValue) has \(format.planeCount) plane(s), but \(chromaPlane == nil ? 1 : 2) were described")
        }
        try Self.check(plane, rowBytes: format == .nv12 ? width : 4 * width, name: "plane 0")
        // GL reads 4-byte pixels by whole pixels per row: a pitch between them cannot be said.
        guard format == .nv12 || plane.bytesPerRow % 4 == 0 else {
            throw .dmaBufPlanes("plane 0: bytesPerRow \(plane.bytesPerRow) is not a multiple of the 4 bytes of a pixel")
        }
        if let chromaPlane { try Self.check(chromaPlane, rowBytes: 2 * (width / 2 + width % 2), name: "plane 1") }
    }

    private static func check(_ described: Plane, rowBytes: Int, name: StaticString) throws(EngineContentError) {
        guard described.fileDescriptor >= 0 else {
            throw .dmaBufPlanes("\(name): file descriptor \(described.fileDescriptor) is not one")
        }
        guard described.offset >= 0, described.offset <= Int(Int32.max) else {
            throw .dmaBufPlanes("\(name): offset \(described.offset) is outside 0...\(Int32.max)")
        }
        guard described.bytesPerRow >= rowBytes, described.bytesPerRow <= Int(Int32.max) else {
            throw .dmaBufPlanes("\(name): bytesPerRow \(described.bytesPerRow) is outside \(rowBytes)...\(Int32.max)")
        }
    }

    /// The layout a mapping of the buffer is read with, when its planes share one descriptor
    /// (offsets from that buffer's start).
    package var pixelLayout: PixelLayout {
        switch format {
        case .abgr8888, .xbgr8888: PixelLayout(format: .rgba, width: width, height: height, bytesPerRow: plane.bytesPerRow)
        case .argb8888, .xrgb8888: PixelLayout(format: .bgra, width: width, height: height, bytesPerRow: plane.bytesPerRow)
        case .nv12:
            PixelLayout(format: .nv12, width: width, height: height, bytesPerRow: plane.bytesPerRow,
                        chromaOffset: chromaPlane?.offset ?? 0, chromaBytesPerRow: chromaPlane?.bytesPerRow ?? 0)
        }
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
    /// A plane said to start before the buffer.
    case planeOffsetNegative(offset: Int)
    /// A dma-buf described with planes that cannot be: the wrong number for its format, no
    /// file descriptor, offsets or row lengths out of range.
    case dmaBufPlanes(String)
    /// A dma-buf fourcc CarWindow does not take (C callers pass codes).
    case dmaBufFormatUnsupported(fourCC: UInt32)
    /// A dma-buf that could neither be imported by EGL nor read through a mapping.
    case dmaBufUnreadable(String)
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
        case .planeOffsetNegative(let offset):
            "a plane offset of \(offset) lies before the buffer; offsets count from the buffer's first byte"
        case .dmaBufPlanes(let problem):
            "the dma-buf's planes do not fit: \(problem); describe each plane as the exporter gave it"
        case .dmaBufFormatUnsupported(let fourCC):
            "dma-buf fourcc \(Self.fourCCName(fourCC)) is not one CarWindow takes; export AB24, XB24, AR24, XR24 or NV12"
        case .dmaBufUnreadable(let reason):
            "the dma-buf could not be read: \(reason); push the picture as pixels instead"
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

    /// A fourcc as its four characters where they are printable, else in hex.
    private static func fourCCName(_ code: UInt32) -> String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: code >> (8 * $0)) }
        guard bytes.allSatisfy({ (0x20...0x7e).contains($0) }) else { return "0x" + String(code, radix: 16) }
        return "'" + String(decoding: bytes, as: UTF8.self) + "'"
    }
}

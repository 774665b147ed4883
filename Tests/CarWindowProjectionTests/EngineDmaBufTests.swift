import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// Pictures an engine hands over as dma-bufs. This machine's EGL (llvmpipe, surfaceless) imports
/// none and it has no dma-buf exporter, so the buffers here are shared-memory files: the session
/// runs its real path for a display without import (duplicated descriptors, a mapping, the sync
/// ioctl, the upload) and the same checks, errors and descriptor handling as for a real buffer.
/// The import itself runs in the bench's round trip on a GPU whose driver exports (`engine`).
@Suite(.serialized) struct EngineDmaBufTests {
    static let width = EngineContentTests.width, height = EngineContentTests.height

    /// A file with `bytes`, its descriptor open and its name gone, named so that its
    /// descriptors can be counted in /proc/self/fd.
    static func sharedBuffer(_ bytes: [UInt8], tag: String) throws -> Int32 {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-dmabuf-\(tag)").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0, "cannot make \(path): errno \(errno)")
        unlink(path)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)
        return descriptor
    }

    /// How many of this process's descriptors are open on files tagged `tag`.
    static func openDescriptors(tag: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"))?
                .contains("carwindow-dmabuf-\(tag)") == true
        }.count
    }

    /// The quadrants as a buffer of `format`: the test pixels' bytes, in one file or (NV12 with
    /// `separateChroma`) two.
    static func quadrantBuffer(_ format: EngineDmaBuf.Format, firstRow: EngineDmaBuf.FirstRow, separateChroma: Bool,
                               tag: String) throws -> EngineDmaBuf {
        let pixelFormat: EnginePixels.Format = switch format {
        case .abgr8888, .xbgr8888: .rgba
        case .argb8888, .xrgb8888: .bgra
        case .nv12: .nv12
        }
        let pixels = EngineContentTests.quadrantPixels(pixelFormat, bottomFirst: firstRow == .bottom)
        if format != .nv12 {
            let descriptor = try sharedBuffer(pixels.bytes, tag: tag)
            return EngineDmaBuf(format: format, width: width, height: height,
                                plane: .init(fileDescriptor: descriptor, bytesPerRow: pixels.bytesPerRow), firstRow: firstRow)
        }
        if separateChroma {
            let luma = try sharedBuffer(Array(pixels.bytes[..<(pixels.bytesPerRow * height)]), tag: tag)
            let chroma = try sharedBuffer(Array(pixels.bytes[pixels.chromaOffset...]), tag: tag)
            return EngineDmaBuf(format: .nv12, width: width, height: height,
                                plane: .init(fileDescriptor: luma, bytesPerRow: pixels.bytesPerRow),
                                chromaPlane: .init(fileDescriptor: chroma, bytesPerRow: pixels.chromaBytesPerRow),
                                firstRow: firstRow)
        }
        let descriptor = try sharedBuffer(pixels.bytes, tag: tag)
        return EngineDmaBuf(format: .nv12, width: width, height: height,
                            plane: .init(fileDescriptor: descriptor, bytesPerRow: pixels.bytesPerRow),
                            chromaPlane: .init(fileDescriptor: descriptor, offset: pixels.chromaOffset,
                                               bytesPerRow: pixels.chromaBytesPerRow),
                            firstRow: firstRow)
    }

    static let cases: [(EngineDmaBuf.Format, EngineDmaBuf.FirstRow, Bool)] = [
        (.abgr8888, .top, false), (.xrgb8888, .bottom, false), (.nv12, .top, false), (.nv12, .bottom, true),
    ]

    /// Each format, either row order, planes in one buffer or two: streamed upright with its
    /// colours, and every descriptor the session duplicated closed again.
    @Test(arguments: cases)
    func aDmaBufIsStreamedAsItIs(format: EngineDmaBuf.Format, firstRow: EngineDmaBuf.FirstRow, separateChroma: Bool) async throws {
        let tag = "stream-\(format)-\(firstRow)-\(getpid())"
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let session = ProjectionSession(configuration: EngineContentTests.configuration(.pixels, sink: sink, clock: time.clock),
                                        context: context)
        time.watch(session)
        try await session.connect(display: EngineContentTests.display)
        try await session.startStreaming()

        let buffer = try Self.quadrantBuffer(format, firstRow: firstRow, separateChroma: separateChroma, tag: tag)
        try await session.pushDmaBuf(buffer)
        // The session's duplicates stay open until the draw, which may already have run.
        buffer.closeDescriptors()
        await time.advance(by: 1)
        #expect(Self.openDescriptors(tag: tag) == 0, "the draw closed the session's duplicates")
        await session.stop()
        let decoded = try FFmpegTool.decodeRGB(sink.bytes, width: Self.width, height: Self.height)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        let first = try #require(decoded.pictures.first)
        let shows = EngineContentTests.showsQuadrants(first)
        #expect(shows, "\(format), \(firstRow) first: \(EngineContentTests.quadrantCentres(first))")
        await session.close()
        await context.shutdown()
    }

    /// Buffers that cannot be are refused by name when handed over; buffers that turn out
    /// unreadable at the draw are error events; a buffer replaced before it was drawn, and one
    /// left when the session closes, have their descriptors closed.
    @Test func dmaBufsThatDoNotFitAreRefusedByName() async throws {
        let tag = "refused-\(getpid())"
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let session = ProjectionSession(configuration: EngineContentTests.configuration(.pixels, sink: sink, clock: time.clock),
                                        context: context)
        time.watch(session)
        let log = EventLog(session)
        let w = Self.width, h = Self.height
        let good = try Self.quadrantBuffer(.abgr8888, firstRow: .top, separateChroma: false, tag: tag)
        defer { good.closeDescriptors() }
        func push(_ buffer: EngineDmaBuf) async -> ProjectionSessionError? {
            do {
                try await session.pushDmaBuf(buffer)
                return nil
            } catch {
                return error
            }
        }
        #expect(await push(good) == .engineContent(.noStream))
        try await session.connect(display: EngineContentTests.display)
        try await session.startStreaming()

        var buffer = good
        buffer.width = w + 2
        #expect(await push(buffer) == .engineContent(.pixelSizeMismatch(width: w + 2, height: h, expectedWidth: w, expectedHeight: h)))
        buffer = good
        buffer.chromaPlane = good.plane
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("abgr8888 has 1 plane(s), but 2 were described")))
        buffer = good
        buffer.format = .nv12
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("nv12 has 2 plane(s), but 1 were described")))
        buffer = good
        buffer.plane.fileDescriptor = -1
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("plane 0: file descriptor -1 is not one")))
        buffer = good
        buffer.plane.offset = Int(Int32.max) + 1
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("plane 0: offset 2147483648 is outside 0...2147483647")))
        buffer = good
        buffer.plane.bytesPerRow = 4 * w - 4
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("plane 0: bytesPerRow \(4 * w - 4) is outside \(4 * w)...2147483647")))
        buffer = good
        buffer.plane.bytesPerRow = 4 * w + 2
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("plane 0: bytesPerRow \(4 * w + 2) is not a multiple of the 4 bytes of a pixel")))
        buffer = good
        buffer.plane.fileDescriptor = 1_000_000
        #expect(await push(buffer) == .engineContent(.dmaBufPlanes("plane 0: file descriptor 1000000 is not open (errno 9)")))
        #expect(EngineDmaBuf.Format(drmFourCC: DRMFormat.fourCC("YUYV")) == nil)
        #expect(EngineDmaBuf.Format(drmFourCC: DRMFormat.fourCC("NV12")) == .nv12)
        #expect(EngineContentError.dmaBufFormatUnsupported(fourCC: DRMFormat.fourCC("YUYV")).description.contains("'YUYV'"))

        // Handed over, then unreadable when drawn: too short a file, and a tiled layout no
        // mapping can read (where this display cannot import, as here).
        let short = try Self.sharedBuffer([UInt8](repeating: 0, count: 4 * w * h / 2), tag: tag)
        defer { close(short) }
        #expect(await push(EngineDmaBuf(format: .abgr8888, width: w, height: h, plane: .init(fileDescriptor: short, bytesPerRow: 4 * w))) == nil)
        await time.advance(by: 0.2)
        #expect(log.all.contains(.error(.engineContent(.bufferTooShort(bytes: 4 * w * h / 2, needed: 4 * w * h)))))
        if !context.importsDmaBufs {
            buffer = good
            buffer.modifier = 0x0100_0000_0000_0002
            #expect(await push(buffer) == nil)
            await time.advance(by: 0.2)
            #expect(log.all.contains { if case .error(.engineContent(.dmaBufUnreadable)) = $0 { true } else { false } })
        }

        // Replaced before it was drawn (or drawn first, as the loop comes), and left at the
        // close: closed either way, leaving only this test's own two.
        #expect(await push(good) == nil)
        #expect(await push(good) == nil)
        await session.close()
        #expect(Self.openDescriptors(tag: tag) == 2, "the session closed every duplicate it made")
        await context.shutdown()

        let glSession = ProjectionSession(configuration: EngineContentTests.configuration(.gl(EngineContentTests.drawQuadrants),
                                                                                          sink: RecordingSink(), clock: .monotonic),
                                          context: try await RenderContext())
        do {
            try await glSession.pushDmaBuf(good)
            Issue.record("a dma-buf pushed into a GL session")
        } catch {
            #expect(error == .engineContent(.wrongContent(operation: "push a dma-buf", content: "the engine's GL drawing")))
        }
        await glSession.close()
    }
}

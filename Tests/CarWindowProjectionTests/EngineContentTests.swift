import Foundation
import Testing
import CGLES
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// Sessions that project the engine's own picture (its GL on our context, or its pixels) instead
/// of the map: real GL on llvmpipe, OpenH264, and ffmpeg decoding what was sent.
@Suite(.serialized) struct EngineContentTests {
    /// The map's session tests' head unit: 640x384 at scale 2, so pictures are 320x192.
    static let display = SessionFixtures.display
    static let width = 320, height = 192
    static let frameInterval = 1.0 / 15

    /// Colours of the four quadrants, top left, top right, bottom left, bottom right.
    static let quadrants: [SIMD3<UInt8>] = [[220, 30, 30], [30, 200, 40], [30, 40, 210], [235, 235, 235]]

    static func configuration(_ content: EngineContent, sink: RecordingSink, clock: SessionClock) -> ProjectionSessionConfiguration {
        var configuration = ProjectionSessionConfiguration(engine: content, makeSink: { _ in sink })
        configuration.encoder = .forced(.openh264)
        configuration.clock = clock
        return configuration
    }

    /// Draws `quadrants` with scissored clears, in GL's orientation (the first row is the bottom).
    static let drawQuadrants: EngineGLDraw = { frame in
        let halfWidth = GLsizei(frame.width / 2), halfHeight = GLsizei(frame.height / 2)
        glEnable(GLenum(GL_SCISSOR_TEST))
        // GL's y runs up: the top quadrants start at half the height.
        let origins: [(GLint, GLint)] = [(0, halfHeight), (halfWidth, halfHeight), (0, 0), (halfWidth, 0)]
        for (colour, origin) in zip(quadrants, origins) {
            glScissor(origin.0, origin.1, halfWidth, halfHeight)
            glClearColor(Float(colour.x) / 255, Float(colour.y) / 255, Float(colour.z) / 255, 1)
            glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        }
        // Left enabled on purpose: the session puts back what its own passes need.
    }

    /// The colour at the centre of each quadrant of a decoded RGB picture.
    static func quadrantCentres(_ picture: [UInt8]) -> [SIMD3<Int>] {
        [(width / 4, height / 4), (3 * width / 4, height / 4), (width / 4, 3 * height / 4), (3 * width / 4, 3 * height / 4)].map {
            let i = ($0.1 * width + $0.0) * 3
            return SIMD3(Int(picture[i]), Int(picture[i + 1]), Int(picture[i + 2]))
        }
    }

    /// Whether each quadrant decodes to its colour: within 12 per channel, which limited-range
    /// BT.601 rounding and the encoder leave on flat colours with room to spare.
    static func showsQuadrants(_ picture: [UInt8]) -> Bool {
        zip(quadrantCentres(picture), quadrants).allSatisfy { decoded, expected in
            let difference = decoded &- SIMD3<Int>(truncatingIfNeeded: expected)
            return max(abs(difference.x), abs(difference.y), abs(difference.z)) <= 12
        }
    }

    @Test func theEnginesGLDrawIsStreamedUprightAndOnlyOnChange() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let draws = LockedState(0)
        let session = ProjectionSession(configuration: Self.configuration(.gl { frame in
            draws.withLock { $0 += 1 }
            #expect(frame.width == Self.width && frame.height == Self.height && frame.scale == 2)
            try Self.drawQuadrants(frame)
        }, sink: sink, clock: time.clock), context: context)
        time.watch(session)
        try await session.connect(display: Self.display)
        try await session.startStreaming()
        await time.settle()
        await time.advance(by: 2)
        #expect(draws.withLock { $0 } == 1, "a still picture is drawn once; refinements and keep-alives reuse it")
        #expect(await session.statistics.keepAlives > 0)

        await session.invalidate()
        await time.advance(by: Self.frameInterval)
        #expect(draws.withLock { $0 } == 2, "invalidate draws one picture")

        await session.setContinuousFrames(true)
        await time.advance(by: 1 - 0.001)
        let continuous = draws.withLock { $0 }
        #expect((16...18).contains(continuous), "continuous frames come at 15 fps: \(continuous - 2) in a second")
        await session.setContinuousFrames(false)
        await time.advance(by: 1)
        #expect(draws.withLock { $0 } <= continuous + 1, "no more pictures once the engine stops animating")
        await session.stop()

        let decoded = try FFmpegTool.decodeRGB(sink.bytes, width: Self.width, height: Self.height)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        try #require(!decoded.pictures.isEmpty)
        let firstShows = Self.showsQuadrants(decoded.pictures[0]), lastShows = Self.showsQuadrants(decoded.pictures[decoded.pictures.count - 1])
        #expect(firstShows, "first picture: \(Self.quadrantCentres(decoded.pictures[0]))")
        #expect(lastShows, "last picture: \(Self.quadrantCentres(decoded.pictures[decoded.pictures.count - 1]))")
        let snapshot = await session.snapshot()
        #expect(snapshot.map { $0.pixel(x: 5, y: 5) } == SIMD4(220, 30, 30, 255), "the snapshot is upright too")
        await session.close()
        await context.shutdown()
    }

    /// The quadrants as BT.601 limited-range Y, Cb, Cr: what a decoder or camera would give.
    static func yuv(_ colour: SIMD3<UInt8>) -> (y: UInt8, cb: UInt8, cr: UInt8) {
        let r = Double(colour.x), g = Double(colour.y), b = Double(colour.z)
        func byte(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        return (byte(16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255),
                byte(128 + (-37.797 * r - 74.203 * g + 112 * b) / 255),
                byte(128 + (112 * r - 93.786 * g - 18.214 * b) / 255))
    }

    static func quadrant(x: Int, y: Int) -> SIMD3<UInt8> {
        quadrants[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]
    }

    /// The quadrants in `format`, laid out as engines do: padded RGBA and BGRA rows; NV12 with
    /// rows of a length no multiple of 4 and a gap before a chroma plane with its own row
    /// length; I420 packed, with odd luma rows. `bottomFirst` stores the rows upside down.
    static func quadrantPixels(_ format: EnginePixels.Format, bottomFirst: Bool = false) -> EnginePixels {
        let w = width, h = height
        func row(_ y: Int) -> Int { bottomFirst ? h - 1 - y : y }
        switch format {
        case .rgba, .bgra:
            let bytesPerRow = w * 4 + 64
            var bytes = [UInt8](repeating: 0x5a, count: bytesPerRow * h)
            for y in 0..<h {
                for x in 0..<w {
                    let colour = quadrant(x: x, y: y)
                    let i = row(y) * bytesPerRow + x * 4
                    let ordered = format == .rgba ? colour : SIMD3(colour.z, colour.y, colour.x)
                    (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]) = (ordered.x, ordered.y, ordered.z, 255)
                }
            }
            return EnginePixels(format: format, width: w, height: h, bytesPerRow: bytesPerRow, bytes: bytes)
        case .nv12, .i420:
            let layout = format == .nv12
                ? EnginePixels(format: .nv12, width: w, height: h, bytesPerRow: w + 22, chromaOffset: (w + 22) * h + 100,
                               chromaBytesPerRow: w + 8, bytes: [])
                : EnginePixels(format: .i420, width: w, height: h, bytesPerRow: w + 3, bytes: [])
            let end = format == .nv12 ? layout.chromaOffset + layout.chromaBytesPerRow * (h / 2)
                : layout.crOffset + layout.chromaBytesPerRow * (h / 2)
            var bytes = [UInt8](repeating: 0x5a, count: end)
            for y in 0..<h {
                for x in 0..<w { bytes[row(y) * layout.bytesPerRow + x] = yuv(quadrant(x: x, y: y)).y }
            }
            for y in 0..<h / 2 {
                for x in 0..<w / 2 {
                    let sample = yuv(quadrant(x: 2 * x, y: 2 * y))
                    let chromaRow = bottomFirst ? h / 2 - 1 - y : y
                    if format == .nv12 {
                        let i = layout.chromaOffset + chromaRow * layout.chromaBytesPerRow + 2 * x
                        (bytes[i], bytes[i + 1]) = (sample.cb, sample.cr)
                    } else {
                        bytes[layout.chromaOffset + chromaRow * layout.chromaBytesPerRow + x] = sample.cb
                        bytes[layout.crOffset + chromaRow * layout.chromaBytesPerRow + x] = sample.cr
                    }
                }
            }
            var pixels = layout
            pixels.bytes = bytes
            return pixels
        }
    }

    /// Pixels as engines hand them over (Cairo's padded BGRA rows, a decoder's NV12 or I420):
    /// one upload, the right way up, each colour where it belongs.
    @Test(arguments: EnginePixels.Format.allCases)
    func pixelsAreStreamedAsHandedOver(format: EnginePixels.Format) async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let session = ProjectionSession(configuration: Self.configuration(.pixels, sink: sink, clock: time.clock),
                                        context: context)
        time.watch(session)
        try await session.connect(display: Self.display)
        try await session.startStreaming()
        await time.advance(by: 0.1)
        #expect(sink.received.isEmpty, "the first picture waits for the engine's pixels")

        try await session.pushPixels(Self.quadrantPixels(format))
        await time.advance(by: 1)
        await session.stop()
        let decoded = try FFmpegTool.decodeRGB(sink.bytes, width: Self.width, height: Self.height)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        let first = try #require(decoded.pictures.first)
        let shows = Self.showsQuadrants(first)
        #expect(shows, "\(format): \(Self.quadrantCentres(first))")
        // YUV comes back through BT.601 twice: a step or two of rounding.
        let corner = try #require(await session.snapshot()).pixel(x: 5, y: 5)
        let difference = SIMD4<Int>(truncatingIfNeeded: corner) &- SIMD4(220, 30, 30, 255)
        #expect(max(abs(difference.x), abs(difference.y), abs(difference.z), abs(difference.w)) <= (format.isPlanar ? 3 : 0),
                "\(format): the snapshot's top left is \(corner)")
        await session.close()
        await context.shutdown()
    }

    /// Pixels that do not fit are typed errors that change nothing on screen.
    @Test func pixelsThatDoNotFitAreRefusedByName() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let session = ProjectionSession(configuration: Self.configuration(.pixels, sink: sink, clock: time.clock),
                                        context: context)
        time.watch(session)
        let w = Self.width, h = Self.height
        func push(_ width: Int, _ height: Int, _ bytesPerRow: Int, _ count: Int) async -> ProjectionSessionError? {
            do {
                try await session.pushPixels(EnginePixels(format: .rgba, width: width, height: height, bytesPerRow: bytesPerRow,
                                                          bytes: [UInt8](repeating: 0, count: count)))
                return nil
            } catch {
                return error
            }
        }
        #expect(await push(w, h, w * 4, w * h * 4) == .engineContent(.noStream))
        try await session.connect(display: Self.display)
        try await session.startStreaming()
        #expect(await push(320, 200, 1280, 1280 * 200)
            == .engineContent(.pixelSizeMismatch(width: 320, height: 200, expectedWidth: w, expectedHeight: h)))
        #expect(await push(w, h, w * 4 - 4, w * h * 4) == .engineContent(.rowBytesTooSmall(bytesPerRow: w * 4 - 4, minimum: w * 4)))
        #expect(await push(w, h, w * 4 + 2, (w * 4 + 2) * h) == .engineContent(.rowBytesNotAligned(bytesPerRow: w * 4 + 2)))
        #expect(await push(w, h, w * 4, w * h * 4 - 1) == .engineContent(.bufferTooShort(bytes: w * h * 4 - 1, needed: w * h * 4)))
        #expect(await push(w, h, Int.max / 2 & ~3, 16) == .engineContent(.bufferTooShort(bytes: 16, needed: Int.max)),
                "row arithmetic that would overflow is refused, not trapped")
        #expect(await push(-1, h, w * 4, w * h * 4)
            == .engineContent(.pixelSizeMismatch(width: -1, height: h, expectedWidth: w, expectedHeight: h)))
        func pushYUV(_ pixels: EnginePixels) async -> ProjectionSessionError? {
            do {
                try await session.pushPixels(pixels)
                return nil
            } catch {
                return error
            }
        }
        let packedNV12 = w * h * 3 / 2
        #expect(await pushYUV(EnginePixels(format: .nv12, width: w, height: h, bytesPerRow: w - 1,
                                           bytes: [UInt8](repeating: 0, count: packedNV12)))
            == .engineContent(.rowBytesTooSmall(bytesPerRow: w - 1, minimum: w)))
        #expect(await pushYUV(EnginePixels(format: .nv12, width: w, height: h, bytesPerRow: w, chromaBytesPerRow: w - 2,
                                           bytes: [UInt8](repeating: 0, count: packedNV12)))
            == .engineContent(.rowBytesTooSmall(bytesPerRow: w - 2, minimum: w)))
        #expect(await pushYUV(EnginePixels(format: .nv12, width: w, height: h, bytesPerRow: w,
                                           bytes: [UInt8](repeating: 0, count: packedNV12 - 1)))
            == .engineContent(.bufferTooShort(bytes: packedNV12 - 1, needed: packedNV12)), "the chroma plane's last row is short")
        #expect(await pushYUV(EnginePixels(format: .i420, width: w, height: h, bytesPerRow: w, crOffset: -8,
                                           bytes: [UInt8](repeating: 0, count: packedNV12)))
            == .engineContent(.planeOffsetNegative(offset: -8)))
        #expect(await pushYUV(EnginePixels(format: .i420, width: w, height: h, bytesPerRow: w, chromaOffset: Int.max - 10,
                                           bytes: [UInt8](repeating: 0, count: packedNV12)))
            == .engineContent(.bufferTooShort(bytes: packedNV12, needed: Int.max)), "an offset that would overflow")
        await time.advance(by: 0.3)
        #expect(sink.received.isEmpty, "nothing refused reached the stream")
        await session.close()
        await context.shutdown()

        let glSession = ProjectionSession(configuration: Self.configuration(.gl(Self.drawQuadrants), sink: RecordingSink(),
                                                                            clock: .monotonic), context: try await RenderContext())
        do {
            try await glSession.pushPixels(EnginePixels(format: .rgba, width: 2, height: 2, bytesPerRow: 8, bytes: []))
            Issue.record("pixels pushed into a GL session")
        } catch {
            #expect(error == .engineContent(.wrongContent(operation: "push pixels", content: "the engine's GL drawing")))
        }
        await glSession.close()
    }

    struct EngineFailure: Error, CustomStringConvertible {
        var description: String { "the engine's scene is not loaded" }
    }

    /// A draw that throws is an error event; the head unit keeps the last picture, alive.
    @Test func aThrowingDrawKeepsTheLastPictureAlive() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let fails = LockedState(false)
        var configuration = Self.configuration(.gl { frame in
            if fails.withLock({ $0 }) {
                // Half a picture and a GL error left behind, then the failure.
                glClearColor(0, 0, 0, 1)
                glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
                glBindTexture(GLenum(GL_TEXTURE_2D), 999_999)
                throw EngineFailure()
            }
            try Self.drawQuadrants(frame)
        }, sink: sink, clock: time.clock)
        configuration.keepAlive = .reencode
        let session = ProjectionSession(configuration: configuration, context: context)
        time.watch(session)
        let log = EventLog(session)
        try await session.connect(display: Self.display)
        try await session.startStreaming()
        await time.advance(by: 1)
        fails.withLock { $0 = true }
        await session.invalidate()
        let failedAt = time.now
        await time.advance(by: 1.5)
        #expect(log.all.contains(.error(.engineContent(.drawFailed("the engine's scene is not loaded")))))
        #expect(!sink.received(after: failedAt).isEmpty, "keep-alives go on")
        #expect(await session.state == .streaming)
        await session.stop()
        let decoded = try FFmpegTool.decodeRGB(sink.bytes, width: Self.width, height: Self.height)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
        let last = try #require(decoded.pictures.last)
        let shows = Self.showsQuadrants(last)
        #expect(shows, "the last picture is still the engine's good one: \(Self.quadrantCentres(last))")
        await session.close()
        await context.shutdown()
    }

    /// A draw that does not return: an error event once it passes the timeout, keep-alives
    /// meanwhile, and a stop that returns without it. Real time: the stall is the machine's, so
    /// an earlier draw slowed past the timeout by a loaded machine is a stall too; the count
    /// starts when the hanging draw begins.
    @Test func aDrawThatDoesNotReturnIsReportedAndTheStreamKeptAlive() async throws {
        let context = try await RenderContext()
        let sink = RecordingSink()
        let blocks = LockedState(false)
        let release = DispatchSemaphore(value: 0)
        let stallsSeen = LockedState<@Sendable () -> Int>({ 0 })
        let stallsBeforeHang = LockedState<Int?>(nil)
        var configuration = Self.configuration(.gl { frame in
            if blocks.withLock({ $0 }) {
                let seen = stallsSeen.withLock { $0 }()
                stallsBeforeHang.withLock { $0 = $0 ?? seen }
                // The hang guard bounds the test, not the session: it waits for ever.
                _ = release.wait(timeout: .now() + hangGuard.inSeconds)
            }
            try Self.drawQuadrants(frame)
        }, sink: sink, clock: .monotonic)
        configuration.keepAliveInterval = .milliseconds(200)
        configuration.engineDrawTimeout = .seconds(1)
        let session = ProjectionSession(configuration: configuration, context: context)
        let log = EventLog(session)
        let stallCount = { @Sendable in
            log.all.filter { if case .error(.engineContent(.drawStalled)) = $0 { true } else { false } }.count
        }
        stallsSeen.withLock { $0 = stallCount }
        try await session.connect(display: Self.display)
        try await session.startStreaming()
        #expect(await eventually { await session.statistics.keepAlives > 0 }, "the first picture is out and kept alive")

        blocks.withLock { $0 = true }
        await session.invalidate()
        let stalledHang = { @Sendable in
            guard let before = stallsBeforeHang.withLock({ $0 }) else { return false }
            return stallCount() > before
        }
        #expect(await eventually { stalledHang() }, "the stall is reported")
        let keepAlivesAtStall = await session.statistics.keepAlives
        #expect(await eventually { await session.statistics.keepAlives >= keepAlivesAtStall + 2 },
                "keep-alives go on while the draw hangs")
        await session.stop()
        #expect(await session.state == .disconnected, "stop returned while the draw still hangs")
        let before = try #require(stallsBeforeHang.withLock { $0 })
        #expect(stallCount() - before == 1, "reported once per draw")

        blocks.withLock { $0 = false }
        release.signal()
        await session.close()
        await context.shutdown()
        let decoded = try FFmpegTool.decodeRGB(sink.bytes, width: Self.width, height: Self.height)
        #expect(decoded.errors.isEmpty, "ffmpeg: \(decoded.errors)")
    }

    /// A custom layer on a session's map is drawn in its pictures, survives a restart of the
    /// stream (a new renderer), and a session without a map refuses one by name.
    @Test func aCustomLayerOnTheSessionsMapIsDrawnAndKept() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let session = ProjectionSession(configuration: try SessionFixtures.configuration(light: true, sink: sink, clock: time.clock),
                                        context: context)
        time.watch(session)
        // A 20-pixel square in the middle, in the layer's own screen terms.
        let layer = CustomLayer(id: "marker") { frame in
            glEnable(GLenum(GL_SCISSOR_TEST))
            glScissor(GLint(frame.width / 2 - 10), GLint(frame.height / 2 - 10), 20, 20)
            glClearColor(1, 0, 1, 1)
            glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        }
        try await session.addCustomLayer(layer)
        await #expect(throws: ProjectionSessionError.self) { try await session.addCustomLayer(layer, below: "no-such-layer") }
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        await time.settle()
        await time.advance(by: 0.2)
        let snapshot = try #require(await session.snapshot())
        #expect(snapshot.pixel(x: snapshot.width / 2, y: snapshot.height / 2) == SIMD4(255, 0, 255, 255))
        await session.removeCustomLayer(id: "marker")
        await time.advance(by: 0.2)
        #expect(await session.snapshot()?.pixel(x: snapshot.width / 2, y: snapshot.height / 2) != SIMD4(255, 0, 255, 255),
                "removed, and redrawn without it")
        await session.close()

        let engineSession = ProjectionSession(configuration: Self.configuration(.pixels, sink: RecordingSink(), clock: .monotonic),
                                              context: context)
        do {
            try await engineSession.addCustomLayer(layer)
            Issue.record("a custom layer was added to a session without a map")
        } catch {
            #expect(error == .engineContent(.wrongContent(operation: "add a custom layer to the map",
                                                          content: "pixels the engine hands over")))
        }
        await engineSession.close()
        await context.shutdown()
    }
}

import CarWindow
import CGLES
import CarWindowSystemSupport
import Foundation

/// The engine's own picture against CarWindow's map, through the same session: pictures per
/// second and render time when every picture changes (a script, as fast as it goes), the latency
/// of one change at a time (invalidate to access unit against camera change to access unit), and
/// what handing over pixels costs per picture (the upload, besides the conversion both share).
struct EngineContentSection: BenchmarkSection {
    let name = "engine"
    let summary = "the engine's GL, pixels and dma-bufs against the map: fps, render ms, change latency, upload ms per picture"

    /// A scene of the engine's: a few hundred scissored clears, which cost llvmpipe about what the
    /// map's fills cost it, so the comparison is of the pipeline around the draw, not of scenes.
    static let engineScene: EngineGLDraw = { frame in
        glEnable(GLenum(GL_SCISSOR_TEST))
        let columns = 16, rows = 12
        let cellWidth = max(frame.width / columns, 1), cellHeight = max(frame.height / rows, 1)
        for row in 0..<rows {
            for column in 0..<columns {
                // Shifts with the picture number, so that every picture differs.
                let shade = Float((row * columns + column + Int(frame.pictureNumber % 64)) % 64) / 64
                glScissor(GLint(column * cellWidth), GLint(row * cellHeight), GLsizei(cellWidth), GLsizei(cellHeight))
                glClearColor(shade, 0.4, 1 - shade, 1)
                glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
            }
        }
        glDisable(GLenum(GL_SCISSOR_TEST))
    }

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let frames = context.count(quick: 60, full: 150)
        let path = CameraPath.helsinki(frames: frames)
        var table = TextTable(title: "The engine's own picture against the map, \(frames) pictures each, encoder threads \(context.encoderThreads)",
                              header: ["size", "content", "session fps", "render ms", "encoder ms",
                                       "change latency ms p50/p99", "upload ms"])
        for size in context.sizes {
            let settings = EncoderSettings(width: size.width, height: size.height, framesPerSecond: EncodeSection.framesPerSecond,
                                           bitrate: EncodeSection.bitrate(for: size), threads: context.encoderThreads)
            var entry = CaseResult(label: size.description)
            var fps: [String: Double] = [:]
            for content in ["map", "gl"] {
                let sink = CountingSink()
                let session: ProjectionSession
                if content == "map" {
                    session = try context.makeEncodingSession(size: size, settings: settings, sink: sink, camera: path[0])
                } else {
                    var configuration = ProjectionSessionConfiguration(engine: .gl(Self.engineScene), makeSink: { _ in sink })
                    configuration.encoder = .automatic
                    configuration.encoderSettings = settings
                    configuration.refinementFrames = 0
                    session = ProjectionSession(configuration: configuration, context: context.render)
                }
                try await session.connect(display: BenchContext.display(size))
                if content == "map" { await session.preloadTiles(along: path) }
                let start = DispatchTime.now().uptimeNanoseconds
                let sent = try await session.startStreaming(playing: path)
                let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                let statistics = await session.statistics
                let latency = try await changeLatency(session, sink: sink, settings: settings, changes: context.count(quick: 20, full: 60)) {
                    // The map's change is a camera's; the engine's, an invalidate.
                    index in
                    if content == "map" { await session.setCamera(path[index % path.count]) } else { await session.invalidate() }
                }
                await session.close()
                let sessionFPS = Double(sent) / wall
                fps[content] = sessionFPS
                let render = Summary(milliseconds: statistics.renderTimes).mean
                let encoder = Summary(milliseconds: statistics.encodeTimes).mean
                entry.add("\(content)_session_fps", sessionFPS, "fps", better: .higher)
                entry.add("\(content)_render_ms", render, "ms", better: .lower)
                entry.add("\(content)_encoder_ms", encoder, "ms", better: .lower)
                entry.add("\(content)_change_latency_ms_p50", latency.p50, "ms", better: .lower)
                entry.add("\(content)_change_latency_ms_p99", latency.p99, "ms", better: .lower)
                table.rows.append([size.description, content == "map" ? "CarWindow's map" : "engine's GL", formatted(sessionFPS, "%.1f"),
                                   formatted(render), formatted(encoder),
                                   "\(formatted(latency.p50, "%.1f")) / \(formatted(latency.p99, "%.1f"))", "-"])
                result.checks.append(.expect(sent == frames, "engine \(size): \(content) pictures produced", "\(sent) of \(frames)"))
            }
            let upload = try await uploadCost(context, size: size, pictures: context.count(quick: 30, full: 100))
            entry.add("pixels_convert_ms", upload.convert, "ms", better: .lower)
            entry.add("pixels_upload_ms", upload.upload, "ms", better: .lower)
            table.rows.append([size.description, "engine's pixels (BGRA)", "-", formatted(upload.convert + upload.upload), "-", "-",
                               formatted(upload.upload)])
            result.checks.append(.expect(upload.upload.isFinite && upload.convert.isFinite, "engine \(size): pixel upload measured",
                                         "\(formatted(upload.upload)) ms upload, \(formatted(upload.convert)) ms conversion"))
            do {
                let trip = try await DmaBufRoundTrip.run(context.render, size: size, pictures: context.count(quick: 20, full: 60))
                table.rows.append([size.description, "engine's dma-buf (\(trip.path.hasPrefix("mapped") ? "mapped" : "imported"))", "-",
                                   formatted(trip.milliseconds), "-", "-", "-"])
                result.notes.append("dma-buf round trip at \(size): exported \(trip.exported); \(trip.path); "
                    + "largest Y/Cb/Cr difference at the quadrants' centres \(trip.largestDifference)")
                result.checks.append(.expect(trip.largestDifference <= 4, "engine \(size): dma-buf round trip shows the exported picture",
                                             "\(trip.path), largest difference \(trip.largestDifference)"))
            } catch {
                result.checks.append(.skip("engine \(size): dma-buf round trip", "\(error)"))
            }
            if let map = fps["map"], let gl = fps["gl"] {
                entry.add("gl_to_map_fps_ratio", gl / map, "ratio", better: .higher)
            }
            result.cases.append(entry)
        }
        result.tables.append(table)
        result.notes.append("render ms: the render thread's visit per picture (the draw, the NV12 conversion, starting the readback and collecting the one before). "
            + "Pixels: the conversion alone (the same pixels again) and the upload on top, per picture, on the render thread.")
        return result
    }

    /// One change at a time, each more than a frame interval after the last picture left (so the
    /// pacer never holds it back): the change's time to its access unit leaving the session.
    private func changeLatency(_ session: ProjectionSession, sink: CountingSink, settings: EncoderSettings, changes: Int,
                               change: (Int) async -> Void) async throws -> Summary {
        func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
        var latencies: [Double] = []
        var lastPicture = sink.times.last ?? now()
        for index in 0..<changes {
            let wait = lastPicture + 1 / settings.framesPerSecond + 0.002 - now()
            if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
            let units = sink.units
            let changed = now()
            await change(changes - index)
            try await sink.waitForUnits(above: units)
            lastPicture = sink.times[units]
            latencies.append((lastPicture - changed) * 1000)
        }
        return Summary(latencies)
    }

    /// Milliseconds per picture on the render thread: converting pixels already uploaded, and the
    /// upload of new ones on top (medians of `pictures` each, the readback collected each time).
    private func uploadCost(_ context: BenchContext, size: FrameSize, pictures: Int) async throws -> (convert: Double, upload: Double) {
        let canvas = try await EngineCanvas(context: context.render, width: size.width, height: size.height)
        let bytesPerRow = size.width * 4
        var bytes = [UInt8](repeating: 0, count: bytesPerRow * size.height)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2654435761 >> 13) }
        let pixels = EnginePixels(format: .bgra, width: size.width, height: size.height, bytesPerRow: bytesPerRow, bytes: bytes)
        var frame = NV12Frame(width: size.width, height: size.height, fullRange: false)
        func milliseconds(_ drawing: EngineDrawing) async throws -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            let drawn = await canvas.drawStreamFrame(drawing, fullRange: false, readbackSlot: 0, collecting: (0, frame))
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            if let error = drawn.error { throw BenchError("engine \(size): \(error)") }
            if case .success(let collected)? = drawn.collected { frame = collected }
            return elapsed
        }
        _ = try await milliseconds(.pixels(pixels))     // warm: programs linked, buffers allocated
        // Alternating, so that the machine's drift falls on both alike; medians against outliers.
        var withUpload: [Double] = [], convertOnly: [Double] = []
        for _ in 0..<pictures {
            withUpload.append(try await milliseconds(.pixels(pixels)))
            convertOnly.append(try await milliseconds(.samePixels))
        }
        let upload = Summary(withUpload).p50, convert = Summary(convertOnly).p50
        return (convert, max(upload - convert, 0))
    }
}

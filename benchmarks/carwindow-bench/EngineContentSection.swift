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
            var mapRender = Double.nan
            let costly = SameCostScene()
            for content in ["map", "gl", "costly"] {
                let sink = CountingSink()
                let session: ProjectionSession
                if content == "map" {
                    session = try context.makeEncodingSession(size: size, settings: settings, sink: sink, camera: path[0])
                } else {
                    if content == "costly" {
                        let layers = try await costly.calibrate(context.render, size: size, toMilliseconds: mapRender)
                        result.notes.append("engine \(size): the same-cost scene draws \(layers) blended full-screen layers, "
                            + "\(formatted(costly.calibratedMilliseconds)) ms a picture on the render thread against the map's \(formatted(mapRender)) ms")
                    }
                    var configuration = ProjectionSessionConfiguration(engine: .gl(content == "gl" ? Self.engineScene : costly.draw),
                                                                       makeSink: { _ in sink })
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
                if content == "map" { mapRender = render }
                let encoder = Summary(milliseconds: statistics.encodeTimes).mean
                entry.add("\(content)_session_fps", sessionFPS, "fps", better: .higher)
                entry.add("\(content)_render_ms", render, "ms", better: .lower)
                entry.add("\(content)_encoder_ms", encoder, "ms", better: .lower)
                entry.add("\(content)_change_latency_ms_p50", latency.p50, "ms", better: .lower)
                entry.add("\(content)_change_latency_ms_p99", latency.p99, "ms", better: .lower)
                let label = switch content {
                case "map": "CarWindow's map"
                case "gl": "engine's GL"
                default: "engine's GL, the map's cost"
                }
                table.rows.append([size.description, label, formatted(sessionFPS, "%.1f"),
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
            if let map = fps["map"], let same = fps["costly"] {
                entry.add("same_cost_gl_to_map_fps_ratio", same / map, "ratio", better: .higher)
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

/// An engine scene whose draw costs what the map's does, so that the map and the engine's GL are
/// compared through the same session with the same work on the render thread: the pipeline
/// around the draw, not the scenes. Blended full-screen layers with a one-line shader, as many
/// as `calibrate` finds; every picture shifts their colours.
///
/// - Important: its GL objects are made and used on the render thread only (in `draw`).
final class SameCostScene: @unchecked Sendable {
    private let layers = LockedState(1)
    private var program: GLuint = 0
    private var colourLocation: GLint = -1
    private var vertexArray: GLuint = 0
    private(set) var calibratedMilliseconds = Double.nan

    /// The draw, for `EngineContent.gl`.
    var draw: EngineGLDraw { { [self] frame in drawLayers(frame) } }

    /// Finds the layer count whose canvas visit (draw, conversion, readback) takes about
    /// `target` milliseconds at `size`: doubling, then halving the step, medians of 8 pictures.
    func calibrate(_ context: RenderContext, size: FrameSize, toMilliseconds target: Double) async throws -> Int {
        let canvas = try await EngineCanvas(context: context, width: size.width, height: size.height)
        var frame = NV12Frame(width: size.width, height: size.height, fullRange: false)
        func milliseconds(_ count: Int) async -> Double {
            layers.withLock { $0 = count }
            var times: [Double] = []
            for _ in 0..<8 {
                let start = DispatchTime.now().uptimeNanoseconds
                let drawn = await canvas.drawStreamFrame(.gl(draw, scale: 1), fullRange: false, readbackSlot: 0, collecting: (0, frame))
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                if case .success(let collected)? = drawn.collected { frame = collected }
            }
            return Summary(times).p50
        }
        guard target.isFinite, target > 0 else { throw BenchError("same-cost scene: the map's render time is not known") }
        _ = await milliseconds(1)      // warm: the program is linked at the first draw
        var low = 1, high = 1
        var highTime = await milliseconds(high)
        while highTime < target, high < 4096 {
            low = high
            high *= 2
            highTime = await milliseconds(high)
        }
        while high - low > max(1, high / 16) {
            let middle = (low + high) / 2
            if await milliseconds(middle) < target { low = middle } else { high = middle }
        }
        calibratedMilliseconds = await milliseconds(high)
        return high
    }

    private func drawLayers(_ frame: EngineGLFrame) {
        if program == 0 { makeProgram() }
        glClearColor(0.1, 0.1, 0.12, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        glEnable(GLenum(GL_BLEND))
        glBlendFunc(GLenum(GL_SRC_ALPHA), GLenum(GL_ONE_MINUS_SRC_ALPHA))
        glUseProgram(program)
        glBindVertexArray(vertexArray)
        let count = layers.withLock { $0 }
        let shift = Float(frame.pictureNumber % 64) / 64
        for layer in 0..<count {
            let hue = (Float(layer) / Float(max(count, 1)) + shift).truncatingRemainder(dividingBy: 1)
            glUniform4f(colourLocation, hue, 0.5, 1 - hue, 0.08)
            glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        }
        glBindVertexArray(0)
        glUseProgram(0)
        glDisable(GLenum(GL_BLEND))
    }

    private func makeProgram() {
        func shader(_ type: Int32, _ source: String) -> GLuint {
            let name = glCreateShader(GLenum(type))
            source.withCString { text in
                var pointer: UnsafePointer<GLchar>? = text
                glShaderSource(name, 1, &pointer, nil)
            }
            glCompileShader(name)
            return name
        }
        let vertex = shader(GL_VERTEX_SHADER, """
            #version 300 es
            void main() {
                vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
                gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
            }
            """)
        let fragment = shader(GL_FRAGMENT_SHADER, """
            #version 300 es
            precision mediump float;
            uniform vec4 u_colour;
            out vec4 colour;
            void main() { colour = u_colour; }
            """)
        program = glCreateProgram()
        glAttachShader(program, vertex)
        glAttachShader(program, fragment)
        glLinkProgram(program)
        glDeleteShader(vertex)
        glDeleteShader(fragment)
        colourLocation = glGetUniformLocation(program, "u_colour")
        glGenVertexArrays(1, &vertexArray)
    }
}

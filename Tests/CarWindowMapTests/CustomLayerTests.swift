import Foundation
import Testing
import CGLES
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The engine's own GL drawn as a layer of the map: placed by the view's matrices, in the
/// style's layer order, and a failing layer left out of a picture that is drawn anyway.
@Suite(.serialized) struct CustomLayerTests {
    static let magenta = SIMD4<UInt8>(255, 0, 255, 255)

    /// GL objects made on the render thread on first use and kept there: the layer's draw is
    /// the only code that touches them.
    final class Square: @unchecked Sendable {
        private var program: GLuint = 0, buffer: GLuint = 0, vertexArray: GLuint = 0, matrix: GLint = -1
        /// Corners in metres (east, north) around the origin, in drawing order.
        let corners: [SIMD2<Float>]
        let origin: GeoCoordinate
        /// Clip-space corners instead, ignoring the view: a quad over the whole picture.
        let fullScreen: Bool

        init(origin: GeoCoordinate, halfSide: Float, counterClockwise: Bool, fullScreen: Bool = false) {
            let ccw: [SIMD2<Float>] = [[-halfSide, -halfSide], [halfSide, -halfSide], [halfSide, halfSide], [-halfSide, halfSide]]
            corners = counterClockwise ? ccw : ccw.reversed()
            self.origin = origin
            self.fullScreen = fullScreen
        }

        func draw(_ frame: CustomLayerFrame) throws {
            if program == 0 { try prepare() }
            glUseProgram(program)
            var matrix = fullScreen ? SIMD16<Float>(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1)
                : frame.matrix(metresAround: origin)
            withUnsafeBytes(of: &matrix) { glUniformMatrix4fv(self.matrix, 1, GLboolean(GL_FALSE), $0.baseAddress!.assumingMemoryBound(to: GLfloat.self)) }
            glBindVertexArray(vertexArray)
            if !fullScreen {
                // The picture's first row is its top: faces towards the camera wind clockwise in GL's terms.
                glEnable(GLenum(GL_CULL_FACE))
                glCullFace(GLenum(GL_BACK))
                glFrontFace(GLenum(GL_CW))
            }
            glDrawArrays(GLenum(GL_TRIANGLE_FAN), 0, 4)
        }

        private func prepare() throws {
            func compile(_ type: Int32, _ source: String) -> GLuint {
                let shader = glCreateShader(GLenum(type))
                source.withCString { text in
                    var pointer: UnsafePointer<GLchar>? = text
                    glShaderSource(shader, 1, &pointer, nil)
                }
                glCompileShader(shader)
                return shader
            }
            let vertex = compile(GL_VERTEX_SHADER, """
                #version 300 es
                layout(location = 0) in vec2 position;
                uniform mat4 u_matrix;
                void main() { gl_Position = u_matrix * vec4(position, 0.0, 1.0); }
                """)
            let fragment = compile(GL_FRAGMENT_SHADER, """
                #version 300 es
                precision mediump float;
                out vec4 colour;
                void main() { colour = vec4(1.0, 0.0, 1.0, 1.0); }
                """)
            program = glCreateProgram()
            glAttachShader(program, vertex)
            glAttachShader(program, fragment)
            glLinkProgram(program)
            var linked: GLint = 0
            glGetProgramiv(program, GLenum(GL_LINK_STATUS), &linked)
            guard linked != 0 else { throw GLFailure() }
            matrix = glGetUniformLocation(program, "u_matrix")
            glGenVertexArrays(1, &vertexArray)
            glBindVertexArray(vertexArray)
            glGenBuffers(1, &buffer)
            glBindBuffer(GLenum(GL_ARRAY_BUFFER), buffer)
            let points = fullScreen ? [SIMD2<Float>(-1, -1), [1, -1], [1, 1], [-1, 1]] : corners
            points.withUnsafeBytes { glBufferData(GLenum(GL_ARRAY_BUFFER), $0.count, $0.baseAddress, GLenum(GL_STATIC_DRAW)) }
            glEnableVertexAttribArray(0)
            glVertexAttribPointer(0, 2, GLenum(GL_FLOAT), GLboolean(GL_FALSE), 8, nil)
        }
    }

    struct GLFailure: Error {}
    struct SceneNotReady: Error, CustomStringConvertible { var description: String { "the engine's scene is not ready" } }

    static func renderer(_ context: RenderContext, camera: Camera) async throws -> MapRenderer {
        let renderer = try await MapRenderer(context: context, width: 400, height: 240,
                                             style: try Style(contentsOf: TestPaths.style("day")),
                                             tiles: try openTileSource(at: TestPaths.tiles), fonts: bundledFonts, camera: camera)
        await renderer.setOverlays(MapOverlays(showsControls: false))
        return renderer
    }

    static func magentaShare(_ image: RGBAImage) -> Double {
        var count = 0
        for y in 0..<image.height {
            for x in 0..<image.width where image.pixel(x: x, y: y) == magenta { count += 1 }
        }
        return Double(count) / Double(image.width * image.height)
    }

    /// A square 40 m across, 60 m east of the centre under a pitched, turned camera, lands where
    /// the view puts that place; wound clockwise it faces away and is culled.
    @Test(arguments: [true, false])
    func aLayerInMetresLandsWhereTheViewPutsItsPlace(counterClockwise: Bool) async throws {
        let context = try await RenderContext()
        let camera = Camera(center: helsinki, zoom: 17, bearing: 30, pitch: 40)
        let renderer = try await Self.renderer(context, camera: camera)
        let place = GeoCoordinate(latitude: helsinki.latitude, longitude: helsinki.longitude + 60 / (111_320 * cos(helsinki.latitude * .pi / 180)))
        let square = Square(origin: place, halfSide: 20, counterClockwise: counterClockwise)
        try await renderer.addCustomLayer(CustomLayer(id: "square") { try square.draw($0) })
        _ = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        let transform = MapTransform(camera: camera, width: 400, height: 240)
        let point = try #require(transform.screenPoint(for: place))
        let pixel = image.pixel(x: Int(point.x.rounded()), y: Int(point.y.rounded()))
        if counterClockwise {
            #expect(pixel == Self.magenta, "the square's place \(point) shows \(pixel)")
            // 40 m at zoom 17 is about 100 pixels across at the centre: a share of the picture.
            let share = Self.magentaShare(image)
            #expect(share > 0.03 && share < 0.2, "\(share * 100)% of the picture is the square")
        } else {
            #expect(Self.magentaShare(image) == 0, "a square facing away is culled")
        }
        #expect(await renderer.customLayerIDs == ["square"])
        await context.shutdown()
    }

    /// The metre matrix puts a place's offset (east, north) where the view puts that place, and
    /// the Mercator matrix puts the place's Mercator coordinates there: checked off the centre,
    /// under a turned and pitched camera, where a mirrored axis would show.
    @Test func theMatricesPutPlacesWhereTheViewDoes() async throws {
        let camera = Camera(center: helsinki, zoom: 16.5, bearing: 30, pitch: 40)
        let transform = MapTransform(camera: camera, width: 400, height: 240)
        let frame = CustomLayerFrame(framebuffer: 0, transform: transform)
        let metresPerDegreeNorth = 111_320.0, metresPerDegreeEast = 111_320 * cos(helsinki.latitude * .pi / 180)
        func pixel(_ clip: SIMD4<Float>) -> SIMD2<Double> {
            // The picture's first row is its top: clip y -1 is row 0.
            SIMD2((Double(clip.x / clip.w) + 1) / 2 * 400, (Double(clip.y / clip.w) + 1) / 2 * 240)
        }
        func times(_ m: SIMD16<Float>, _ v: SIMD4<Float>) -> SIMD4<Float> {
            var result = SIMD4<Float>()
            for row in 0..<4 {
                result[row] = m[row] * v.x + m[4 + row] * v.y + m[8 + row] * v.z + m[12 + row] * v.w
            }
            return result
        }
        for (east, north) in [(0.0, 80.0), (60.0, 0.0), (-40.0, -50.0)] {
            let place = GeoCoordinate(latitude: helsinki.latitude + north / metresPerDegreeNorth,
                                      longitude: helsinki.longitude + east / metresPerDegreeEast)
            let expected = try #require(transform.screenPoint(for: place))
            let byMetres = pixel(times(frame.matrix(metresAround: helsinki), SIMD4(Float(east), Float(north), 0, 1)))
            #expect(abs(byMetres.x - expected.x) < 1 && abs(byMetres.y - expected.y) < 1,
                    "\(east) m east, \(north) m north: \(byMetres) by metres, \(expected) by the view")
            let mercator = frame.mercator(for: place)
            let byMercator = pixel(times(frame.mercatorMatrix, SIMD4(Float(mercator.x), Float(mercator.y), 0, 1)))
            // Floats over the whole world: a few pixels at zoom 16.5.
            #expect(abs(byMercator.x - expected.x) < 4 && abs(byMercator.y - expected.y) < 4,
                    "\(east) m east, \(north) m north: \(byMercator) by Mercator, \(expected) by the view")
        }
    }

    /// Below the buildings, a layer covering the picture shows only where no building (nor any
    /// layer above) is; above the style's layers it covers all but the labels and overlays.
    @Test func aLayerBelowAStyleLayerIsCoveredByIt() async throws {
        let context = try await RenderContext()
        let renderer = try await Self.renderer(context, camera: Camera(center: helsinki, zoom: 16.5))
        let cover = Square(origin: helsinki, halfSide: 1, counterClockwise: true, fullScreen: true)
        try await renderer.addCustomLayer(CustomLayer(id: "cover") { try cover.draw($0) }, below: "building")
        _ = await renderer.renderWhenLoaded()
        let below = Self.magentaShare(await renderer.readPixels())
        try await renderer.addCustomLayer(CustomLayer(id: "cover") { try cover.draw($0) })
        _ = await renderer.renderFrame()
        let above = Self.magentaShare(await renderer.readPixels())
        #expect(below > 0.05, "\(below * 100)% magenta below the buildings")
        #expect(above > below + 0.1, "\(above * 100)% above the style's layers against \(below * 100)% below the buildings")
        #expect(above < 1, "labels and the credit line stay above it")
        await #expect(throws: MapRenderError.self) {
            try await renderer.addCustomLayer(CustomLayer(id: "lost") { _ in }, below: "no-such-layer")
        }
        await renderer.removeCustomLayer(id: "cover")
        _ = await renderer.renderFrame()
        #expect(Self.magentaShare(await renderer.readPixels()) == 0, "removed")
        await context.shutdown()
    }

    /// On a magenta map without labels, what is not magenta is the renderer's own: the credit
    /// line and the buttons. With the engine's panels covering the right 160 and the bottom 60 pixels, none
    /// of it is drawn under them, and the credit sits in the corner of what is left.
    @Test func theCreditAndTheButtonsKeepOutOfTheEnginesPanels() async throws {
        let context = try await RenderContext()
        // A magenta background and nothing else: no labels, so every other pixel is the renderer's own.
        let magentaOnly = try Style(data: Data("""
            {"version": 8, "sources": {"openmaptiles": {"type": "vector", "url": "x"}},
             "layers": [{"id": "bg", "type": "background", "paint": {"background-color": "#ff00ff"}}]}
            """.utf8))
        let renderer = try await MapRenderer(context: context, width: 400, height: 240, style: magentaOnly,
                                             tiles: try openTileSource(at: TestPaths.tiles), fonts: bundledFonts,
                                             camera: Camera(center: helsinki, zoom: 16.5))
        let panels = ScreenInsets(bottom: 60, right: 160)
        let visibleRight = 400 - Int(panels.right), visibleBottom = 240 - Int(panels.bottom)
        /// The renderer's own pixels under the panels, and in the 60 x 12 pixels at the bottom-right
        /// corner of what they leave visible, drawn as if `covered` were covered.
        func ownPixels(drawnWith covered: ScreenInsets) async -> (underPanels: Int, visibleCorner: Int) {
            await renderer.setOverlays(MapOverlays(showsControls: true, coveredInsets: covered))
            _ = await renderer.renderWhenLoaded()
            let image = await renderer.readPixels()
            var under = 0, corner = 0
            for y in 0..<image.height {
                for x in 0..<image.width where image.pixel(x: x, y: y) != Self.magenta {
                    if x >= visibleRight || y >= visibleBottom { under += 1 }
                    if x >= visibleRight - 60, x < visibleRight, y >= visibleBottom - 12, y < visibleBottom { corner += 1 }
                }
            }
            return (under, corner)
        }
        let open = await ownPixels(drawnWith: .zero)
        let beside = await ownPixels(drawnWith: panels)
        #expect(open.underPanels > 500, "without insets the credit and buttons are where the panels would be: \(open.underPanels)")
        #expect(beside.underPanels == 0, "\(beside.underPanels) of the renderer's pixels under the panels")
        #expect(beside.visibleCorner > 100, "the credit's corner holds \(beside.visibleCorner) of its pixels")
        await context.shutdown()
    }

    /// A layer that throws (leaving state behind) is left out; the map around it is drawn as
    /// without it, and the next picture is the same.
    @Test func aThrowingLayerIsLeftOutAndTheMapDrawn() async throws {
        let context = try await RenderContext()
        let renderer = try await Self.renderer(context, camera: Camera(center: helsinki, zoom: 16, pitch: 30))
        _ = await renderer.renderWhenLoaded()
        let plain = await renderer.readPixels()
        try await renderer.addCustomLayer(CustomLayer(id: "broken") { _ in
            glEnable(GLenum(GL_SCISSOR_TEST))
            glScissor(0, 0, 1, 1)
            glColorMask(GLboolean(GL_FALSE), GLboolean(GL_FALSE), GLboolean(GL_FALSE), GLboolean(GL_FALSE))
            glBlendEquation(GLenum(GL_MAX))
            throw SceneNotReady()
        }, below: "road-label-minor")
        _ = await renderer.renderFrame()
        let withBroken = await renderer.readPixels()
        // Tolerance 2: the same GL calls in the same order give the same pixels; the state the
        // layer left (scissor, colour mask, blend equation) would change most of them.
        let difference = try #require(withBroken.difference(from: plain, tolerance: 2))
        #expect(difference.differingFraction < 0.001, "\(difference) from the map without the layer")
        await context.shutdown()
    }
}

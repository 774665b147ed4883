internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// One corner of a circle's quad; 40 bytes.
struct CircleVertex {
    /// The centre in screen pixels.
    var position: SIMD2<Float>
    /// xy: the corner's offset in pixels; zw: the same in outer radii.
    var extrude: SIMD4<Float>
    var color: PackedColor
    var strokeColor: PackedColor
    /// Radius and stroke width in pixels.
    var size: SIMD2<Float>
}

/// Draws circle layers: each frame it projects the centres of every drawn tile's circles and
/// draws them as screen quads in one call per layer, so zoom-dependent radii follow the camera.
/// Its arrays keep their storage between frames.
final class CircleDrawer: LayerDrawer {
    private let vertexBuffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
    private let indexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
    private let vertexArray = GLVertexArray()
    private var vertices: [CircleVertex] = []
    private var indices: [UInt32] = []
    /// Wider discs are clamped: no style means a circle wider than any screen.
    static let maximumRadius: Float = 1024
    private static let corners: [SIMD2<Float>] = [SIMD2(-1, -1), SIMD2(1, -1), SIMD2(1, 1), SIMD2(-1, 1)]

    init() {
        glBindVertexArray(vertexArray.name)
        glBindBuffer(GLenum(GL_ARRAY_BUFFER), vertexBuffer.name)
        let stride = MemoryLayout<CircleVertex>.stride
        vertexArray.attribute(AttributeSlot.position, components: 2, stride: stride,
                              offset: MemoryLayout<CircleVertex>.offset(of: \.position) ?? 0)
        vertexArray.attribute(AttributeSlot.circleExtrude, components: 4, stride: stride,
                              offset: MemoryLayout<CircleVertex>.offset(of: \.extrude) ?? 0)
        vertexArray.attribute(AttributeSlot.circleColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE), normalized: true,
                              stride: stride, offset: MemoryLayout<CircleVertex>.offset(of: \.color) ?? 0)
        vertexArray.attribute(AttributeSlot.circleStrokeColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE),
                              normalized: true, stride: stride,
                              offset: MemoryLayout<CircleVertex>.offset(of: \.strokeColor) ?? 0)
        vertexArray.attribute(AttributeSlot.circleSize, components: 2, stride: stride,
                              offset: MemoryLayout<CircleVertex>.offset(of: \.size) ?? 0)
        glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), indexBuffer.name)
        glBindVertexArray(0)
    }

    /// Draws the circles of style layer `index` from every drawn tile.
    func draw(_ layer: StyleLayer, at index: Int, pass: RenderPass, in frame: inout LayerDrawContext) {
        guard let paint = layer.paint.circle else { return }
        let transform = frame.transform, drawn = frame.tiles, matrices = frame.matrices
        let zoom = transform.camera.zoom
        let color = paint.circleColor.evaluate(zoom: zoom).packed(opacity: Float(paint.circleOpacity.evaluate(zoom: zoom)))
        let strokeColor = paint.circleStrokeColor.evaluate(zoom: zoom)
            .packed(opacity: Float(paint.circleStrokeOpacity.evaluate(zoom: zoom)))
        let radius = Float(paint.circleRadius.evaluate(zoom: zoom))
        let strokeWidth = Float(paint.circleStrokeWidth.evaluate(zoom: zoom))
        let blur = Float(paint.circleBlur.evaluate(zoom: zoom))
        let shrinksWithDistance = paint.circlePitchScale.evaluate(zoom: zoom) == .map
        let width = Float(transform.width), height = Float(transform.height)
        let centreDepth = transform.cameraToCenterDistance
        vertices.removeAll(keepingCapacity: true)
        indices.removeAll(keepingCapacity: true)
        for (tileIndex, tile) in drawn.enumerated() {
            guard index < tile.layers.count, case .circle(let bucket)? = tile.layers[index] else { continue }
            let matrix = matrices[tileIndex]
            for (i, centre) in bucket.centers.enumerated() {
                let clip = matrix.transform(SIMD4(Double(centre.x), Double(centre.y), 0, 1))
                guard clip.w > 1e-9 else { continue }
                let screen = SIMD2(Float((clip.x / clip.w + 1) / 2) * width, Float((clip.y / clip.w + 1) / 2) * height)
                var r = Self.clamped(bucket.radii?[i] ?? radius)
                var stroke = Self.clamped(bucket.strokeWidths?[i] ?? strokeWidth)
                if shrinksWithDistance {
                    let perspective = Float(centreDepth / clip.w)
                    r *= perspective
                    stroke *= perspective
                }
                let outer = r + stroke
                guard outer > 0, screen.x + outer >= 0, screen.y + outer >= 0,
                      screen.x - outer <= width, screen.y - outer <= height else { continue }
                let fill = bucket.colors?[i] ?? color
                let ring = bucket.strokeColors?[i] ?? strokeColor
                let size = SIMD2(r, stroke)
                let base = UInt32(vertices.count)
                for corner in Self.corners {
                    vertices.append(CircleVertex(position: screen,
                                                 extrude: SIMD4(corner.x * outer, corner.y * outer, corner.x, corner.y),
                                                 color: fill, strokeColor: ring, size: size))
                }
                for corner: UInt32 in [0, 1, 2, 0, 2, 3] { indices.append(base + corner) }
            }
        }
        guard !indices.isEmpty else { return }
        let state = frame.state
        let program = frame.programs.circle
        state.useProgram(program.name)
        glUniform2f(program.uniforms.screenSize, width, height)
        glUniform1f(program.uniforms.blur, max(0, min(blur, 1)))
        // Circles are not cut at tile edges: a disc near one belongs to the tile of its centre.
        state.setStencilTest(false)
        // Bound before the uploads: the index buffer's binding belongs to the vertex array.
        glBindVertexArray(vertexArray.name)
        defer { glBindVertexArray(0) }
        vertexBuffer.upload(vertices, usage: GLenum(GL_DYNAMIC_DRAW))
        indexBuffer.upload(indices, usage: GLenum(GL_DYNAMIC_DRAW))
        glDrawElements(GLenum(GL_TRIANGLES), GLsizei(indices.count), GLenum(GL_UNSIGNED_INT), nil)
        frame.drawCalls += 1
    }

    private static func clamped(_ value: Float) -> Float {
        value.isFinite ? max(0, min(value, maximumRadius)) : 0
    }
}

internal import CGLES
import CarWindowGeo
import CarWindowStyle

/// Draws the icons the label placer placed, from the style's sprite sheet in one texture.
/// Made, used and released on the render thread, as part of a map's resources.
final class IconRenderer {
    private let vertexBuffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
    private let indexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
    private let vertexArray = GLVertexArray()
    private let sheetTexture = GLTexture()
    private var hasSheet = false

    init() {
        glBindVertexArray(vertexArray.name)
        glBindBuffer(GLenum(GL_ARRAY_BUFFER), vertexBuffer.name)
        vertexArray.describeScreenQuads()
        glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), indexBuffer.name)
        glBindVertexArray(0)
    }

    /// Uploads the sheet; an empty sheet draws no icons.
    func upload(_ sheet: SpriteSheet) {
        hasSheet = sheet.width > 0 && sheet.height > 0
        guard hasSheet else { return }
        sheet.pixels.withUnsafeBytes { bytes in
            sheetTexture.allocate(width: sheet.width, height: sheet.height, internalFormat: GLenum(GL_RGBA8),
                                  format: GLenum(GL_RGBA), type: GLenum(GL_UNSIGNED_BYTE), pixels: bytes.baseAddress)
        }
    }

    /// Binds the sheet to texture unit 0 for a pattern; false when there is no sheet.
    func bindSheet() -> Bool {
        guard hasSheet else { return false }
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_2D), sheetTexture.name)
        return true
    }

    /// The sheet's size in pixels.
    var sheetSize: SIMD2<Float> { SIMD2(Float(sheetTexture.width), Float(sheetTexture.height)) }

    /// Draws every icon quad gathered this frame in one call.
    func draw(_ placer: LabelPlacer, width: Int, height: Int, programs: Programs, drawCalls: inout Int) {
        guard hasSheet, !placer.iconIndices.isEmpty else { return }
        let program = programs.icon
        glUseProgram(program.name)
        glUniform2f(program.uniforms.screenSize, Float(width), Float(height))
        glUniform2f(program.uniforms.sheetSize, Float(sheetTexture.width), Float(sheetTexture.height))
        glActiveTexture(GLenum(GL_TEXTURE0))
        glBindTexture(GLenum(GL_TEXTURE_2D), sheetTexture.name)
        glUniform1i(program.uniforms.sheet, 0)
        glBindVertexArray(vertexArray.name)
        vertexBuffer.upload(placer.iconVertices, usage: GLenum(GL_DYNAMIC_DRAW))
        indexBuffer.upload(placer.iconIndices, usage: GLenum(GL_DYNAMIC_DRAW))
        glDrawElements(GLenum(GL_TRIANGLES), GLsizei(placer.iconIndices.count), GLenum(GL_UNSIGNED_INT), nil)
        drawCalls += 1
        glBindVertexArray(0)
    }
}

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
final class CircleRenderer {
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
    func draw(_ layer: StyleLayer, index: Int, tiles drawn: [GPUTile], matrices: [Matrix4], transform: MapTransform,
              programs: Programs, drawCalls: inout Int) {
        guard let paint = layer.paint.circle else { return }
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
        let program = programs.circle
        glUseProgram(program.name)
        glUniform2f(program.uniforms.screenSize, width, height)
        glUniform1f(program.uniforms.blur, max(0, min(blur, 1)))
        // Circles are not cut at tile edges: a disc near one belongs to the tile of its centre.
        glDisable(GLenum(GL_STENCIL_TEST))
        glBindVertexArray(vertexArray.name)
        vertexBuffer.upload(vertices, usage: GLenum(GL_DYNAMIC_DRAW))
        indexBuffer.upload(indices, usage: GLenum(GL_DYNAMIC_DRAW))
        glDrawElements(GLenum(GL_TRIANGLES), GLsizei(indices.count), GLenum(GL_UNSIGNED_INT), nil)
        drawCalls += 1
        glBindVertexArray(0)
        glEnable(GLenum(GL_STENCIL_TEST))
    }

    private static func clamped(_ value: Float) -> Float {
        value.isFinite ? max(0, min(value, maximumRadius)) : 0
    }
}

internal import CGLES
import CarWindowGeo

/// Attribute slots, bound by name when each program links (see ``Programs``).
enum AttributeSlot {
    static let position: GLuint = 0
    // Fill: colour at 1.
    static let fillColor: GLuint = 1
    // Line: extrude 1, edge 2, distance 3, colour 4, width 5.
    static let lineExtrude: GLuint = 1, lineEdge: GLuint = 2, lineDistance: GLuint = 3
    static let lineColor: GLuint = 4, lineWidth: GLuint = 5
    // Extrusion: normal 1, top 2, heights 3, colour 4.
    static let extrusionNormal: GLuint = 1, extrusionTop: GLuint = 2, extrusionHeights: GLuint = 3
    static let extrusionColor: GLuint = 4
    // Text: texture coordinate 1, fill 2, halo 3, parameters 4.
    static let textCoordinate: GLuint = 1, textFill: GLuint = 2, textHalo: GLuint = 3, textParameters: GLuint = 4
    // Icons share the text slots. Circles: extrude 1, colour 2, stroke colour 3, size 4.
    static let circleExtrude: GLuint = 1, circleColor: GLuint = 2, circleStrokeColor: GLuint = 3
    static let circleSize: GLuint = 4
}

/// Indexed triangles in GPU buffers, with the vertex arrays that describe them.
///
/// Each draw binds its vertex array itself; making one binds its vertex array and then none,
/// since the element buffer binding of an index upload belongs to the bound vertex array.
final class GPUMesh {
    let vertexArray = GLVertexArray()
    private var buffers: [GLBuffer] = []
    let indexCount: Int
    /// Whether colours (and for lines, widths) come per vertex rather than from one constant value.
    let hasPerVertexColor: Bool
    let hasPerVertexWidth: Bool
    /// Spatial runs of the indices; one chunk spanning everything when the bucket had none.
    let chunks: [MeshChunk]
    /// Line pairs over the same vertices (fill outlines), drawn by ``drawLines(_:)``.
    private var lineIndexBuffer: GLBuffer?
    private var lineChunks: [MeshChunk] = []
    private var triangleIndexBuffer: GLBuffer?

    init(indices: [UInt32], chunks: [MeshChunk] = [], hasPerVertexColor: Bool, hasPerVertexWidth: Bool = false,
         describe: (GPUMesh) -> Void) {
        indexCount = indices.count
        self.chunks = chunks.isEmpty
            ? [MeshChunk(indexStart: 0, indexCount: indices.count, bounds: SIMD4(-.infinity, -.infinity, .infinity, .infinity))]
            : chunks
        self.hasPerVertexColor = hasPerVertexColor
        self.hasPerVertexWidth = hasPerVertexWidth
        glBindVertexArray(vertexArray.name)
        describe(self)
        let indexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
        indexBuffer.upload(indices)
        triangleIndexBuffer = indexBuffer
        glBindVertexArray(0)
    }

    /// Adds line pairs over this mesh's vertices.
    func setLines(_ indices: [UInt32], chunks: [MeshChunk]) {
        guard !indices.isEmpty else { return }
        glBindVertexArray(0)
        let buffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
        buffer.upload(indices)
        lineIndexBuffer = buffer
        lineChunks = chunks
    }

    var hasLines: Bool { lineIndexBuffer != nil }

    /// Draws the visible line pairs; returns the calls made.
    func drawLines(_ culler: ChunkCuller) -> Int {
        guard let lineIndexBuffer, let triangleIndexBuffer else { return 0 }
        return withVertexArray {
            glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), lineIndexBuffer.name)
            let calls = Self.drawRuns(lineChunks, culler: culler, margin: 1, mode: GLenum(GL_LINES))
            glBindBuffer(GLenum(GL_ELEMENT_ARRAY_BUFFER), triangleIndexBuffer.name)
            return calls
        }
    }

    /// Uploads `elements` and binds it as the array buffer, for `attribute` calls that follow.
    func vertexBuffer<T>(_ elements: [T]) {
        let buffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
        buffer.upload(elements)
        buffers.append(buffer)
    }

    func draw(mode: GLenum = GLenum(GL_TRIANGLES)) {
        withVertexArray { glDrawElements(mode, GLsizei(indexCount), GLenum(GL_UNSIGNED_INT), nil) }
    }

    /// Draws the chunks `culler` can see, merging neighbours into one call; returns the calls made.
    @discardableResult
    func draw(_ culler: ChunkCuller, margin: Float) -> Int {
        withVertexArray { Self.drawRuns(chunks, culler: culler, margin: margin, mode: GLenum(GL_TRIANGLES)) }
    }

    /// Binds this mesh's vertex array, always: a skipped bind would draw with whatever array
    /// is bound. It stays bound after: every index upload binds its own array first.
    private func withVertexArray<Result>(_ body: () -> Result) -> Result {
        glBindVertexArray(vertexArray.name)
        return body()
    }

    private static func drawRuns(_ chunks: [MeshChunk], culler: ChunkCuller, margin: Float, mode: GLenum) -> Int {
        var calls = 0
        var runStart = -1, runEnd = -1
        func flush() {
            guard runEnd > runStart else { return }
            glDrawElements(mode, GLsizei(runEnd - runStart), GLenum(GL_UNSIGNED_INT),
                           UnsafeRawPointer(bitPattern: runStart * 4))
            calls += 1
        }
        for chunk in chunks where culler.sees(chunk.bounds, margin: margin) {
            if chunk.indexStart != runEnd {
                flush()
                runStart = chunk.indexStart
            }
            runEnd = chunk.indexStart + chunk.indexCount
        }
        flush()
        return calls
    }
}

/// The part of the ground a view shows, in one tile's units, for skipping chunks it cannot see.
struct ChunkCuller {
    private var corners: (SIMD2<Float>, SIMD2<Float>, SIMD2<Float>, SIMD2<Float>)
    private var bounds: SIMD4<Float>

    init(transform: MapTransform, tile: TileID, extent: Int, quad: GroundQuad) {
        let tileWorldSize = transform.worldSize / Double(1 << tile.z)
        let origin = SIMD2(Double(tile.x), Double(tile.y)) * tileWorldSize
        let scale = Double(extent) / tileWorldSize
        func local(_ p: SIMD2<Double>) -> SIMD2<Float> {
            let v = (p - origin) * scale
            return SIMD2(Float(v.x), Float(v.y))
        }
        corners = (local(quad.corners.0), local(quad.corners.1), local(quad.corners.2), local(quad.corners.3))
        let low = pointwiseMin(pointwiseMin(corners.0, corners.1), pointwiseMin(corners.2, corners.3))
        let high = pointwiseMax(pointwiseMax(corners.0, corners.1), pointwiseMax(corners.2, corners.3))
        bounds = SIMD4(low.x, low.y, high.x, high.y)
    }

    /// Whether the box, grown by `margin` tile units, may show: a separating-axis test against
    /// the view's ground quadrilateral. Runs per chunk per frame, so it allocates nothing.
    func sees(_ box: SIMD4<Float>, margin: Float) -> Bool {
        let b = box + SIMD4(-margin, -margin, margin, margin)
        if b.z < bounds.x || b.x > bounds.z || b.w < bounds.y || b.y > bounds.w { return false }
        let quad = corners
        return separates(quad.0, quad.1, b) && separates(quad.1, quad.2, b) && separates(quad.2, quad.3, b)
            && separates(quad.3, quad.0, b)
    }

    /// False when the edge a -> b of the quad is a separating axis between quad and box.
    private func separates(_ a: SIMD2<Float>, _ b: SIMD2<Float>, _ box: SIMD4<Float>) -> Bool {
        let axis = SIMD2(a.y - b.y, b.x - a.x)
        func project(_ p: SIMD2<Float>) -> Float { (p * axis).sum() }
        let q = (project(corners.0), project(corners.1), project(corners.2), project(corners.3))
        let quadMin = min(min(q.0, q.1), min(q.2, q.3)), quadMax = max(max(q.0, q.1), max(q.2, q.3))
        let c = (project(SIMD2(box.x, box.y)), project(SIMD2(box.z, box.y)), project(SIMD2(box.z, box.w)),
                 project(SIMD2(box.x, box.w)))
        let boxMin = min(min(c.0, c.1), min(c.2, c.3)), boxMax = max(max(c.0, c.1), max(c.2, c.3))
        return !(boxMax < quadMin || boxMin > quadMax)
    }
}

extension GPUMesh {
    static func fill(positions: [SIMD2<Float>], indices: [UInt32], colors: [PackedColor]?,
                     chunks: [MeshChunk] = []) -> GPUMesh {
        GPUMesh(indices: indices, chunks: chunks, hasPerVertexColor: colors != nil) { mesh in
            mesh.vertexBuffer(positions)
            mesh.vertexArray.attribute(AttributeSlot.position, components: 2, stride: 8, offset: 0)
            if let colors {
                mesh.vertexBuffer(colors)
                mesh.vertexArray.attribute(AttributeSlot.fillColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE),
                                           normalized: true, stride: 4, offset: 0)
            }
        }
    }

    static func line(_ tessellation: LineTessellation, colors: [PackedColor]?, widths: [Float]?,
                     chunks: [MeshChunk] = []) -> GPUMesh {
        GPUMesh(indices: tessellation.indices, chunks: chunks, hasPerVertexColor: colors != nil,
                hasPerVertexWidth: widths != nil) { mesh in
            mesh.vertexBuffer(tessellation.vertices)
            let stride = MemoryLayout<LineVertex>.stride
            let array = mesh.vertexArray
            array.attribute(AttributeSlot.position, components: 2, stride: stride,
                            offset: MemoryLayout<LineVertex>.offset(of: \.position) ?? 0)
            array.attribute(AttributeSlot.lineExtrude, components: 2, stride: stride,
                            offset: MemoryLayout<LineVertex>.offset(of: \.extrude) ?? 0)
            array.attribute(AttributeSlot.lineEdge, components: 2, stride: stride,
                            offset: MemoryLayout<LineVertex>.offset(of: \.edge) ?? 0)
            array.attribute(AttributeSlot.lineDistance, components: 1, stride: stride,
                            offset: MemoryLayout<LineVertex>.offset(of: \.distance) ?? 0)
            if let colors {
                mesh.vertexBuffer(colors)
                array.attribute(AttributeSlot.lineColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE),
                                normalized: true, stride: 4, offset: 0)
            }
            if let widths {
                mesh.vertexBuffer(widths)
                array.attribute(AttributeSlot.lineWidth, components: 1, stride: 4, offset: 0)
            }
        }
    }

    static func extrusion(_ bucket: ExtrusionBucket) -> GPUMesh {
        GPUMesh(indices: bucket.mesh.indices, chunks: bucket.chunks, hasPerVertexColor: bucket.colors != nil) { mesh in
            mesh.vertexBuffer(bucket.mesh.vertices)
            let stride = MemoryLayout<ExtrusionVertex>.stride
            let array = mesh.vertexArray
            array.attribute(AttributeSlot.position, components: 2, stride: stride,
                            offset: MemoryLayout<ExtrusionVertex>.offset(of: \.position) ?? 0)
            array.attribute(AttributeSlot.extrusionNormal, components: 3, stride: stride,
                            offset: MemoryLayout<ExtrusionVertex>.offset(of: \.normal) ?? 0)
            array.attribute(AttributeSlot.extrusionTop, components: 1, stride: stride,
                            offset: MemoryLayout<ExtrusionVertex>.offset(of: \.isTop) ?? 0)
            mesh.vertexBuffer(bucket.heights)
            array.attribute(AttributeSlot.extrusionHeights, components: 2, stride: 8, offset: 0)
            if let colors = bucket.colors {
                mesh.vertexBuffer(colors)
                array.attribute(AttributeSlot.extrusionColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE),
                                normalized: true, stride: 4, offset: 0)
            }
        }
    }
}

/// A tile's buckets in GPU buffers, per style layer index.
final class GPUTile {
    enum Layer {
        case fill(GPUMesh)
        case line(GPUMesh)
        case extrusion(GPUMesh)
        case symbol(SymbolBucket)
        /// Circles are projected and drawn as screen quads each frame, like labels.
        case circle(CircleBucket)
    }

    let layout: TileLayout
    var layers: [Layer?]
    var lastUse: UInt64 = 0

    init(_ layout: TileLayout) {
        self.layout = layout
        layers = layout.buckets.map { bucket -> Layer? in
            switch bucket {
            case .fill(let fill):
                let mesh = GPUMesh.fill(positions: fill.positions, indices: fill.indices, colors: fill.colors,
                                        chunks: fill.chunks)
                mesh.setLines(fill.outlineIndices, chunks: fill.outlineChunks)
                return .fill(mesh)
            case .line(let line):
                return .line(.line(line.tessellation, colors: line.colors, widths: line.widths, chunks: line.chunks))
            case .extrusion(let extrusion):
                return .extrusion(.extrusion(extrusion))
            case .symbol(let symbol):
                return .symbol(symbol)
            case .circle(let circle):
                return .circle(circle)
            case nil:
                return nil
            }
        }
    }
}

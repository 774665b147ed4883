import CGLES

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
}

/// Indexed triangles in GPU buffers, with the vertex arrays that describe them.
final class GPUMesh {
    let vertexArray = GLVertexArray()
    private var buffers: [GLBuffer] = []
    let indexCount: Int
    /// Whether colours (and for lines, widths) come per vertex rather than from one constant value.
    let hasPerVertexColor: Bool
    let hasPerVertexWidth: Bool

    init(indices: [UInt32], hasPerVertexColor: Bool, hasPerVertexWidth: Bool = false,
         describe: (GPUMesh) -> Void) {
        indexCount = indices.count
        self.hasPerVertexColor = hasPerVertexColor
        self.hasPerVertexWidth = hasPerVertexWidth
        glBindVertexArray(vertexArray.name)
        describe(self)
        let indexBuffer = GLBuffer(target: GLenum(GL_ELEMENT_ARRAY_BUFFER))
        indexBuffer.upload(indices)
        buffers.append(indexBuffer)
        glBindVertexArray(0)
    }

    /// Uploads `elements` and binds it as the array buffer, for `attribute` calls that follow.
    func vertexBuffer<T>(_ elements: [T]) {
        let buffer = GLBuffer(target: GLenum(GL_ARRAY_BUFFER))
        buffer.upload(elements)
        buffers.append(buffer)
    }

    func draw(mode: GLenum = GLenum(GL_TRIANGLES)) {
        glBindVertexArray(vertexArray.name)
        glDrawElements(mode, GLsizei(indexCount), GLenum(GL_UNSIGNED_INT), nil)
    }
}

extension GPUMesh {
    static func fill(positions: [SIMD2<Float>], indices: [UInt32], colors: [PackedColor]?) -> GPUMesh {
        GPUMesh(indices: indices, hasPerVertexColor: colors != nil) { mesh in
            mesh.vertexBuffer(positions)
            mesh.vertexArray.attribute(AttributeSlot.position, components: 2, stride: 8, offset: 0)
            if let colors {
                mesh.vertexBuffer(colors)
                mesh.vertexArray.attribute(AttributeSlot.fillColor, components: 4, type: GLenum(GL_UNSIGNED_BYTE),
                                           normalized: true, stride: 4, offset: 0)
            }
        }
    }

    static func line(_ tessellation: LineTessellation, colors: [PackedColor]?, widths: [Float]?) -> GPUMesh {
        GPUMesh(indices: tessellation.indices, hasPerVertexColor: colors != nil, hasPerVertexWidth: widths != nil) { mesh in
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
        GPUMesh(indices: bucket.mesh.indices, hasPerVertexColor: bucket.colors != nil) { mesh in
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
        case fill(GPUMesh, outline: GPUMesh?)
        case line(GPUMesh)
        case extrusion(GPUMesh)
        case symbol(SymbolBucket)
    }

    let layout: TileLayout
    var layers: [Layer?]
    var lastUse: UInt64 = 0

    init(_ layout: TileLayout) {
        self.layout = layout
        layers = layout.buckets.map { bucket -> Layer? in
            switch bucket {
            case .fill(let fill):
                let outline = fill.outline.indices.isEmpty ? nil
                    : GPUMesh.line(fill.outline, colors: fill.outlineColors, widths: nil)
                return .fill(.fill(positions: fill.positions, indices: fill.indices, colors: fill.colors),
                             outline: outline)
            case .line(let line):
                return .line(.line(line.tessellation, colors: line.colors, widths: line.widths))
            case .extrusion(let extrusion):
                return .extrusion(.extrusion(extrusion))
            case .symbol(let symbol):
                return .symbol(symbol)
            case nil:
                return nil
            }
        }
    }
}

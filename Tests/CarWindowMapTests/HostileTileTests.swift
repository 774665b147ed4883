import CZlib
import Foundation
import Logging
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Tiles built to cost as much as possible: a road of a million vertices, a polygon of a hundred
/// thousand rings, a gzip bomb, a million features. Each must stay within the per-tile budget
/// (``TileLayoutBudget/layoutBytes`` of layout, ``VectorTileLimits`` when decoded), say what it
/// cut, and take work in proportion to the budget, not to the tile: the checks count vertices,
/// parts and labels, never time.
@Suite("Hostile tiles")
struct HostileTileTests {
    static let tile = TileID(z: 14, x: 9327, y: 4742)

    // MARK: Building tiles

    /// A layer message: name, keys, string values and already encoded features.
    static func layer(_ name: String, features: [ProtobufWriter], keys: [String] = [], values: [String] = []) -> [UInt8] {
        var layer = ProtobufWriter()
        layer.varintField(15, 2)
        layer.stringField(1, name)
        for feature in features { layer.bytesField(2, feature.bytes) }
        for key in keys { layer.stringField(3, key) }
        for value in values {
            var encoded = ProtobufWriter()
            encoded.stringField(1, value)
            layer.bytesField(4, encoded.bytes)
        }
        layer.varintField(5, 4096)
        return layer.bytes
    }

    static func tileData(_ layers: [[UInt8]]) -> Data {
        var tile = ProtobufWriter()
        for layer in layers { tile.bytesField(3, layer) }
        return Data(tile.bytes)
    }

    static func feature(type: UInt64, geometry: [UInt32], tags: [UInt32] = []) -> ProtobufWriter {
        var feature = ProtobufWriter()
        if !tags.isEmpty { feature.packedField(2, tags) }
        feature.varintField(3, type)
        feature.packedField(4, geometry)
        return feature
    }

    /// A line of `count` vertices in steps of up to 100 units, bounced inside the tile: dense
    /// everywhere, so no simplification by distance could shorten it.
    static func zigzagLine(_ count: Int) -> [UInt32] {
        var random = SplitMix64(seed: 7)
        var x: Int32 = 2048, y: Int32 = 2048
        var geometry: [UInt32] = [9, ProtobufWriter.zigzag(x), ProtobufWriter.zigzag(y), UInt32(count - 1) << 3 | 2]
        geometry.reserveCapacity(2 * count + 2)
        for _ in 1..<count {
            var dx = Int32(random.next() % 201) - 100, dy = Int32(random.next() % 201) - 100
            if !(0..<4096).contains(x + dx) { dx = -dx }
            if !(0..<4096).contains(y + dy) { dy = -dy }
            x += dx
            y += dy
            geometry += [ProtobufWriter.zigzag(dx), ProtobufWriter.zigzag(dy)]
        }
        return geometry
    }

    /// The tile `scripts/make-hostile-tiles.py` writes: a primary road of a million vertices,
    /// named, so that the day style draws casing, road and labels.
    static func millionVertexRoad() -> Data {
        let line = zigzagLine(1_000_000)
        return tileData([
            layer("transportation", features: [feature(type: 2, geometry: line, tags: [0, 0])],
                  keys: ["class"], values: ["primary"]),
            layer("transportation_name", features: [feature(type: 2, geometry: line, tags: [0, 0, 1, 1])],
                  keys: ["class", "name:latin"], values: ["primary", "Hostile Road"]),
        ])
    }

    /// One polygon: the tile's square, then `holes` small square holes on a grid.
    static func polygonWithHoles(_ holes: Int) -> [UInt32] {
        let z = ProtobufWriter.zigzag
        var geometry: [UInt32] = [9, z(0), z(0), 3 << 3 | 2, z(4096), z(0), z(0), z(4096), z(-4096), z(0), 15]
        var cursor = (x: Int32(0), y: Int32(4096))
        let perRow = Int32((Double(holes).squareRoot()).rounded(.up))
        let spacing = 4000 / perRow
        for index in 0..<Int32(holes) {
            let x = 40 + (index % perRow) * spacing, y = 40 + (index / perRow) * spacing
            // Counter-clockwise in tile coordinates: a hole.
            geometry += [9, z(x - cursor.x), z(y - cursor.y), 3 << 3 | 2, z(0), z(4), z(4), z(0), z(0), z(-4), 15]
            cursor = (x + 4, y)
        }
        return geometry
    }

    static func layoutBuilder(style: Style) throws -> TileLayoutBuilder {
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        return TileLayoutBuilder(style: style, glyphs: GlyphAtlas(library: fonts), fonts: fonts, sourceMaxZoom: 14)
    }

    static func vertices(_ tile: VectorTile) -> Int {
        tile.layers.reduce(0) { $0 + $1.features.reduce(0) { $0 + $1.geometry.reduce(0) { $0 + $1.count } } }
    }

    /// Line vertices, extrusion vertices, fill vertices and label candidates of a layout.
    static func counts(_ layout: TileLayout) -> (line: Int, extrusion: Int, fill: Int, labels: Int) {
        var counts = (line: 0, extrusion: 0, fill: 0, labels: 0)
        for bucket in layout.buckets {
            switch bucket {
            case .line(let line): counts.line += line.tessellation.vertices.count
            case .extrusion(let extrusion): counts.extrusion += extrusion.mesh.vertices.count
            case .fill(let fill): counts.fill += fill.positions.count
            case .symbol(let symbol): counts.labels += symbol.labels.count
            case .circle: break
            case nil: break
            }
        }
        return counts
    }

    // MARK: Tests

    @Test func aMillionVertexRoadIsThinnedToTheBudget() throws {
        let decoded = try VectorTile(decoding: Self.millionVertexRoad())
        // Two copies of a million vertices: each part keeps its half of the tile's vertices.
        #expect(Self.vertices(decoded) <= VectorTileLimits.standard.maximumVertices)
        #expect(decoded.reductions.thinnedParts == 2)
        #expect(decoded.reductions.verticesBeforeThinning == 2_000_000)

        let layout = try Self.layoutBuilder(style: Style(contentsOf: TestPaths.style("day"))).layout(Self.tile, decoded)
        #expect(layout.byteCount <= TileLayoutBudget.layoutBytes, "\(layout.byteCount) bytes")
        let counts = Self.counts(layout)
        #expect(counts.line > 1000, "the road is still drawn")
        #expect(counts.line <= TileLayoutBudget.geometryBytes / MemoryLayout<LineVertex>.stride)
        #expect(counts.labels > 0 && counts.labels <= TileLayoutBudget.maximumLabelCandidates)
        #expect(layout.reductions.thinnedParts == 2, "thinned again for the line layers and the labels, once each")
        #expect(!layout.reductions.description.contains("nothing"))
        // Placement projects a label's path every frame: no candidate brings more than a stretch.
        for case .symbol(let symbol)? in layout.buckets {
            #expect(symbol.paths.allSatisfy { $0.count <= TileLayoutBudget.maximumLabelPathPoints })
        }
    }

    @Test func aLabelOnALongPathKeepsItsPlaceOnItsStretch() {
        var random = SplitMix64(seed: 3)
        let path = (0..<5000).map { index in
            SIMD2(Float(index) * 3, Float(random.next() % 40))
        }
        var walker = TileLayoutBuilder.PathWalker(path)
        let length = TileLayoutBuilder.length(of: path)
        for distance in stride(from: Float(0), to: length, by: length / 97) {
            let point = walker.point(at: distance)
            let stretch = walker.stretch(points: TileLayoutBudget.maximumLabelPathPoints)
            #expect(stretch.path.count == TileLayoutBudget.maximumLabelPathPoints)
            let onStretch = TileLayoutBuilder.point(along: stretch.path, at: distance - stretch.startDistance)
            #expect(abs(onStretch.x - point.x) < 0.05 && abs(onStretch.y - point.y) < 0.05, "at \(distance)")
            let original = TileLayoutBuilder.point(along: path, at: distance)
            #expect(abs(original.x - point.x) < 0.05 && abs(original.y - point.y) < 0.05, "at \(distance)")
        }
    }

    @Test func aPolygonWithAHundredThousandRingsIsBounded() throws {
        let polygon = Self.polygonWithHoles(99_999)
        let decoded = try VectorTile(decoding: Self.tileData([Self.layer("water", features: [Self.feature(type: 3, geometry: polygon)])]))
        #expect(decoded.layers[0].features[0].geometry.count == 100_000)
        #expect(decoded.layers[0].features[0].polygons.first?.count == 100_000, "one exterior with its holes")

        let layout = try Self.layoutBuilder(style: Style(contentsOf: TestPaths.style("day"))).layout(Self.tile, decoded)
        #expect(layout.byteCount <= TileLayoutBudget.layoutBytes, "\(layout.byteCount) bytes")
        let counts = Self.counts(layout)
        #expect(counts.fill > 0, "the water is drawn")
        #expect(layout.reductions.droppedHoles > 0, "holes beyond the triangulation work bound are dropped")
    }

    @Test func aTriangulatedPolygonKeepsItsLargestHoles() {
        func square(_ x: Int32, _ y: Int32, _ side: Int32) -> [TilePoint] {
            [TilePoint(x: x, y: y), TilePoint(x: x, y: y + side), TilePoint(x: x + side, y: y + side), TilePoint(x: x + side, y: y)]
        }
        let exterior = [TilePoint(x: 0, y: 0), TilePoint(x: 4096, y: 0), TilePoint(x: 4096, y: 4096), TilePoint(x: 0, y: 4096)]
        let small = (0..<20_000).map { square(Int32($0 % 140) * 28, Int32($0 / 140) * 28, 2) }
        let large = square(2000, 2000, 50)
        var reductions = TileReductions()
        let rings = TileLayoutBuilder.triangulable([exterior] + small + [large], reductions: &reductions)
        #expect(rings.count > 1 && rings.count < 20_002)
        #expect(rings[1] == large, "the largest hole goes first")
        let vertices = rings.reduce(0) { $0 + $1.count }
        #expect((rings.count - 1) * vertices <= TileLayoutBudget.maximumHoleWork)
        #expect(reductions.droppedHoles == 20_002 - rings.count)
    }

    @Test func aGzipBombIsStoppedAtTheTileLimit() throws {
        // 256 MiB of zeros, which deflate to about 256 KiB.
        let bomb = try Self.gzip(zeros: 256 << 20)
        #expect(bomb.count < 1 << 20)
        let limit = VectorTileLimits.standard.maximumBytes
        #expect(limit == 16 << 20)
        #expect(throws: TileDecodingError.decompressionFailed(.exceedsLimit(limit))) { try VectorTile(decoding: bomb) }
        // One that stays under the 64 MiB that held for tiles and directories alike before.
        #expect(throws: TileDecodingError.decompressionFailed(.exceedsLimit(limit))) {
            try VectorTile(decoding: try Self.gzip(zeros: 24 << 20))
        }

        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("14/9327/4742.pbf")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bomb.write(to: file)
        let source = try FolderTileSource(url: folder)
        #expect(throws: TileSourceError.corruptTile(Self.tile, GzipError.exceedsLimit(limit).description)) {
            try source.data(for: Self.tile)
        }
        // A stored tile beyond the limit is not even read.
        try Data(count: limit + 1).write(to: file)
        #expect(throws: TileSourceError.self) { try source.data(for: Self.tile) }
        #expect(throws: TileDecodingError.tooLarge(bytes: limit + 1, limit: limit)) { try VectorTile(decoding: Data(count: limit + 1)) }
    }

    @Test func aMillionTinyFeaturesAreCutToTheLimits() throws {
        // A million labelled points, 11 bytes each.
        let z = ProtobufWriter.zigzag
        var points = ProtobufWriter()
        points.varintField(15, 2)
        points.stringField(1, "poi")
        for index in 0..<1_000_000 {
            points.bytesField(2, Self.feature(type: 1, geometry: [9, z(Int32(index % 4000)), z(Int32(index / 4000 * 16))]).bytes)
        }
        let data = Self.tileData([points.bytes])
        #expect(data.count <= VectorTileLimits.standard.maximumBytes)
        let decoded = try VectorTile(decoding: data)
        let limit = VectorTileLimits.standard.maximumFeatures
        #expect(decoded.layers[0].features.count == limit)
        #expect(decoded.reductions.droppedFeatures == 1_000_000 - limit)

        let style = try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}}, "layers": [
              {"id": "dots", "type": "symbol", "source": "omt", "source-layer": "poi",
               "layout": {"text-field": "point of interest", "text-allow-overlap": true}}]}
            """#.utf8))
        let layout = try Self.layoutBuilder(style: style).layout(Self.tile, decoded)
        #expect(layout.byteCount <= TileLayoutBudget.layoutBytes, "\(layout.byteCount) bytes")
        #expect(Self.counts(layout).labels == TileLayoutBudget.maximumLabelCandidates)
        #expect(layout.reductions.droppedLabels == limit - TileLayoutBudget.maximumLabelCandidates)
    }

    @Test func aTileOfManyLayersIsCut() throws {
        let layers = (0..<5000).map { Self.layer("l\($0)", features: [Self.feature(type: 1, geometry: [9, 0, 0])]) }
        let decoded = try VectorTile(decoding: Self.tileData(layers))
        #expect(decoded.layers.count == VectorTileLimits.standard.maximumLayers)
        #expect(decoded.reductions.droppedLayers == 5000 - VectorTileLimits.standard.maximumLayers)
    }

    /// The loader names the tile and says what was cut, once.
    @Test func theLoaderWarnsOnceNamingTheTile() async throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("14/9327/4742.pbf")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.millionVertexRoad().write(to: file)
        let handler = CapturingLogHandler()
        let store = TileLayoutStore(source: try FolderTileSource(url: folder),
                                    builder: try Self.layoutBuilder(style: Style(contentsOf: TestPaths.style("day"))),
                                    logger: Logger(label: "test") { _ in handler })
        let layout = await store.layout(Self.tile)
        #expect(layout.byteCount <= TileLayoutBudget.layoutBytes)
        #expect(Self.counts(layout).line > 1000)
        _ = await store.layout(Self.tile)
        let warnings = handler.warnings
        #expect(warnings.count == 1, "\(warnings)")
        let warning = try #require(warnings.first)
        #expect(warning.contains("tile 14/9327/4742") && warning.contains("thinned from"), "\(warning)")
    }

    /// The budget's worst cases really are upper bounds of what each bucket takes per feature.
    @Test func drawCostsBoundWhatBucketsTake() throws {
        var random = SplitMix64(seed: 11)
        let style = try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}}, "layers": [
              {"id": "fill", "type": "fill", "source": "omt", "source-layer": "s",
               "paint": {"fill-color": ["get", "c"]}},
              {"id": "line", "type": "line", "source": "omt", "source-layer": "s",
               "layout": {"line-join": "round", "line-cap": "round"},
               "paint": {"line-color": ["get", "c"], "line-width": ["get", "w"]}},
              {"id": "extrusion", "type": "fill-extrusion", "source": "omt", "source-layer": "s",
               "paint": {"fill-extrusion-color": ["get", "c"], "fill-extrusion-height": ["get", "w"]}}]}
            """#.utf8))
        let builder = try Self.layoutBuilder(style: style)
        for _ in 0..<40 {
            // Jagged rings and lines: sharp turns everywhere, the worst case for joins.
            func ring() -> [TilePoint] {
                (0..<Int(3 + random.next() % 60)).map { _ in
                    TilePoint(x: Int32(random.next() % 4096), y: Int32(random.next() % 4096))
                }
            }
            let properties: [String: FeatureValue] = ["c": .string("#123456"), "w": .double(3)]
            let rings = (0..<Int(1 + random.next() % 4)).map { _ in ring() }
            for type in [GeometryType.polygon, .lineString] {
                let feature = VectorTileFeature(type: type, properties: properties, geometry: rings)
                let layout = builder.layout(Self.tile, VectorTile(layers: [VectorTileLayer(name: "s", features: [feature])]))
                let vertices = rings.reduce(0) { $0 + $1.count }
                for (index, bucket) in layout.buckets.enumerated() {
                    let (bytes, cost): (Int, DrawCost) = switch bucket {
                    case .fill(let fill): (Self.usedBytes(fill), .of(.fill))
                    case .line(let line): (Self.usedBytes(line), .of(.line))
                    case .extrusion(let extrusion): (Self.usedBytes(extrusion), .of(.fillExtrusion))
                    default: (0, DrawCost(perVertex: 0, perPart: 0, perFeature: 0))
                    }
                    #expect(bytes <= cost.bytes(vertices: vertices, parts: rings.count), "layer \(index), \(type)")
                }
            }
        }
    }

    // MARK: Helpers

    /// Bytes in use (counts, not capacities), which the worst cases bound.
    static func usedBytes(_ fill: FillBucket) -> Int {
        fill.positions.count * 8 + fill.indices.count * 4 + (fill.colors?.count ?? 0) * 4 + fill.outlineIndices.count * 4
            + (fill.chunks.count + fill.outlineChunks.count) * MemoryLayout<MeshChunk>.stride
    }

    static func usedBytes(_ line: LineBucket) -> Int {
        line.tessellation.vertices.count * MemoryLayout<LineVertex>.stride + line.tessellation.indices.count * 4
            + (line.colors?.count ?? 0) * 4 + (line.widths?.count ?? 0) * 4 + line.chunks.count * MemoryLayout<MeshChunk>.stride
    }

    static func usedBytes(_ extrusion: ExtrusionBucket) -> Int {
        extrusion.mesh.vertices.count * MemoryLayout<ExtrusionVertex>.stride + extrusion.mesh.indices.count * 4
            + extrusion.heights.count * 8 + (extrusion.colors?.count ?? 0) * 4
            + extrusion.chunks.count * MemoryLayout<MeshChunk>.stride
    }

    /// `count` zero bytes, gzip compressed with zlib.
    static func gzip(zeros count: Int) throws -> Data {
        var stream = z_stream()
        // 15 window bits plus 16 asks for a gzip header.
        guard deflateInit2_(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw GzipError.corrupt("deflateInit2 failed")
        }
        defer { deflateEnd(&stream) }
        let input = [UInt8](repeating: 0, count: 1 << 20)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var remaining = count
        repeat {
            let size = min(remaining, input.count)
            remaining -= size
            let flush = remaining == 0 ? Z_FINISH : Z_NO_FLUSH
            try input.withUnsafeBufferPointer { source in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(size)
                repeat {
                    let produced = chunk.withUnsafeMutableBufferPointer { buffer -> Int in
                        stream.next_out = buffer.baseAddress
                        stream.avail_out = uInt(buffer.count)
                        _ = deflate(&stream, flush)
                        return buffer.count - Int(stream.avail_out)
                    }
                    output.append(contentsOf: chunk.prefix(produced))
                    if stream.avail_out != 0 && stream.avail_in == 0 { break }
                } while true
                if stream.avail_in != 0 { throw GzipError.corrupt("deflate left input") }
            }
        } while remaining > 0
        return output
    }
}

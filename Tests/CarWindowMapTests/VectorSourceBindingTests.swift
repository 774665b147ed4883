import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Several vector sources: a vector source of the style bound to a tile source of its own draws
/// from it, beside the basemap, and a source with fewer zoom levels is cut and scaled up.
@Suite(.serialized) struct VectorSourceBindingTests {
    /// The bundled tiles with their zoom levels ending early, as an overlay archive made for
    /// lower zooms would.
    struct ZoomLimitedSource: TileSource {
        let inner: any TileSource
        let maxZoom: Int
        var name: String { "limited " + inner.name }
        var minZoom: Int { inner.minZoom }
        var bounds: GeoBounds? { inner.bounds }
        var attribution: String? { "© Overlay Makers" }
        func data(for tile: TileID) throws(TileSourceError) -> Data? {
            tile.z > maxZoom ? nil : try inner.data(for: tile)
        }
    }

    /// A basemap with no tiles at all.
    struct EmptySource: TileSource {
        var name: String { "empty" }
        var minZoom: Int { 0 }
        var maxZoom: Int { 14 }
        var bounds: GeoBounds? { nil }
        func data(for tile: TileID) throws(TileSourceError) -> Data? { nil }
    }

    static let ancestor = TileID(z: 12, x: 2331, y: 1185)

    @Test func aLineIsScaledAndClippedToTheFinerTile() throws {
        let layer = VectorTileLayer(name: "roads", features: [
            VectorTileFeature(type: .lineString, properties: ["kind": .string("diagonal")],
                              geometry: [[TilePoint(x: 0, y: 0), TilePoint(x: 4096, y: 4096)]]),
            // Wholly in the top-left quarter: nothing of it reaches the bottom-right one.
            VectorTileFeature(type: .lineString, properties: [:], geometry: [[TilePoint(x: 100, y: 100), TilePoint(x: 1000, y: 200)]]),
        ])
        let child = TileID(z: 13, x: Self.ancestor.x * 2 + 1, y: Self.ancestor.y * 2 + 1)
        let cut = try #require(layer.cut(from: Self.ancestor, to: child, name: "renamed"))
        #expect(cut.name == "renamed" && cut.extent == 8192)
        #expect(cut.features.count == 1 && cut.features[0].properties["kind"] == .string("diagonal"))
        // The diagonal crosses the quarter corner to corner; the buffer is 1/32 of the tile.
        #expect(cut.features[0].geometry == [[TilePoint(x: -256, y: -256), TilePoint(x: 8192, y: 8192)]])
        // Five levels down the extent stops growing at sixteen times, and the scale goes on.
        let deep = TileID(z: 17, x: Self.ancestor.x << 5, y: Self.ancestor.y << 5)
        let deepCut = try #require(layer.cut(from: Self.ancestor, to: deep, name: "deep"))
        #expect(deepCut.extent == 4096 * 16)
        #expect(deepCut.features.count == 2)
    }

    @Test func polygonsKeepTheirRingsAndWindingThroughACut() throws {
        func rectangle(_ x: Int32, _ y: Int32, _ width: Int32, _ height: Int32) -> [TilePoint] {
            [TilePoint(x: x, y: y), TilePoint(x: x + width, y: y), TilePoint(x: x + width, y: y + height), TilePoint(x: x, y: y + height)]
        }
        // Most of the left half, with a hole low down; then a polygon in the top-right quarter.
        let layer = VectorTileLayer(name: "areas", features: [VectorTileFeature(type: .polygon, properties: [:], geometry: [
            rectangle(0, 0, 1900, 4096), rectangle(200, 2200, 400, 400).reversed(), rectangle(2500, 100, 1000, 1000),
        ])])
        let bottomLeft = TileID(z: 13, x: Self.ancestor.x * 2, y: Self.ancestor.y * 2 + 1)
        let cut = try #require(layer.cut(from: Self.ancestor, to: bottomLeft, name: "areas"))
        let rings = cut.features[0].geometry
        #expect(rings.count == 2, "\(rings)")
        #expect(VectorTileFeature.signedAreaTimesTwo(rings[0]) > 0 && VectorTileFeature.signedAreaTimesTwo(rings[1]) < 0)
        // The hole, scaled by two: 400 units wide becomes 800 of the child's 4096 x 2.
        #expect(rings[1].map(\.x).max()! - rings[1].map(\.x).min()! == 1600)
        let topRight = TileID(z: 13, x: Self.ancestor.x * 2 + 1, y: Self.ancestor.y * 2)
        let other = try #require(layer.cut(from: Self.ancestor, to: topRight, name: "areas"))
        #expect(other.features[0].geometry.count == 1)
        #expect(VectorTileFeature.signedAreaTimesTwo(other.features[0].geometry[0]) > 0)
        // Nothing of it reaches the bottom-right quarter.
        #expect(layer.cut(from: Self.ancestor, to: TileID(z: 13, x: Self.ancestor.x * 2 + 1, y: Self.ancestor.y * 2 + 1),
                          name: "areas") == nil)
    }

    @Test func pointsOfARealTileLandInTheQuarterTheyLieIn() throws {
        let source = try openTileSource(at: TestPaths.tiles)
        let tile = try #require(try source.decodedTile(for: Self.ancestor))
        for layer in tile.layers {
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let child = TileID(z: 13, x: Self.ancestor.x * 2 + dx, y: Self.ancestor.y * 2 + dy)
                let half = Int32(layer.extent / 2), margin = Int32(layer.extent / 64)
                // Counted independently: points within the quarter and its buffer, in the parent's units.
                let expected = layer.features.filter { $0.type == .point }.reduce(0) { count, feature in
                    count + feature.geometry.joined().filter {
                        let x = $0.x - Int32(dx) * half, y = $0.y - Int32(dy) * half
                        return x >= -margin && y >= -margin && x <= half + margin && y <= half + margin
                    }.count
                }
                let cut = layer.cut(from: Self.ancestor, to: child, name: layer.name)
                let got = cut?.features.filter { $0.type == .point }.reduce(0) { $0 + $1.geometry.joined().count } ?? 0
                #expect(got == expected, "\(layer.name) \(child)")
            }
        }
    }

    static func style() throws -> Style {
        let json = """
        {"version": 8,
         "sources": {"basemap": {"type": "vector", "url": "pmtiles://none.pmtiles"},
                     "overlay": {"type": "vector", "url": "pmtiles://overlay.pmtiles", "attribution": "© Style Credit"}},
         "layers": [{"id": "background", "type": "background", "paint": {"background-color": "#ffffff"}},
                    {"id": "roads", "type": "line", "source": "overlay", "source-layer": "transportation",
                     "paint": {"line-color": "#ff0000", "line-width": 4}}]}
        """
        return try Style(data: Data(json.utf8))
    }

    static func isRed(_ p: SIMD4<UInt8>) -> Bool { p.x > 200 && p.y < 60 && p.z < 60 }

    static func redPixels(_ image: RGBAImage) -> Int {
        var count = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                if isRed(image.pixel(x: x, y: y)) { count += 1 }
            }
        }
        return count
    }

    func render(bound: [String: any TileSource]) async throws -> (RGBAImage, FrameReport) {
        let context = try await RenderContext()
        let renderer = try await MapRenderer(
            context: context, width: 400, height: 240, style: try Self.style(), tiles: EmptySource(), sources: bound,
            fonts: try FontLibrary(directory: TestPaths.fonts), camera: Camera(center: helsinki, zoom: 15))
        await renderer.setOverlays(MapOverlays(showsControls: false))
        let report = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        await context.shutdown()
        return (image, report)
    }

    /// The overlay draws from its own archive while the basemap has nothing; an archive whose
    /// levels end at 12 draws at 15 from its cut tiles, about as the full one does.
    @Test func aBoundSourceDrawsBesideAnEmptyBasemap() async throws {
        let helsinkiTiles = try openTileSource(at: TestPaths.tiles)
        let (unbound, _) = try await render(bound: [:])
        let (full, _) = try await render(bound: ["overlay": helsinkiTiles])
        let (limited, _) = try await render(bound: ["overlay": ZoomLimitedSource(inner: helsinkiTiles, maxZoom: 12)])
        let counts = (unbound: Self.redPixels(unbound), full: Self.redPixels(full), limited: Self.redPixels(limited))
        #expect(counts.unbound == 0 && counts.full > 3000 && counts.limited > 3000, "\(counts)")
        // The z12 tiles hold only the larger roads (tilemaker keeps fewer per zoom), so the cut
        // picture is a subset of the full one: its roads must lie where the full picture's do.
        var near = 0
        for y in 0..<limited.height {
            for x in 0..<limited.width where Self.isRed(limited.pixel(x: x, y: y)) {
                let hit = (-3...3).contains { dy in
                    (-3...3).contains { dx in
                        let (u, v) = (x + dx, y + dy)
                        return u >= 0 && v >= 0 && u < full.width && v < full.height && Self.isRed(full.pixel(x: u, y: v))
                    }
                }
                if hit { near += 1 }
            }
        }
        #expect(Double(near) > 0.97 * Double(counts.limited), "\(near) of \(counts.limited) red pixels near the full picture's")
    }

    @Test func aBindingTheStyleLacksIsATypedError() async throws {
        let context = try await RenderContext()
        await #expect(throws: MapRenderError.unknownVectorSource(id: "traffic", known: ["basemap", "overlay"])) {
            _ = try await MapRenderer(context: context, width: 64, height: 64, style: try Self.style(), tiles: EmptySource(),
                                      sources: ["traffic": EmptySource()],
                                      fonts: try FontLibrary(directory: TestPaths.fonts), camera: Camera(center: helsinki, zoom: 15))
        }
        await context.shutdown()
        #expect(MapRenderError.unknownVectorSource(id: "traffic", known: ["basemap"]).description.contains("\"basemap\""))
    }

    @Test func theBoundSourcesCreditsAreOnTheFrame() throws {
        let line = MapAttribution.text(style: try Self.style(), tiles: EmptySource(),
                                       sources: ["overlay": ZoomLimitedSource(inner: EmptySource(), maxZoom: 12)])
        #expect(line == "© OpenStreetMap contributors © Style Credit © Overlay Makers")
    }
}

import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// GeoJSON sources: parsing (and refusing) GeoJSON, cutting it into tiles, and drawing it with
/// ordinary style layers, inline in the style or set by the engine at runtime.
@Suite(.serialized) struct GeoJSONSourceTests {
    static let collection = """
    {"type": "FeatureCollection", "features": [
      {"type": "Feature", "id": 7, "properties": {"kind": "fuel", "rank": 2, "open": true, "tags": {"a": 1}, "none": null},
       "geometry": {"type": "Point", "coordinates": [24.9415, 60.1699]}},
      {"type": "Feature", "properties": {},
       "geometry": {"type": "LineString", "coordinates": [[24.935, 60.168], [24.948, 60.172]]}},
      {"type": "Feature", "properties": {"kind": "park"},
       "geometry": {"type": "Polygon", "coordinates": [[[24.938, 60.168], [24.944, 60.168], [24.944, 60.171], [24.938, 60.171], [24.938, 60.168]]]}},
      {"type": "Feature", "properties": {}, "geometry": null}
    ]}
    """

    @Test func featuresAndPropertiesAreRead() throws {
        let data = try GeoJSONData(data: Data(Self.collection.utf8))
        #expect(data.featureCount == 3)
        let point = data.features[0]
        #expect(point.id == 7 && point.type == .point)
        #expect(point.properties["kind"] == .string("fuel"))
        #expect(point.properties["rank"] == .double(2))
        #expect(point.properties["open"] == .bool(true))
        #expect(point.properties["none"] == nil)
        #expect(point.properties["tags"] != nil)
        #expect(data.features[1].type == .lineString && data.features[2].type == .polygon)
        // A bare geometry is one feature.
        #expect(try GeoJSONData(data: Data(#"{"type": "MultiPoint", "coordinates": [[0, 0], [1, 1]]}"#.utf8)).featureCount == 1)
    }

    @Test(arguments: [
        (#"[1, 2]"#, "its root"),
        (#"{"type": "Feature", "geometry": {"type": "Point", "coordinates": [200, 0]}}"#, "geometry.coordinates"),
        (#"{"type": "Feature", "geometry": {"type": "Point", "coordinates": ["a", 0]}}"#, "geometry.coordinates"),
        (#"{"type": "Feature", "geometry": {"type": "Circle", "coordinates": [0, 0]}}"#, "geometry.type"),
        (#"{"type": "FeatureCollection"}"#, "features"),
        (#"{"type": "LineString"}"#, "coordinates"),
        (#"not json"#, "its root"),
    ])
    func badGeoJSONIsATypedErrorThatSaysWhere(text: String, place: String) {
        do {
            _ = try GeoJSONData(data: Data(text.utf8))
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(place), "\(error)")
        }
    }

    @Test func tooManyCoordinatesAreRefused() {
        let points = Array(repeating: "[0,0]", count: GeoJSONData.maximumCoordinates + 1).joined(separator: ",")
        let text = #"{"type": "MultiPoint", "coordinates": [\#(points)]}"#
        #expect(throws: GeoJSONError.tooLarge(reason: "more than \(GeoJSONData.maximumCoordinates) coordinates")) {
            _ = try GeoJSONData(data: Data(text.utf8))
        }
    }

    // MARK: Tiling

    /// A square over the corner where four z1 tiles meet: each tile holds a quarter of it, and
    /// its ring lies inside the tile and the buffer.
    @Test func polygonsAreCutAtTileEdgesWithABuffer() throws {
        let square = GeoJSONData(features: [GeoJSONFeature(geometry: .polygon([[
            GeoCoordinate(latitude: -40, longitude: -40), GeoCoordinate(latitude: -40, longitude: 40),
            GeoCoordinate(latitude: 40, longitude: 40), GeoCoordinate(latitude: 40, longitude: -40),
            GeoCoordinate(latitude: -40, longitude: -40),
        ]]))])
        var areas: [Double] = []
        for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let layer = try #require(square.layer(for: TileID(z: 1, x: x, y: y), name: "s"))
            let ring = try #require(layer.features.first?.geometry.first)
            let limit = Int32(Double(GeoJSONData.extent) * (1 + GeoJSONData.buffer)) + 1
            let low = -Int32(Double(GeoJSONData.extent) * GeoJSONData.buffer) - 1
            #expect(ring.allSatisfy { $0.x >= low && $0.x <= limit && $0.y >= low && $0.y <= limit })
            // Shoelace area of the part inside the tile proper.
            var area = 0.0
            for i in ring.indices.dropFirst() {
                area += Double(ring[i - 1].x) * Double(ring[i].y) - Double(ring[i].x) * Double(ring[i - 1].y)
            }
            areas.append(abs(area) / 2)
        }
        // Symmetric about the corner: four equal pieces.
        #expect(areas.allSatisfy { abs($0 - areas[0]) / areas[0] < 1e-3 }, "\(areas)")
        // Nothing reaches a tile far away.
        #expect(square.layer(for: TileID(z: 3, x: 0, y: 0), name: "s") == nil)
    }

    @Test func linesLeavingAndReturningGiveTwoPieces() {
        let box = SIMD4<Double>(0, 0, 10, 10)
        let pieces = TileClipping.line([SIMD2(-5, 5), SIMD2(5, 5), SIMD2(5, 15), SIMD2(8, 15), SIMD2(8, 5), SIMD2(20, 5)],
                                          to: box)
        #expect(pieces == [[SIMD2(0, 5), SIMD2(5, 5), SIMD2(5, 10)], [SIMD2(8, 10), SIMD2(8, 5), SIMD2(10, 5)]])
    }

    @Test func straightRunsAreSimplifiedToTheirEnds() {
        let straight = (0...1000).map { SIMD2(Double($0), Double($0) * 0.5) }
        #expect(GeoJSONData.simplified(straight, tolerance: 1) == [straight[0], straight[1000]])
        let corner = [SIMD2<Double>(0, 0), SIMD2(5, 0.1), SIMD2(10, 0), SIMD2(10, 10)]
        #expect(GeoJSONData.simplified(corner, tolerance: 1) == [corner[0], corner[2], corner[3]])
    }

    // MARK: Drawing

    static func style(data: String?) throws -> Style {
        let dataMember = data.map { ", \"data\": \($0)" } ?? ""
        let json = """
        {"version": 8,
         "sources": {"openmaptiles": {"type": "vector", "url": "pmtiles://helsinki.pmtiles"},
                     "engine": {"type": "geojson"\(dataMember)}},
         "layers": [{"id": "background", "type": "background", "paint": {"background-color": "#ffffff"}},
                    {"id": "area", "type": "fill", "source": "engine", "filter": ["==", ["geometry-type"], "Polygon"],
                     "paint": {"fill-color": "#00c000"}},
                    {"id": "line", "type": "line", "source": "engine", "filter": ["==", ["geometry-type"], "LineString"],
                     "paint": {"line-color": "#ff0000", "line-width": 6}},
                    {"id": "dots", "type": "circle", "source": "engine", "filter": ["==", ["get", "kind"], "fuel"],
                     "paint": {"circle-color": "#0000ff", "circle-radius": 10}}]}
        """
        return try Style(data: Data(json.utf8))
    }

    static func counts(_ image: RGBAImage) -> (red: Int, green: Int, blue: Int) {
        var counts = (red: 0, green: 0, blue: 0)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let p = image.pixel(x: x, y: y)
                if p.x > 220 && p.y < 40 && p.z < 40 { counts.red += 1 }
                if p.x < 40 && p.y > 170 && p.z < 40 { counts.green += 1 }
                if p.x < 40 && p.y < 40 && p.z > 220 { counts.blue += 1 }
            }
        }
        return counts
    }

    @Test func inlineGeoJSONIsDrawnByTheStylesLayers() async throws {
        let (context, renderer) = try await makeRenderer(camera: Camera(center: helsinki, zoom: 15))
        await renderer.setStyle(try Self.style(data: Self.collection))
        _ = await renderer.renderWhenLoaded()
        let counts = Self.counts(await renderer.readPixels())
        await context.shutdown()
        #expect(counts.red > 500 && counts.green > 2000 && counts.blue > 200, "\(counts)")
    }

    /// Two labels on one spot: the one with the lower `symbol-sort-key` is placed and the other
    /// collides, whichever comes first in the data; without a sort key the first feature wins.
    @Test(arguments: [(true, [1.0, 0.0], "blue"), (true, [0.0, 1.0], "red"), (false, [1.0, 0.0], "red")])
    func theLowerSortKeyWinsACollision(sorted: Bool, keys: [Double], winner: String) async throws {
        let sortKey = sorted ? #", "symbol-sort-key": ["get", "rank"]"# : ""
        let json = """
        {"version": 8, "sources": {"engine": {"type": "geojson"}},
         "layers": [{"id": "background", "type": "background", "paint": {"background-color": "#ffffff"}},
                    {"id": "labels", "type": "symbol", "source": "engine",
                     "layout": {"text-field": ["get", "name"], "text-font": ["Noto Sans Bold"], "text-size": 40\(sortKey)},
                     "paint": {"text-color": ["get", "color"]}}]}
        """
        let (context, renderer) = try await makeRenderer(camera: Camera(center: helsinki, zoom: 15))
        await renderer.setStyle(try Style(data: Data(json.utf8)))
        let features = zip(["red", "blue"], keys).map { color, rank in
            GeoJSONFeature(geometry: .point(helsinki), properties: [
                "name": .string("MMMM"), "color": .string(color == "red" ? "#ff0000" : "#0000ff"), "rank": .double(rank)])
        }
        try await renderer.setGeoJSON(GeoJSONData(features: features), forSource: "engine")
        _ = await renderer.renderWhenLoaded()
        let counts = Self.counts(await renderer.readPixels())
        await context.shutdown()
        if winner == "red" {
            #expect(counts.red > 200 && counts.blue == 0, "\(counts)")
        } else {
            #expect(counts.blue > 200 && counts.red == 0, "\(counts)")
        }
    }

    /// An engine sets features at runtime: the next frame shows them, and a second set replaces
    /// them; a source the style lacks is a typed error.
    @Test func featuresSetAtRuntimeShowInTheNextFrame() async throws {
        let (context, renderer) = try await makeRenderer(camera: Camera(center: helsinki, zoom: 15))
        await renderer.setStyle(try Self.style(data: nil))
        _ = await renderer.renderWhenLoaded()
        let before = Self.counts(await renderer.readPixels())
        #expect(before.red == 0 && before.blue == 0)

        let fuel = GeoJSONFeature(geometry: .point(helsinki), properties: ["kind": .string("fuel")])
        try await renderer.setGeoJSON(GeoJSONData(features: [fuel]), forSource: "engine")
        _ = await renderer.renderFrame()
        let after = Self.counts(await renderer.readPixels())
        #expect(after.blue > 200, "\(after)")

        let line = GeoJSONFeature(geometry: .lineString([GeoCoordinate(latitude: 60.168, longitude: 24.935),
                                                         GeoCoordinate(latitude: 60.172, longitude: 24.948)]))
        try await renderer.setGeoJSON(GeoJSONData(features: [line]), forSource: "engine")
        _ = await renderer.renderFrame()
        let replaced = Self.counts(await renderer.readPixels())
        #expect(replaced.blue == 0 && replaced.red > 500, "\(replaced)")

        await #expect(throws: MapRenderError.unknownGeoJSONSource(id: "nope", known: ["engine"])) {
            try await renderer.setGeoJSON(.empty, forSource: "nope")
        }
        // The engine's features stay through a style change.
        await renderer.switchStyle(to: try Self.style(data: nil))
        _ = await renderer.renderWhenLoaded()
        #expect(Self.counts(await renderer.readPixels()).red > 500)
        await context.shutdown()
    }
}

import Foundation
import Logging
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// GeoJSON as hostile as a crafted tile: a zig-zag route of up to a million points, more features
/// than a tile may hold. Cutting it for a tile must take work in proportion to what the tile may
/// keep, stay within a decoded tile's limits and say what it cut. The checks count distance
/// evaluations, vertices and features, never time.
@Suite("GeoJSON budget")
struct GeoJSONBudgetTests {
    /// A zoom 10 tile over Helsinki.
    static let tile = TileID(z: 10, x: 582, y: 296)

    /// `count` points in world coordinates that zig-zag across the middle of ``tile``: every point
    /// lies about as far from any chord as every other, so plain Douglas-Peucker peels one point
    /// per pass, and consecutive points are far apart, so no thinning by distance shortens it.
    static func zigzag(_ count: Int) -> [SIMD2<Double>] {
        let side = 1.0 / Double(1 << tile.z)
        let center = SIMD2(Double(tile.x) + 0.5, Double(tile.y) + 0.5) * side
        return (0..<count).map { index in
            let along = (Double(index) / Double(max(count - 1, 1)) - 0.5) * 0.6 * side
            let across = (index % 2 == 0 ? -0.2 : 0.2) * side
            return center + SIMD2(along, across)
        }
    }

    static func line(_ points: [SIMD2<Double>]) -> GeoJSONData {
        let side = 1.0 / Double(1 << tile.z)
        let origin = SIMD2(Double(tile.x), Double(tile.y)) * side
        return GeoJSONData(projected: [GeoJSONData.ProjectedFeature(
            id: nil, type: .lineString, properties: [:], parts: [points],
            bounds: SIMD4(origin.x, origin.y, origin.x + side, origin.y + side))])
    }

    static func vertices(_ layer: VectorTileLayer?) -> Int {
        layer?.features.reduce(0) { $0 + $1.geometry.reduce(0) { $0 + $1.count } } ?? 0
    }

    /// The bound the simplifier promises: a fixed number of distance evaluations per point.
    static func workBound(_ points: Int) -> Int { (GeoJSONData.maximumSplitDepth + 1) * points }

    // MARK: Simplification

    @Test func simplifyingAZigZagTakesWorkInProportionToItsPoints() {
        let count = 5_000
        let path = (0..<count).map { SIMD2(Double($0), $0 % 2 == 0 ? 0 : 100) }
        var work = 0
        let kept = GeoJSONData.simplified(path, tolerance: 1, work: &work)
        #expect(work <= Self.workBound(count) && work < 64 * count, "\(work) distances for \(count) points")
        #expect(kept.count == count, "every point of the zig-zag is farther than the tolerance from its neighbours")
    }

    /// Whatever depth the simplifier stops splitting at, every point it drops lies within the
    /// tolerance of the line it keeps.
    @Test(arguments: [1, 7, 2024])
    func droppedPointsStayWithinTheTolerance(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var point = SIMD2<Double>(0, 0)
        let path = (0..<3_000).map { index -> SIMD2<Double> in
            // A wandering line with stretches of zig-zag, so some stretches reach the depth bound.
            let jitter = Double(random.next() % 1000) / 1000
            point += index % 400 < 200 ? SIMD2(0.05, index % 2 == 0 ? 3 * jitter : -3 * jitter) : SIMD2(jitter, jitter - 0.5)
            return point
        }
        let tolerance = 0.5
        let kept = GeoJSONData.simplified(path, tolerance: tolerance)
        #expect(kept.first == path.first && kept.last == path.last)
        func distance(_ p: SIMD2<Double>, _ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double {
            let d = b - a, q = p - a
            let lengthSquared = (d * d).sum()
            let t = lengthSquared == 0 ? 0 : max(0, min(1, (q * d).sum() / lengthSquared))
            let r = q - d * t
            return (r * r).sum().squareRoot()
        }
        var segment = 0
        for p in path {
            // Points come in order, so the nearest kept segment is at or after the last one found.
            var best = Double.infinity
            for index in segment..<(kept.count - 1) {
                let d = distance(p, kept[index], kept[index + 1])
                if d < best { best = d }
                if d <= tolerance + 1e-9 { segment = index; break }
            }
            #expect(best <= tolerance + 1e-9)
        }
    }

    // MARK: Tiling

    /// The route limit a session documents, and a route ten times over it as the C API takes.
    @Test(arguments: [100_000, 1_000_000])
    func aZigZagRouteIsTiledWithBoundedWork(count: Int) throws {
        let data = Self.line(Self.zigzag(count))
        let cut = data.cut(for: Self.tile, name: "route")
        let layer = try #require(cut.layer)
        let kept = Self.vertices(layer)
        #expect(kept >= 2 && kept <= VectorTileLimits.standard.maximumVertices)
        let simplified = min(count, VectorTileLimits.standard.maximumVertices)
        #expect(cut.simplificationWork <= Self.workBound(simplified) && cut.simplificationWork < 64 * simplified,
                "\(cut.simplificationWork) distances for \(count) points")
    }

    /// A line longer than the tile's vertex limit is thinned to it before it is simplified, so
    /// the work is bounded by the limit, not by the line; and the cut is reported.
    @Test func aLineOverTheVertexLimitIsThinnedAndReported() throws {
        var limits = VectorTileLimits.standard
        limits.maximumVertices = 20_000
        let cut = Self.line(Self.zigzag(200_000)).cut(for: Self.tile, name: "route", limits: limits)
        #expect(Self.vertices(cut.layer) <= limits.maximumVertices)
        #expect(cut.reductions.thinnedParts == 1)
        #expect(cut.reductions.verticesBeforeThinning == 200_000 && cut.reductions.verticesAfterThinning == 20_000)
        #expect(cut.simplificationWork <= Self.workBound(limits.maximumVertices))
    }

    static func points(_ count: Int) -> GeoJSONData {
        let side = 1.0 / Double(1 << tile.z)
        let origin = SIMD2(Double(tile.x), Double(tile.y)) * side
        return GeoJSONData(projected: (0..<count).map { index in
            let point = origin + SIMD2(Double(index % 300) + 0.5, Double(index / 300) + 0.5) / 300 * side
            return GeoJSONData.ProjectedFeature(id: UInt64(index), type: .point, properties: [:], parts: [[point]],
                                                bounds: SIMD4(point.x, point.y, point.x, point.y))
        })
    }

    /// More point features in one tile than a decoded tile may hold: the rest are left out and
    /// counted, as the decoder does.
    @Test func featuresOverTheTileLimitAreDroppedAndCounted() throws {
        let count = 70_000
        let cut = Self.points(count).cut(for: Self.tile, name: "markers")
        let layer = try #require(cut.layer)
        let limit = VectorTileLimits.standard.maximumFeatures
        #expect(layer.features.count == limit)
        #expect(cut.reductions.droppedFeatures == count - limit)
    }

    /// Parts over the tile's limit (points of a multipoint are a part each) are left out too.
    @Test func partsOverTheTileLimitAreDropped() throws {
        var limits = VectorTileLimits.standard
        limits.maximumParts = 1_000
        let side = 1.0 / Double(1 << Self.tile.z)
        let center = SIMD2(Double(Self.tile.x) + 0.5, Double(Self.tile.y) + 0.5) * side
        let parts = (0..<5_000).map { index -> [SIMD2<Double>] in
            let step = SIMD2(Double(index % 70), Double(index / 70)) * (side / 200)
            return [center + step]
        }
        let data = GeoJSONData(projected: [GeoJSONData.ProjectedFeature(
            id: nil, type: .point, properties: [:], parts: parts,
            bounds: SIMD4(center.x, center.y, center.x + side, center.y + side))])
        let cut = data.cut(for: Self.tile, name: "markers", limits: limits)
        #expect(cut.layer?.features.first?.geometry.count == 1_000)
        #expect(cut.reductions.droppedParts == 4_000)
    }

    /// The loader reports what was cut of the GeoJSON in its one warning naming the tile.
    @Test func theLoaderWarnsOnceNamingTheTileAndTheGeoJSON() async throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("10/\(Self.tile.x)/\(Self.tile.y).pbf")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data().write(to: file)
        let style = try Style(data: Data(#"""
            {"version": 8, "sources": {"engine": {"type": "geojson"}},
             "layers": [{"id": "dots", "type": "circle", "source": "engine", "paint": {"circle-radius": 1}}]}
            """#.utf8))
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        let builder = TileLayoutBuilder(style: style, glyphs: GlyphAtlas(library: fonts), fonts: fonts, sourceMaxZoom: 14,
                                        geojson: ["engine": Self.points(70_000)])
        let handler = CapturingLogHandler()
        let store = TileLayoutStore(source: try FolderTileSource(url: folder), builder: builder,
                                    logger: Logger(label: "test") { _ in handler })
        let layout = await store.layout(Self.tile)
        #expect(layout.byteCount <= TileLayoutBudget.layoutBytes)
        #expect(layout.geojsonReductions.droppedFeatures == 70_000 - VectorTileLimits.standard.maximumFeatures)
        _ = await store.layout(Self.tile)
        let warnings = handler.warnings
        #expect(warnings.count == 1, "\(warnings)")
        let warning = try #require(warnings.first)
        #expect(warning.contains("tile 10/582/296") && warning.contains("GeoJSON sources: 4464 features dropped"),
                "\(warning)")
    }
}

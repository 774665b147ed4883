import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowTestSupport

/// Damaged input must end in a typed error or a (possibly odd) tile, never in a crash or a hang.
/// Typed throws make the error type a compile-time fact; these tests make sure that nothing traps
/// on the way (bounds, arithmetic overflow, allocation sizes).
@Suite struct TileFuzzTests {
    enum Mutation: CaseIterable { case truncate, flipBits, overwriteBytes, truncateAndFlip }

    static func mutate(_ bytes: [UInt8], using generator: inout SplitMix64, protecting prefix: Int = 0) -> [UInt8] {
        guard bytes.count > prefix + 1 else { return bytes }
        var result = bytes
        func flip(_ count: Int) {
            for _ in 0..<count {
                let index = Int.random(in: prefix..<result.count, using: &generator)
                result[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            }
        }
        switch Mutation.allCases.randomElement(using: &generator) ?? .flipBits {
        case .truncate:
            result = Array(result.prefix(Int.random(in: prefix..<result.count, using: &generator)))
        case .flipBits:
            flip(Int.random(in: 1...8, using: &generator))
        case .overwriteBytes:
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                result[Int.random(in: prefix..<result.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
        case .truncateAndFlip:
            result = Array(result.prefix(Int.random(in: (prefix + 1)..<result.count, using: &generator)))
            flip(2)
        }
        return result
    }

    /// About 1 MB of mutated input per tile: small tiles get many iterations, the 120 KB tile few,
    /// which keeps the suite at a few seconds in debug builds.
    static func iterations(for size: Int) -> Int { min(300, max(10, 1_000_000 / max(size, 1))) }

    @Test func mutatedRawTilesDecodeOrThrow() throws {
        var generator = SplitMix64(seed: 0xC0FFEE)
        let source = try FolderTileSource(url: HelsinkiFixtures.folder)
        var decoded = 0, rejected = 0
        for tile in HelsinkiFixtures.tiles {
            let original = [UInt8](try #require(try source.data(for: tile)))
            for _ in 0..<Self.iterations(for: original.count) {
                let mutated = Self.mutate(original, using: &generator)
                do {
                    let result = try VectorTile(decoding: Data(mutated))
                    decoded += 1
                    _ = result.layers.reduce(0) { $0 + $1.features.reduce(0) { $0 + $1.polygons.count } }
                } catch {
                    rejected += 1
                    #expect(!error.description.isEmpty)
                }
            }
        }
        // Both outcomes must occur, or the mutations are not exercising the decoder.
        #expect(decoded > 50 && rejected > 200, "decoded \(decoded), rejected \(rejected)")
    }

    @Test func mutatedGzipTilesDecodeOrThrow() throws {
        var generator = SplitMix64(seed: 0xBADC0DE)
        var decoded = 0, rejected = 0
        for (_, gzip) in try HelsinkiFixtures.storedGzipTiles().sorted(by: { $0.key < $1.key }) {
            let original = [UInt8](gzip)
            for _ in 0..<200 {
                // The first two bytes stay, so the data is still taken for gzip and inflated.
                let mutated = Self.mutate(original, using: &generator, protecting: 2)
                do {
                    _ = try VectorTile(decoding: Data(mutated))
                    decoded += 1
                } catch {
                    rejected += 1
                }
            }
        }
        #expect(rejected > 100, "decoded \(decoded), rejected \(rejected)")
    }

    @Test func mutatedPMTilesHeadersAndDirectoriesOpenOrThrow() throws {
        var generator = SplitMix64(seed: 0x5EED)
        let archive = try [UInt8](Data(contentsOf: HelsinkiFixtures.pmtiles))
        // Header, root directory and metadata: everything before the tile data.
        let directoryEnd = 748
        let directories = Array(archive[..<directoryEnd])
        let tileData = Array(archive[directoryEnd...])
        var opened = 0, rejected = 0
        for _ in 0..<1500 {
            let mutated = Self.mutate(directories, using: &generator)
            // Truncations of the front shift the tile data, which is also damage worth surviving.
            do {
                let source = try PMTilesSource(archive: Data(mutated + tileData), path: "fuzz", fallbackName: "fuzz")
                opened += 1
                // Reading every tile walks the (possibly damaged) directory; decoding one small
                // tile is enough to cover tile data at shifted offsets without slowing the suite.
                for tile in HelsinkiFixtures.tiles { _ = try? source.data(for: tile) }
                _ = try? source.vectorTile(for: HelsinkiFixtures.tiles[0])
            } catch {
                rejected += 1
                #expect(!error.description.isEmpty)
            }
        }
        #expect(opened > 50 && rejected > 50, "opened \(opened), rejected \(rejected)")
    }

    @Test func mutatedLeafDirectoriesOpenOrThrow() throws {
        var generator = SplitMix64(seed: 0x1EAF)
        var tiles: [(id: UInt64, content: [UInt8])] = []
        for id in UInt64(0)..<341 { tiles.append((id, Array("tile \(id)".utf8))) }
        let archive = [UInt8](PMTilesWriter.archive(tiles: tiles, leafSize: 20, minZoom: 0, maxZoom: 4))
        var found = 0
        for _ in 0..<400 {
            let mutated = Self.mutate(archive, using: &generator, protecting: 127)
            guard let source = try? PMTilesSource(archive: Data(mutated), path: "fuzz", fallbackName: "fuzz") else { continue }
            for id in stride(from: UInt64(0), to: 341, by: 7) {
                if let tile = TileID(pmtilesID: id), (try? source.data(for: tile)) != nil { found += 1 }
            }
        }
        #expect(found > 0)
    }

    @Test func hostileDirectoriesAreRejected() throws {
        // An entry count far beyond the bytes present must not allocate.
        var huge = ProtobufWriter()
        huge.varint(UInt64.max >> 1)
        #expect(throws: TileSourceError.self) { try PMTilesEntry.parseDirectory(huge.bytes) }
        // A leaf directory whose only entry points at itself: lookups must stop at the depth limit.
        let selfLeaf = PMTilesWriter.directory([PMTilesWriter.Entry(tileID: 0, offset: 0, length: 5, runLength: 0)])
        #expect(selfLeaf.count == 5)
        let loop = PMTilesWriter.assemble(root: selfLeaf, leaves: selfLeaf, tileData: [1], addressedTiles: 1,
                                          entries: 1, minZoom: 0, maxZoom: 0)
        let source = try PMTilesSource(archive: loop, path: "loop", fallbackName: "loop")
        let error = #expect(throws: TileSourceError.self) { try source.data(for: TileID(z: 0, x: 0, y: 0)) }
        if case .corruptDirectory? = error {} else { Issue.record("expected corruptDirectory, got \(String(describing: error))") }
    }
}

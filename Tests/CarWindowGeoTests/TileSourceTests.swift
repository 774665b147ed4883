import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowTestSupport

extension HelsinkiFixtures {
    /// The tiles as the PMTiles archive stores them (gzip compressed), read through the
    /// archive's own directory so that the decoder's gzip path can be tested on real data.
    static func storedGzipTiles() throws -> [TileID: Data] {
        let archive = try Data(contentsOf: pmtiles)
        let header = try PMTilesHeader(parsing: archive, path: pmtiles.path)
        let root = try PMTilesEntry.parseDirectory([UInt8](try Gzip.decompress(archive.subdata(in: header.rootDirectory))))
        var result: [TileID: Data] = [:]
        for entry in root {
            let tile = try #require(TileID(pmtilesID: entry.tileID))
            let start = header.tileData.lowerBound + Int(entry.offset)
            result[tile] = archive.subdata(in: start..<(start + Int(entry.length)))
        }
        return result
    }
}

/// Writes PMTiles v3 archives with uncompressed directories and tiles, optionally split into
/// leaf directories, so that lookups through leaves and runs can be tested.
enum PMTilesWriter {
    struct Entry { var tileID: UInt64; var offset: UInt64; var length: UInt64; var runLength: UInt64 }

    static func directory(_ entries: [Entry]) -> [UInt8] {
        var writer = ProtobufWriter()
        writer.varint(UInt64(entries.count))
        var last: UInt64 = 0
        for entry in entries { writer.varint(entry.tileID - last); last = entry.tileID }
        for entry in entries { writer.varint(entry.runLength) }
        for entry in entries { writer.varint(entry.length) }
        for (index, entry) in entries.enumerated() {
            let previous = index > 0 ? entries[index - 1] : nil
            if let previous, previous.offset + previous.length == entry.offset {
                writer.varint(0)
            } else {
                writer.varint(entry.offset + 1)
            }
        }
        return writer.bytes
    }

    /// `tiles` sorted by id; equal consecutive contents become one run.
    static func archive(tiles: [(id: UInt64, content: [UInt8])], leafSize: Int?, minZoom: UInt8, maxZoom: UInt8) -> Data {
        var tileData: [UInt8] = []
        var entries: [Entry] = []
        for tile in tiles {
            if var last = entries.last, last.tileID + last.runLength == tile.id,
               Array(tileData[Int(last.offset)..<Int(last.offset + last.length)]) == tile.content {
                last.runLength += 1
                entries[entries.count - 1] = last
                continue
            }
            entries.append(Entry(tileID: tile.id, offset: UInt64(tileData.count),
                                 length: UInt64(tile.content.count), runLength: 1))
            tileData += tile.content
        }
        var root: [UInt8]
        var leaves: [UInt8] = []
        if let leafSize {
            var rootEntries: [Entry] = []
            for start in stride(from: 0, to: entries.count, by: leafSize) {
                let leaf = directory(Array(entries[start..<min(start + leafSize, entries.count)]))
                rootEntries.append(Entry(tileID: entries[start].tileID, offset: UInt64(leaves.count),
                                         length: UInt64(leaf.count), runLength: 0))
                leaves += leaf
            }
            root = directory(rootEntries)
        } else {
            root = directory(entries)
        }
        return assemble(root: root, leaves: leaves, tileData: tileData, addressedTiles: tiles.count,
                        entries: entries.count, minZoom: minZoom, maxZoom: maxZoom)
    }

    /// Header, root directory, metadata, leaf directories and tile data, in that order.
    static func assemble(root: [UInt8], leaves: [UInt8], tileData: [UInt8], addressedTiles: Int, entries: Int,
                         minZoom: UInt8, maxZoom: UInt8) -> Data {
        let metadata = Array(#"{"name":"synthetic"}"#.utf8)
        var header = [UInt8]("PMTiles".utf8) + [3]
        func put64(_ value: Int) { for byte in 0..<8 { header.append(UInt8((value >> (8 * byte)) & 0xFF)) } }
        func put32(_ value: Int32) { for byte in 0..<4 { header.append(UInt8((UInt32(bitPattern: value) >> (8 * UInt32(byte))) & 0xFF)) } }
        let rootOffset = 127, metadataOffset = rootOffset + root.count
        let leafOffset = metadataOffset + metadata.count, dataOffset = leafOffset + leaves.count
        put64(rootOffset); put64(root.count)
        put64(metadataOffset); put64(metadata.count)
        put64(leafOffset); put64(leaves.count)
        put64(dataOffset); put64(tileData.count)
        put64(addressedTiles); put64(entries); put64(entries)
        header += [1, 1, 1, 1, minZoom, maxZoom]  // clustered, no compression, MVT
        put32(-1_800_000_000); put32(-850_000_000); put32(1_800_000_000); put32(850_000_000)
        header.append(0); put32(0); put32(0)
        precondition(header.count == 127)
        return Data(header + root + metadata + leaves + tileData)
    }
}

@Suite struct TileSourceTests {
    static func openAll() throws -> [any TileSource] {
        [try openTileSource(at: HelsinkiFixtures.pmtiles), try openTileSource(at: HelsinkiFixtures.mbtiles),
         try openTileSource(at: HelsinkiFixtures.folder)]
    }

    @Test func openTileSourceChoosesByKind() throws {
        let sources = try Self.openAll()
        #expect(sources[0] is PMTilesSource)
        #expect(sources[1] is MBTilesSource)
        #expect(sources[2] is FolderTileSource)
    }

    /// Expected values from the fixtures' own metadata (tilemaker bounds 24.9351762,60.164155,
    /// 24.9534145,60.179113; PMTiles stores them rounded to 1e-7 degrees).
    @Test func metadataOfEverySource() throws {
        for source in try Self.openAll() {
            #expect(source.minZoom == 10, "\(source.name)")
            #expect(source.maxZoom == 14, "\(source.name)")
            #expect(source.name == "Helsinki nav subset (OpenMapTiles schema, tilemaker 2.2)")
            let bounds = try #require(source.bounds)
            #expect(abs(bounds.southWest.longitude - 24.93518) < 1e-4)
            #expect(abs(bounds.southWest.latitude - 60.16416) < 1e-4)
            #expect(abs(bounds.northEast.longitude - 24.95341) < 1e-4)
            #expect(abs(bounds.northEast.latitude - 60.17911) < 1e-4)
        }
    }

    @Test func missingTilesAreNil() throws {
        for source in try Self.openAll() {
            #expect(try source.data(for: TileID(z: 14, x: 0, y: 0)) == nil)
            #expect(try source.data(for: TileID(z: 9, x: 291, y: 148)) == nil)
            #expect(try source.data(for: TileID(z: 3, x: 9, y: 0)) == nil)  // outside the grid
            #expect(try source.data(for: TileID(z: 40, x: 0, y: 0)) == nil)
        }
    }

    /// The three stores come from one tilemaker run but their bytes differ (feature order), so
    /// the decoded layers are compared as multisets of features.
    @Test func allSourcesGiveTheSameDecodedContent() throws {
        struct FeatureKey: Hashable {
            var type: GeometryType
            var properties: [String: FeatureValue]
            var geometry: [[TilePoint]]
        }
        func content(_ tile: VectorTile) -> [String: [FeatureKey: Int]] {
            var layers: [String: [FeatureKey: Int]] = [:]
            for layer in tile.layers {
                #expect(layer.extent == 4096 && layer.version == 2)
                for feature in layer.features {
                    layers[layer.name, default: [:]][FeatureKey(type: feature.type, properties: feature.properties,
                                                                geometry: feature.geometry), default: 0] += 1
                }
            }
            return layers
        }
        let sources = try Self.openAll()
        for tile in HelsinkiFixtures.tiles {
            let decoded = try sources.map { try #require(try $0.vectorTile(for: tile)) }
            let reference = content(decoded[0])
            #expect(reference.count >= 5)
            for other in decoded.dropFirst() {
                #expect(content(other) == reference, "tile \(tile)")
                #expect(other.layers.map(\.name).sorted() == decoded[0].layers.map(\.name).sorted())
            }
        }
    }

    @Test func mbtilesAndFolderTilesAreInflated() throws {
        let tile = TileID(z: 13, x: 4663, y: 2371)
        for source in try Self.openAll() {
            let bytes = try #require(try source.data(for: tile))
            #expect(!Gzip.isCompressed(bytes))
            #expect(bytes.count == 24751)  // the inflated size pmtiles' Python reader reports
        }
    }

    /// Ids from the Python `pmtiles` package 3.8.1: `pmtiles.tile.zxy_to_tileid(z, x, y)`.
    @Test func hilbertTileIDsMatchTheSpecification() throws {
        let known: [(TileID, UInt64)] = [
            (TileID(z: 0, x: 0, y: 0), 0), (TileID(z: 1, x: 0, y: 0), 1), (TileID(z: 1, x: 0, y: 1), 2),
            (TileID(z: 1, x: 1, y: 1), 3), (TileID(z: 1, x: 1, y: 0), 4), (TileID(z: 2, x: 0, y: 0), 5),
            (TileID(z: 2, x: 3, y: 0), 20),
            (TileID(z: 10, x: 582, y: 296), 1_247_787), (TileID(z: 14, x: 9327, y: 4742), 319_433_622),
            (TileID(z: 20, x: 123_456, y: 654_321), 652_812_043_350),
            (TileID(z: 26, x: 33_554_432, y: 12345), 5_629_499_450_325_694),
        ]
        for (tile, id) in known {
            #expect(tile.pmtilesID == id, "\(tile)")
            #expect(TileID(pmtilesID: id) == tile)
        }
        #expect(TileID(z: 3, x: 8, y: 0).pmtilesID == nil)
    }

    @Test func hilbertRoundTripsEveryTileUpToZoom7AndSamplesBeyond() throws {
        var sampleCount: UInt64 = 0
        var byID: [TileID] = []
        for z in 0...7 {
            for x in 0..<(1 << z) { for y in 0..<(1 << z) { byID.append(TileID(z: z, x: x, y: y)) } }
        }
        // Ids are dense: every id below 4^8/3 names exactly one tile of zooms 0...7.
        var seen = Set<UInt64>()
        for tile in byID {
            let id = try #require(tile.pmtilesID)
            #expect(TileID(pmtilesID: id) == tile)
            seen.insert(id)
        }
        #expect(seen == Set(0..<UInt64(byID.count)))
        for id in stride(from: UInt64(0), to: 4_000_000_000_000, by: 7_919_000_001) {
            let tile = try #require(TileID(pmtilesID: id))
            #expect(tile.pmtilesID == id)
            sampleCount += 1
        }
        #expect(sampleCount > 500)
    }

    @Test func pmtilesLeafDirectoriesAndRuns() throws {
        // Zooms 0...6; ids 100..<200 share one content (a run), every id divisible by 13 is absent.
        var tiles: [(id: UInt64, content: [UInt8])] = []
        for id in UInt64(0)..<5461 where id % 13 != 0 {
            tiles.append((id, (100..<200).contains(id) ? Array("ocean".utf8) : Array("tile \(id)".utf8)))
        }
        let archive = PMTilesWriter.archive(tiles: tiles, leafSize: 50, minZoom: 0, maxZoom: 6)
        let source = try PMTilesSource(archive: archive, path: "synthetic.pmtiles", fallbackName: "x")
        #expect(source.name == "synthetic")
        #expect(source.minZoom == 0 && source.maxZoom == 6)
        let expected = Dictionary(uniqueKeysWithValues: tiles.map { ($0.id, Data($0.content)) })
        // Twice, so that the second pass reads leaves from the cache (and after evictions).
        for _ in 0..<2 {
            for id in UInt64(0)..<5461 {
                let tile = try #require(TileID(pmtilesID: id))
                #expect(try source.data(for: tile) == expected[id], "tile \(tile) id \(id)")
            }
        }
        #expect(try source.data(for: TileID(z: 7, x: 0, y: 0)) == nil)
    }

    @Test func folderWithoutMetadataTakesZoomsFromFolderNames() throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stored = try HelsinkiFixtures.storedGzipTiles()
        for tile in [TileID(z: 12, x: 2331, y: 1185), TileID(z: 13, x: 4663, y: 2371)] {
            let column = folder.appendingPathComponent("\(tile.z)/\(tile.x)")
            try FileManager.default.createDirectory(at: column, withIntermediateDirectories: true)
            // One gzip .mvt and one raw .pbf, to cover both names and both encodings.
            if tile.z == 12 {
                try #require(stored[tile]).write(to: column.appendingPathComponent("\(tile.y).mvt"))
            } else {
                try Gzip.decompress(try #require(stored[tile])).write(to: column.appendingPathComponent("\(tile.y).pbf"))
            }
        }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("notes"), withIntermediateDirectories: true)
        let source = try openTileSource(at: folder)
        #expect(source.minZoom == 12 && source.maxZoom == 13)
        #expect(source.bounds == nil)
        #expect(source.name == folder.lastPathComponent)
        for tile in [TileID(z: 12, x: 2331, y: 1185), TileID(z: 13, x: 4663, y: 2371)] {
            let bytes = try #require(try source.data(for: tile))
            #expect(!Gzip.isCompressed(bytes))
            #expect(try VectorTile(decoding: bytes).layer(named: "transportation") != nil)
        }
    }

    @Test func unknownExtensionIsRecognisedByMagicBytes() throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let pmtilesCopy = folder.appendingPathComponent("map.bin"), mbtilesCopy = folder.appendingPathComponent("map.db")
        try FileManager.default.copyItem(at: HelsinkiFixtures.pmtiles, to: pmtilesCopy)
        try FileManager.default.copyItem(at: HelsinkiFixtures.mbtiles, to: mbtilesCopy)
        #expect(try openTileSource(at: pmtilesCopy) is PMTilesSource)
        #expect(try openTileSource(at: mbtilesCopy) is MBTilesSource)
        let text = folder.appendingPathComponent("notes.txt")
        try Data("hello".utf8).write(to: text)
        #expect(throws: TileSourceError.unknownFormat(path: text.path)) { try openTileSource(at: text) }
    }

    @Test func brokenSourcesThrowTypedErrors() throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("missing.pmtiles")
        #expect(throws: TileSourceError.missingFile(path: missing.path)) { try openTileSource(at: missing) }
        #expect(throws: TileSourceError.missingFile(path: missing.path)) { try MBTilesSource(url: missing) }

        let emptyPMTiles = folder.appendingPathComponent("empty.pmtiles")
        try Data().write(to: emptyPMTiles)
        #expect(throws: TileSourceError.notPMTiles(path: emptyPMTiles.path)) { try openTileSource(at: emptyPMTiles) }

        let textPMTiles = folder.appendingPathComponent("text.pmtiles")
        try Data(String(repeating: "not a map, just words. ", count: 20).utf8).write(to: textPMTiles)
        #expect(throws: TileSourceError.notPMTiles(path: textPMTiles.path)) { try openTileSource(at: textPMTiles) }

        let textMBTiles = folder.appendingPathComponent("text.mbtiles")
        try Data(String(repeating: "not a database either. ", count: 200).utf8).write(to: textMBTiles)
        let notDatabase = #expect(throws: TileSourceError.self) { try openTileSource(at: textMBTiles) }
        guard case .notMBTiles(let path, let reason)? = notDatabase else {
            Issue.record("expected notMBTiles, got \(String(describing: notDatabase))")
            return
        }
        #expect(path == textMBTiles.path && reason.contains("not a database"))

        // SQLite treats an empty file as an empty database, which has no tiles table.
        let emptyMBTiles = folder.appendingPathComponent("empty.mbtiles")
        try Data().write(to: emptyMBTiles)
        let noTable = #expect(throws: TileSourceError.self) { try openTileSource(at: emptyMBTiles) }
        if case .notMBTiles = noTable {} else { Issue.record("expected notMBTiles, got \(String(describing: noTable))") }

        let emptyFolder = folder.appendingPathComponent("no-tiles")
        try FileManager.default.createDirectory(at: emptyFolder.appendingPathComponent("metadata"),
                                                withIntermediateDirectories: true)
        #expect(throws: TileSourceError.emptySource(path: emptyFolder.path)) { try openTileSource(at: emptyFolder) }

        let noEntries = PMTilesWriter.archive(tiles: [], leafSize: nil, minZoom: 0, maxZoom: 0)
        #expect(throws: TileSourceError.emptySource(path: "none")) {
            try PMTilesSource(archive: noEntries, path: "none", fallbackName: "none")
        }

        var wrongVersion = try [UInt8](Data(contentsOf: HelsinkiFixtures.pmtiles))
        wrongVersion[7] = 2
        #expect(throws: TileSourceError.unsupportedPMTilesVersion(2)) {
            try PMTilesSource(archive: Data(wrongVersion), path: "v2", fallbackName: "v2")
        }
        var brotli = try [UInt8](Data(contentsOf: HelsinkiFixtures.pmtiles))
        brotli[98] = 3
        #expect(throws: TileSourceError.unsupportedCompression("brotli")) {
            try PMTilesSource(archive: Data(brotli), path: "b", fallbackName: "b")
        }
        var png = try [UInt8](Data(contentsOf: HelsinkiFixtures.pmtiles))
        png[99] = 2
        #expect(throws: TileSourceError.unsupportedTileType("PNG")) {
            try PMTilesSource(archive: Data(png), path: "p", fallbackName: "p")
        }
        for error in [TileSourceError.emptySource(path: "/x"), .notMBTiles(path: "/y", reason: "r")] {
            #expect(error.description.contains("/"))
        }
    }
}

/// Counts the whole process's descriptors, so `scripts/test.sh` runs it alone, after the
/// parallel run: another suite's files and sockets would change the count.
@Suite struct TileSourceDescriptorCensusTests {
    @Test func aRefusedMBTilesFileIsClosedAgain() throws {
        let folder = try HelsinkiFixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let textMBTiles = folder.appendingPathComponent("text.mbtiles")
        try Data(String(repeating: "not a database either. ", count: 200).utf8).write(to: textMBTiles)
        let descriptorsBefore = ProcessResourceCensus.now().fileDescriptors
        for _ in 0..<50 { _ = try? openTileSource(at: textMBTiles) }
        #expect(ProcessResourceCensus.now().fileDescriptors == descriptorsBefore)
    }
}

import Foundation
import Logging
import CarWindowSystemSupport

extension TileID {
    /// The PMTiles v3 tile id: the number of tiles in all lower zoom levels plus the tile's
    /// position along the Hilbert curve of its zoom level. Nil for tiles outside the grid.
    package var pmtilesID: UInt64? {
        guard isValid else { return nil }
        let size = UInt64(1) << UInt64(z)
        var x = UInt64(x), y = UInt64(y)
        var distance: UInt64 = 0
        var step = size / 2
        while step > 0 {
            let rx: UInt64 = (x & step) > 0 ? 1 : 0
            let ry: UInt64 = (y & step) > 0 ? 1 : 0
            distance += step * step * ((3 * rx) ^ ry)
            Self.rotateQuadrant(size: step, x: &x, y: &y, rx: rx, ry: ry)
            step /= 2
        }
        return Self.tilesBelowZoom(z) + distance
    }

    /// The tile a PMTiles v3 tile id stands for; nil beyond zoom 30.
    package init?(pmtilesID: UInt64) {
        var zoom = 0
        while zoom <= 30, Self.tilesBelowZoom(zoom + 1) <= pmtilesID { zoom += 1 }
        guard zoom <= 30 else { return nil }
        var remaining = pmtilesID - Self.tilesBelowZoom(zoom)
        let size = UInt64(1) << UInt64(zoom)
        var x: UInt64 = 0, y: UInt64 = 0
        var step: UInt64 = 1
        while step < size {
            let rx = 1 & (remaining / 2)
            let ry = 1 & (remaining ^ rx)
            Self.rotateQuadrant(size: step, x: &x, y: &y, rx: rx, ry: ry)
            x += step * rx
            y += step * ry
            remaining /= 4
            step *= 2
        }
        self.init(z: zoom, x: Int(x), y: Int(y))
    }

    /// (4^z - 1) / 3: how many tiles the zoom levels below `z` hold together.
    private static func tilesBelowZoom(_ z: Int) -> UInt64 {
        ((UInt64(1) << UInt64(2 * z)) - 1) / 3
    }

    private static func rotateQuadrant(size: UInt64, x: inout UInt64, y: inout UInt64, rx: UInt64, ry: UInt64) {
        guard ry == 0 else { return }
        if rx == 1 {
            x = size &- 1 &- x
            y = size &- 1 &- y
        }
        swap(&x, &y)
    }
}

/// A compression named by a PMTiles header.
enum PMTilesCompression: UInt8, Sendable {
    case unknown = 0, none = 1, gzip = 2, brotli = 3, zstd = 4
}

/// The fixed 127-byte header at the start of every PMTiles v3 archive.
struct PMTilesHeader: Sendable {
    static let size = 127

    var rootDirectory: Range<Int>
    var metadata: Range<Int>
    var leafDirectories: Range<Int>
    var tileData: Range<Int>
    var internalCompression: PMTilesCompression
    var tileCompression: PMTilesCompression
    var minZoom: Int
    var maxZoom: Int
    var bounds: GeoBounds

    init(parsing data: Data, path: String) throws(TileSourceError) {
        try self.init(parsing: data, fileSize: UInt64(data.count), path: path)
    }

    /// Parses the header at the start of `data`, checking its sections against the size of the
    /// whole archive (`data` may be only its first bytes, as read from a server).
    init(parsing data: Data, fileSize: UInt64, path: String) throws(TileSourceError) {
        guard data.count >= Self.size, data.starts(with: Array("PMTiles".utf8)) else {
            throw .notPMTiles(path: path)
        }
        let bytes = [UInt8](data.prefix(Self.size))
        guard bytes[7] == 3 else { throw .unsupportedPMTilesVersion(Int(bytes[7])) }

        func uint64(_ at: Int) -> UInt64 {
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
        }
        func int32(_ at: Int) -> Int32 {
            Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) })
        }
        /// A section of the file; one that does not lie inside the file makes the archive unusable.
        func section(_ at: Int, _ name: String) throws(TileSourceError) -> Range<Int> {
            let offset = uint64(at), length = uint64(at + 8)
            guard offset <= fileSize, length <= fileSize - offset, offset + length <= UInt64(Int.max) else {
                throw .corruptDirectory("\(name) section (offset \(offset), length \(length)) lies outside the \(fileSize)-byte file")
            }
            return Int(offset)..<Int(offset + length)
        }
        func compression(_ at: Int) throws(TileSourceError) -> PMTilesCompression {
            guard let value = PMTilesCompression(rawValue: bytes[at]) else {
                throw .unsupportedCompression("code \(bytes[at])")
            }
            switch value {
            case .unknown, .none, .gzip: return value
            case .brotli: throw .unsupportedCompression("brotli")
            case .zstd: throw .unsupportedCompression("zstd")
            }
        }

        rootDirectory = try section(8, "root directory")
        metadata = try section(24, "metadata")
        leafDirectories = try section(40, "leaf directory")
        tileData = try section(56, "tile data")
        internalCompression = try compression(97)
        tileCompression = try compression(98)
        switch bytes[99] {
        case 0, 1: break
        case 2: throw .unsupportedTileType("PNG")
        case 3: throw .unsupportedTileType("JPEG")
        case 4: throw .unsupportedTileType("WebP")
        case 5: throw .unsupportedTileType("AVIF")
        default: throw .unsupportedTileType("type \(bytes[99])")
        }
        minZoom = Int(bytes[100])
        maxZoom = Int(bytes[101])
        guard minZoom <= maxZoom, maxZoom <= 30 else {
            throw .corruptDirectory("zoom range \(minZoom)...\(maxZoom) is invalid")
        }
        func degrees(_ at: Int) -> Double { Double(int32(at)) / 10_000_000 }
        bounds = GeoBounds(southWest: GeoCoordinate(latitude: degrees(106), longitude: degrees(102)),
                           northEast: GeoCoordinate(latitude: degrees(114), longitude: degrees(110)))
    }
}

/// One directory entry: a run of tiles with identical content, or (run length 0) a leaf directory.
package struct PMTilesEntry: Sendable, Equatable {
    package var tileID: UInt64
    package var offset: UInt64
    package var length: UInt64
    package var runLength: UInt64

    /// Parses an uncompressed directory: the entry count, then tile id deltas, run lengths,
    /// lengths and offsets, each as a column of varints.
    package static func parseDirectory(_ bytes: [UInt8]) throws(TileSourceError) -> [PMTilesEntry] {
        var reader = ProtobufReader(bytes)
        do {
            let count = try reader.readVarint()
            // Every entry takes at least one byte in each of the four columns.
            guard count <= UInt64(reader.remaining / 4) else {
                throw TileSourceError.corruptDirectory("directory claims \(count) entries in \(reader.remaining) bytes")
            }
            var entries = [PMTilesEntry](repeating: PMTilesEntry(tileID: 0, offset: 0, length: 0, runLength: 0),
                                         count: Int(count))
            var tileID: UInt64 = 0
            for index in entries.indices {
                let delta = try reader.readVarint()
                guard index == 0 || delta > 0 else {
                    throw TileSourceError.corruptDirectory("tile ids are not increasing at entry \(index)")
                }
                let (sum, overflow) = tileID.addingReportingOverflow(delta)
                guard !overflow else { throw TileSourceError.corruptDirectory("tile id overflows at entry \(index)") }
                tileID = sum
                entries[index].tileID = tileID
            }
            for index in entries.indices { entries[index].runLength = try reader.readVarint() }
            for index in entries.indices { entries[index].length = try reader.readVarint() }
            for index in entries.indices {
                let value = try reader.readVarint()
                if value == 0 {
                    guard index > 0 else { throw TileSourceError.corruptDirectory("first entry has no offset") }
                    let previous = entries[index - 1]
                    let (sum, overflow) = previous.offset.addingReportingOverflow(previous.length)
                    guard !overflow else { throw TileSourceError.corruptDirectory("offset overflows at entry \(index)") }
                    entries[index].offset = sum
                } else {
                    entries[index].offset = value - 1
                }
            }
            return entries
        } catch let error as TileSourceError {
            throw error
        } catch let error as TileDecodingError {
            throw .corruptDirectory("bad varint: \(error)")
        } catch {
            throw .corruptDirectory("\(error)")
        }
    }

    /// The entry covering `tileID`: a run containing it, or the leaf directory that may hold it.
    package static func find(_ tileID: UInt64, in entries: [PMTilesEntry]) -> PMTilesEntry? {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].tileID <= tileID { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let candidate = entries[low - 1]
        if candidate.runLength == 0 || tileID - candidate.tileID < candidate.runLength { return candidate }
        return nil
    }
}

/// Where a PMTiles archive's bytes come from: a file mapped into memory, or a server answering
/// byte-range requests. An engine may give its own (an archive inside an asset pack, say).
public protocol ByteRangeReader: Sendable {
    /// The archive's size in bytes.
    var size: UInt64 { get }
    /// The path or URL, for errors.
    var location: String { get }
    /// `length` bytes from `offset`; the range lies inside ``size``.
    func read(offset: UInt64, length: Int) throws(TileSourceError) -> Data
}

/// An archive already in memory (or mapped from a file).
struct InMemoryBytes: ByteRangeReader {
    let data: Data
    let location: String
    var size: UInt64 { UInt64(data.count) }

    func read(offset: UInt64, length: Int) throws(TileSourceError) -> Data {
        let start = data.startIndex + Int(offset)
        return data.subdata(in: start..<(start + length))
    }
}

/// A PMTiles v3 archive (https://github.com/protomaps/PMTiles/blob/main/spec/v3/spec.md): a file
/// mapped into memory, so that opening a country-sized file costs nothing until tiles are read,
/// or any other ``ByteRangeReader`` (a server, through CarWindowRemoteTiles).
public final class PMTilesSource: TileSource {
    /// The metadata's name, or the archive's file name.
    public let name: String
    /// The JSON metadata's `attribution`, if any.
    public let attribution: String?
    /// The lowest zoom level the archive declares.
    public let minZoom: Int
    /// The highest zoom level the archive declares.
    public let maxZoom: Int
    /// The covered area the archive declares, if any.
    public let bounds: GeoBounds?

    private let reader: any ByteRangeReader
    private let header: PMTilesHeader
    private let rootEntries: [PMTilesEntry]
    /// Recently used leaf directories: panning reads neighbouring tiles, which share leaves.
    private let leafCache = LockedState(LeafCache())

    private static let logger = Logger(label: "carwindow.tiles")
    /// Directories nest one level in practice; a bound stops a crafted archive from looping.
    private static let maxDirectoryDepth = 4
    /// Bytes read at once when opening: the header and, as archives are laid out, the root
    /// directory, in one request to a server.
    static let openingRead = 16_384
    /// The most bytes one directory may take (real ones are kilobytes to a few megabytes).
    static let maximumDirectoryBytes = 32 << 20
    /// The most bytes of metadata read for the name and credit.
    static let maximumMetadataBytes = 4 << 20

    /// Opens the archive at `url` and reads its header, root directory and name.
    public convenience init(url: URL) throws(TileSourceError) {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { throw .missingFile(path: path) }
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw .unreadable(path: path, reason: error.localizedDescription)
        }
        try self.init(archive: data, path: path, fallbackName: url.deletingPathExtension().lastPathComponent)
    }

    /// Reads an archive already in memory; `path` only names it in errors.
    package convenience init(archive data: Data, path: String, fallbackName: String) throws(TileSourceError) {
        try self.init(reader: InMemoryBytes(data: data, location: path), fallbackName: fallbackName)
    }

    /// Opens the archive `reader` reads: its header, root directory and metadata are read now.
    ///
    /// - Parameters:
    ///   - reader: where the archive's bytes come from.
    ///   - fallbackName: the name when the metadata has none.
    public init(reader: any ByteRangeReader, fallbackName: String) throws(TileSourceError) {
        self.reader = reader
        let path = reader.location
        let opening = try reader.read(offset: 0, length: Int(min(UInt64(Self.openingRead), reader.size)))
        header = try PMTilesHeader(parsing: opening, fileSize: reader.size, path: path)
        guard header.rootDirectory.count <= Self.maximumDirectoryBytes else {
            throw .corruptDirectory("the root directory is \(header.rootDirectory.count) bytes, more than \(Self.maximumDirectoryBytes)")
        }
        let rootBytes = header.rootDirectory.upperBound <= opening.count
            ? opening.subdata(in: header.rootDirectory)
            : try reader.read(offset: UInt64(header.rootDirectory.lowerBound), length: header.rootDirectory.count)
        rootEntries = try PMTilesEntry.parseDirectory(Self.inflateDirectory(rootBytes, header.internalCompression))
        guard !rootEntries.isEmpty else { throw .emptySource(path: path) }
        minZoom = header.minZoom
        maxZoom = header.maxZoom
        bounds = header.bounds
        let metadata = Self.readMetadata(reader: reader, header: header)
        name = metadata?["name"] as? String ?? fallbackName
        attribution = metadata?["attribution"] as? String
    }

    /// The uncompressed tile bytes, or nil when the archive has no such tile.
    public func data(for tile: TileID) throws(TileSourceError) -> Data? {
        guard let tileID = tile.pmtilesID else { return nil }
        var entries = rootEntries
        for _ in 0..<Self.maxDirectoryDepth {
            guard let entry = PMTilesEntry.find(tileID, in: entries) else { return nil }
            if entry.runLength > 0 {
                let limit = VectorTileLimits.standard.maximumBytes
                guard entry.length <= UInt64(limit) else {
                    throw .corruptTile(tile, "stored tile is \(entry.length) bytes, more than the \(limit) a tile may have")
                }
                let bytes = try slice(of: header.tileData, offset: entry.offset, length: entry.length,
                                      orThrow: .corruptTile(tile, "tile data lies outside the file"))
                return try inflateTile(bytes, tile: tile)
            }
            entries = try leafDirectory(offset: entry.offset, length: entry.length)
        }
        throw .corruptDirectory("leaf directories nest deeper than \(Self.maxDirectoryDepth) levels")
    }

    private func inflateTile(_ bytes: Data, tile: TileID) throws(TileSourceError) -> Data {
        switch header.tileCompression {
        case .none: return bytes
        case .gzip:
            do {
                return try Gzip.decompress(bytes, limit: VectorTileLimits.standard.maximumBytes)
            } catch {
                throw .corruptTile(tile, error.description)
            }
        default: return try inflateIfNeeded(bytes, tile: tile)
        }
    }

    private func leafDirectory(offset: UInt64, length: UInt64) throws(TileSourceError) -> [PMTilesEntry] {
        if let cached = leafCache.withLock({ $0.entries(at: offset) }) { return cached }
        guard length <= UInt64(Self.maximumDirectoryBytes) else {
            throw .corruptDirectory("a leaf directory is \(length) bytes, more than \(Self.maximumDirectoryBytes)")
        }
        let bytes = try slice(of: header.leafDirectories, offset: offset, length: length,
                              orThrow: .corruptDirectory("leaf directory lies outside the leaf section"))
        let entries = try PMTilesEntry.parseDirectory(Self.inflateDirectory(bytes, header.internalCompression))
        leafCache.withLock { $0.insert(entries, at: offset) }
        return entries
    }

    private func slice(of section: Range<Int>, offset: UInt64, length: UInt64,
                       orThrow error: TileSourceError) throws(TileSourceError) -> Data {
        let sectionLength = UInt64(section.count)
        guard offset <= sectionLength, length <= sectionLength - offset else { throw error }
        return try reader.read(offset: UInt64(section.lowerBound) + offset, length: Int(length))
    }

    private static func inflateDirectory(_ bytes: Data, _ compression: PMTilesCompression) throws(TileSourceError) -> [UInt8] {
        let compressed = compression == .gzip || (compression == .unknown && Gzip.isCompressed(bytes))
        guard compressed else { return [UInt8](bytes) }
        do {
            return [UInt8](try Gzip.decompress(bytes, limit: maximumDirectoryBytes))
        } catch {
            throw .corruptDirectory("directory cannot be inflated: \(error)")
        }
    }

    /// The JSON metadata; a broken or oversized metadata block only costs the name and credit,
    /// not the map.
    private static func readMetadata(reader: any ByteRangeReader, header: PMTilesHeader) -> [String: Any]? {
        guard !header.metadata.isEmpty else { return nil }
        guard header.metadata.count <= maximumMetadataBytes else {
            logger.warning("PMTiles metadata of \(reader.location) is \(header.metadata.count) bytes, more than \(maximumMetadataBytes); using the file name")
            return nil
        }
        do {
            var json = try reader.read(offset: UInt64(header.metadata.lowerBound), length: header.metadata.count)
            if header.internalCompression == .gzip || Gzip.isCompressed(json) {
                json = try Gzip.decompress(json, limit: maximumMetadataBytes)
            }
            let object = try JSONSerialization.jsonObject(with: json)
            return object as? [String: Any]
        } catch {
            logger.warning("PMTiles metadata is unreadable, using the file name: \(error)")
            return nil
        }
    }
}

/// A small least-recently-inserted cache of parsed leaf directories, keyed by their offset.
private struct LeafCache {
    static let capacity = 64
    private var directories: [UInt64: [PMTilesEntry]] = [:]
    private var insertionOrder: [UInt64] = []

    func entries(at offset: UInt64) -> [PMTilesEntry]? { directories[offset] }

    mutating func insert(_ entries: [PMTilesEntry], at offset: UInt64) {
        guard directories.updateValue(entries, forKey: offset) == nil else { return }
        insertionOrder.append(offset)
        if insertionOrder.count > Self.capacity {
            directories[insertionOrder.removeFirst()] = nil
        }
    }
}

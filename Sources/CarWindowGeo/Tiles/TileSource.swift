import Foundation

/// A store of vector tiles: a PMTiles or MBTiles archive, or a folder of tile files.
public protocol TileSource: Sendable {
    /// A human-readable name, from the source's metadata or else its file name.
    var name: String { get }
    /// The lowest zoom level the source has tiles for.
    var minZoom: Int { get }
    /// The highest zoom level the source has tiles for; renderers overzoom beyond it.
    var maxZoom: Int { get }
    /// The area the source covers, when its metadata says so.
    var bounds: GeoBounds? { get }
    /// The credit its metadata asks for (`attribution`, often HTML), if any; every frame drawn
    /// from it shows it.
    var attribution: String? { get }
    /// The uncompressed Mapbox Vector Tile bytes of `tile`, or nil when the source has no such tile
    /// (including tiles outside the grid). Throws only when the source itself is damaged.
    func data(for tile: TileID) throws(TileSourceError) -> Data?
    /// The decoded tile, or nil when the source has no such tile. Renderers call this, so a
    /// source that keeps decoded tiles (``SharedTileCache``) serves every map that shares it.
    func decodedTile(for tile: TileID) throws(TileSourceError) -> VectorTile?
}

extension TileSource {
    /// No credit beyond the map's own, for sources without metadata.
    public var attribution: String? { nil }

    /// The decoded tile, or nil when the source has no such tile.
    public func decodedTile(for tile: TileID) throws(TileSourceError) -> VectorTile? {
        try vectorTile(for: tile)
    }

    /// The decoded tile, decoded afresh, or nil when the source has no such tile.
    public func vectorTile(for tile: TileID) throws(TileSourceError) -> VectorTile? {
        guard let bytes = try data(for: tile) else { return nil }
        do {
            return try VectorTile(decoding: bytes)
        } catch {
            throw .undecodableTile(tile, error)
        }
    }
}

/// Why a tile source could not be opened or read.
public enum TileSourceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing exists at the path.
    case missingFile(path: String)
    /// The file or folder exists but could not be read.
    case unreadable(path: String, reason: String)
    /// The file is not a PMTiles archive (no "PMTiles" magic, or too short for a header).
    case notPMTiles(path: String)
    /// The file is not an SQLite database with an MBTiles `tiles` table.
    case notMBTiles(path: String, reason: String)
    /// The file's format could not be told from its extension or its first bytes.
    case unknownFormat(path: String)
    /// The PMTiles archive has a specification version other than 3.
    case unsupportedPMTilesVersion(Int)
    /// The archive uses a compression this library cannot inflate (only none and gzip are supported).
    case unsupportedCompression(String)
    /// The archive holds tiles that are not vector tiles (for example PNG rasters).
    case unsupportedTileType(String)
    /// A PMTiles header or directory is inconsistent: offsets outside the file, bad varints,
    /// directories nested too deeply.
    case corruptDirectory(String)
    /// A stored tile could not be inflated or lies outside the file.
    case corruptTile(TileID, String)
    /// A tile was read but is not a valid vector tile.
    case undecodableTile(TileID, TileDecodingError)
    /// SQLite reported an error; the message is SQLite's.
    case sqlite(path: String, message: String)
    /// The source is well-formed but has no tiles.
    case emptySource(path: String)
    /// A server could not be reached or gave an answer that cannot be used (an error status,
    /// a body over the limit, no byte ranges where an archive needs them).
    case network(url: String, reason: String)

    /// What went wrong and what to do about it, for logs and error messages.
    public var description: String {
        switch self {
        case .missingFile(let path):
            "No tile source at \(path); check the path."
        case .unreadable(let path, let reason):
            "Cannot read tile source \(path): \(reason); check its permissions."
        case .notPMTiles(let path):
            "\(path) is not a PMTiles archive (no PMTiles header); pass a .pmtiles file made by tilemaker or the pmtiles tool."
        case .notMBTiles(let path, let reason):
            "\(path) is not an MBTiles database (\(reason)); pass an SQLite file with a tiles table."
        case .unknownFormat(let path):
            "Cannot tell the format of \(path); use a .pmtiles or .mbtiles file or a z/x/y tile folder."
        case .unsupportedPMTilesVersion(let version):
            "PMTiles version \(version) is not supported; convert the archive to version 3 (pmtiles convert)."
        case .unsupportedCompression(let compression):
            "Compression \(compression) is not supported; re-create the archive with gzip or no compression."
        case .unsupportedTileType(let type):
            "The archive holds \(type) tiles; only Mapbox vector tiles (MVT) can be rendered."
        case .corruptDirectory(let reason):
            "The PMTiles archive is corrupt (\(reason)); re-create or re-download it."
        case .corruptTile(let tile, let reason):
            "Tile \(tile) is corrupt (\(reason)); re-create or re-download the tile source."
        case .undecodableTile(let tile, let error):
            "Tile \(tile) cannot be decoded: \(error)"
        case .sqlite(let path, let message):
            "SQLite error reading \(path): \(message)."
        case .emptySource(let path):
            "\(path) contains no tiles; generate tiles into it first (for example with tilemaker)."
        case .network(let url, let reason):
            "Cannot fetch \(url): \(reason); check the address and the connection (tiles already cached are still drawn)."
        }
    }
}

/// Opens the tile source at `url`: a folder of z/x/y tiles, a `.pmtiles` or `.mbtiles` file, or a
/// file of another name recognised by its first bytes.
public func openTileSource(at url: URL) throws(TileSourceError) -> any TileSource {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
        throw .missingFile(path: url.path)
    }
    if isDirectory.boolValue { return try FolderTileSource(url: url) }
    switch url.pathExtension.lowercased() {
    case "pmtiles": return try PMTilesSource(url: url)
    case "mbtiles": return try MBTilesSource(url: url)
    default: break
    }
    let magic: Data
    do {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        magic = try handle.read(upToCount: 16) ?? Data()
    } catch {
        throw .unreadable(path: url.path, reason: error.localizedDescription)
    }
    if magic.starts(with: Array("PMTiles".utf8)) { return try PMTilesSource(url: url) }
    if magic.starts(with: Array("SQLite format 3\0".utf8)) { return try MBTilesSource(url: url) }
    throw .unknownFormat(path: url.path)
}

/// Tile stores hold tiles raw or gzip compressed, often without saying which, so every source
/// checks the magic bytes of each tile. Inflating stops at the most bytes a tile may have, so a
/// decompression bomb costs no more than a large tile.
func inflateIfNeeded(_ data: Data, tile: TileID) throws(TileSourceError) -> Data {
    guard Gzip.isCompressed(data) else { return data }
    do {
        return try Gzip.decompress(data, limit: VectorTileLimits.standard.maximumBytes)
    } catch {
        throw .corruptTile(tile, error.description)
    }
}

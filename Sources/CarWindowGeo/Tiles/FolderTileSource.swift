import Foundation
import Logging

/// A folder of tile files laid out as `z/x/y.pbf` (or `.mvt`), raw or gzip compressed, as
/// tilemaker and `pmtiles extract` write them, with an optional TileJSON `metadata.json`.
public final class FolderTileSource: TileSource {
    /// The metadata's name, or the folder's file name.
    public let name: String
    /// The metadata.json's `attribution`, if any.
    public let attribution: String?
    /// The lowest zoom level the folder declares.
    public let minZoom: Int
    /// The highest zoom level the folder declares.
    public let maxZoom: Int
    /// The covered area the folder declares, if any.
    public let bounds: GeoBounds?

    private let root: URL
    /// TileJSON allows "tms" row numbering; such folders are flipped on read.
    private let flipsRows: Bool

    /// Larger tile files are refused rather than read, so a stray huge file cannot exhaust memory.
    static let maxTileFileSize = VectorTileLimits.standard.maximumBytes
    private static let logger = Logger(label: "carwindow.tiles")

    /// The TileJSON fields this source uses; every one is optional.
    private struct TileJSON: Decodable {
        var name: String?
        var minzoom: Int?
        var maxzoom: Int?
        var bounds: [Double]?
        var scheme: String?
        var attribution: String?
    }

    /// Opens the folder at `url`. Without usable metadata the zoom range is taken from the numeric
    /// sub-folder names.
    public init(url: URL) throws(TileSourceError) {
        root = url
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .missingFile(path: path)
        }
        guard isDirectory.boolValue else { throw .unreadable(path: path, reason: "not a folder") }
        let zoomFolders: [Int]
        do {
            zoomFolders = try FileManager.default.contentsOfDirectory(atPath: path).compactMap { entry in
                guard let zoom = Int(entry), (0...30).contains(zoom), String(zoom) == entry else { return nil }
                var entryIsDirectory: ObjCBool = false
                let exists = FileManager.default.fileExists(atPath: url.appendingPathComponent(entry).path,
                                                            isDirectory: &entryIsDirectory)
                return exists && entryIsDirectory.boolValue ? zoom : nil
            }
        } catch {
            throw .unreadable(path: path, reason: error.localizedDescription)
        }
        guard let lowest = zoomFolders.min(), let highest = zoomFolders.max() else {
            throw .emptySource(path: path)
        }
        let metadata = Self.readMetadata(url.appendingPathComponent("metadata.json"))
        let declaredMin = metadata?.minzoom.flatMap { (0...30).contains($0) ? $0 : nil }
        let declaredMax = metadata?.maxzoom.flatMap { (0...30).contains($0) ? $0 : nil }
        if let declaredMin, let declaredMax, declaredMin <= declaredMax {
            minZoom = declaredMin
            maxZoom = declaredMax
        } else {
            minZoom = lowest
            maxZoom = highest
        }
        if let box = metadata?.bounds, box.count == 4 {
            bounds = GeoBounds(southWest: GeoCoordinate(latitude: box[1], longitude: box[0]),
                               northEast: GeoCoordinate(latitude: box[3], longitude: box[2]))
        } else {
            bounds = nil
        }
        name = metadata?.name ?? url.lastPathComponent
        attribution = metadata?.attribution
        flipsRows = metadata?.scheme?.lowercased() == "tms"
    }

    /// The parsed metadata.json, or nil when it is absent or broken (logged: the tiles still work).
    private static func readMetadata(_ url: URL) -> TileJSON? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try JSONDecoder().decode(TileJSON.self, from: Data(contentsOf: url))
        } catch {
            logger.warning("Ignoring unreadable \(url.path): \(error)")
            return nil
        }
    }

    /// The uncompressed tile bytes, or nil when the folder has no such tile.
    public func data(for tile: TileID) throws(TileSourceError) -> Data? {
        guard tile.isValid else { return nil }
        let row = flipsRows ? (1 << tile.z) - 1 - tile.y : tile.y
        let column = root.appendingPathComponent(String(tile.z)).appendingPathComponent(String(tile.x))
        for fileExtension in ["pbf", "mvt"] {
            let file = column.appendingPathComponent("\(row).\(fileExtension)")
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path) else { continue }
            if let size = attributes[.size] as? Int, size > Self.maxTileFileSize {
                throw .corruptTile(tile, "\(file.path) is \(size) bytes, more than the \(Self.maxTileFileSize) a tile may have")
            }
            let bytes: Data
            do {
                bytes = try Data(contentsOf: file)
            } catch {
                throw .unreadable(path: file.path, reason: error.localizedDescription)
            }
            return try inflateIfNeeded(bytes, tile: tile)
        }
        return nil
    }
}

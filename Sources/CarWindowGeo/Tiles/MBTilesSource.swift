internal import CSQLite
import Foundation
import CarWindowSystemSupport

/// An MBTiles 1.3 database (https://github.com/mapbox/mbtiles-spec), opened read-only.
///
/// One SQLite connection and one prepared statement serve every lookup; the mutex makes that
/// safe from any thread, and tile reads are short enough that contention does not matter.
public final class MBTilesSource: TileSource {
    /// The metadata's name, or the database's file name.
    public let name: String
    /// The metadata table's `attribution`, if any.
    public let attribution: String?
    /// The lowest zoom level the database declares.
    public let minZoom: Int
    /// The highest zoom level the database declares.
    public let maxZoom: Int
    /// The covered area the database declares, if any.
    public let bounds: GeoBounds?

    private let path: String
    private let connection: LockedState<Connection>

    /// Opens the database at `url` and reads its metadata table.
    public init(url: URL) throws(TileSourceError) {
        let path = url.path
        self.path = path
        guard FileManager.default.fileExists(atPath: path) else { throw .missingFile(path: path) }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw .unreadable(path: path, reason: "permission denied")
        }
        var connection = try Connection(path: path)
        let metadata: [String: String], zoomRange: ClosedRange<Int>
        do throws(TileSourceError) {
            // The first statement is where SQLite notices that a file is not a database at all.
            metadata = try connection.metadata()
            guard let range = try connection.zoomRange() else { throw .emptySource(path: path) }
            zoomRange = range
            try connection.prepareTileQuery()
        } catch {
            // Nothing owns the handle yet: a refused file must not keep it open.
            connection.close()
            throw error
        }

        minZoom = metadata["minzoom"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? zoomRange.lowerBound
        maxZoom = metadata["maxzoom"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? zoomRange.upperBound
        bounds = metadata["bounds"].flatMap(Self.parseBounds)
        name = metadata["name"] ?? url.deletingPathExtension().lastPathComponent
        attribution = metadata["attribution"]
        self.connection = LockedState(connection)
    }

    deinit {
        connection.withLock { $0.close() }
    }

    /// The uncompressed tile bytes, or nil when the database has no such tile.
    public func data(for tile: TileID) throws(TileSourceError) -> Data? {
        guard tile.isValid else { return nil }
        // MBTiles numbers rows from the south (TMS).
        let row = (1 << tile.z) - 1 - tile.y
        let path = self.path
        let stored = try connection.withLock { (connection) throws(TileSourceError) -> Data? in
            try connection.tileData(z: tile.z, column: tile.x, row: row, path: path)
        }
        guard let stored else { return nil }
        return try inflateIfNeeded(stored, tile: tile)
    }

    /// "west,south,east,north" in degrees, as the MBTiles metadata writes bounds.
    static func parseBounds(_ text: String) -> GeoBounds? {
        let numbers = text.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard numbers.count == 4 else { return nil }
        return GeoBounds(southWest: GeoCoordinate(latitude: numbers[1], longitude: numbers[0]),
                         northEast: GeoCoordinate(latitude: numbers[3], longitude: numbers[2]))
    }
}

/// The SQLite handles, only ever touched under the source's mutex.
private struct Connection {
    private var database: OpaquePointer?
    private var tileQuery: OpaquePointer?
    private let path: String

    init(path: String) throws(TileSourceError) {
        self.path = path
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close(handle)
            throw .sqlite(path: path, message: message)
        }
        database = handle
    }

    mutating func close() {
        sqlite3_finalize(tileQuery)
        sqlite3_close(database)
        tileQuery = nil
        database = nil
    }

    private func error(_ status: Int32) -> TileSourceError {
        let message = database.map { String(cString: sqlite3_errmsg($0)) } ?? "status \(status)"
        if status == SQLITE_NOTADB || status == SQLITE_CORRUPT {
            return .notMBTiles(path: path, reason: message)
        }
        return .sqlite(path: path, message: message)
    }

    private func prepare(_ sql: String) throws(TileSourceError) -> OpaquePointer {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(database, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            var failure = error(status)
            if case .sqlite(_, let message) = failure, message.hasPrefix("no such table") {
                failure = .notMBTiles(path: path, reason: message)
            }
            throw failure
        }
        return statement
    }

    /// The metadata table as name/value pairs; MBTiles files without one are tolerated.
    func metadata() throws(TileSourceError) -> [String: String] {
        let statement: OpaquePointer
        do {
            statement = try prepare("SELECT name, value FROM metadata")
        } catch .notMBTiles(_, let reason) where reason.hasPrefix("no such table") {
            return [:]
        }
        defer { sqlite3_finalize(statement) }
        var result: [String: String] = [:]
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw error(status) }
            if let name = sqlite3_column_text(statement, 0), let value = sqlite3_column_text(statement, 1) {
                result[String(cString: name)] = String(cString: value)
            }
        }
        return result
    }

    /// The zoom levels present in the tiles table, or nil when it is empty.
    func zoomRange() throws(TileSourceError) -> ClosedRange<Int>? {
        let statement = try prepare("SELECT MIN(zoom_level), MAX(zoom_level) FROM tiles")
        defer { sqlite3_finalize(statement) }
        let status = sqlite3_step(statement)
        guard status == SQLITE_ROW else { throw error(status) }
        guard sqlite3_column_type(statement, 0) != SQLITE_NULL else { return nil }
        let low = Int(sqlite3_column_int64(statement, 0)), high = Int(sqlite3_column_int64(statement, 1))
        return low <= high ? low...high : nil
    }

    mutating func prepareTileQuery() throws(TileSourceError) {
        tileQuery = try prepare(
            "SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?")
    }

    func tileData(z: Int, column: Int, row: Int, path: String) throws(TileSourceError) -> Data? {
        guard let tileQuery else { throw .sqlite(path: path, message: "the database is closed") }
        defer {
            sqlite3_reset(tileQuery)
            sqlite3_clear_bindings(tileQuery)
        }
        sqlite3_bind_int64(tileQuery, 1, Int64(z))
        sqlite3_bind_int64(tileQuery, 2, Int64(column))
        sqlite3_bind_int64(tileQuery, 3, Int64(row))
        let status = sqlite3_step(tileQuery)
        if status == SQLITE_DONE { return nil }
        guard status == SQLITE_ROW else { throw error(status) }
        let count = Int(sqlite3_column_bytes(tileQuery, 0))
        let limit = VectorTileLimits.standard.maximumBytes
        guard count <= limit else {
            throw .corruptTile(TileID(z: z, x: column, y: (1 << z) - 1 - row), "stored tile is \(count) bytes, more than the \(limit) a tile may have")
        }
        guard count > 0, let blob = sqlite3_column_blob(tileQuery, 0) else { return Data() }
        return Data(bytes: blob, count: count)
    }
}

import Foundation
import Logging
import CarWindowSystemSupport

/// Answers of tile servers kept on disk between runs, one file per URL (and byte range), so a
/// car that drove a road before draws it without the network, and a restart costs no
/// downloads. Entries carry the server's validators (`ETag`, `Last-Modified`) and how long they
/// are fresh; the least recently written go first when the cache passes its size.
///
/// Files are written under a temporary name and renamed, so a crash never leaves half an
/// entry; an entry that cannot be read is treated as missing.
///
/// - Important: Thread-safe: several fetchers and processes may share one folder.
public final class HTTPDiskCache: Sendable {
    /// The folder of the entries.
    public let directory: URL
    /// Bytes the entries may take together; the oldest are removed beyond it.
    public let maximumBytes: Int
    /// Bytes written since the folder's size was last checked; a check walks the folder, so it
    /// runs once per a twentieth of the size written.
    private let writtenSinceTrim = LockedState(0)
    private static let logger = Logger(label: "carwindow.http")
    /// Format of the entry files; a different one is ignored.
    private static let magic = Array("CWHC1\n".utf8)

    /// `$XDG_CACHE_HOME/carwindow/http`, else `~/.cache/carwindow/http`.
    public static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return base.appendingPathComponent("carwindow/http", isDirectory: true)
    }

    /// A cache in `directory` (made if missing) of at most `maximumBytes`.
    ///
    /// - Throws: ``HTTPCacheError`` when the folder cannot be made or written.
    public init(directory: URL = HTTPDiskCache.defaultDirectory, maximumBytes: Int = 512 << 20) throws(HTTPCacheError) {
        self.directory = directory
        self.maximumBytes = max(maximumBytes, 1 << 20)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .unusableFolder(path: directory.path, reason: error.localizedDescription)
        }
        guard FileManager.default.isWritableFile(atPath: directory.path) else {
            throw .unusableFolder(path: directory.path, reason: "it is not writable")
        }
    }

    /// The entry name of `url` and `range`.
    static func key(url: URL, range: Range<UInt64>?) -> String {
        url.absoluteString + (range.map { "#bytes=\($0.lowerBound)-\($0.upperBound)" } ?? "")
    }

    /// A file name for `key`: two 64-bit FNV-1a hashes with different seeds. The key is kept in
    /// the file too, so a collision reads as a miss, never as another URL's answer.
    static func fileName(for key: String) -> String {
        CacheEntryName.of(key, fileExtension: "entry")
    }

    private func file(for key: String) -> URL { directory.appendingPathComponent(Self.fileName(for: key)) }

    /// The stored answer for `key`, or nil when there is none (or it cannot be read).
    func answer(for key: String) -> HTTPAnswer? {
        guard let data = try? Data(contentsOf: file(for: key)), data.count > Self.magic.count + 4,
              data.starts(with: Self.magic) else { return nil }
        var offset = Self.magic.count
        let headerLength = data[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        offset += 4
        guard headerLength > 0, headerLength <= data.count - offset,
              let header = try? JSONSerialization.jsonObject(with: data[offset..<(offset + headerLength)]) as? [String: Any],
              header["key"] as? String == key, let status = header["status"] as? Int,
              let freshUntil = header["freshUntil"] as? Double else { return nil }
        let body = data[(offset + headerLength)...]
        return HTTPAnswer(status: status, body: Data(body), etag: header["etag"] as? String,
                          lastModified: header["lastModified"] as? String,
                          totalSize: (header["totalSize"] as? NSNumber)?.uint64Value, freshUntil: freshUntil)
    }

    /// Keeps `answer` for `key`, replacing what was there; a failure to write is logged and
    /// costs only a later download.
    func store(_ answer: HTTPAnswer, for key: String) {
        var header: [String: Any] = ["key": key, "status": answer.status, "freshUntil": answer.freshUntil]
        if let etag = answer.etag { header["etag"] = etag }
        if let lastModified = answer.lastModified { header["lastModified"] = lastModified }
        if let totalSize = answer.totalSize { header["totalSize"] = NSNumber(value: totalSize) }
        guard let headerData = try? JSONSerialization.data(withJSONObject: header) else { return }
        var data = Data(Self.magic)
        let length = headerData.count
        data.append(contentsOf: [UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
        data.append(headerData)
        data.append(answer.body)
        let target = file(for: key)
        let temporary = directory.appendingPathComponent(".\(UUID().uuidString).tmp")
        do {
            try data.write(to: temporary)
            if rename(temporary.path, target.path) != 0 { throw HTTPCacheError.unusableFolder(path: target.path, reason: "rename failed") }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            Self.logger.warning("cannot keep \(key) in the cache at \(directory.path): \(error)")
            return
        }
        let due = writtenSinceTrim.withLock { written -> Bool in
            written += data.count
            guard written >= maximumBytes / 20 else { return false }
            written = 0
            return true
        }
        if due { trim() }
    }

    /// Removes the least recently written entries until the rest fit in ``maximumBytes``.
    public func trim() {
        let keys: [URLResourceKey] = [.contentModificationDateKey, .fileSizeKey]
        guard let files = try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys) else { return }
        var entries: [(url: URL, date: Date, size: Int)] = []
        var total = 0
        for file in files where file.pathExtension == "entry" {
            guard let values = try? file.resourceValues(forKeys: Set(keys)) else { continue }
            let size = values.fileSize ?? 0
            entries.append((file, values.contentModificationDate ?? .distantPast, size))
            total += size
        }
        guard total > maximumBytes else { return }
        for entry in entries.sorted(by: { $0.date < $1.date }) {
            try? FileManager.default.removeItem(at: entry.url)
            total -= entry.size
            if total <= maximumBytes * 9 / 10 { break }
        }
    }

    /// Bytes the entries take now.
    public var usedBytes: Int {
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.fileSizeKey])) ?? []
        return files.filter { $0.pathExtension == "entry" }
            .reduce(0) { $0 + ((try? $1.resourceValues(forKeys: [.fileSizeKey]))?.fileSize ?? 0) }
    }
}

/// Why a disk cache cannot be used.
public enum HTTPCacheError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The folder cannot be made, or written.
    case unusableFolder(path: String, reason: String)

    public var description: String {
        switch self {
        case .unusableFolder(let path, let reason):
            "the tile cache folder \(path) cannot be used: \(reason); give another folder or fix its permissions"
        }
    }
}

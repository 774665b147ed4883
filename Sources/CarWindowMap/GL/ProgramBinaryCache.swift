import Foundation
import Logging
internal import CGLES
import CarWindowSystemSupport

/// Linked GL programs kept on disk between processes, as the driver's own program binaries, so a
/// second start skips compiling and linking its shaders (on NVIDIA's driver the first picture
/// otherwise waits 150-250 ms for them).
///
/// An entry belongs to one driver (GL vendor, renderer and version) and one program (its shader
/// sources, defines and attribute names): the whole of that is the entry's key and is stored in
/// the entry, so another driver, an edited shader or a name collision reads as a miss. A payload
/// whose checksum does not match is never handed to the driver, and one the driver refuses is
/// compiled again and replaced: a stale or corrupt entry costs one compile, never a wrong program.
///
/// Entries are written under a temporary name and renamed, so processes may share the folder
/// and a crash never leaves half an entry. The oldest entries go when the folder passes
/// ``maximumBytes``.
///
/// - Important: Thread-safe.
public final class ProgramBinaryCache: Sendable {
    /// The folder of the entries.
    public let directory: URL
    /// Bytes the entries may take together; the oldest are removed beyond it.
    public let maximumBytes: Int
    private let counts = LockedState(ProgramBinaryCounts())
    private static let logger = Logger(label: "carwindow.gl")
    /// Format of the entry files; another one is ignored.
    private static let magic = Array("CWPB1\n".utf8)
    /// No program binary is larger: bigger ones are neither stored nor read.
    static let largestPayload = 64 << 20

    /// `$XDG_CACHE_HOME/carwindow/programs`, else `~/.cache/carwindow/programs`.
    public static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return base.appendingPathComponent("carwindow/programs", isDirectory: true)
    }

    /// The cache a ``RenderContext`` uses unless told otherwise: none when the environment's
    /// `CARWINDOW_PROGRAM_CACHE` is `off`, the folder it names when it names one, else
    /// ``defaultDirectory``. Nil, with a warning, when that folder cannot be used.
    public static var standard: ProgramBinaryCache? {
        let setting = ProcessInfo.processInfo.environment["CARWINDOW_PROGRAM_CACHE"] ?? ""
        if setting == "off" { return nil }
        let directory = setting.isEmpty ? defaultDirectory : URL(fileURLWithPath: setting, isDirectory: true)
        do {
            return try ProgramBinaryCache(directory: directory)
        } catch {
            logger.warning("GL programs are compiled at every start: \(error)")
            return nil
        }
    }

    /// A cache in `directory` (made if missing) of at most `maximumBytes`.
    ///
    /// - Throws: ``ProgramCacheError`` when the folder cannot be made or written.
    public init(directory: URL = ProgramBinaryCache.defaultDirectory, maximumBytes: Int = 64 << 20) throws(ProgramCacheError) {
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

    /// Programs linked from an entry, compiled for want of one, and entries refused (bad
    /// checksum, or the driver would not take them), since the cache was made.
    package var statistics: ProgramBinaryCounts { counts.withLock { $0 } }

    /// The stored binary for `key`; nil when there is none or it cannot be trusted.
    func binary(for key: String) -> ProgramBinary? {
        let file = file(for: key)
        // A file larger than any entry is not read at all: the folder is not trusted to be sane.
        guard let size = (try? file.resourceValues(forKeys: [.fileSizeKey]))?.fileSize,
              size <= Self.largestPayload + key.utf8.count + 64,
              let data = try? Data(contentsOf: file) else { return nil }
        // Nil when it is not this key's (a collision) or damaged; a damaged one is replaced
        // once the program has been compiled.
        return Self.decode(data, key: key)
    }

    /// Records what became of one program.
    func count(_ outcome: ProgramBinaryCounts.Outcome) {
        counts.withLock { $0.record(outcome) }
    }

    /// Stores `binary` for `key`, replacing any entry; failures are logged and cost only the
    /// next start's compile.
    func store(_ binary: ProgramBinary, for key: String) {
        let data = Self.encode(binary, key: key)
        let file = file(for: key)
        let temporary = directory.appendingPathComponent(".\(file.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).\(UInt64.random(in: 0...UInt64.max))")
        do {
            try data.write(to: temporary)
            if rename(temporary.path, file.path) != 0 {
                throw ProgramCacheError.unusableFolder(path: directory.path, reason: String(cString: strerror(errno)))
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            Self.logger.warning("a GL program binary was not stored in \(directory.path): \(error)")
            return
        }
        trimIfNeeded()
    }

    /// Removes the oldest entries while the folder holds more than ``maximumBytes``.
    private func trimIfNeeded() {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        guard let names = try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys)
        else { return }
        var entries = names.filter { $0.pathExtension == "program" }.compactMap { url -> (URL, Int, Date)? in
            guard let values = try? url.resourceValues(forKeys: Set(keys)) else { return nil }
            return (url, values.fileSize ?? 0, values.contentModificationDate ?? .distantPast)
        }
        var total = entries.reduce(0) { $0 + $1.1 }
        guard total > maximumBytes else { return }
        entries.sort { $0.2 < $1.2 }
        for (url, size, _) in entries where total > maximumBytes {
            try? FileManager.default.removeItem(at: url)
            total -= size
        }
    }

    private func file(for key: String) -> URL {
        directory.appendingPathComponent(Self.fileName(for: key))
    }

    /// The entry file of `key` (see `CacheEntryName`).
    static func fileName(for key: String) -> String {
        CacheEntryName.of(key, fileExtension: "program")
    }

    /// FNV-1a over the payload: finds a damaged file before the driver sees it.
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    // Layout: magic, key length (4 bytes), key, format (4), payload checksum (8), payload
    // length (4), payload; integers big-endian.
    static func encode(_ binary: ProgramBinary, key: String) -> Data {
        var data = Data(magic)
        let keyBytes = Array(key.utf8)
        append(UInt64(keyBytes.count), bytes: 4, to: &data)
        data.append(contentsOf: keyBytes)
        append(UInt64(binary.format), bytes: 4, to: &data)
        append(checksum(binary.payload), bytes: 8, to: &data)
        append(UInt64(binary.payload.count), bytes: 4, to: &data)
        data.append(contentsOf: binary.payload)
        return data
    }

    static func decode(_ data: Data, key: String) -> ProgramBinary? {
        let bytes = [UInt8](data)
        var offset = 0
        func read(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }
        func integer(_ count: Int) -> UInt64? {
            read(count).map { $0.reduce(0) { $0 << 8 | UInt64($1) } }
        }
        guard read(magic.count).map(Array.init) == magic,
              let keyLength = integer(4), let storedKey = read(Int(keyLength)), Array(storedKey) == Array(key.utf8),
              let format = integer(4), let sum = integer(8), let length = integer(4),
              let payload = read(Int(length)), offset == bytes.count, !payload.isEmpty,
              checksum(payload) == sum else { return nil }
        return ProgramBinary(format: UInt32(format), payload: Array(payload))
    }

    private static func append(_ value: UInt64, bytes count: Int, to data: inout Data) {
        for shift in stride(from: (count - 1) * 8, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// A linked program as the driver hands it out (`glGetProgramBinary`).
struct ProgramBinary: Equatable {
    var format: UInt32
    var payload: [UInt8]
}

/// What a ``ProgramBinaryCache`` did with the programs made since it was made.
package struct ProgramBinaryCounts: Sendable, Equatable, CustomStringConvertible {
    /// Programs linked from a stored binary.
    package var loaded = 0
    /// Programs compiled for want of a usable entry.
    package var compiled = 0
    /// Entries the driver would not take (another driver build, say); compiled and replaced.
    package var refused = 0

    enum Outcome { case loaded, compiled, refused }

    mutating func record(_ outcome: Outcome) {
        switch outcome {
        case .loaded: loaded += 1
        case .compiled: compiled += 1
        case .refused: refused += 1
        }
    }

    package var description: String { "\(loaded) programs loaded, \(compiled) compiled, \(refused) entries refused" }
}

/// Why a program binary cache cannot be used.
public enum ProgramCacheError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The folder cannot be made or written.
    case unusableFolder(path: String, reason: String)

    public var description: String {
        switch self {
        case .unusableFolder(let path, let reason):
            "the GL program cache folder \(path) cannot be used (\(reason)); give a writable folder, or set "
                + "CARWINDOW_PROGRAM_CACHE=off to compile the shaders at every start"
        }
    }
}

/// A program cache bound to the driver of one context: what ``GLProgram`` asks on the render
/// thread.
struct ProgramBinaries: Sendable {
    let cache: ProgramBinaryCache
    /// The driver's vendor, renderer and version: entries of another driver are misses.
    let driver: String

    /// The key of the program made of these shader texts and attribute names.
    func key(vertex: String, fragment: String, attributes: [String]) -> String {
        driver + "\n" + attributes.joined(separator: ",") + "\n" + vertex + "\n\u{0}\n" + fragment
    }
}

extension GLProgram {
    /// Links `program` from the binary stored for `key`; false when there is none or the
    /// driver refuses it (the program is then as new, for compiling).
    static func link(_ program: GLuint, from binaries: ProgramBinaries, key: String) -> Bool {
        guard let binary = binaries.cache.binary(for: key) else { return false }
        binary.payload.withUnsafeBytes { bytes in
            glProgramBinary(program, GLenum(binary.format), bytes.baseAddress, GLsizei(bytes.count))
        }
        var linked: GLint = 0
        glGetProgramiv(program, GLenum(GL_LINK_STATUS), &linked)
        guard linked == GL_TRUE else {
            binaries.cache.count(.refused)
            return false
        }
        binaries.cache.count(.loaded)
        return true
    }

    /// Stores the linked `program`'s binary for `key`, when the driver gives one.
    static func store(_ program: GLuint, in binaries: ProgramBinaries, key: String) {
        binaries.cache.count(.compiled)
        var length: GLint = 0
        glGetProgramiv(program, GLenum(GL_PROGRAM_BINARY_LENGTH), &length)
        guard length > 0, Int(length) <= ProgramBinaryCache.largestPayload else { return }
        var payload = [UInt8](repeating: 0, count: Int(length))
        var written: GLsizei = 0
        var format: GLenum = 0
        payload.withUnsafeMutableBytes { bytes in
            glGetProgramBinary(program, GLsizei(bytes.count), &written, &format, bytes.baseAddress)
        }
        guard written > 0, written <= length else { return }
        binaries.cache.store(ProgramBinary(format: format, payload: Array(payload.prefix(Int(written)))), for: key)
    }
}

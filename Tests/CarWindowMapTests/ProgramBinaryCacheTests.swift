import Foundation
import Testing
@testable import CarWindowGeo
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The program binary cache: a second start links every program from it and draws the same
/// picture; damaged, foreign and refused entries cost a compile and are replaced, never trusted.
@Suite struct ProgramBinaryCacheTests {
    static func emptyFolder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("cw-programs-\(UUID().uuidString)", isDirectory: true)
    }

    static func entries(in folder: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "program" }.sorted { $0.path < $1.path }
    }

    /// A picture and its NV12 readback (which links the converter's programs too) on a context
    /// of its own that uses `cache`.
    static func picture(cache: ProgramBinaryCache?) async throws -> RGBAImage {
        let context = try await RenderContext(programCache: cache)
        let (_, renderer) = try await makeRenderer(camera: Camera(center: helsinki, zoom: 16, pitch: 40), on: context)
        _ = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        _ = try await renderer.readNV12()
        await context.shutdown()
        return image
    }

    @Test func aSecondStartLinksEveryProgramFromTheCacheAndDrawsTheSamePicture() async throws {
        let folder = Self.emptyFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try ProgramBinaryCache(directory: folder)
        let first = try await Self.picture(cache: cache)
        let compiled = cache.statistics.compiled
        #expect(compiled >= 12 && cache.statistics.loaded == 0, "\(cache.statistics)")
        #expect(try Self.entries(in: folder).count == compiled)

        let second = try await Self.picture(cache: cache)
        #expect(cache.statistics == ProgramBinaryCounts(loaded: compiled, compiled: compiled, refused: 0))
        #expect(second == first, "programs from binaries draw the same bytes")
        #expect(try await Self.picture(cache: nil) == first, "and the same as programs compiled without a cache")
    }

    @Test func damagedEntriesAreCompiledAgainAndReplaced() async throws {
        let folder = Self.emptyFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = try await Self.picture(cache: try ProgramBinaryCache(directory: folder))
        // A flipped payload byte, a cut file, and nothing but noise.
        for (index, entry) in try Self.entries(in: folder).enumerated() {
            var bytes = [UInt8](try Data(contentsOf: entry))
            switch index % 3 {
            case 0: bytes[bytes.count - 1] ^= 0x5A
            case 1: bytes.removeLast(bytes.count / 3)
            default: bytes = (0..<bytes.count).map { UInt8(truncatingIfNeeded: $0 &* 131) }
            }
            try Data(bytes).write(to: entry)
        }
        let cache = try ProgramBinaryCache(directory: folder)
        #expect(try await Self.picture(cache: cache) == reference)
        #expect(cache.statistics.loaded == 0 && cache.statistics.refused == 0 && cache.statistics.compiled >= 12,
                "a damaged entry never reaches the driver: \(cache.statistics)")

        let repaired = try ProgramBinaryCache(directory: folder)
        #expect(try await Self.picture(cache: repaired) == reference)
        #expect(repaired.statistics.compiled == 0, "the damaged entries were replaced: \(repaired.statistics)")
    }

    /// An entry whose checksum holds but whose payload the driver cannot take (another driver
    /// build wrote it, say) reaches `glProgramBinary`, which refuses it: compiled and replaced.
    @Test func entriesTheDriverRefusesAreCompiledAgain() async throws {
        let folder = Self.emptyFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = try await Self.picture(cache: try ProgramBinaryCache(directory: folder))
        for entry in try Self.entries(in: folder) {
            let data = try Data(contentsOf: entry)
            let bytes = [UInt8](data)
            let keyLength = bytes[6..<10].reduce(0) { $0 << 8 | Int($1) }
            let key = String(decoding: bytes[10..<(10 + keyLength)], as: UTF8.self)
            let stored = try #require(ProgramBinaryCache.decode(data, key: key))
            let foreign = ProgramBinary(format: stored.format,
                                        payload: stored.payload.indices.map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
            try ProgramBinaryCache.encode(foreign, key: key).write(to: entry)
        }
        let cache = try ProgramBinaryCache(directory: folder)
        #expect(try await Self.picture(cache: cache) == reference)
        #expect(cache.statistics.refused >= 12 && cache.statistics.loaded == 0
                && cache.statistics.compiled == cache.statistics.refused, "\(cache.statistics)")
    }

    @Test func entriesRoundTripAndAnythingElseIsAMiss() {
        let binary = ProgramBinary(format: 0x8E21, payload: Array(0..<200).map { UInt8($0) })
        let data = ProgramBinaryCache.encode(binary, key: "driver\nprogram")
        #expect(ProgramBinaryCache.decode(data, key: "driver\nprogram") == binary)
        #expect(ProgramBinaryCache.decode(data, key: "another driver\nprogram") == nil)
        for length in 0..<data.count {
            #expect(ProgramBinaryCache.decode(data.prefix(length), key: "driver\nprogram") == nil, "cut at \(length)")
        }
        #expect(ProgramBinaryCache.decode(data + Data([0]), key: "driver\nprogram") == nil)
        #expect(ProgramBinaryCache.fileName(for: "a") != ProgramBinaryCache.fileName(for: "b"))
    }

    @Test func aFolderThatCannotBeMadeIsATypedError() {
        #expect(throws: ProgramCacheError.self) {
            try ProgramBinaryCache(directory: URL(fileURLWithPath: "/dev/null/programs", isDirectory: true))
        }
        let error = ProgramCacheError.unusableFolder(path: "/x", reason: "it is not writable")
        #expect(error.description.contains("CARWINDOW_PROGRAM_CACHE=off"))
    }
}

import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowStyle
@testable import CarWindowMap

/// Inputs that are no files: a device that never ends and a FIFO nobody writes are refused at
/// once with what they are, where reading them used to run out of memory or block forever and
/// then blame permissions.
@Suite(.timeLimit(.minutes(1))) struct InputFileTests {
    static func fifo() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-fifo-\(UUID().uuidString)")
        try #require(mkfifo(url.path, 0o600) == 0)
        return url
    }

    @Test func devicesAndFIFOsAreRefusedAsNoFiles() throws {
        let fifo = try Self.fifo()
        defer { unlink(fifo.path) }
        for (path, kind) in [("/dev/zero", "a character device"), (fifo.path, "a FIFO"), ("/tmp", "a folder")] {
            #expect(throws: StyleError.unreadable(path: path, reason: "it is \(kind), not a regular file")) {
                try Style(contentsOf: URL(fileURLWithPath: path))
            }
            #expect(throws: GeoJSONError.unreadable(path: path, reason: "it is \(kind), not a regular file")) {
                try GeoJSONData(contentsOf: URL(fileURLWithPath: path))
            }
        }
        #expect(throws: StyleError.unreadable(path: "/nonexistent-carwindow.json", reason: "ENOENT (No such file or directory)")) {
            try Style(contentsOf: URL(fileURLWithPath: "/nonexistent-carwindow.json"))
        }
    }

    @Test func aFileIsReadWholeWithinItsLimit() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-input-\(UUID().uuidString)")
        defer { unlink(url.path) }
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: url)
        #expect(try InputFile.read(url.path, limit: 200_000) == bytes)
        #expect(throws: InputFile.Failure(reason: "it has 200000 bytes, more than the 1000 allowed", isNotAFile: false, tooLarge: (200_000, 1000))) {
            try InputFile.read(url.path, limit: 1000)
        }
    }
}

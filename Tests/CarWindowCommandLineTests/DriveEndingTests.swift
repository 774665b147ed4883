import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowSinks
@testable import CarWindowSDLTesting
import CarWindowSDLProtocol
import CarWindowSDL
@testable import CarWindowTestSupport

extension CommandLineTests {
/// Every way a drive can end without streaming says why and exits non-zero; readers that go
/// away and numbers from outside do not kill it.
///
/// Nested in ``CommandLineTests`` so that it runs one test at a time with them: each waits for
/// a child process on a thread of Swift concurrency's small pool, and two suites waiting side by
/// side left no thread for the real-clock session tests running beside them.
@Suite(.timeLimit(.minutes(3)))
struct DriveEndingTests {
    typealias CLI = CommandLineTests

    /// A TCP peer on loopback that plays a broken or hostile head unit.
    final class BrokenHeadUnit: Sendable {
        enum Behaviour: String, Sendable, CustomTestStringConvertible {
            /// Accepts and closes at once.
            case closesAtOnce
            /// Answers with bytes that are no SDL frame.
            case answersGarbage
            /// Accepts and never says a word.
            case staysSilent
            /// Sends a frame header announcing a large payload, then a byte every 100 ms.
            case trickles

            var testDescription: String { rawValue }
        }

        let port: Int
        private let listener: Int32
        private let stopped = LockedState(false)

        init(_ behaviour: Behaviour) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var reuse: Int32 = 1
            setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(listener, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
            self.listener = listener
            let stopped = stopped
            Thread {
                var held: [Int32] = []
                defer { for connection in held { close(connection) } }
                // A few connections at most: the drive makes one.
                for _ in 0..<4 {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else { return }
                    held.append(connection)
                    switch behaviour {
                    case .closesAtOnce:
                        close(held.removeLast())
                    case .answersGarbage:
                        let garbage = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
                        _ = send(connection, garbage, garbage.count, Int32(MSG_NOSIGNAL))
                    case .staysSilent:
                        break
                    case .trickles:
                        // Version 5, single frame, control service, a 60,000-byte payload to come.
                        let header: [UInt8] = [0x51, 0x07, 0x01, 0x00, 0x00, 0x00, 0xEA, 0x60, 0, 0, 0, 1]
                        for (index, byte) in header.enumerated() where !stopped.withLock({ $0 }) {
                            _ = send(connection, [byte], 1, Int32(MSG_NOSIGNAL))
                            if index > 6 { usleep(100_000) }
                        }
                        for _ in 0..<300 where !stopped.withLock({ $0 }) {
                            _ = send(connection, [0x20], 1, Int32(MSG_NOSIGNAL))
                            usleep(100_000)
                        }
                    }
                }
            }.start()
        }

        func stop() {
            stopped.withLock { $0 = true }
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    /// A port nobody listens on: bound and closed again.
    static func closedPort() throws -> Int {
        let unit = try BrokenHeadUnit(.closesAtOnce)
        unit.stop()
        return unit.port
    }

    /// A short drive into the head unit at `port`; its output stays readable until the test ends
    /// (the temporary folder is the system's to clean).
    static func driveIntoHeadUnit(at port: Int, _ more: [String] = []) throws -> CLI.Command {
        let directory = try CLI.temporaryDirectory()
        return try CLI.run(["drive", "--sdl", "127.0.0.1:\(port)", "--speed", "20", "--max-seconds", "5",
                            "--out", directory.appendingPathComponent("drive.h264").path] + more, in: directory)
    }

    /// The drive must say which head unit it could not stream into, on one error line, and exit
    /// 69; it used to exit 0 with "wrote ... (0 bytes)".
    static func expectUnavailable(_ command: CLI.Command, port: Int, mentioning reason: String) {
        #expect(command.exitStatus == 69, "\(command.outcome)")
        let errors = command.stderr.split(separator: "\n").filter { $0.hasPrefix("error: ") }
        #expect(errors.count == 1, "\(command.outcome)")
        #expect(errors.first?.contains("127.0.0.1:\(port)") == true, "\(command.outcome)")
        #expect(command.stderr.lowercased().contains(reason.lowercased()), "\(command.outcome)")
        #expect(!command.stdout.contains("summary:"), "no summary of a drive that never streamed: \(command.outcome)")
    }

    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func aDriveToAPortNobodyListensOnExits69WithTheReason() throws {
        let port = try Self.closedPort()
        let command = try Self.driveIntoHeadUnit(at: port)
        Self.expectUnavailable(command, port: port, mentioning: "refused")
    }

    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"),
          arguments: [BrokenHeadUnit.Behaviour.closesAtOnce, .answersGarbage, .staysSilent, .trickles])
    func aDriveIntoABrokenHeadUnitExits69WithTheReason(_ behaviour: BrokenHeadUnit.Behaviour) throws {
        let headUnit = try BrokenHeadUnit(behaviour)
        defer { headUnit.stop() }
        let command = try Self.driveIntoHeadUnit(at: headUnit.port)
        Self.expectUnavailable(command, port: headUnit.port, mentioning: "never streamed")
    }

    /// `carwindow headunit` with `arguments`, in its own process (so a loaded test process
    /// cannot make it miss the drive's request timeouts), and the port it listens on.
    static func headUnit(_ arguments: [String]) throws -> (CLI.Command, Int) {
        let directory = try CLI.temporaryDirectory()
        let command = try CLI.Command(["headunit", "--port", "0", "--seconds", "60",
                                       "--out", directory.appendingPathComponent("received.h264").path] + arguments, in: directory)
        for _ in 0..<3000 {
            if let line = command.stdout.split(separator: "\n").first(where: { $0.hasPrefix("head unit listening on 127.0.0.1:") }),
               let port = line.split(separator: ":").last?.split(separator: " ").first.flatMap({ Int($0) }) {
                return (command, port)
            }
            guard command.process.isRunning else { break }
            usleep(20_000)
        }
        kill(command.process.processIdentifier, SIGKILL)
        throw POSIXError(.ETIMEDOUT)
    }

    /// A head unit that refuses the app's registration, or offers a screen no stream fits
    /// (1x1, which encodes as 0x0, and 8192x8192): the reason at once, exit 69, not a 30 s wait.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"),
          arguments: [["--refuse-registration", "DISALLOWED"], ["--size", "1x1"], ["--size", "8192x8192"]])
    func aDriveIntoAHeadUnitThatCannotTakeItExits69WithTheReason(_ arguments: [String]) throws {
        let (headUnit, port) = try Self.headUnit(arguments)
        defer {
            kill(headUnit.process.processIdentifier, SIGTERM)
            _ = headUnit.wait(seconds: 30)
        }
        let command = try Self.driveIntoHeadUnit(at: port)
        Self.expectUnavailable(command, port: port, mentioning: arguments[0] == "--size" ? "cannot stream" : "DISALLOWED")
    }

    /// `carwindow drive | head -1`: the reader leaves after the first line; the drive goes on,
    /// finishes both recordings (the MP4 with its index) and exits 0 instead of dying of SIGPIPE.
    @Test(.enabled(if: CLI.tools, "needs the built carwindow and ffmpeg"))
    func aReaderThatGoesAwayLosesNoRecording() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let annexB = directory.appendingPathComponent("piped.h264"), mp4 = directory.appendingPathComponent("piped.mp4")
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["drive", "--out", annexB.path, "--speed", "20", "--max-seconds", "3"]
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read the first line, then close the reading end, as `head -1` does.
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")), let byte = try pipe.fileHandleForReading.read(upToCount: 1), !byte.isEmpty {
            first.append(byte)
        }
        try pipe.fileHandleForReading.close()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "ended by \(process.terminationReason == .exit ? "exit" : "signal") \(process.terminationStatus)")
        #expect(CLI.fileSize(annexB) > 0, "the Annex-B recording is empty")
        #expect(try MP4Checks.probedFrames(mp4).count > 0)
        let errors = try MP4Checks.decodeErrors(mp4)
        #expect(errors.isEmpty, "ffmpeg on the MP4: \(errors)")
        #expect(try CLI.decodedFrames(annexB: annexB) == MP4Checks.probedFrames(mp4).count, "both files hold the same pictures")
    }

    /// Small ones: sizes in the documented range that give no stream are refused as a usage
    /// error naming the option (once), a route whose points all coincide is malformed input (65),
    /// and a broadcast RTP address is refused with a reason about the network, not files.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func aScreenTooSmallToStreamIsABadOption() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try CLI.run(["drive", "--size", "1x1", "--out", directory.appendingPathComponent("x.h264").path], in: directory)
        #expect(command.exitStatus == 64, "\(command.outcome)")
        #expect(command.stderr.contains("--size 1x1"), "\(command.outcome)")
        #expect(!command.stderr.contains("head unit"), "\(command.outcome)")
        #expect(command.stderr.components(separatedBy: "--size 1x1").count == 2, "said once: \(command.outcome)")
    }

    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func aRouteOfOnePointIsMalformedInput() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let route = directory.appendingPathComponent("route.geojson")
        try Data(#"{"type":"LineString","coordinates":[[24.95,60.17],[24.950000000000001,60.170000000000001],[24.9500000000001,60.17]]}"#.utf8)
            .write(to: route)
        let command = try CLI.run(["drive", "--route", route.path, "--out", directory.appendingPathComponent("x.h264").path],
                                  in: directory)
        #expect(command.exitStatus == 65, "\(command.outcome)")
        #expect(command.stderr.split(separator: "\n").count == 1, "one line: \(command.outcome)")
    }

    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func aBroadcastRTPAddressIsRefusedWithANetworkReason() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try CLI.run(["drive", "--rtp", "255.255.255.255:5004", "--max-seconds", "1",
                                   "--out", directory.appendingPathComponent("x.h264").path], in: directory)
        #expect(command.exitStatus == 69, "\(command.outcome)")
        #expect(command.stderr.contains("255.255.255.255"), "\(command.outcome)")
        #expect(!command.stderr.contains("check the path"), "\(command.outcome)")
    }

    /// Inputs that are not files (a character device, a FIFO that nobody writes) are refused
    /// before anything reads them, with status 66, instead of hanging or blaming permissions.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"), arguments: ["--route", "--style", "--tiles"])
    func inputsThatAreNotFilesAreRefused(_ option: String) throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for input in ["/dev/zero", fifo.path] {
            let arguments = option == "--style"
                ? ["render", "--style", input, "--out", directory.appendingPathComponent("x.png").path]
                : option == "--tiles" ? ["render", "--tiles", input, "--out", directory.appendingPathComponent("x.png").path]
                : ["drive", option, input, "--out", directory.appendingPathComponent("x.h264").path]
            let command = try CLI.run(arguments, in: directory)
            #expect(command.exitStatus == 66, "\(command.outcome)")
            #expect(command.stderr.contains("\(option) \(input)") && command.stderr.contains("not a regular file"), "\(command.outcome)")
            #expect(!command.stderr.contains("permission"), "\(command.outcome)")
        }
    }
}
}

import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowSinks
@testable import CarWindowTestSupport

/// The `carwindow` command as a user runs it: the built executable (next to the test bundle)
/// in a child process, real signals, a real file size limit, `/dev/full`, and ffmpeg reading
/// what it wrote. Drives are short (--max-seconds, a high --speed).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandLineTests {
    /// The built `carwindow`, beside the test bundle in the build folder.
    static let executable: URL = {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var folder = testBinary.deletingLastPathComponent()
        // Inside an .xctest bundle folder on some layouts.
        while folder.path != "/", !FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("carwindow").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("carwindow")
    }()

    static let isAvailable = FileManager.default.isExecutableFile(atPath: executable.path)

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A running `carwindow`, its output in files.
    final class Command {
        let process = Process()
        let stdoutFile: URL
        let stderrFile: URL

        /// Starts `carwindow arguments` in `directory`; `shellPrefix` runs it through
        /// `/bin/sh -c` (for `ulimit`).
        init(_ arguments: [String], in directory: URL, shellPrefix: String? = nil) throws {
            stdoutFile = directory.appendingPathComponent("stdout-\(UUID().uuidString).txt")
            stderrFile = directory.appendingPathComponent("stderr-\(UUID().uuidString).txt")
            _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
            _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
            if let shellPrefix {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "\(shellPrefix); exec \"$0\" \"$@\"", CommandLineTests.executable.path] + arguments
            } else {
                process.executableURL = CommandLineTests.executable
                process.arguments = arguments
            }
            process.currentDirectoryURL = directory
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
            process.standardError = try FileHandle(forWritingTo: stderrFile)
            try process.run()
        }

        /// Waits up to `seconds` for the end; false (and the process killed) if it still runs.
        func wait(seconds: Double = 120) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning, Date() < deadline { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return false
            }
            process.waitUntilExit()
            return true
        }

        /// The exit status, or nil when a signal killed it.
        var exitStatus: Int32? { process.terminationReason == .exit ? process.terminationStatus : nil }
        var stdout: String { String(decoding: (try? Data(contentsOf: stdoutFile)) ?? Data(), as: UTF8.self) }
        var stderr: String { String(decoding: (try? Data(contentsOf: stderrFile)) ?? Data(), as: UTF8.self) }
        var outcome: String {
            let ending = exitStatus.map { "exit \($0)" } ?? "killed by signal \(process.terminationStatus)"
            return "\(ending)\n--- stdout\n\(stdout.suffix(3000))\n--- stderr\n\(stderr.suffix(3000))"
        }
    }

    /// `carwindow drive --sdl` into `carwindow headunit`: the refused size is walked to the
    /// next mode, the head unit's key moves the map, the drive chimes before its turns and what
    /// the head unit received decodes at the walked size.
    @Test(.enabled(if: tools, "needs the built carwindow and ffmpeg"))
    func aDriveIntoTheHeadUnitWalksARefusedSizeAndTakesItsKeys() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let received = directory.appendingPathComponent("received.h264")
        let headUnit = try Command(["headunit", "--port", "0", "--out", received.path, "--nak", "800x480",
                                    "--also", "480x320", "--press", "NAV_ZOOM_IN@1", "--tap-after", "0", "--seconds", "90"],
                                   in: directory)
        var port: Int?
        for _ in 0..<500 where port == nil {
            if let line = headUnit.stdout.split(separator: "\n").first(where: { $0.hasPrefix("head unit listening on 127.0.0.1:") }),
               let number = line.split(separator: ":").last?.split(separator: " ").first.flatMap({ Int($0) }) {
                port = number
            } else {
                usleep(20_000)
            }
        }
        let listening = try #require(port, "the head unit did not say its port: \(headUnit.outcome)")
        let drive = try Self.run(["drive", "--sdl", "127.0.0.1:\(listening)", "--follow", "--speed", "8", "--max-seconds", "8",
                                  "--out", directory.appendingPathComponent("drive.h264").path], in: directory)
        #expect(drive.exitStatus == 0, "\(drive.outcome)")
        #expect(drive.stdout.contains("the head unit resized the stream to 480x320"), "\(drive.outcome)")
        #expect(drive.stdout.contains("map command: zoomIn"), "\(drive.outcome)")
        let prompts = drive.stdout.split(separator: "\n").first { $0.hasPrefix("voice prompts:") }
        #expect(prompts != nil, "\(drive.outcome)")
        print("drive into the head unit: \(prompts ?? "no prompt line")")
        #expect(headUnit.wait(), "the head unit ends when the app leaves")
        #expect(headUnit.exitStatus == 0 && headUnit.stdout.contains("pressed NAV_ZOOM_IN"), "\(headUnit.outcome)")
        #expect(try Self.annexBDecodeErrors(received) == "")
        let probe = try FFmpegTool.run("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height",
                                                   "-of", "csv=p=0", received.path])
        #expect(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "480,320")
    }

    /// Runs `carwindow arguments` to its end.
    static func run(_ arguments: [String], in directory: URL, shellPrefix: String? = nil) throws -> Command {
        let command = try Command(arguments, in: directory, shellPrefix: shellPrefix)
        #expect(command.wait(), "carwindow \(arguments.joined(separator: " ")) did not end")
        return command
    }

    static func fileSize(_ url: URL) -> Int {
        var status = stat()
        return stat(url.path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// What ffmpeg says at level error when decoding an Annex-B file (empty when clean).
    static func annexBDecodeErrors(_ url: URL) throws -> String {
        let result = try FFmpegTool.run("ffmpeg", ["-hide_banner", "-v", "error", "-f", "h264", "-i", url.path, "-f", "null", "-"])
        return result.status == 0 ? result.stderr : "exit \(result.status): \(result.stderr)"
    }

    static func decodedFrames(annexB url: URL) throws -> Int {
        let result = try FFmpegTool.run("ffprobe", ["-v", "error", "-f", "h264", "-count_frames", "-select_streams", "v:0",
                                                    "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", url.path])
        return Int(String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    static let tools = isAvailable && FFmpegTool.isAvailable

    // MARK: Signals

    /// A signal during a drive stops it in order: the summary is printed, the MP4 gets its
    /// index (ffmpeg decodes every picture), and the status is 128 + the signal's number.
    @Test(.enabled(if: tools, "needs the built carwindow and ffmpeg"), arguments: [SIGINT, SIGTERM, SIGHUP])
    func aSignalDuringADriveFinishesTheFilesAndPrintsTheSummary(_ signal: Int32) throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let annexB = directory.appendingPathComponent("drive.h264"), mp4 = directory.appendingPathComponent("drive.mp4")
        let command = try Command(["drive", "--out", annexB.path, "--speed", "5", "--max-seconds", "120"], in: directory)
        // Streaming has begun once the first pictures are on disk.
        let deadline = Date().addingTimeInterval(90)
        while command.process.isRunning, Self.fileSize(annexB) < 50_000, Date() < deadline { usleep(50_000) }
        try #require(command.process.isRunning && Self.fileSize(annexB) >= 50_000, "the drive did not stream: \(command.outcome)")
        kill(command.process.processIdentifier, signal)
        #expect(command.wait(seconds: 60), "the drive did not stop after the signal")
        #expect(command.exitStatus == 128 + signal, "\(command.outcome)")
        #expect(command.stdout.contains("summary:"), "\(command.outcome)")
        #expect(command.stdout.contains("wrote \(mp4.path)"), "\(command.outcome)")
        let frames = try MP4Checks.probedFrames(mp4).count
        #expect(frames > 0)
        let mp4Errors = try MP4Checks.decodeErrors(mp4)
        #expect(mp4Errors.isEmpty, "ffmpeg on the MP4: \(mp4Errors)")
        #expect(try Self.decodedFrames(annexB: annexB) == frames, "both files hold the same pictures")
    }

    // MARK: Failing outputs

    /// `--out` on a device that is always full: the Annex-B output fails (one error line),
    /// the MP4 beside it records the whole drive, the summary names the failure, and the
    /// status is 74. The progress goes out as plain lines, since stdout is a file.
    @Test(.enabled(if: tools && FileManager.default.isWritableFile(atPath: "/dev/full"), "needs carwindow, ffmpeg, /dev/full"))
    func aDriveIntoAFullDeviceKeepsTheOtherOutputAndExits74() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let full = directory.appendingPathComponent("full.h264")
        try FileManager.default.createSymbolicLink(atPath: full.path, withDestinationPath: "/dev/full")
        let mp4 = directory.appendingPathComponent("full.mp4")
        let command = try Self.run(["drive", "--out", full.path, "--speed", "20", "--max-seconds", "3"], in: directory)
        #expect(command.exitStatus == 74, "\(command.outcome)")
        #expect(command.stdout.contains("FAILED: writing to \(full.path) failed: ENOSPC"), "\(command.outcome)")
        #expect(command.stderr.components(separatedBy: "ENOSPC").count - 1 == 1, "reported once: \(command.outcome)")
        #expect(command.stdout.contains("wrote \(mp4.path)"), "\(command.outcome)")
        // How many pictures three seconds hold depends on the machine's load (the tests run in
        // parallel on two cores): that the recording went on after the failure is what counts.
        let frames = try MP4Checks.probedFrames(mp4).count
        #expect(frames > 2, "\(frames) pictures in the MP4; \(command.outcome)")
        let errors = try MP4Checks.decodeErrors(mp4)
        #expect(errors.isEmpty, "ffmpeg: \(errors)")
        #expect(!command.stdout.contains("\r"), "carriage returns in a log")
        #expect(command.stdout.split(separator: "\n").allSatisfy { $0.count < 400 }, "a progress line ran on")
    }

    /// Under a file size limit both files fail part-way: each ends on a whole picture that
    /// ffmpeg decodes without error, the drive stops (no output left) and the status is 74.
    @Test(.enabled(if: tools, "needs the built carwindow and ffmpeg"))
    func aDriveUnderAFileSizeLimitEndsBothFilesOnWholePictures() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let annexB = directory.appendingPathComponent("limited.h264"), mp4 = directory.appendingPathComponent("limited.mp4")
        // 600 blocks: 300 KB in dash's 512-byte blocks (600 KB in bash's), a few seconds of video.
        let command = try Self.run(["drive", "--out", annexB.path, "--speed", "20", "--max-seconds", "30"], in: directory,
                                   shellPrefix: "ulimit -f 600")
        #expect(command.exitStatus == 74, "\(command.outcome)")
        #expect(command.stdout.contains("FAILED: writing to \(annexB.path) failed: EFBIG"), "\(command.outcome)")
        #expect(command.stdout.contains("FAILED: writing to \(mp4.path) failed: EFBIG"), "\(command.outcome)")
        #expect(Self.fileSize(annexB) > 0 && Self.fileSize(mp4) > 0)
        let annexBErrors = try Self.annexBDecodeErrors(annexB)
        #expect(annexBErrors.isEmpty, "ffmpeg on the Annex-B file: \(annexBErrors)")
        #expect(try Self.decodedFrames(annexB: annexB) > 5)
        #expect(try MP4Checks.probedFrames(mp4).count > 5)
        let mp4Errors = try MP4Checks.decodeErrors(mp4)
        #expect(mp4Errors.isEmpty, "ffmpeg on the MP4: \(mp4Errors)")
    }

    /// Another process writing the output: the drive refuses at once with one clear line and
    /// status 73, and leaves that process's file as it was.
    @Test(.enabled(if: isAvailable, "needs the built carwindow"))
    func aDriveOntoAFileAnotherWriterHoldsIsRefusedAndTheFileIsKept() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let annexB = directory.appendingPathComponent("taken.h264")
        let holder = try AnnexBFileSink(url: annexB)
        let unit = AccessUnit(data: [0, 0, 0, 1, 0x09, 0xF0], isKeyframe: false, presentationTime: .zero, frameNumber: 0)
        try holder.write(unit)
        let command = try Self.run(["drive", "--out", annexB.path, "--max-seconds", "1"], in: directory)
        let content = try Data(contentsOf: annexB)
        holder.close()
        #expect(command.exitStatus == 73, "\(command.outcome)")
        #expect(command.stderr.contains("\(annexB.path) is being written by another process"), "\(command.outcome)")
        #expect(content == Data(unit.data), "the other writer's file changed")
    }

    // MARK: Arguments and messages

    /// Untrusted arguments: NaN, infinities, negative and absurd numbers are refused with one
    /// line naming the option (status 64), before anything is drawn or written.
    @Test(.enabled(if: isAvailable, "needs the built carwindow"), arguments: [
        ["render", "--zoom=nan"], ["render", "--zoom=inf"], ["render", "--zoom=23"], ["render", "--lat=nan"],
        ["render", "--lat=91"], ["render", "--lon=nan"], ["render", "--lon=-181"], ["render", "--pitch", "1000"],
        ["render", "--bearing=inf"], ["render", "--frames=0"], ["render", "--vehicle-heading=nan"],
        ["drive", "--fps=0"], ["drive", "--fps=100000"], ["drive", "--max-bitrate=-1"], ["drive", "--speed=nan"],
        ["drive", "--speed=-2"], ["drive", "--scale=inf"], ["drive", "--max-seconds=-1"], ["drive", "--size", "0x480"],
        ["drive", "--rtp", "127.0.0.1:99999"], ["drive", "--sdl", "127.0.0.1:0"],
        ["encode", "--fps=nan"], ["encode", "--frames=-5"], ["encode", "--bitrate=0"], ["encode", "--threads=99"], ["encode", "--threads=0"],
        ["drive", "--encoder-threads=17"], ["drive", "--encoder-threads=many"],
        ["encode", "--idr-every=0"], ["headunit", "--port=65536"], ["headunit", "--fps=-1"], ["headunit", "--seconds=nan"],
        ["headunit", "--tap-after=inf"], ["headunit", "--drop-after=-3"], ["headunit", "--scale=0"],
        ["headunit", "--also=0x480"], ["headunit", "--also=800x380@11"], ["headunit", "--press=NAV_ZOOM_IN@nan"],
        ["headunit", "--press=NAV_ZOOM_IN"],
        ["render", "--source=openmaptiles"], ["render", "--source==x.pmtiles"], ["encode", "--source=a=x", "--source=a=y"],
    ])
    func badNumbersAreRefusedWithTheOptionAndItsRange(_ arguments: [String]) throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try Self.run(arguments + ["--out", directory.appendingPathComponent("never").path], in: directory)
        #expect(command.exitStatus == 64, "\(command.outcome)")
        let option = String(arguments[1].split(separator: "=")[0])
        let firstLine = command.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.contains(option), "\(command.outcome)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasPrefix("never") })
    }

    /// Runtime failures say what failed, with the path, and what to do, in one line: never
    /// Foundation's "Error Domain=...".
    @Test(.enabled(if: isAvailable, "needs the built carwindow"), arguments: [
        (["drive", "--out", "/nonexistent-carwindow/dir/x.h264"], Int32(73), "the folder /nonexistent-carwindow/dir does not exist"),
        (["drive", "--out", "/proc/carwindow-x/y.h264"], Int32(73), "the folder /proc/carwindow-x does not exist"),
        (["drive", "--route", "/nonexistent-carwindow.json"], Int32(66), "--route /nonexistent-carwindow.json: cannot read it: ENOENT"),
        (["drive", "--tiles", "/nonexistent-carwindow.pmtiles", "--route", "/nonexistent.json"], Int32(66),
         "--tiles /nonexistent-carwindow.pmtiles: cannot read it: ENOENT"),
        (["render", "--style", "/nonexistent-carwindow.json"], Int32(66), "--style /nonexistent-carwindow.json: cannot read it: ENOENT"),
        (["render", "--tiles", "/nonexistent-carwindow.pmtiles"], Int32(66), "--tiles /nonexistent-carwindow.pmtiles: cannot read it"),
        (["render", "--out", "/nonexistent-carwindow/map.png"], Int32(73), "the folder /nonexistent-carwindow does not exist"),
        (["render", "--source", "traffic=/nonexistent-carwindow.pmtiles"], Int32(66), "--source traffic /nonexistent-carwindow.pmtiles: cannot read it"),
        (["render", "--source", "traffic=\(TestPaths.tiles.path)", "--size", "64x64"], Int32(1),
         "the style has no vector source of that id; its vector sources are \"openmaptiles\""),
        (["encode", "--out", "/nonexistent-carwindow/map.h264"], Int32(73), "the folder /nonexistent-carwindow does not exist"),
        (["headunit", "--out", "/nonexistent-carwindow/r.h264", "--port", "0"], Int32(73), "the folder /nonexistent-carwindow does not exist"),
    ])
    func failuresSayWhatFailedWithThePathAndWhatToDo(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try Self.run(arguments, in: directory)
        #expect(command.exitStatus == status, "\(command.outcome)")
        #expect(command.stderr.contains(message), "\(command.outcome)")
        #expect(!command.stderr.contains("Error Domain"), "\(command.outcome)")
        #expect(command.stderr.split(separator: "\n").count == 1, "one line: \(command.outcome)")
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent-carwindow"), "a missing folder was created")
    }

    /// Negative coordinates and angles are values, written with or without "=".
    @Test(.enabled(if: isAvailable, "needs the built carwindow"))
    func negativeNumbersAreValuesNotOptions() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let command = try Self.run(["render", "--bearing", "-40", "--vehicle-heading", "-90", "--lon", "-0.1", "--lat", "-33.9",
                                    "--size", "64x64", "--out", directory.appendingPathComponent("map.png").path], in: directory)
        #expect(command.exitStatus == 0, "\(command.outcome)")
    }

    /// A style warning is printed once (the style's logger used to print it a second time).
    @Test(.enabled(if: isAvailable, "needs the built carwindow"))
    func aStyleWarningIsPrintedOnce() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var style = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestPaths.style("day"))) as? [String: Any])
        var layers = try #require(style["layers"] as? [[String: Any]])
        layers[0]["paint"] = ((layers[0]["paint"] as? [String: Any]) ?? [:]).merging(["carwindow-bogus": 1]) { $1 }
        style["layers"] = layers
        let styleURL = directory.appendingPathComponent("warning.json")
        try JSONSerialization.data(withJSONObject: style).write(to: styleURL)
        let command = try Self.run(["render", "--style", styleURL.path, "--size", "64x64", "--out",
                                    directory.appendingPathComponent("map.png").path], in: directory)
        #expect(command.exitStatus == 0, "\(command.outcome)")
        let mentions = (command.stdout + "\n" + command.stderr).split(separator: "\n").filter { $0.contains("carwindow-bogus") }.count
        #expect(mentions == 1, "\(command.outcome)")
    }
}

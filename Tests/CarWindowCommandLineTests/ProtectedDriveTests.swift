import Foundation
import Glibc
import Testing
@testable import CarWindowTestSupport

extension CommandLineTests {
/// `carwindow drive --certificate --key` into `carwindow headunit --protected` with the app's
/// certificate verified and video forced protected: the proof CI runs of protected video.
///
/// Nested in ``CommandLineTests`` to run one test at a time with the other suites that wait on
/// child processes.
@Suite(.timeLimit(.minutes(3)))
struct ProtectedDriveTests {
    typealias CLI = CommandLineTests
    typealias Ending = DriveEndingTests

    static func protectedHeadUnit(_ certificates: TestCertificates, more: [String] = []) throws -> (CLI.Command, Int) {
        try Ending.headUnit(["--protected", "--ca", certificates.ca.certificateFile, "--force-protected", "video",
                             "--tap-after", "0"] + more)
    }

    static func stop(_ headUnit: CLI.Command) {
        kill(headUnit.process.processIdentifier, SIGTERM)
        _ = headUnit.wait(seconds: 30)
    }

    @Test(.enabled(if: CLI.tools, "needs the built carwindow and ffmpeg"), arguments: [[], ["--dtls"]])
    func aProtectedDriveStreamsVideoTheHeadUnitDecryptsAndFFmpegDecodes(_ more: [String]) throws {
        let certificates = try TestCertificates.load()
        let (headUnit, port) = try Self.protectedHeadUnit(certificates, more: more)
        let drive = try Ending.driveIntoHeadUnit(at: port, ["--certificate", certificates.app.certificateFile,
                                                            "--key", certificates.app.keyFile])
        Self.stop(headUnit)
        #expect(drive.exitStatus == 0, "\(drive.outcome)")
        #expect(headUnit.stdout.contains("security: handshake with the app finished (\(more.isEmpty ? "TLSv1.3" : "DTLSv1.2"))"),
                "\(headUnit.outcome)")
        let received = headUnit.stdoutFile.deletingLastPathComponent().appendingPathComponent("received.h264")
        let frames = try CLI.decodedFrames(annexB: received)
        #expect(frames > 0, "what the head unit decrypted decodes: \(headUnit.outcome)")
    }

    /// An app certificate the head unit does not trust: one error line naming the head unit and
    /// the certificate problem, exit 69, and not one picture received.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func anUntrustedCertificateGetsNoVideoAndSaysWhy() throws {
        let certificates = try TestCertificates.load()
        let (headUnit, port) = try Self.protectedHeadUnit(certificates)
        let drive = try Ending.driveIntoHeadUnit(at: port, ["--certificate", certificates.otherApp.certificateFile,
                                                            "--key", certificates.otherApp.keyFile])
        Self.stop(headUnit)
        Ending.expectUnavailable(drive, port: port, mentioning: "invalidCertificate")
        #expect(CLI.fileSize(headUnit.stdoutFile.deletingLastPathComponent().appendingPathComponent("received.h264")) == 0)
    }

    /// The drive without a certificate against the same head unit is refused with its reason.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func anUnprotectedDriveIsRefusedWithTheHeadUnitsReason() throws {
        let certificates = try TestCertificates.load()
        let (headUnit, port) = try Self.protectedHeadUnit(certificates)
        let drive = try Ending.driveIntoHeadUnit(at: port)
        Self.stop(headUnit)
        Ending.expectUnavailable(drive, port: port, mentioning: "must be protected")
    }

    /// A key that does not belong to the certificate is bad input (65), named, before connecting.
    @Test(.enabled(if: CLI.isAvailable, "needs the built carwindow"))
    func aKeyThatIsNotTheCertificatesIsRefused() throws {
        let certificates = try TestCertificates.load()
        let drive = try Ending.driveIntoHeadUnit(at: try Ending.closedPort(), ["--certificate", certificates.app.certificateFile,
                                                                              "--key", certificates.otherApp.keyFile])
        #expect(drive.exitStatus == 65, "\(drive.outcome)")
        #expect(drive.stderr.contains("does not match"), "\(drive.outcome)")
    }
}
}

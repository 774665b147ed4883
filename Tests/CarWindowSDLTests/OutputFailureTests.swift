import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowTestSupport
import SystemPackage

/// Outputs that fail or clash: a failing recording never stops the other outputs, a failed file
/// ends on a whole access unit that ffmpeg decodes, two writers of one path cannot wipe each
/// other's file, and the calls that stop a session finish every output. Real files, `/dev/full`,
/// real OpenH264 streams and ffmpeg as the independent reader.
@Suite struct OutputFailureTests {
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-outputs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// 30 OpenH264 pictures at 320x192, an IDR every 10.
    static func units() throws -> [AccessUnit] {
        try MP4Checks.encode(width: 320, height: 192, times: (0..<30).map { Double($0) / 15 }, idrInterval: 10)
    }

    /// Errors handed to a tee's `outputFailed`, from whichever thread.
    final class Failures: Sendable {
        private let failures = LockedState<[SinkError]>([])
        func append(_ failure: SinkError) { failures.withLock { $0.append(failure) } }
        var all: [SinkError] { failures.withLock { $0 } }
    }

    static let devFull = "/dev/full"

    // MARK: Failing outputs

    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: devFull), "needs /dev/full"))
    func aFailedAnnexBWriteClosesTheSinkWithTheTypedError() throws {
        let units = try Self.units()
        let sink = try AnnexBFileSink(url: URL(fileURLWithPath: Self.devFull))
        let expected = SinkError.writeFailed(path: Self.devFull, Errno(rawValue: ENOSPC))
        #expect(throws: expected) { try sink.write(units[0]) }
        #expect(expected.endsOutput)
        #expect(sink.failure == expected)
        #expect(throws: SinkError.closed("Annex-B file sink for \(Self.devFull)")) { try sink.write(units[1]) }
    }

    /// A tee of a failing Annex-B file and a working MP4: every unit reaches the MP4, the failure
    /// is reported once (to the handler and to the session's drain), and the MP4 decodes wholly.
    @Test(.enabled(if: FFmpegTool.isAvailable && FileManager.default.isWritableFile(atPath: devFull), "needs ffmpeg and /dev/full"))
    func aTeeGoesOnWithTheOutputsThatWork() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try Self.units()
        let mp4 = directory.appendingPathComponent("kept.mp4")
        let failures = Failures()
        let tee = TeeSink([try AnnexBFileSink(url: URL(fileURLWithPath: Self.devFull)), try MP4FileSink(url: mp4)],
                          outputFailed: { failures.append($0) })
        var drained: [SinkError] = []
        for unit in units {
            try tee.write(unit)
            drained += tee.takeOutputErrors()
        }
        tee.close()
        let failure = SinkError.writeFailed(path: Self.devFull, Errno(rawValue: ENOSPC))
        #expect(failures.all == [failure])
        #expect(drained == [failure])
        #expect(tee.failures == [failure])
        #expect(tee.failure == nil, "one output still works")
        #expect(try MP4Checks.probedFrames(mp4).count == units.count)
        let errors = try MP4Checks.decodeErrors(mp4)
        #expect(errors.isEmpty, "ffmpeg: \(errors)")
    }

    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: devFull), "needs /dev/full"))
    func aTeeWithNoWorkingOutputThrowsAllOutputsFailed() throws {
        let units = try Self.units()
        let tee = TeeSink([try AnnexBFileSink(url: URL(fileURLWithPath: Self.devFull))])
        #expect(throws: SinkError.allOutputsFailed(count: 1)) { try tee.write(units[0]) }
        #expect(tee.takeOutputErrors() == [.writeFailed(path: Self.devFull, Errno(rawValue: ENOSPC))])
        #expect(throws: SinkError.allOutputsFailed(count: 1)) { try tee.write(units[1]) }
        #expect(tee.takeOutputErrors().isEmpty, "reported once")
        #expect(SinkError.allOutputsFailed(count: 1).endsOutput)
    }

    /// One output refusing one unit (an MP4 that must start with an IDR) is no failure of the
    /// tee: the others take the unit and the tee asks for an IDR.
    @Test func aUnitOneOutputRefusesReachesTheOthersAndAsksForAnIDR() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try Self.units()
        let annexB = directory.appendingPathComponent("all.h264")
        let tee = TeeSink([try AnnexBFileSink(url: annexB), try MP4FileSink(url: directory.appendingPathComponent("late.mp4"))])
        try tee.write(units[1])
        #expect(tee.needsKeyframe)
        guard case .invalidAccessUnit? = tee.takeOutputErrors().first else {
            Issue.record("the MP4's refusal was not reported")
            return
        }
        try tee.write(units[10])
        #expect(!tee.needsKeyframe)
        tee.close()
        #expect(try Data(contentsOf: annexB) == Data(units[1].data + units[10].data))
    }

    /// An output that refuses every unit would make every picture an IDR: after
    /// `TeeSink.refusalLimit` refusals in a row it counts as failed and is closed.
    @Test func anOutputThatRefusesUnitAfterUnitCountsAsFailed() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try Self.units()
        let predicted = units.filter { !$0.isKeyframe }
        try #require(predicted.count > TeeSink.refusalLimit)
        let failures = Failures()
        let tee = TeeSink([try AnnexBFileSink(url: directory.appendingPathComponent("all.h264")),
                           try MP4FileSink(url: directory.appendingPathComponent("never.mp4"))],
                          outputFailed: { failures.append($0) })
        for unit in predicted.prefix(TeeSink.refusalLimit - 1) { try tee.write(unit) }
        #expect(failures.all.isEmpty && tee.needsKeyframe)
        try tee.write(predicted[TeeSink.refusalLimit - 1])
        guard case .invalidAccessUnit? = failures.all.first, failures.all.count == 1 else {
            Issue.record("the refusing MP4 was not dropped: \(failures.all)")
            return
        }
        #expect(!tee.needsKeyframe, "no IDR is asked for a dropped output")
        #expect(tee.takeOutputErrors().count == TeeSink.refusalLimit, "each refusal reported once")
        tee.close()
    }

    /// The bound that the MP4 sink allocates room for is at least the index it writes, for
    /// many samples and several sample descriptions.
    @Test func theRoomKeptForTheMP4IndexCoversIt() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = try MP4Checks.encode(width: 320, height: 192, times: (0..<40).map { Double($0) / 15 }, idrInterval: 7)
        let large = try MP4Checks.encode(width: 480, height: 272, times: (40..<80).map { Double($0) / 15 }, idrInterval: 9)
        let url = directory.appendingPathComponent("index.mp4")
        let sink = try MP4FileSink(url: url)
        for unit in small + large + small.map({ unit in
            var later = unit
            later.presentationTime += .seconds(80.0 / 15)
            return later
        }) { try sink.write(unit) }
        sink.close()
        let bytes = [UInt8](try Data(contentsOf: url))
        let moov = try #require(MP4Checks.box(["moov"], in: bytes))
        let parameterSets = (small.first!.data + large.first!.data).count
        let bound = MP4FileSink.indexSizeBound(samples: 120, parameterSetBytes: parameterSets, descriptions: 2)
        #expect(moov.count + 8 <= bound, "moov \(moov.count + 8) bytes, bound \(bound)")
    }

    // MARK: Two writers of one path

    @Test func aSecondSinkOnAPathInUseIsRefusedAndTheFileIsUntouched() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let units = try Self.units()
        let annexB = directory.appendingPathComponent("one.h264")
        let first = try AnnexBFileSink(url: annexB)
        try first.write(units[0])
        #expect(throws: SinkError.fileLocked(path: annexB.path)) { try AnnexBFileSink(url: annexB) }
        #expect(throws: SinkError.fileLocked(path: annexB.path)) { try MP4FileSink(url: annexB) }
        #expect(try Data(contentsOf: annexB) == Data(units[0].data), "the first writer's file was emptied")
        try first.write(units[1])
        first.close()
        #expect(try Data(contentsOf: annexB) == Data(units[0].data + units[1].data))
        // Closed, the path is free again.
        let next = try AnnexBFileSink(url: annexB, appending: true)
        next.close()

        let mp4 = directory.appendingPathComponent("one.mp4")
        let recording = try MP4FileSink(url: mp4)
        try recording.write(units[0])
        #expect(throws: SinkError.fileLocked(path: mp4.path)) { try MP4FileSink(url: mp4) }
        #expect(throws: SinkError.fileLocked(path: mp4.path)) { try RTPUDPSink(host: "127.0.0.1", port: 5004).writeSDP(to: mp4) }
        recording.close()
        #expect(try MP4Checks.probedFrames(mp4).count == 1)
        #expect(SinkError.fileLocked(path: mp4.path).description.contains("another process"))
    }

    // MARK: A session's outputs

    /// A session whose tee has a failing recording and a working output streams on: the
    /// failure is one error event, the working output gets every picture, and the session
    /// does not stop.
    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: devFull), "needs /dev/full"))
    func aFailingRecordingDoesNotStopTheSessionsStream() async throws {
        let live = RecordingSink()
        var configuration = try SessionFixtures.configuration(sink: live)
        configuration.makeSink = { _ throws(SinkError) in
            TeeSink([try AnnexBFileSink(url: URL(fileURLWithPath: Self.devFull)), live])
        }
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        let log = EventLog(session)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        // Well past the ten failures in a row after which a session gives up.
        let enough = await SessionFixtures.drive(session, until: {
            live.received.count >= 3 * ProjectionSession.failureLimit
        })
        let state = await session.state
        await session.close()
        await context.shutdown()
        #expect(enough, "the live output got \(live.received.count) pictures")
        #expect(state == .streaming)
        let sinkErrors = log.all.compactMap { event -> SinkError? in
            if case .error(.sink(let error)) = event { error } else { nil }
        }
        #expect(sinkErrors == [.writeFailed(path: Self.devFull, Errno(rawValue: ENOSPC))])
        #expect(try SessionFixtures.frameSizes(of: live.bytes).count == live.received.count)
    }

    /// `ProjectionSession.close()` is the one call that stops and finishes every output: when
    /// it returns, the MP4 has its index and ffmpeg decodes every picture.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func closingASessionFinishesItsMP4() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mp4 = directory.appendingPathComponent("session.mp4")
        let live = RecordingSink()
        var configuration = try SessionFixtures.configuration(sink: live)
        configuration.makeSink = { _ throws(SinkError) in TeeSink([try MP4FileSink(url: mp4), live]) }
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        try await session.connect(display: SessionFixtures.display)
        try await session.startStreaming()
        _ = await SessionFixtures.drive(session, until: {
            live.received.count >= 10
        })
        await session.close()
        let sent = live.received.count
        #expect(try MP4Checks.probedFrames(mp4).count == sent)
        let errors = try MP4Checks.decodeErrors(mp4)
        #expect(errors.isEmpty, "ffmpeg: \(errors)")
        await context.shutdown()
    }

    /// A session's own recording and the head unit its link adds fail independently: a
    /// recording that fails while writing, or cannot even be opened, is reported once and the
    /// head unit gets every picture, decodable, while the session keeps streaming.
    @Test(.enabled(if: FileManager.default.isWritableFile(atPath: devFull), "needs /dev/full"),
          .timeLimit(.minutes(2)), arguments: [devFull, "/nonexistent-carwindow-folder/recording.h264"])
    func aFailingRecordingBesideAHeadUnitLeavesTheHeadUnitStreaming(recording: String) async throws {
        let simulator = HeadUnitSimulator(configuration: {
            var configuration = HeadUnitSimulator.Configuration()
            configuration.capability = SDLProjectionLinkTests.capability
            return configuration
        }())
        let port = try await simulator.start()
        var configuration = try SessionFixtures.configuration(sink: RecordingSink())
        configuration.makeSink = { _ throws(SinkError) in try AnnexBFileSink(url: URL(fileURLWithPath: recording)) }
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        let log = EventLog(session)
        let link = SDLProjectionLink(
            session: session,
            connection: SDLConnection.Configuration(appName: "CarWindow", appID: "carwindow-test", reconnect: .never,
                                                    requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port, connectTimeout: hangGuard) })
        let running = Task { try await link.run() }
        // Well past the ten failures in a row after which a session gives up.
        let enough = await SessionFixtures.drive(session, until: {
            await simulator.snapshot().videoUnitCount >= 3 * ProjectionSession.failureLimit
        })
        let state = await session.state
        await link.stop()
        _ = await running.result
        await session.close()
        let received = await simulator.snapshot().videoUnits
        await simulator.stop()
        await context.shutdown()
        #expect(enough, "the head unit got \(received.count) pictures")
        #expect(state == .streaming)
        let sinkErrors = log.all.compactMap { event -> SinkError? in
            if case .error(.sink(let error)) = event { error } else { nil }
        }
        let expected: SinkError = recording == Self.devFull
            ? .writeFailed(path: recording, Errno(rawValue: ENOSPC)) : .cannotOpenFile(path: recording, Errno(rawValue: ENOENT))
        #expect(sinkErrors == [expected])
        #expect(try SDLProjectionLinkTests.decodedSizes(received).count == received.count)
    }

    /// `SDLProjectionLink.stop()` stops the session too: when it returns, the MP4 recorded
    /// beside the head unit's stream has its index.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"),
          .timeLimit(.minutes(2)))
    func stoppingALinkFinishesTheSessionsMP4() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let mp4 = directory.appendingPathComponent("link.mp4")
        let simulator = HeadUnitSimulator(configuration: {
            var configuration = HeadUnitSimulator.Configuration()
            configuration.capability = SDLProjectionLinkTests.capability
            return configuration
        }())
        let port = try await simulator.start()
        // The recording is the session's own output; the link adds the head unit beside it.
        var configuration = try SessionFixtures.configuration(sink: RecordingSink())
        configuration.makeSink = { _ throws(SinkError) in try MP4FileSink(url: mp4) }
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        let link = SDLProjectionLink(
            session: session,
            connection: SDLConnection.Configuration(appName: "CarWindow", appID: "carwindow-test", reconnect: .never,
                                                    requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port, connectTimeout: hangGuard) })
        let running = Task { try await link.run() }
        let streamed = await SessionFixtures.drive(session, until: {
            await simulator.snapshot().videoUnitCount >= 10
        })
        #expect(streamed)
        await link.stop()
        // Nothing else has run since stop() returned: the file must be finished already.
        let frames = (try? MP4Checks.probedFrames(mp4))?.count ?? 0
        _ = await running.result
        await session.close()
        await simulator.stop()
        await context.shutdown()
        #expect(frames >= 10)
    }
}

import Foundation
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

/// Collects a connection's events so tests can wait for one with a timeout.
final class SDLEventRecorder: Sendable {
    private final class Storage: Sendable {
        let events = LockedState<[SDLConnectionEvent]>([])
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ connection: SDLConnection) {
        let storage = self.storage
        // Taken here, before the connection starts: a stream has the events from its making on.
        let events = connection.events
        task = Task {
            for await event in events { storage.events.withLock { $0.append(event) } }
        }
    }

    deinit { task.cancel() }

    var all: [SDLConnectionEvent] { storage.events.withLock { $0 } }

    /// The first event after `index` matching `predicate`, waiting up to `timeout`.
    func wait(timeout: Duration = hangGuard, after index: Int = 0,
              _ predicate: (SDLConnectionEvent) -> Bool) async -> SDLConnectionEvent? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.dropFirst(index).first(where: predicate) { return found }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct SDLLinkTests {
    static let size = ImageResolution(width: 400, height: 240)

    /// A simulator, a connection to it and an event recorder; both are stopped afterwards even
    /// when the body throws.
    func withLink(simulator configuration: HeadUnitSimulator.Configuration = Self.simulatorConfiguration(),
                  connection configure: (inout SDLConnection.Configuration) -> Void = { _ in },
                  sendBufferSize: Int? = nil,
                  _ body: (HeadUnitSimulator, SDLConnection, SDLEventRecorder) async throws -> Void) async throws {
        let simulator = HeadUnitSimulator(configuration: configuration)
        let port = try await simulator.start()
        var settings = SDLConnection.Configuration(
            appName: "CarWindow Test", appID: "carwindow-test",
            videoCandidates: SDLVideoCandidate.combinations(resolutions: [Self.size], formats: [.h264Raw]),
            reconnect: .never, requestTimeout: hangGuard)
        configure(&settings)
        let connection = SDLConnection(configuration: settings, transport: {
            SDLTCPTransport(host: "127.0.0.1", port: port, connectTimeout: hangGuard, sendBufferSize: sendBufferSize)
        })
        let recorder = SDLEventRecorder(connection)
        do {
            try await connection.start()
            try await body(simulator, connection, recorder)
        } catch {
            await connection.stop()
            await simulator.stop()
            throw error
        }
        await connection.stop()
        await simulator.stop()
    }

    static func simulatorConfiguration() -> HeadUnitSimulator.Configuration {
        var configuration = HeadUnitSimulator.Configuration()
        configuration.capability.preferredResolution = size
        return configuration
    }

    static func encode(count: Int, size: ImageResolution = size, bitrate: Int = 600_000, texture: Int = 0,
                       forceIDR: (Int) -> Bool = { _ in false }) throws -> [AccessUnit] {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: size.width, height: size.height, bitrate: bitrate))
        return try (0..<count).map { index in
            try encoder.encode(MapLikeFrames.frame(width: size.width, height: size.height, index: index, texture: texture),
                               presentationTime: .seconds(Double(index) / 15), forceIDR: forceIDR(index))
        }
    }

    static func videoStarted(_ event: SDLConnectionEvent) -> SDLVideoServiceParameters? {
        if case .videoStarted(let parameters) = event { return parameters }
        return nil
    }

    // MARK: Registration and streaming

    @Test(arguments: [VideoStreamingFormat.h264Raw, .h264RTP])
    func registersAndStreamsDecodableVideo(format: VideoStreamingFormat) async throws {
        let units = try Self.encode(count: 30)
        try await withLink(connection: {
            $0.videoCandidates = [SDLVideoCandidate(resolution: Self.size, format: format)]
            $0.videoQueueLimits = SDLVideoQueueLimits(maximumBytes: 8 << 20, maximumUnits: 64)
            $0.supportedSizes = [Self.size]
        }) { simulator, connection, recorder in
            let started = try #require(await recorder.wait { Self.videoStarted($0) != nil }.flatMap(Self.videoStarted))
            #expect(started == SDLVideoServiceParameters(resolution: Self.size, format: format, mtu: nil,
                                                         requestedResolution: Self.size))
            // OnAppCapabilityUpdated goes out when the HMI level allows it, not before the video
            // service starts: wait for it rather than race it.
            let registered = try #require(await simulator.wait(timeout: hangGuard) { !$0.appCapabilityUpdates.isEmpty })
            #expect(registered.registeredAppName == "CarWindow Test")
            #expect(registered.appHMITypes == ["NAVIGATION"])
            #expect(registered.requestedProtocolVersion == "5.4.1")
            #expect(registered.appCapabilityUpdates.count == 1)
            #expect(await connection.session?.hashID == 65_537)

            for unit in units { #expect(connection.send(unit) == .queued) }
            let received = try #require(await simulator.wait(timeout: hangGuard) { $0.videoUnitCount == 30 })
            if format == .h264Raw {
                #expect(received.videoUnits == units.map(\.data), "RAW: every access unit arrives as one message, byte for byte")
            }
            let stream = try TemporaryStream(received.videoUnits.flatMap { $0 })
            #expect(try stream.decodedLuma(width: Self.size.width, height: Self.size.height).count == 30)
            #expect(received.videoWhileNotAllowed == 0)
        }
    }

    /// The simulator tells video the app could not have held back (written before it read a
    /// new HMI level) from video it sent knowing better: on no open service.
    @Test func videoOnNoOpenServiceIsAViolation() async throws {
        let simulator = HeadUnitSimulator(configuration: Self.simulatorConfiguration())
        let port = try await simulator.start()
        let app = SDLTCPTransport(host: "127.0.0.1", port: port, connectTimeout: hangGuard)
        try await app.connect()
        let unit = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: 7, payload: [0, 0, 0, 1, 0x65, 0x88])
        try await app.write(unit.encoded(maximumFramePayload: 1024))
        let seen = await simulator.wait(timeout: hangGuard) { $0.videoWhileNotAllowed == 1 }
        #expect(seen?.videoUnitCount == 0 && seen?.videoInFlightWhenForbidden == 0)
        app.close()
        await simulator.stop()
    }

    @Test func heartbeatIsAnswered() async throws {
        try await withLink { simulator, _, _ in
            try await simulator.sendHeartbeat()
            #expect(await simulator.wait(timeout: hangGuard) { $0.heartbeatACKs == 1 } != nil)
        }
    }

    /// Two consumers of a connection's events (a projection link and an engine watching the HMI
    /// status) each get every event, in the same order.
    @Test func twoConsumersOfTheConnectionsEventsBothSeeEveryEvent() async throws {
        let simulator = HeadUnitSimulator(configuration: Self.simulatorConfiguration())
        let port = try await simulator.start()
        let connection = SDLConnection(
            configuration: .init(appName: "CarWindow Test", appID: "carwindow-test",
                                 videoCandidates: [SDLVideoCandidate(resolution: Self.size, format: .h264Raw)],
                                 reconnect: .never, requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port) })
        let link = SDLEventRecorder(connection), engine = SDLEventRecorder(connection)
        try await connection.start()
        #expect(await link.wait { Self.videoStarted($0) != nil } != nil)
        await connection.stop()
        #expect(await link.wait { $0 == .stopped } != nil)
        #expect(await engine.wait { $0 == .stopped } != nil)
        #expect(link.all == engine.all)
        #expect(link.all.contains { if case .registered = $0 { true } else { false } })
        #expect(link.all.contains(.videoAllowedChanged(true)))
        await simulator.stop()
    }

    @Test func stopEndsVideoAndUnregisters() async throws {
        let simulator = HeadUnitSimulator(configuration: Self.simulatorConfiguration())
        let port = try await simulator.start()
        let connection = SDLConnection(
            configuration: .init(appName: "CarWindow Test", appID: "carwindow-test",
                                 videoCandidates: [SDLVideoCandidate(resolution: Self.size, format: .h264Raw)],
                                 reconnect: .never, requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port) })
        let recorder = SDLEventRecorder(connection)
        try await connection.start()
        #expect(await recorder.wait { Self.videoStarted($0) != nil } != nil)
        await connection.stop()
        let snapshot = await simulator.wait(timeout: hangGuard) { $0.unregistered && $0.videoEndCount == 1 }
        #expect(snapshot != nil, "EndService(video) and UnregisterAppInterface arrive before the close")
        #expect(await recorder.wait { $0 == .stopped } != nil)
        await simulator.stop()
    }

    // MARK: Video start

    @Test func nakNamingResolutionTriesTheNextResolution() async throws {
        var configuration = Self.simulatorConfiguration()
        configuration.rejectedResolutions = [ImageResolution(width: 1280, height: 720)]
        configuration.rejectedFormats = [.h264RTP]
        // The walk within one start; SDL Core's closing the app after a refusal is tested in
        // SDLHeadUnitStateTests.
        configuration.closesAppOnRefusedVideo = false
        let large = ImageResolution(width: 1280, height: 720)
        try await withLink(simulator: configuration, connection: {
            $0.videoCandidates = SDLVideoCandidate.combinations(resolutions: [large, Self.size], formats: [.h264RTP, .h264Raw])
        }) { simulator, _, recorder in
            let started = try #require(await recorder.wait { Self.videoStarted($0) != nil }.flatMap(Self.videoStarted))
            #expect(started.resolution == Self.size && started.format == .h264Raw)
            // 1280x720/RTP is refused for its size, so 1280x720/RAW is skipped; 400x240/RTP is
            // refused for its format, so RTP is not tried again.
            let requests = await simulator.snapshot().videoRequests
            #expect(requests.map(\.candidate) == [SDLVideoCandidate(resolution: large, format: .h264RTP),
                                                  SDLVideoCandidate(resolution: Self.size, format: .h264RTP),
                                                  SDLVideoCandidate(resolution: Self.size, format: .h264Raw)])
            #expect(requests.map(\.accepted) == [false, false, true])
        }
    }

    @Test func everyCandidateRefusedIsATypedError() async throws {
        var configuration = Self.simulatorConfiguration()
        configuration.rejectedResolutions = [Self.size]
        try await withLink(simulator: configuration) { _, connection, recorder in
            let failure = await recorder.wait { if case .videoFailed = $0 { true } else { false } }
            guard case .videoFailed(.videoRejected(let tried, let last))? = failure else {
                Issue.record("expected videoRejected, got \(String(describing: failure))")
                return
            }
            #expect(tried == [SDLVideoCandidate(resolution: Self.size, format: .h264Raw)])
            #expect(last.rejectedParameters == ["width", "height"])
            #expect(await connection.video == nil)
        }
    }

    @Test func losingTheHMILevelEndsVideoAndRegainingRestartsIt() async throws {
        try await withLink { simulator, connection, recorder in
            #expect(await recorder.wait { Self.videoStarted($0) != nil } != nil)
            let mark = recorder.all.count
            try await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .background, videoStreamingState: .notStreamable))
            #expect(await recorder.wait(after: mark) { $0 == .videoAllowedChanged(false) } != nil)
            #expect(await recorder.wait(after: mark) { $0 == .videoStopped } != nil)
            #expect(await simulator.wait(timeout: hangGuard) { $0.videoEndCount == 1 } != nil)
            #expect(connection.send(try Self.encode(count: 1)[0]) == .notStreaming)

            let regained = recorder.all.count
            try await simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .limited, videoStreamingState: .streamable))
            #expect(await recorder.wait(after: regained) { $0 == .videoAllowedChanged(true) } != nil)
            #expect(await recorder.wait(after: regained) { Self.videoStarted($0) != nil } != nil)
            #expect(await simulator.snapshot().videoRequests.filter(\.accepted).count == 2)
            #expect(await connection.isVideoAllowed)
        }
    }

    // MARK: Touch, haptics, capability

    @Test func touchesHapticsAndResize() async throws {
        try await withLink { simulator, connection, recorder in
            let capability = await recorder.wait { if case .capabilityChanged = $0 { true } else { false } }
            #expect(capability == .capabilityChanged(Self.simulatorConfiguration().capability))

            let touch = TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1000, x: 120, y: 80)])
            let moved = TouchEvent(type: .move, touches: [.init(id: 0, timestamp: 1016, x: 131, y: 84)])
            try await simulator.sendTouch(SDLTouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1000, x: 120, y: 80)]))
            try await simulator.sendTouch(SDLTouchEvent(moved))
            #expect(await recorder.wait { $0 == .touch(moved) } != nil)
            #expect(recorder.all.filter { if case .touch = $0 { true } else { false } } == [.touch(touch), .touch(moved)])

            let regions = [HapticRegion(id: 1, rect: ScreenRect(x: 0, y: 0, width: 100, height: 50)),
                           HapticRegion(id: 2, rect: ScreenRect(x: 10.5, y: 20, width: 30, height: 40))]
            try await connection.sendHapticData(regions)
            #expect(await simulator.snapshot().hapticData == [regions])

            let mark = recorder.all.count
            try await simulator.sendCapabilityUpdate(VideoStreamingCapability(preferredResolution: ImageResolution(width: 640, height: 360)))
            let resized = await recorder.wait(after: mark) { if case .capabilityChanged = $0 { true } else { false } }
            var expected = Self.simulatorConfiguration().capability
            expected.preferredResolution = ImageResolution(width: 640, height: 360)
            // Fields the update left out come from the previous capability.
            #expect(resized == .capabilityChanged(expected))
        }
    }

    @Test func hapticsNeedTheCapability() async throws {
        var configuration = Self.simulatorConfiguration()
        configuration.capability.hapticSpatialDataSupported = false
        try await withLink(simulator: configuration) { simulator, connection, recorder in
            #expect(await recorder.wait { if case .capabilityChanged = $0 { true } else { false } } != nil)
            await #expect(throws: SDLConnectionError.hapticsNotSupported) {
                try await connection.sendHapticData([HapticRegion(id: 1, rect: ScreenRect(x: 0, y: 0, width: 1, height: 1))])
            }
            #expect(await simulator.snapshot().hapticData.isEmpty)
        }
    }

    // MARK: Back-pressure

    /// A head unit reading 1 KiB every 20 ms (about 50 KB/s) with 8 KiB socket buffers while the
    /// encoder produces ~2 Mbit/s as fast as it can: units are dropped whole, the queue stays
    /// within 3 units, every unit after a gap is an IDR, and the received stream decodes fully.
    /// (At 500 KB/s an encoder slowed by ThreadSanitizer on a busy machine kept up, and nothing
    /// was dropped; a tenth of that is slower than any encoder here.)
    @Test func slowHeadUnitDropsWholeUnitsAndStreamStillDecodes() async throws {
        var configuration = Self.simulatorConfiguration()
        configuration.readChunkSize = 1024
        configuration.readDelay = .milliseconds(20)
        configuration.receiveBufferSize = 8192
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: Self.size.width, height: Self.size.height, bitrate: 2_000_000))
        try await withLink(simulator: configuration, connection: {
            $0.videoQueueLimits = SDLVideoQueueLimits(maximumBytes: 1 << 20, maximumUnits: 3)
        }, sendBufferSize: 8192) { simulator, connection, recorder in
            #expect(await recorder.wait { Self.videoStarted($0) != nil } != nil)
            var produced: [AccessUnit] = []
            var results: [SDLVideoSendResult] = []
            for index in 0..<45 {
                let frame = MapLikeFrames.frame(width: Self.size.width, height: Self.size.height, index: index, texture: 24)
                let unit = try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: connection.needsKeyframe)
                produced.append(unit)
                results.append(connection.send(unit))
            }
            let statistics = connection.videoQueueStatistics
            #expect(statistics.droppedUnits > 0, "\(statistics)")
            #expect(statistics.peakUnits <= 3)
            #expect(results.contains(.droppedQueueFull))
            #expect(await recorder.wait { $0 == .keyframeNeeded } != nil, "the connection asked for an IDR")

            let expected = statistics.queuedUnits - statistics.supersededUnits
            let received = try #require(await simulator.wait(timeout: hangGuard) { $0.videoUnitCount >= expected })
            #expect(received.videoUnitCount == expected)
            // Whole units only, in order, and every gap is followed by an IDR.
            var cursor = 0
            var previous = -1
            for bytes in received.videoUnits {
                guard let index = produced[cursor...].firstIndex(where: { $0.data == bytes }) else {
                    Issue.record("a received unit is not one of the produced units (split or merged)")
                    return
                }
                if index != previous + 1 { #expect(produced[index].isKeyframe, "unit \(index) follows a gap") }
                previous = index
                cursor = index + 1
            }
            print("slow head unit: produced \(produced.count), sent \(received.videoUnitCount), \(statistics)")
            let stream = try TemporaryStream(received.videoUnits.flatMap { $0 })
            #expect(try stream.decodedLuma(width: Self.size.width, height: Self.size.height).count == received.videoUnitCount)
        }
    }

    // MARK: Failures

    @Test func malformedBytesDuringStartAreATypedError() async throws {
        let listener = try SDLTCPListener()
        let fake = Task {
            let connection = try await listener.accept(timeout: hangGuard)
            _ = try await connection.read(maximumCount: 1024)
            try await connection.write([0xF1, 0x07, 0x02, 0x01] + [UInt8](repeating: 0, count: 8))
            try? await Task.sleep(for: .seconds(1))
            connection.close()
        }
        let port = listener.port
        let connection = SDLConnection(
            configuration: .init(appName: "x", appID: "x", videoCandidates: [], reconnect: .never, requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port) })
        // The start fails on the bytes themselves, not on a timeout (that would be `.timedOut`).
        await #expect(throws: SDLConnectionError.protocolViolation(.unsupportedVersion(15))) { try await connection.start() }
        fake.cancel()
        listener.close()
        await connection.stop()
    }

    @Test func malformedBytesLaterDisconnectWithATypedError() async throws {
        try await withLink { simulator, _, recorder in
            #expect(await recorder.wait { Self.videoStarted($0) != nil } != nil)
            // A first frame announcing 4 GiB: refused before any allocation.
            try await simulator.sendRawBytes([0x52, 0x07, 0, 1, 0, 0, 0, 8, 0, 0, 0, 9, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1])
            #expect(await recorder.wait { $0 == .stopped } != nil, "reconnect policy .never ends the connection")
            let expected = SDLConnectionEvent.disconnected(.protocolViolation(.messageTooLarge(size: 0xFFFF_FFFF, limit: 4 << 20)))
            #expect(recorder.all.contains(expected), "\(recorder.all)")
            #expect(recorder.all.contains(.videoStopped))
        }
    }

    @Test func reconnectsAfterTheHeadUnitDropsTheConnection() async throws {
        try await withLink(connection: {
            $0.reconnect = SDLReconnectPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), maximumAttempts: 5)
        }) { simulator, _, recorder in
            #expect(await recorder.wait { Self.videoStarted($0) != nil } != nil)
            await simulator.dropConnection()
            #expect(await recorder.wait { if case .disconnected(.transport(.closedByPeer)) = $0 { true } else { false } } != nil)
            #expect(await recorder.wait { $0 == .reconnected } != nil)
            let snapshot = await simulator.wait(timeout: hangGuard) { $0.connections == 2 && $0.video != nil }
            #expect(snapshot?.registeredAppName == "CarWindow Test", "registered and streaming again")
        }
    }

    // MARK: Pure parts

    @Test func reconnectDelaysGrowAndCap() {
        let policy = SDLReconnectPolicy(initialDelay: .milliseconds(250), multiplier: 2, maximumDelay: .seconds(2))
        #expect((0..<6).map { policy.delay(beforeAttempt: $0) }
                == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
        #expect(policy.delay(beforeAttempt: 10_000) == .seconds(2))
    }

    @Test func videoQueueDropsWholeUnitsUntilAnIDR() {
        func unit(_ number: Int, key: Bool, size: Int = 10) -> AccessUnit {
            AccessUnit(data: [UInt8](repeating: UInt8(number), count: size), isKeyframe: key, presentationTime: .zero, frameNumber: number)
        }
        let queue = SDLVideoQueue(limits: SDLVideoQueueLimits(maximumBytes: 25, maximumUnits: 2))
        #expect(queue.enqueue(unit(0, key: true)).0 == .notStreaming)
        queue.open()
        #expect(queue.enqueue(unit(1, key: false)).0 == .droppedAwaitingKeyframe, "a service starts with an IDR")
        #expect(queue.enqueue(unit(2, key: true)).0 == .queued)
        #expect(queue.enqueue(unit(3, key: false)).0 == .queued)
        let full = queue.enqueue(unit(4, key: false))
        #expect(full.0 == .droppedQueueFull && full.keyframeNowNeeded)
        #expect(queue.needsKeyframe)
        #expect(queue.enqueue(unit(5, key: false)).0 == .droppedAwaitingKeyframe)
        #expect(queue.enqueue(unit(6, key: true, size: 100)).0 == .queued, "an IDR replaces the waiting units, even a large one")
        #expect(!queue.needsKeyframe)
        #expect(queue.statistics.supersededUnits == 2)
        queue.close()
    }
}

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

/// A projection session streaming into the in-repo head unit over loopback TCP: the whole chain
/// from map to head unit and back (touches, haptic rectangles, HMI levels, resize).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SDLProjectionLinkTests {
    struct Rig {
        var simulator: HeadUnitSimulator
        var session: ProjectionSession
        var link: SDLProjectionLink
        var context: RenderContext
        /// The engine's view of the session's events, beside the link's.
        var forwarded: EventLog
        var running: Task<Void, any Error>

        func close() async {
            await link.stop()
            _ = await running.result
            await session.close()
            await simulator.stop()
            await context.shutdown()
        }
    }

    static func rig(capability: VideoStreamingCapability, reconnect: SDLReconnectPolicy = .never,
                    security: SDLSecurityConfiguration? = nil,
                    headUnit configure: (inout HeadUnitSimulator.Configuration) -> Void = { _ in }) async throws -> Rig {
        var simulatorConfiguration = HeadUnitSimulator.Configuration()
        simulatorConfiguration.capability = capability
        configure(&simulatorConfiguration)
        let simulator = HeadUnitSimulator(configuration: simulatorConfiguration)
        let port = try await simulator.start()
        // The head unit is the session's only output: the link adds it.
        // The link's verdicts do not depend on the map: the light styles keep the first picture
        // and each day/night switch quick on a loaded machine.
        var configuration = try SessionFixtures.configuration(light: true, sink: RecordingSink())
        configuration.makeSink = nil
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        let link = SDLProjectionLink(
            session: session,
            connection: SDLConnection.Configuration(appName: "CarWindow", appID: "carwindow-test", reconnect: reconnect,
                                                    requestTimeout: hangGuard, security: security),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port, connectTimeout: hangGuard) })
        let forwarded = EventLog(session)
        let running = Task { try await link.run() }
        return Rig(simulator: simulator, session: session, link: link, context: context, forwarded: forwarded, running: running)
    }

    static let capability = VideoStreamingCapability(
        preferredResolution: ImageResolution(width: 640, height: 384), maxBitrate: 500,
        supportedFormats: [.h264Raw], hapticSpatialDataSupported: true, scale: 2, preferredFPS: 15)

    static func decodedSizes(_ units: [[UInt8]]) throws -> [String] {
        try SessionFixtures.frameSizes(of: units.flatMap { $0 })
    }

    @Test func theMapStreamsIntoTheHeadUnitWithHapticsAndTouchesBothWays() async throws {
        let rig = try await Self.rig(capability: Self.capability)
        // Registered, capability taken, HMI FULL: the session streams at 640x384 / 2.
        #expect(await eventually { await rig.session.state == .streaming })
        #expect(await rig.session.stream?.encodedSize == VideoSize(width: 320, height: 192))
        let streamed = await SessionFixtures.drive(rig.session, until: {
            let received = await rig.simulator.snapshot()
            return received.videoUnitCount >= 15 && !received.hapticData.isEmpty
        })
        try #require(streamed)
        let snapshot = await rig.simulator.snapshot()
        #expect(snapshot.registeredAppName == "CarWindow")
        #expect(snapshot.appHMITypes == ["NAVIGATION"])
        #expect(snapshot.video?.resolution == ImageResolution(width: 320, height: 192))
        // Haptic rectangles arrive in head-unit pixels: the renderer's buttons times the scale.
        let rendered = await rig.session.hapticRegions
        let zoomIn = try #require(rendered.first { $0.id == HapticRegionSet.regionID(for: .zoomIn) })
        let sent = try #require(snapshot.hapticData.last?.first { $0.id == zoomIn.id })
        #expect(sent.rect.x == (zoomIn.rect.x * 2).rounded() && sent.rect.width == (zoomIn.rect.width * 2).rounded())

        // The head unit's touch on the zoom-in button reaches the session as a control tap.
        let zoomBefore = await rig.session.camera.zoom
        let point = sent.rect.center
        try await rig.simulator.sendTouch(SDLTouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 100, x: point.x, y: point.y)]))
        try await rig.simulator.sendTouch(SDLTouchEvent(type: .end, touches: [.init(id: 0, timestamp: 160, x: point.x, y: point.y)]))
        #expect(await eventually { rig.forwarded.all.contains(.controlTapped(.zoomIn)) })
        #expect(await eventually { await rig.session.camera.zoom > zoomBefore + 0.99 })

        // Regions go out only when they change: a still map sends no more.
        try await Task.sleep(for: .milliseconds(800))
        let hapticSends = await rig.simulator.snapshot().hapticData.count
        try await Task.sleep(for: .milliseconds(800))
        #expect(await rig.simulator.snapshot().hapticData.count == hapticSends)
        #expect(await !rig.simulator.snapshot().appCapabilityUpdates.isEmpty, "OnAppCapabilityUpdated reported our sizes")

        // What the head unit received decodes, every picture, at the stream's size.
        let received = await rig.simulator.snapshot().videoUnits
        let sizes = try Self.decodedSizes(received)
        #expect(sizes.count == received.count && Set(sizes) == ["320,192"])
        await rig.close()
        #expect(await rig.simulator.snapshot().unregistered)
    }

    @Test func videoComesBackAfterTheHeadUnitDropsTheConnection() async throws {
        let rig = try await Self.rig(capability: Self.capability, reconnect: SDLReconnectPolicy(
            initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), maximumAttempts: 20))
        #expect(await eventually { await rig.session.state == .streaming })
        try #require(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 5 }))
        let before = await rig.simulator.snapshot()
        // The head unit goes away mid-stream (as under kill -9) and comes back on the same port.
        await rig.simulator.dropConnection()
        let unitsBefore = await rig.simulator.snapshot().videoUnitCount
        #expect(unitsBefore >= before.videoUnitCount)
        let reconnected = await rig.simulator.wait(timeout: hangGuard) { $0.connections == 2 && $0.video != nil }
        #expect(reconnected != nil, "the link reconnected and started the video service again")
        try #require(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= unitsBefore + 5 }),
                     "video flows again after the reconnect")
        let after = await rig.simulator.snapshot()
        #expect(await rig.session.state == .streaming)
        // Both halves decode on their own, and the new video service starts with an IDR.
        let units = after.videoUnits
        #expect(H264StreamRewriter.containsIDR(units[unitsBefore]))
        #expect(try Self.decodedSizes(Array(units[..<unitsBefore])).count == unitsBefore)
        #expect(try Self.decodedSizes(Array(units[unitsBefore...])).count == units.count - unitsBefore)
        await rig.close()
    }

    @Test func losingTheHMILevelSuspendsAndRegainingItResumesWithAnIDR() async throws {
        let rig = try await Self.rig(capability: Self.capability)
        #expect(await eventually { await rig.session.state == .streaming })
        _ = await rig.simulator.wait(timeout: hangGuard) { $0.videoUnitCount >= 2 }
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .background, videoStreamingState: .notStreamable))
        #expect(await eventually { await rig.session.state == .suspended })
        let ended = await rig.simulator.wait(timeout: hangGuard) { $0.videoEndCount >= 1 }
        #expect(ended != nil, "the video service was ended")
        let unitsBefore = await rig.simulator.snapshot().videoUnitCount
        try await Task.sleep(for: .seconds(1))
        let suspended = await rig.simulator.snapshot()
        #expect(suspended.videoWhileNotAllowed == 0, "no video once the service ended")
        #expect(suspended.videoUnitCount == unitsBefore, "nothing after the service ended")
        print("HMI level lost: \(suspended.videoInFlightWhenForbidden) units were on their way when it changed")
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        #expect(await eventually { await rig.session.state == .streaming })
        let resumed = await rig.simulator.wait(timeout: hangGuard) { $0.videoUnitCount > unitsBefore }
        let units = try #require(resumed).videoUnits
        // The first picture of the new video service decodes on its own: an IDR.
        #expect(H264StreamRewriter.containsIDR(units[unitsBefore]))
        #expect(try Self.decodedSizes(Array(units[unitsBefore...])).count == units.count - unitsBefore)
        await rig.close()
    }

    /// The session knows no formats: the link offers those of the head unit's mode that the
    /// session's size came from, a nested mode's own or those it inherits.
    @Test(arguments: [([VideoStreamingFormat.h264Raw] as [VideoStreamingFormat]?, VideoStreamingFormat.h264Raw),
                      (nil, .h264RTP)])
    func theVideoServiceIsOfferedTheFormatsOfTheChosenMode(nestedFormats: [VideoStreamingFormat]?,
                                                           expected: VideoStreamingFormat) async throws {
        // The top level has no size, so the session streams the nested mode.
        let capability = VideoStreamingCapability(
            maxBitrate: 500, supportedFormats: [.h264RTP], preferredFPS: 15,
            additionalVideoStreamingCapabilities: [VideoStreamingCapability(
                preferredResolution: ImageResolution(width: 640, height: 384), supportedFormats: nestedFormats, scale: 2)])
        let rig = try await Self.rig(capability: capability)
        let started = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.video != nil })
        #expect(started.video?.format == expected)
        #expect(started.video?.resolution == ImageResolution(width: 320, height: 192))
        #expect(!started.videoRequests.isEmpty && started.videoRequests.allSatisfy { $0.candidate.format == expected },
                "\(started.videoRequests.map(\.candidate))")
        await rig.close()
    }

    @Test func aResizeRestartsTheVideoServiceAtTheNewSize() async throws {
        let rig = try await Self.rig(capability: Self.capability)
        #expect(await eventually { await rig.session.state == .streaming })
        _ = await rig.simulator.wait(timeout: hangGuard) { $0.videoUnitCount >= 2 }
        try await rig.simulator.sendCapabilityUpdate(VideoStreamingCapability(
            preferredResolution: ImageResolution(width: 480, height: 320)))
        let restarted = await rig.simulator.wait(timeout: hangGuard) {
            $0.video?.resolution == ImageResolution(width: 240, height: 160) && $0.videoEndCount >= 1
        }
        #expect(restarted != nil)
        #expect(await rig.session.stream?.encodedSize == VideoSize(width: 240, height: 160))
        #expect(rig.forwarded.all.contains { if case .resized = $0 { true } else { false } })
        let unitsAtRestart = await rig.simulator.snapshot().videoUnitCount
        #expect(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= unitsAtRestart + 3 }))
        let after = await rig.simulator.snapshot().videoUnits
        let sizes = try Self.decodedSizes(after)
        #expect(sizes.count == after.count)
        #expect(sizes.first == "320,192" && sizes.last == "240,160")
        await rig.close()
    }
}

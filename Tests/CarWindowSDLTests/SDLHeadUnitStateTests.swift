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

/// What SDL Core 8.2.0 showed the link doing wrong, replayed against the head-unit simulator,
/// which learnt Core's behaviour: NAKs naming the size, policies that block RPCs by HMI level,
/// state lost with a registration or with NONE, integer touches, its own EndService.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SDLHeadUnitStateTests {
    typealias Rig = SDLProjectionLinkTests.Rig

    /// A capability like the one SDL Core's HMI gave: a preferred size and nested modes, two of
    /// them one size at two scales.
    static let nestedCapability = VideoStreamingCapability(
        preferredResolution: ImageResolution(width: 800, height: 480), maxBitrate: 500, supportedFormats: [.h264Raw],
        hapticSpatialDataSupported: true, diagonalScreenSize: 8, pixelPerInch: 117, scale: 1, preferredFPS: 15,
        additionalVideoStreamingCapabilities: [
            VideoStreamingCapability(preferredResolution: ImageResolution(width: 320, height: 200), scale: 1),
            VideoStreamingCapability(preferredResolution: ImageResolution(width: 480, height: 320), scale: 1),
            VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 380), scale: 1.5),
            VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 380), scale: 2),
        ])

    static let small = VideoStreamingCapability(
        preferredResolution: ImageResolution(width: 640, height: 384), maxBitrate: 500,
        supportedFormats: [.h264Raw], hapticSpatialDataSupported: true, scale: 2, preferredFPS: 15)

    // MARK: Fault 1: a refused size

    @Test func aRefusedSizeWalksTheOtherModesOfTheCapability() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.nestedCapability) {
            $0.rejectedResolutions = [ImageResolution(width: 800, height: 480), ImageResolution(width: 320, height: 200)]
        }
        // Like SDL Core, the head unit closes the app (NONE) after each refusal; its user opens
        // it again, and the app goes on from the next size, never back to a refused one.
        var activations = 0
        #expect(await rig.simulator.wait(timeout: hangGuard) { !$0.videoRequests.isEmpty } != nil)
        while await rig.session.state != .streaming, activations < 5 {
            let closed = await rig.simulator.wait(timeout: hangGuard) { $0.video != nil || $0.hmiStatus?.hmiLevel == SDLHMILevel.none }
            guard closed?.video == nil else { break }
            activations += 1
            try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, audioStreamingState: "AUDIBLE", videoStreamingState: .streamable))
        }
        #expect(await eventually { await rig.session.state == .streaming })
        #expect(activations == 2)
        let asked = await rig.simulator.snapshot().videoRequests
        #expect(asked.map(\.candidate.resolution.description) == ["800x480", "320x200", "480x320"])
        #expect(asked.map(\.accepted) == [false, false, true])
        #expect(await rig.link.connection.refusedVideoResolutions.count == 2)
        #expect(await rig.session.stream?.encodedSize == VideoSize(width: 480, height: 320))
        #expect(await rig.link.videoFailure == nil)
        try #require(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 3 }))
        let units = await rig.simulator.snapshot().videoUnits
        #expect(Set(try SDLProjectionLinkTests.decodedSizes(units)) == ["480,320"])
        await rig.close()
    }

    @Test func whenEverySizeIsRefusedTheLinkSaysWhatWasTried() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.nestedCapability) {
            $0.rejectedResolutions = [ImageResolution(width: 800, height: 480), ImageResolution(width: 320, height: 200),
                                      ImageResolution(width: 480, height: 320), ImageResolution(width: 532, height: 252),
                                      ImageResolution(width: 400, height: 190)]
            // Refusals only: the app stays open, so the whole walk happens at once.
            $0.closesAppOnRefusedVideo = false
        }
        #expect(await eventually { await rig.link.videoFailure != nil })
        let failure = try #require(await rig.link.videoFailure)
        let message = SDLProjectionLink.noVideoMessage(failure)
        for size in ["800x480", "320x200", "480x320", "532x252", "400x190"] {
            #expect(message.contains(size), "\(message)")
        }
        #expect(await rig.session.state != .streaming)
        await rig.close()
    }

    // MARK: Fault 2: OnAppCapabilityUpdated

    @Test func theAppCapabilityWaitsForALevelThatAllowsItAndListsEachModeOnceWithItsFields() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.nestedCapability) {
            $0.initialStatuses = [SDLHMIStatus(hmiLevel: .none, videoStreamingState: .notStreamable)]
        }
        #expect(await rig.simulator.wait(timeout: hangGuard) { $0.registeredAppName != nil } != nil)
        try await Task.sleep(for: .milliseconds(500))
        #expect(await rig.simulator.snapshot().appCapabilityUpdates.isEmpty, "nothing is sent in NONE")

        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        let first = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.appCapabilityUpdates.count == 1 })
        let reported = try Self.reportedCapability(first.appCapabilityUpdates[0])
        let modes = reported.allCapabilities
        #expect(modes.map { "\($0.preferredResolution?.description ?? "-")@\($0.scale ?? 1)" }
            == ["800x480@1.0", "320x200@1.0", "480x320@1.0", "800x380@1.5", "800x380@2.0"])
        #expect(reported.pixelPerInch == 117 && reported.diagonalScreenSize == 8 && reported.maxBitrate == 500)
        #expect(reported.supportedFormats == [.h264Raw] && reported.hapticSpatialDataSupported == true)

        // The app's buttons and haptic rectangles too, before the level changes: a request on its
        // way when the head unit changes the level would be blocked by a policy the app could not
        // know yet (seen under load: SendHapticData arriving just after BACKGROUND).
        #expect(await rig.simulator.wait(timeout: hangGuard) {
            $0.buttonSubscriptions.count == 11 && !$0.hapticData.isEmpty
        } != nil)
        // BACKGROUND and back: the head unit still holds it, nothing is repeated.
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .background, videoStreamingState: .notStreamable))
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        try await Task.sleep(for: .milliseconds(500))
        #expect(await rig.simulator.snapshot().appCapabilityUpdates.count == 1)
        // Leaving FULL forgot the rectangles: wait for them to be sent again before NONE.
        #expect(await rig.simulator.wait(timeout: hangGuard) { $0.hapticData.count >= 2 } != nil)
        // NONE is the app closed: back in FULL it is sent again.
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .none, videoStreamingState: .notStreamable))
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        #expect(await rig.simulator.wait(timeout: hangGuard) {
            $0.appCapabilityUpdates.count == 2 && $0.buttonSubscriptions.count == 11 && $0.hapticData.count >= 3
        } != nil)
        // A resize changes what the app can draw: the new modes are reported.
        try await rig.simulator.sendCapabilityUpdate(VideoStreamingCapability(
            preferredResolution: ImageResolution(width: 480, height: 320), additionalVideoStreamingCapabilities: []))
        let resized = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.appCapabilityUpdates.count == 3 })
        #expect(try Self.reportedCapability(resized.appCapabilityUpdates[2]).allCapabilities.compactMap(\.preferredResolution)
            == [ImageResolution(width: 480, height: 320)])
        let blocked = await rig.simulator.snapshot().policyBlocked
        #expect(blocked.isEmpty, "\(blocked)")
        await rig.close()
    }

    static func reportedCapability(_ json: String) throws -> VideoStreamingCapability {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let app = try #require(object["appCapability"] as? [String: Any])
        #expect(app["appCapabilityType"] as? String == "VIDEO_STREAMING")
        let video = try #require(app["videoStreamingCapability"])
        return try VideoStreamingCapability(json: JSONSerialization.data(withJSONObject: video))
    }

    // MARK: Fault 3: state the head unit lost

    @Test func rectanglesCapabilityAndButtonsAreSentAgainAfterAReconnectAndAfterNone() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small, reconnect: SDLReconnectPolicy(
            initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), maximumAttempts: 20))
        let everything: @Sendable (HeadUnitSimulator.Snapshot) -> Bool = {
            !$0.hapticData.isEmpty && !$0.appCapabilityUpdates.isEmpty && $0.buttonSubscriptions.count == 11
        }
        #expect(await eventually { await rig.session.state == .streaming })
        let first = try #require(await rig.simulator.wait(timeout: hangGuard, until: everything))

        // A new head-unit session (Core restarted) holds nothing of the old one.
        await rig.simulator.dropConnection()
        let again = await rig.simulator.wait(timeout: hangGuard) {
            $0.connections == 2 && $0.hapticData.count > first.hapticData.count
                && $0.appCapabilityUpdates.count > first.appCapabilityUpdates.count && $0.buttonSubscriptions.count == 11
        }
        #expect(again != nil, "the rectangles, capability and buttons were sent to the new head-unit session")

        // Back from NONE on the same connection, the rectangles are sent again.
        let before = await rig.simulator.snapshot()
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .none, videoStreamingState: .notStreamable))
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        #expect(await rig.simulator.wait(timeout: hangGuard) {
            $0.hapticData.count > before.hapticData.count && $0.appCapabilityUpdates.count > before.appCapabilityUpdates.count
        } != nil)
        let blocked = await rig.simulator.snapshot().policyBlocked
        #expect(blocked.isEmpty, "\(blocked)")
        await rig.close()
    }

    // MARK: Fault 4: video after losing FULL

    /// Deactivated and activated again and again while streaming: no picture arrives after the
    /// app ended its video service, and each return to FULL streams again from an IDR.
    @Test func noVideoIsSentOnceTheLevelForbidsIt() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small)
        #expect(await eventually { await rig.session.state == .streaming })
        for round in 1...6 {
            let units = await rig.simulator.snapshot().videoUnitCount
            try #require(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= units + 2 }),
                         "round \(round) streams")
            try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: round.isMultiple(of: 2) ? .none : .background,
                                                              videoStreamingState: .notStreamable))
            // The app ends the service in BACKGROUND; in NONE the head unit does, as Core does,
            // and the app acknowledges.
            #expect(await rig.simulator.wait(timeout: hangGuard) {
                $0.video == nil && $0.videoEndCount + $0.videoEndServiceACKs >= round
            } != nil)
            try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, videoStreamingState: .streamable))
        }
        let seen = await rig.simulator.snapshot()
        // Each round ended the service once: by the app, or in NONE by whichever side was first.
        #expect(seen.videoEndServiceACKs + seen.videoEndCount >= 6, "\(seen.videoEndServiceACKs) ACKs, \(seen.videoEndCount) ends")
        #expect(seen.videoWhileNotAllowed == 0)
        print("6 deactivations: \(seen.videoInFlightWhenForbidden) units were on their way when the level changed")
        await rig.close()
    }

    // MARK: Buttons

    @Test func navigationButtonsTheHeadUnitHasMoveTheCamera() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small) {
            $0.buttons = [.navZoomIn, .navPanRight, .navHeadingToggle, SDLButtonName(rawValue: "PRESET_1")]
        }
        #expect(await eventually { await rig.session.state == .streaming })
        let subscribed = await rig.simulator.wait(timeout: hangGuard) { $0.buttonSubscriptions.count == 3 }
        #expect(subscribed?.buttonSubscriptions == [.navZoomIn, .navPanRight, .navHeadingToggle])
        #expect(subscribed?.subscribeButtonRequests.contains(SDLButtonName(rawValue: "PRESET_1")) == false)

        let zoom = await rig.session.camera.zoom
        #expect(try await rig.simulator.pressButton(.navZoomIn))
        #expect(await eventually { rig.forwarded.all.contains(.commandPerformed(.zoomIn)) })
        #expect(await eventually { await rig.session.camera.zoom > zoom + 0.99 })

        let longitude = await rig.session.camera.center.longitude
        #expect(try await rig.simulator.pressButton(.navPanRight))
        #expect(await eventually { await rig.session.camera.center.longitude > longitude })
        // A button the app did not subscribe to never reaches it.
        #expect(try await rig.simulator.pressButton(.navZoomOut) == false)
        await rig.close()
    }

    /// A head unit with neither touch nor haptic data: the app rings its own focus, the head
    /// unit's keys move it and OK selects.
    @Test func withoutTouchOrHapticsTheAppManagesFocusFromTheKeys() async throws {
        var capability = Self.small
        capability.hapticSpatialDataSupported = false
        let rig = try await SDLProjectionLinkTests.rig(capability: capability) {
            $0.touchAvailable = false
            $0.buttons = [.ok, .seekLeft, .tuneDown, .navPanUp, .navPanDown, .navPanLeft, .navPanRight, .navZoomIn]
        }
        #expect(await eventually { await rig.session.state == .streaming })
        // The media keys are not asked for: SDL Core refuses them to a navigation app.
        let subscribed = await rig.simulator.wait(timeout: hangGuard) { $0.buttonSubscriptions.count == 6 }
        #expect(subscribed?.buttonSubscriptions == [.ok, .navPanUp, .navPanDown, .navPanLeft, .navPanRight, .navZoomIn])
        #expect(await eventually { await rig.session.isFocusEnabled })
        #expect(await eventually { await rig.session.focusedRegionID == HapticRegionSet.regionID(for: .zoomIn) })

        #expect(try await rig.simulator.pressButton(.navPanDown))
        #expect(await eventually { await rig.session.focusedRegionID == HapticRegionSet.regionID(for: .zoomOut) })
        let zoom = await rig.session.camera.zoom
        #expect(try await rig.simulator.pressButton(.ok))
        #expect(await eventually { rig.forwarded.all.contains(.controlTapped(.zoomOut)) })
        #expect(await eventually { await rig.session.camera.zoom < zoom - 0.99 })
        // The map key still moves the map in focus mode.
        #expect(try await rig.simulator.pressButton(.navZoomIn))
        #expect(await eventually { rig.forwarded.all.contains(.commandPerformed(.zoomIn)) })
        #expect(await rig.simulator.snapshot().hapticData.isEmpty, "no haptic data to a head unit that takes none")
        await rig.close()
    }

    @Test func aTouchScreenNeedsNoFocusOfTheApps() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small) {
            $0.buttons = [.ok, .tuneDown, .navZoomIn]
        }
        #expect(await eventually { await rig.session.state == .streaming })
        let subscribed = await rig.simulator.wait(timeout: hangGuard) { $0.buttonSubscriptions.count == 1 }
        #expect(subscribed?.buttonSubscriptions == [.navZoomIn])
        #expect(subscribed?.subscribeButtonRequests == [.navZoomIn], "neither OK nor a media key on a touch screen")
        #expect(await !rig.session.isFocusEnabled)
        await rig.close()
    }

    // MARK: Day and night, distraction

    @Test func theMapFollowsTheCarsAmbientLightUntilTheEngineSaysOtherwise() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small)
        #expect(await eventually { await rig.session.state == .streaming })
        #expect(await rig.simulator.wait(timeout: hangGuard) { $0.headLampSubscribed } != nil)
        #expect(await rig.session.appearance == .day)
        // Each reading is sent once the head unit holds the subscription: a head unit sends
        // vehicle data only to a subscribed app, and on a loaded machine the app may have
        // reconnected and be subscribing again when the test sends.
        func send(_ light: SDLAmbientLight) async -> Bool {
            await eventually { (try? await rig.simulator.sendAmbientLight(light)) == true }
        }
        #expect(await send(.night))
        #expect(await eventually { await rig.session.appearance == .night })
        #expect(await send(.twilight1))
        #expect(await eventually { await rig.session.appearance == .day })
        #expect(await send(.unknown))
        #expect(await send(.twilight4))
        #expect(await eventually { await rig.session.appearance == .night })

        // The engine takes over: the sensor no longer switches the style.
        await rig.link.setFollowsHeadUnitDayNight(false)
        await rig.session.setAppearance(.day)
        #expect(await send(.night))
        try await Task.sleep(for: .milliseconds(300))
        #expect(await rig.session.appearance == .day)

        try await rig.simulator.sendDriverDistraction(true)
        #expect(await eventually { await rig.link.connection.isDriverDistracted })
        await rig.close()
    }

    @Test func theLabelsFollowTheHeadUnitsLanguageUntilTheEngineSaysOtherwise() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small) { $0.displayLanguage = "SV-SE" }
        #expect(await eventually { await rig.session.labelLanguage == LabelLanguage("sv") }, "the registration's language")
        #expect(await eventually { await rig.session.state == .streaming })
        try await rig.simulator.sendLanguageChange(to: "DE-DE")
        #expect(await eventually { await rig.session.labelLanguage == LabelLanguage("de") })
        // A code the map cannot use: the style's own names, with a warning.
        try await rig.simulator.sendLanguageChange(to: "KLINGON")
        #expect(await eventually { await rig.session.labelLanguage == nil })

        // The engine takes over: the head unit no longer switches the labels.
        await rig.link.setFollowsHeadUnitLanguage(false)
        await rig.session.setLabelLanguage(LabelLanguage("fi"))
        try await rig.simulator.sendLanguageChange(to: "EN-US")
        try await Task.sleep(for: .milliseconds(300))
        #expect(await rig.session.labelLanguage == LabelLanguage("fi"))
        // On again: the head unit's current language at once.
        await rig.link.setFollowsHeadUnitLanguage(true)
        #expect(await eventually { await rig.session.labelLanguage == LabelLanguage("en") })
        await rig.close()
    }

    @Test func aPolicyWithoutVehicleDataLeavesDayAndNightToTheEngine() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small) { $0.grantsVehicleData = false }
        #expect(await eventually { await rig.session.state == .streaming })
        #expect(await rig.simulator.wait(timeout: hangGuard) { !$0.hapticData.isEmpty } != nil)
        try await Task.sleep(for: .milliseconds(300))
        let seen = await rig.simulator.snapshot()
        // OnPermissionsChange listed no vehicle data: the app does not ask (SDL Core would log
        // "Request is blocked by policies" for each try).
        #expect(seen.subscribeVehicleDataRequests == 0)
        #expect(seen.policyBlocked.isEmpty)
        #expect(try await rig.simulator.sendAmbientLight(.night) == false)
        #expect(await rig.session.appearance == .day)
        await rig.close()
    }

    // MARK: Manners

    @Test func theLinkSpeaksAsCoreExpects() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: Self.small)
        #expect(await eventually { await rig.session.state == .streaming })
        // The first StartService carries a version 5 header (Core warns about version 1).
        #expect(await rig.simulator.snapshot().firstStartServiceHeaderVersion == 5)
        // Core may end the video service itself: the app acknowledges and stops sending.
        try await rig.simulator.endVideoService()
        #expect(await rig.simulator.wait(timeout: hangGuard) { $0.videoEndServiceACKs == 1 } != nil)
        #expect(await eventually { await rig.session.state == .suspended })
        let units = await rig.simulator.snapshot().videoUnitCount
        try await Task.sleep(for: .milliseconds(300))
        #expect(await rig.simulator.snapshot().videoUnitCount == units)
        // Closing unregisters and ends the RPC service before the socket goes.
        await rig.close()
        let closed = await rig.simulator.snapshot()
        #expect(closed.unregistered && closed.rpcEndServiceCount == 1)
    }
}

import Foundation
import Logging
import CarWindowVideoCore
import CarWindowSinks
import CarWindowProjection
import CarWindowStyle

/// Sends a session's access units over an ``SDLConnection``'s video service.
///
/// An ``SDLProjectionLink`` adds one to its session by itself; make one only to drive an
/// ``SDLConnection`` without a link (with ``SDLConnection/Configuration/startsVideoAutomatically``).
///
/// Units are queued without waiting; under back-pressure the connection drops whole units and
/// ``needsKeyframe`` makes the session's next picture an IDR, so the head unit's stream stays
/// decodable. Units sent while no video service is open are dropped (the link suspends the
/// session then, so few are).
///
/// - Important: Not thread-safe, like every sink: the session that owns it calls it.
public final class SDLVideoSink: VideoSink {
    /// The connection the video goes over.
    public let connection: SDLConnection

    /// A sink sending over `connection`.
    public init(connection: SDLConnection) {
        self.connection = connection
    }

    /// Queues `unit` for the video service; never throws: a drop raises ``needsKeyframe``.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        _ = connection.send(unit)
    }

    /// Whether the connection dropped a unit (or a video service just opened), so the next
    /// picture must be an IDR.
    public var needsKeyframe: Bool { connection.needsKeyframe }

    /// Does nothing: the sink holds nothing of its own, and whoever made the connection stops it
    /// (the link, in ``SDLProjectionLink/stop()``).
    public func close() {}
}

/// Projects a `ProjectionSession` into a SmartDeviceLink head unit: the head unit's capability
/// chooses the stream size, its HMI level starts, suspends and resumes the video, its touches
/// move the map, and the session's haptic regions go back as SendHapticData.
///
/// Binding a session to a head unit is one call; the link makes its ``SDLConnection`` and adds
/// the head unit to the session's outputs, beside the session's own sink if it has one (a
/// recording, say), and the outputs fail independently as in a `TeeSink`:
///
/// ```swift
/// let session = ProjectionSession(configuration: ProjectionSessionConfiguration(
///     tiles: tiles, dayStyle: day, fonts: fonts, camera: camera), context: context)
/// let link = SDLProjectionLink(session: session,
///                              connection: SDLConnection.Configuration(appName: "Navigation", appID: "nav-1"),
///                              transport: { SDLTCPTransport(host: "127.0.0.1", port: 12345) })
/// let events = session.events
/// Task { for await event in events { /* taps, errors, ... */ } }
/// try await link.run()        // until the head unit is gone for good or stop() is called
/// await session.close()
/// ```
///
/// The link drives the session's life cycle: make it before the session streams, and leave
/// `connect`, `startStreaming`, `suspend`, `resume` and `updateCapability` to it. The engine
/// sets the camera, vehicle, route and appearance as usual.
///
/// ```
/// head unit --capability--> session.connect / updateDisplay (resize: suspend, restart video, resume)
///           --HMI FULL/LIMITED, STREAMABLE--> StartService(video) --ACK--> startStreaming / resume (IDR)
///           --HMI lost / EndService--> suspend
///           --OnTouchEvent--> session.handleTouch
/// session   --access units--> the head unit's output --> connection's bounded video queue
///           --haptic regions--> SendHapticData (only when hapticSpatialDataSupported)
/// ```
///
/// - Important: Thread-safe: it is an actor.
public actor SDLProjectionLink {
    /// The session the head unit shows.
    public nonisolated let session: ProjectionSession
    /// The connection to the head unit, made by the link. Its ``SDLConnection/events`` may be
    /// iterated besides the link (HMI status, reconnects); leave starting and stopping it and
    /// its video service to the link.
    public nonisolated let connection: SDLConnection
    /// Plays the engine's voice prompts on the head unit's audio service
    /// (``SDLPromptPlayer/play(_:)``).
    public nonisolated let prompts: SDLPromptPlayer
    /// The capability used when the head unit does not answer GetSystemCapability:
    /// SmartDeviceLink's fallback is H.264/RAW at the screen size, haptics off.
    public let fallbackCapability: VideoStreamingCapability

    /// The head unit's place among the session's outputs.
    private nonisolated let outputID: Int
    /// The capability the session's display came from, merged as the session merges updates:
    /// the formats to offer the video service and the nested modes stay here, since the session
    /// holds only the mode it streams.
    private var capabilityInForce: VideoStreamingCapability?
    /// The head unit's mode behind each size offered in the last video start, so the ACK's
    /// size is read in the right mode's scale.
    private var offeredModes: [ImageResolution: HeadUnitDisplay] = [:]
    /// Whether the map follows the car's ambient light sensor: night style in the dark and the
    /// darker twilights, day style in daylight (see ``setFollowsHeadUnitDayNight(_:)``).
    public private(set) var followsHeadUnitDayNight = true
    /// Whether the map's labels follow the head unit's display language (see
    /// ``setFollowsHeadUnitLanguage(_:)``).
    public private(set) var followsHeadUnitLanguage = true
    /// Why the video service could not be opened the last time it was tried: every size and
    /// format was refused (nil once one is accepted).
    public private(set) var videoFailure: SDLConnectionError?
    /// Why the head unit's capability gives no stream the session can draw and encode (a screen
    /// of 0x0 or 8192x8192, say), so video cannot start until it sends another; nil once one fits.
    public private(set) var displayFailure: ProjectionSessionError?
    /// Why the connection to the head unit was last lost (nil until it is): when ``run()``
    /// returns because reconnecting gave up, this says what ended it.
    public private(set) var lastDisconnection: SDLConnectionError?
    /// The appearance the car's light asks for and the link has not handed to the session yet.
    private var wantedAppearance: MapAppearance?
    /// Hands ``wantedAppearance`` to the session, one switch after the other, while the link
    /// goes on with the head unit's events; nil when idle.
    private var appearanceFollower: Task<Void, Never>?
    /// The label language the head unit asks for and the link has not handed to the session
    /// yet: `.some(nil)` for a language code the map cannot use (its own names then).
    private var wantedLanguage: LabelLanguage??
    private var languageFollower: Task<Void, Never>?
    private var videoAllowed = false
    private var videoOpen = false
    private var startingVideo = false
    private let logger = Logger(label: "carwindow.link")

    /// Binds `session` to the head unit that `transport` reaches (called again on every
    /// reconnect): makes the connection and adds the head unit to the session's outputs.
    /// Nothing is sent before ``run()``.
    ///
    /// The link opens the video service itself, with the sizes the session can draw, when the
    /// head unit allows video: `configuration`'s `videoCandidates` and
    /// `startsVideoAutomatically` are not used. Everything else in it (names, reconnecting,
    /// queue limits, timeouts) applies.
    public init(session: ProjectionSession, connection configuration: SDLConnection.Configuration,
                transport: @escaping @Sendable () -> any SDLTransport,
                fallbackCapability: VideoStreamingCapability = VideoStreamingCapability(
                    preferredResolution: ImageResolution(width: 800, height: 480), supportedFormats: [.h264Raw],
                    hapticSpatialDataSupported: false)) {
        var configuration = configuration
        configuration.videoCandidates = []
        configuration.startsVideoAutomatically = false
        let connection = SDLConnection(configuration: configuration, transport: transport)
        self.session = session
        self.connection = connection
        self.prompts = SDLPromptPlayer(connection: connection)
        self.fallbackCapability = fallbackCapability
        outputID = session.addOutput { _ in SDLVideoSink(connection: connection) }
    }

    deinit {
        session.removeOutput(outputID)
    }

    /// Connects and runs until the connection stops for good (``stop()``, or reconnecting gave
    /// up); then stops the session and takes the head unit out of its outputs. Throws when the
    /// first connection fails (``run()`` may then be called again).
    ///
    /// The session's events are not consumed: the engine iterates `ProjectionSession.events`
    /// itself, and sees every event the link sees.
    public func run() async throws(SDLConnectionError) {
        // Both streams are taken before anything can happen, so no event is missed.
        let connectionEvents = connection.events
        let sessionEvents = session.events
        await connection.setFollowsAmbientLight(followsHeadUnitDayNight)
        try await connection.start()
        let forwarding = Task {
            for await event in sessionEvents {
                if case .hapticRegions(let regions) = event { await self.sendHaptics(regions) }
            }
        }
        for await event in connectionEvents {
            await handle(event)
            if event == .stopped { break }
        }
        await session.stop()
        session.removeOutput(outputID)
        forwarding.cancel()
    }

    /// Ends the video service, unregisters the app, closes the connection and stops the session,
    /// which closes its outputs (an MP4 recording gets its index) before this returns;
    /// ``run()`` then returns. Call `ProjectionSession.close()` afterwards to end the session's
    /// events too. Final: the connection cannot be started again.
    public func stop() async {
        wantedAppearance = nil
        wantedLanguage = nil
        await appearanceFollower?.value
        await languageFollower?.value
        await prompts.stop()
        await connection.stop()
        await session.stop()
        session.removeOutput(outputID)
    }

    /// Turns following the car's ambient light on or off. Off, the engine's own
    /// `ProjectionSession.setAppearance(_:)` calls decide alone (a user's "always dark" setting,
    /// say); on, the next change of the sensor switches the style again.
    public func setFollowsHeadUnitDayNight(_ follows: Bool) async {
        followsHeadUnitDayNight = follows
        if !follows {
            // A switch the sensor asked for before this must not land after the engine's own.
            wantedAppearance = nil
            await appearanceFollower?.value
        }
        await connection.setFollowsAmbientLight(follows)
    }

    /// Turns following the head unit's display language on or off. On (the default), the map's
    /// labels are shown in the language the head unit registered the app in and switch when it
    /// changes (`ProjectionSession.setLabelLanguage(_:)`); off, the engine's own calls decide.
    public func setFollowsHeadUnitLanguage(_ follows: Bool) async {
        followsHeadUnitLanguage = follows
        if follows {
            followLanguage(await connection.headUnitLanguage.displayLanguage)
        } else {
            wantedLanguage = nil
            await languageFollower?.value
        }
    }

    /// Hands the head unit's display language to the session as ``follow(_:)`` hands the light:
    /// one switch after the other, the last reading winning, without holding up the events.
    private func followLanguage(_ code: String?) {
        guard followsHeadUnitLanguage, let code else { return }
        let language = LabelLanguage(code)
        if language == nil { logger.warning("the head unit's language \"\(code)\" is not a language code; labels keep the style's names") }
        wantedLanguage = .some(language)
        guard languageFollower == nil else { return }
        languageFollower = Task {
            while let next = self.takeWantedLanguage() {
                await self.session.setLabelLanguage(next)
            }
        }
    }

    private func takeWantedLanguage() -> LabelLanguage?? {
        guard let next = wantedLanguage else {
            languageFollower = nil
            return nil
        }
        wantedLanguage = nil
        return next
    }

    /// Switches the session's style for the car's light without holding up the head unit's
    /// other events (a touch, the video starting) while the new style's tiles are laid out: a
    /// switch takes a second on a slow machine. Readings that come meanwhile leave only the last
    /// one to switch to.
    private func follow(_ appearance: MapAppearance) {
        wantedAppearance = appearance
        guard appearanceFollower == nil else { return }
        appearanceFollower = Task {
            while let next = self.takeWantedAppearance() {
                await self.session.setAppearance(next)
            }
        }
    }

    /// The appearance to switch to next; nil ends the follower (in the same turn, so a
    /// reading after it starts a new one).
    private func takeWantedAppearance() -> MapAppearance? {
        guard let next = wantedAppearance else {
            appearanceFollower = nil
            return nil
        }
        wantedAppearance = nil
        return next
    }

    // MARK: Head unit -> session

    func handle(_ event: SDLConnectionEvent) async {
        switch event {
        case .capabilityChanged(let capability):
            await capabilityChanged(capability)
        case .videoAllowedChanged(let allowed):
            videoAllowed = allowed
            if allowed {
                await startVideoIfReady()
            } else {
                // The connection ends the video service itself; nothing may be sent meanwhile.
                await session.suspend()
            }
        case .videoStarted(let parameters):
            await videoStarted(parameters)
        case .videoStopped, .videoFailed, .disconnected:
            videoOpen = false
            await session.suspend()
            if case .disconnected(let error) = event { lastDisconnection = error }
            if case .videoFailed(let error) = event {
                videoFailure = error
                logger.warning("the head unit refused every video format and size: \(error)")
            }
        case .touch(let touch):
            await session.handleTouch(touch)
        case .buttonPressed(let press):
            await buttonPressed(press.buttonName)
        case .registered:
            await updateFocusAndButtons()
            followLanguage(await connection.headUnitLanguage.displayLanguage)
        case .languageChanged(_, let displayLanguage):
            followLanguage(displayLanguage)
        case .keyframeNeeded:
            await session.requestIDR()
        case .ambientLightChanged(let light):
            if followsHeadUnitDayNight, let dark = light.isDark { follow(dark ? .night : .day) }
        case .securityFailed(let error):
            // The connection closed what was protected; a stream that was running starts again
            // with a new handshake, once (a failure while starting is the start's to report).
            logger.warning("security layer failed: \(error)")
            if videoOpen, await connection.video == nil {
                videoOpen = false
                await session.suspend()
                await startVideoIfReady()
            }
        case .hmiStatusChanged, .audioAllowedChanged, .driverDistractionChanged, .reconnecting,
             .reconnected, .stopped, .serviceProtected:
            break
        }
    }

    func capabilityChanged(_ capability: VideoStreamingCapability) async {
        await updateFocusAndButtons()
        let display = capability.headUnitDisplay
        // Already in force (taken from the connection when streaming was allowed first).
        if await session.display == display, capabilityInForce == capability { return }
        switch await session.state {
        case .disconnected:
            do {
                try await session.connect(display: display)
            } catch {
                displayFailure = error
                logger.warning("no stream for the head unit's capability: \(error)")
                return
            }
            displayFailure = nil
            capabilityInForce = capability
            await reportSupportedModes()
            await startVideoIfReady()
        case .ready, .streaming, .suspended:
            let before = await session.stream?.encodedSize
            // Never change size mid-stream: pause, restart at the new size, resume on the ACK.
            let wasOpen = videoOpen
            if wasOpen { await session.suspend() }
            do {
                try await session.updateDisplay(display)
            } catch {
                logger.warning("capability update ignored: \(error)")
                if wasOpen { try? await session.resume() }
                return
            }
            capabilityInForce = capabilityInForce.map { capability.filling(from: $0) } ?? capability
            await reportSupportedModes()
            let after = await session.stream?.encodedSize
            if before != after, wasOpen {
                videoOpen = false
                await startVideo()
            } else if wasOpen {
                try? await session.resume()
            }
        case .stopping:
            break
        }
    }

    func videoStarted(_ parameters: SDLVideoServiceParameters) async {
        videoOpen = true
        videoFailure = nil
        if let stream = await session.stream {
            // The size offered may be another of the head unit's modes than the session's (the
            // first was refused), and the ACK's size is authoritative: the display is that size
            // times the mode's scale.
            var mode = parameters.requestedResolution.flatMap { offeredModes[$0] } ?? stream.display
            mode.alternatives = nil
            let granted = parameters.resolution.videoSize
            if let chosen = mode.chooseStreamResolution(for: session.configuration.supportedSizes).stream,
               chosen.encodedSize != granted {
                mode.size = chosen.acknowledged(width: granted.width, height: granted.height).displaySize
            }
            if mode != stream.display {
                do {
                    try await session.updateDisplay(mode)
                } catch {
                    logger.warning("the head unit acknowledged \(parameters.resolution), which the session cannot draw: \(error)")
                }
            }
        }
        switch await session.state {
        case .ready:
            do { try await session.startStreaming() } catch { logger.warning("streaming did not start: \(error)") }
        case .suspended:
            do { try await session.resume() } catch { logger.warning("streaming did not resume: \(error)") }
        case .streaming:
            await session.requestIDR()
        case .disconnected, .stopping:
            break
        }
    }

    func startVideoIfReady() async {
        // The connection's own state, not only the events handled so far: a start made for an
        // earlier event may have opened the service while later events queued up.
        guard videoAllowed, !videoOpen, await connection.video == nil else { return }
        if await session.state == .disconnected {
            // The HMI level often arrives before the capability event: take the capability the
            // connection already holds, and the fallback only when the head unit gave none.
            let capability = await connection.capability ?? fallbackCapability
            do {
                try await session.connect(display: capability.headUnitDisplay)
            } catch {
                logger.warning("no stream for the fallback capability: \(error)")
                return
            }
            capabilityInForce = capability
            await reportSupportedModes()
        }
        switch await session.state {
        case .ready, .suspended:
            await startVideo()
        case .streaming:
            // Started by someone else while no video service was open: nothing reached the head
            // unit. Pause until the service is open; its ACK resumes the stream with an IDR.
            await session.suspend()
            await startVideo()
        case .disconnected, .stopping:
            break
        }
    }

    /// Starts (or restarts) the video service: the session's size first, then every other mode
    /// of the head unit's capability (nested ones included, in its order) that the session can
    /// draw, each in its own H.264 formats. A NAK naming the size moves on to the next mode, one
    /// naming the format to the next format, as the iOS library walks them; the ACK's mode
    /// becomes the session's (``videoStarted(_:)``).
    func startVideo() async {
        guard !startingVideo, let stream = await session.stream else { return }
        startingVideo = true
        defer { startingVideo = false }
        var candidates: [SDLVideoCandidate] = []
        var modes: [ImageResolution: HeadUnitDisplay] = [:]
        func offer(_ mode: HeadUnitDisplay, encodedSize: VideoSize, formats: [VideoStreamingFormat]) {
            let resolution = ImageResolution(encodedSize)
            guard modes[resolution] == nil else { return }
            modes[resolution] = mode
            let usable = formats.filter { $0.codec == .h264 && ($0.protocol == .raw || $0.protocol == .rtp) }
            candidates += (usable.isEmpty ? [.h264Raw] : usable).map { SDLVideoCandidate(resolution: resolution, format: $0) }
        }
        let modesInForce = videoModes()
        offer(stream.display, encodedSize: stream.encodedSize,
              formats: modesInForce.first { $0.display == stream.display }?.capability.streamableFormats
                ?? capabilityInForce?.streamableFormats ?? [.h264Raw])
        for mode in modesInForce {
            offer(mode.display, encodedSize: mode.stream.encodedSize, formats: mode.capability.streamableFormats)
        }
        offeredModes = modes
        do {
            _ = try await connection.startVideo(candidates: candidates)
            videoOpen = true
        } catch {
            if case .videoRejected = error {
                videoFailure = error
                logger.error("\(Self.noVideoMessage(error))")
            } else if case .protectionUnavailable = error {
                // Streaming in the clear is not an option the engine left open.
                videoFailure = error
                logger.error("\(Self.noVideoMessage(error))")
            } else {
                logger.warning("the video service did not start: \(error)")
            }
        }
    }

    /// The line for a head unit that gave no video: what went wrong and what to do.
    package static func noVideoMessage(_ error: SDLConnectionError) -> String {
        switch error {
        case .protectionUnavailable(_, let reason) where reason.contains("give the app a certificate"):
            "no video: \(error)"
        case .protectionUnavailable:
            "no video: \(error); check the app's certificate and key, that the head unit trusts their CA and that the certificate is valid now"
        default:
            "no video: \(error); the head unit accepts none of the sizes and formats its capability offers and the app can draw; check its video settings"
        }
    }

    /// Each mode of the capability in force (the head unit's order, nested ones flattened) that
    /// the session can draw, with the head unit's own description of it and the stream it gives.
    func videoModes() -> [(display: HeadUnitDisplay, capability: VideoStreamingCapability, stream: StreamResolution)] {
        guard let capabilityInForce else { return [] }
        let sizes = session.configuration.supportedSizes
        // `allModes` and `allCapabilities` flatten in the same order, so they pair up.
        return zip(capabilityInForce.headUnitDisplay.allModes, capabilityInForce.allCapabilities).compactMap { display, capability in
            display.chooseStreamResolution(for: sizes).stream.map { (display, capability, $0) }
        }
    }

    // MARK: Session -> head unit

    /// OnAppCapabilityUpdated: the head unit's modes (nested ones included) this app can draw,
    /// each with all its fields, so that it offers only those in later resizes. The connection
    /// sends it when the HMI level allows, and again when the head unit may have lost it.
    func reportSupportedModes() async {
        await connection.setAppCapability(VideoStreamingCapability.appCapability(listing: videoModes().map(\.capability)))
    }

    /// The app manages focus itself on a head unit with neither touch nor haptic data (its HMI
    /// cannot draw a focus from rectangles it does not take); the keys it subscribes to follow:
    /// the navigation keys always (in focus mode the four straight pans move the focus), and OK
    /// in focus mode, each only if the head unit lists it. Each registration lists the buttons
    /// anew.
    func updateFocusAndButtons() async {
        let touch = await connection.headUnitTouchAvailable
        let haptics = await connection.capability?.hapticSpatialDataSupported
        let managesFocus = touch == false && haptics != true
        await session.setFocusEnabled(managesFocus)
        let buttons = await connection.headUnitButtons.filter {
            SDLButtonName.navigationCommands[$0] != nil || (managesFocus && $0 == .ok)
        }
        await connection.setButtonSubscriptions(buttons)
    }

    func buttonPressed(_ button: SDLButtonName) async {
        if await session.isFocusEnabled {
            if let move = SDLButtonName.focusMoves[button] {
                await session.moveFocus(move)
                return
            }
            if button == .ok {
                await session.activateFocus()
                return
            }
        }
        if let command = SDLButtonName.navigationCommands[button] {
            await session.perform(command)
        } else {
            logger.debug("button \(button) has no action")
        }
    }

    func sendHaptics(_ regions: [HapticRegion]) async {
        await connection.setHapticRegions(regions)
    }
}

import Foundation
import Logging
import CarWindowVideoCore
import CarWindowSinks
import CarWindowProjection

/// The app side of a SmartDeviceLink link: one navigation app registered on one head unit.
///
/// Usage:
/// ```swift
/// let connection = SDLConnection(configuration: .init(appName: "CarWindow", appID: "carwindow",
///     videoCandidates: SDLVideoCandidate.combinations(resolutions: [size], formats: [.h264Raw, .h264RTP])),
///     transport: { SDLTCPTransport(host: "127.0.0.1", port: 12345) })
/// let events = connection.events       // before start(), so that no event is missed
/// try await connection.start()
/// for await event in events {
///     switch event {
///     case .videoStarted(let parameters): // (re)configure the encoder at parameters.resolution
///     case .keyframeNeeded: // encode the next picture as an IDR
///     ...
///     }
/// }
/// // from the encoder: connection.send(unit), forceIDR: connection.needsKeyframe
/// await connection.stop()
/// ```
///
/// The connection opens the RPC service (protocol 5.4.1), registers as NAVIGATION, subscribes to
/// the video capability, answers heartbeats, tracks the HMI status and, with
/// ``Configuration/startsVideoAutomatically``, opens the video service when video becomes
/// allowed (walking the candidates on NAKs as the iOS library does) and ends it when it is not.
/// A lost connection is reported and retried with exponential back-off.
public actor SDLConnection {
    /// What the connection needs to know.
    public struct Configuration: Sendable {
        /// Name shown on the head unit.
        public var appName: String
        /// Policy app id.
        public var appID: String
        /// The protocol version offered in the first StartService.
        public var protocolVersion = "5.4.1"
        /// How long a request or service start may wait for its answer.
        public var requestTimeout: Duration = .seconds(5)
        /// (resolution, format) pairs for the video StartService, most wanted first. An
        /// ``SDLProjectionLink`` chooses its own.
        public var videoCandidates: [SDLVideoCandidate]
        /// Sizes reported with OnAppCapabilityUpdated once the HMI level allows it (see
        /// ``setAppCapability(_:)``); empty sends nothing.
        public var supportedSizes: [ImageResolution] = []
        /// Open the video service whenever video becomes allowed, end it when not. An
        /// ``SDLProjectionLink`` turns it off: it opens the service when its session is ready.
        public var startsVideoAutomatically = true
        /// Bounds of the queue in front of the video service.
        public var videoQueueLimits = SDLVideoQueueLimits()
        /// Bounds of the queue in front of every control and RPC message; a head unit that
        /// reads nothing until they are reached is dropped (and reconnected per ``reconnect``).
        public var outgoingQueueLimits = SDLOutgoingQueueLimits()
        /// How to retry after losing the head unit.
        public var reconnect = SDLReconnectPolicy()
        /// The largest message accepted from the head unit.
        public var maximumIncomingMessageSize = 4 << 20
        /// How video and audio are protected (TLS inside SDL); nil streams them in the clear and
        /// answers a head unit's handshake with "not supported".
        public var security: SDLSecurityConfiguration?

        /// A configuration; see the properties for the defaults.
        public init(appName: String, appID: String, videoCandidates: [SDLVideoCandidate] = [],
                    supportedSizes: [ImageResolution] = [], startsVideoAutomatically: Bool = true,
                    videoQueueLimits: SDLVideoQueueLimits = SDLVideoQueueLimits(),
                    outgoingQueueLimits: SDLOutgoingQueueLimits = SDLOutgoingQueueLimits(),
                    reconnect: SDLReconnectPolicy = SDLReconnectPolicy(), requestTimeout: Duration = .seconds(5),
                    security: SDLSecurityConfiguration? = nil) {
            self.appName = appName
            self.appID = appID
            self.videoCandidates = videoCandidates
            self.supportedSizes = supportedSizes
            self.startsVideoAutomatically = startsVideoAutomatically
            self.videoQueueLimits = videoQueueLimits
            self.outgoingQueueLimits = outgoingQueueLimits
            self.reconnect = reconnect
            self.requestTimeout = requestTimeout
            self.security = security
        }
    }

    /// Frame size assumed before the head unit states its MTU: protocol v3/v4's 131072.
    package static let defaultMTU = 131_072
    static let logger = Logger(label: "carwindow.sdl")

    /// The configuration given at creation (``setVideoCandidates(_:)`` changes the candidates).
    public private(set) var configuration: Configuration
    /// A new stream of everything that happens from now on, in order; it finishes after
    /// ``stop()`` (at once when taken after it).
    ///
    /// Every access makes a stream of its own, so several consumers (an ``SDLProjectionLink``
    /// and an engine watching the HMI status, say) each see every event. Take it before
    /// ``start()`` to see the registration. Each stream keeps the newest 1024 events its
    /// consumer has not read.
    public nonisolated var events: AsyncStream<SDLConnectionEvent> { eventSink.subscribe() }
    private nonisolated let eventSink = EventBroadcast<SDLConnectionEvent>(bufferLimit: 1024)
    private nonisolated let videoQueue: SDLVideoQueue
    private let makeTransport: @Sendable () -> any SDLTransport

    /// The session facts of the RPC StartServiceACK; nil while not connected.
    public private(set) var session: SDLSessionInfo?
    /// The last main-window HMI status; nil while not registered.
    public private(set) var hmiStatus: SDLHMIStatus?
    /// The last video capability (nil: none received, use the fallback).
    public private(set) var capability: VideoStreamingCapability?
    /// The open video service's parameters.
    public private(set) var video: SDLVideoServiceParameters?

    private enum Phase { case idle, connecting, running, reconnecting, stopped }
    private var phase = Phase.idle
    private var transport: (any SDLTransport)?
    /// Control and RPC messages waiting for the transport; a new queue per transport.
    private var outgoing: SDLOutgoingQueue?
    private var generation = 0
    /// Why the last transport was lost: what a request made after the loss, but before the
    /// connection noticed, fails with instead of a bare "not connected".
    private var lossReason: SDLConnectionError?
    private var parser = SDLFrameParser(maximumFramePayload: SDLConnection.defaultMTU)
    private var assembler = SDLMessageAssembler(maximumMessageSize: 4 << 20, maximumFramePayload: SDLConnection.defaultMTU)
    private var readerTask: Task<Void, Never>?
    /// The reader and writer of the current transport and of closed ones not yet seen to end:
    /// ``stop()`` and the next connect wait for them, so nothing of an old transport runs on.
    private var transportTasks: [Task<Void, Never>] = []
    private var reconnectTask: Task<Void, Never>?
    private var videoSenderTask: Task<Void, Never>?
    private var videoStartTask: Task<Void, Never>?
    private var nextMessageID: UInt32 = 1
    private var nextCorrelationID: UInt32 = 1
    private var protocolVersion: UInt8 = 5
    private var sessionMTU = SDLConnection.defaultMTU
    private var videoMTU = SDLConnection.defaultMTU
    private var rtpPacketizer: RTPPacketizer?
    /// What the last HMI status allows.
    private var videoAllowed = false
    /// What ``SDLConnectionEvent/videoAllowedChanged(_:)`` last said: video is announced as
    /// allowed only while the connection runs, so a status that arrives while (re)registering
    /// is announced once registration completes, when a video service can be started.
    private var announcedVideoAllowed = false

    /// Sizes the head unit refused in this registration (video StartServiceNAKs naming width
    /// or height): later video starts skip them, since SDL Core closes the app (NONE) after
    /// each refusal and a walk that started from the top again would never end. A new
    /// registration or a new capability forgets them.
    public private(set) var refusedVideoResolutions = Set<ImageResolution>()
    /// Formats refused in this registration (NAKs naming videoProtocol or videoCodec).
    public private(set) var refusedVideoFormats = Set<VideoStreamingFormat>()
    private var lastVideoRejection = SDLServiceRejection(rejectedParameters: [], reason: nil)
    /// The buttons the head unit listed in its RegisterAppInterface response.
    public private(set) var headUnitButtons: [SDLButtonName] = []
    /// Whether the head unit's screen takes touches, as its RegisterAppInterface response says
    /// (`touchEventAvailable.pressAvailable`); nil when it does not say.
    public private(set) var headUnitTouchAvailable: Bool?
    /// The PCM the head unit's audio service takes (`pcmStreamCapabilities`), or
    /// `SDLPCMFormat.standard` when it does not say.
    public private(set) var headUnitPCMFormat = SDLPCMFormat.standard
    /// Whether the audio service is open.
    public private(set) var isAudioOpen = false
    /// The head unit's voice and display languages, from the registration and OnLanguageChange.
    public private(set) var headUnitLanguage: (language: String?, displayLanguage: String?) = (nil, nil)
    /// Whether the head unit says the driver is distracted (OnDriverDistraction DD_ON).
    public private(set) var isDriverDistracted = false
    private var audioMTU = SDLConnection.defaultMTU
    /// The security layer of this registration: the library for the head unit's make, the TLS
    /// session, the services granted protected.
    private var security = SDLAppSecurityStage(library: nil, appID: "")
    /// The last failure of the security layer, for the StartService it fails.
    private var securityFailure: SDLSecurityError?
    /// The protected StartService of the RPC service in flight, which every request that needs
    /// encryption meanwhile waits for.
    private var rpcProtection: Task<Result<Void, SDLConnectionError>, Never>?
    /// The last write of sealed bytes, which the next one waits for (see ``writeSealed(_:on:)``).
    private var lastSealedWrite: Task<Result<Void, SDLTransportError>, Never>?
    /// Protected starts whose ACK came before the handshake finished on this side.
    private var establishmentWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var nextEstablishmentWaiter = 0
    /// The head unit's make (RegisterAppInterface's `vehicleType.make`).
    public private(set) var vehicleMake: String?
    /// The services running protected now.
    public var protectedServices: Set<SDLServiceType> { security.protectedServices }
    /// Whether a picture is being written now, and when the last write ended: for telling a
    /// picture in flight from one sent after video was forbidden.
    private var isWritingVideo = false
    private var lastVideoWrite: ContinuousClock.Instant?
    /// What the last HMI status allows for audio, and what was last announced.
    private var audioAllowed = false
    private var announcedAudioAllowed = false

    // What the head unit must hold (see ``setHapticRegions(_:)``): what the app wants, and what
    // this registration of the app is known to hold. `heldEpoch` counts the times the held
    // state was forgotten, so an answer to a send made before that is not taken as holding.
    private var wantedHaptics: [HapticRegion]?
    private var wantedAppCapability: VideoStreamingCapability?
    private var wantedButtons: [SDLButtonName] = []
    private var heldHaptics: [HapticRegion]?
    private var heldAppCapability: VideoStreamingCapability?
    private var heldButtons = Set<SDLButtonName>()
    /// Buttons the head unit refused in this registration: not asked again until it may have
    /// changed its mind (a new registration or HMI level).
    private var refusedButtons = Set<SDLButtonName>()
    /// Whether the app wants the head lamps' ambient light (SubscribeVehicleData), whether this
    /// registration holds that subscription, and whether the head unit refused it.
    private var wantsAmbientLight = false
    private var holdsAmbientLight = false
    private var ambientLightRefused = false
    private var heldEpoch = 0
    /// The unreadable messages already reported: a head unit that sends the same nonsense again
    /// and again is reported once per kind, not once per message.
    private var reportedUnreadable = Set<String>()
    /// The policy's permissions (OnPermissionsChange) for this registration; nil until the head
    /// unit sends them, when SDL Core's stock levels apply.
    private var permissions: SDLPermissions?
    private var stateSyncTask: Task<Void, Never>?
    private var stateSyncAgain = false

    private typealias Reply<T> = CheckedContinuation<Result<T, SDLConnectionError>, Never>
    private var pendingRequests: [UInt32: Reply<SDLRPCMessage>] = [:]
    /// A control exchange waiting for its answer: StartService and EndService on one service
    /// are told apart, so a late EndServiceACK never answers a new StartService.
    private struct ControlKey: Hashable {
        var service: SDLServiceType
        var isStart: Bool
    }
    private var pendingControl: [ControlKey: (token: Int, reply: Reply<SDLMessage>)] = [:]
    private var nextControlToken = 0

    /// A connection that makes its transport with `transport` (called again on every reconnect).
    public init(configuration: Configuration, transport: @escaping @Sendable () -> any SDLTransport) {
        self.configuration = configuration
        self.makeTransport = transport
        self.videoQueue = SDLVideoQueue(limits: configuration.videoQueueLimits)
        wantedAppCapability = VideoStreamingCapability.appCapability(
            listing: configuration.supportedSizes.map { VideoStreamingCapability(preferredResolution: $0) })
    }

    // MARK: Public API

    /// Connects, opens the RPC service, registers and fetches the video capability.
    ///
    /// Throws when the first attempt fails (no reconnecting then); later losses are reported
    /// on ``events`` and retried per ``Configuration/reconnect``.
    public func start() async throws(SDLConnectionError) {
        guard phase == .idle else { return }
        phase = .connecting
        do {
            try await establish()
            phase = .running
            announceVideoAllowed()
            announceAudioAllowed()
            syncHeadUnitState()
        } catch {
            phase = .idle
            teardown()
            throw error
        }
    }

    /// Ends video, unregisters, closes the transport and finishes ``events``. Final.
    public func stop() async {
        guard phase != .stopped else { return }
        let wasRunning = phase == .running
        phase = .stopped
        reconnectTask?.cancel()
        videoStartTask?.cancel()
        if wasRunning {
            if video != nil { await endVideoService() }
            await stopAudio()
            // Unregistering lets the head unit free the app at once instead of on timeout; ending
            // the RPC service then closes the session as the protocol asks, before the socket.
            _ = try? await request(.unregisterAppInterface, parameters: [String: String](), timeout: .seconds(1))
            await endRPCService()
        }
        teardown()
        await awaitClosedTransportTasks()
        eventSink.yield(.stopped)
        eventSink.finish()
    }

    /// Offers an access unit for the video service; never waits.
    ///
    /// Units are dropped whole when the queue is full, after which only an IDR is taken
    /// (``needsKeyframe`` turns true and ``SDLConnectionEvent/keyframeNeeded`` is sent).
    @discardableResult
    public nonisolated func send(_ unit: AccessUnit) -> SDLVideoSendResult {
        let (result, becameNeedy) = videoQueue.enqueue(unit)
        if becameNeedy { eventSink.yield(.keyframeNeeded) }
        return result
    }

    /// Whether the next unit given to ``send(_:)`` must be an IDR to be taken: at the start of
    /// every video service and after a drop. Pass it as the encoder's `forceIDR`.
    public nonisolated var needsKeyframe: Bool { videoQueue.needsKeyframe }

    /// The video queue's counters.
    public nonisolated var videoQueueStatistics: SDLVideoQueueStatistics { videoQueue.statistics }

    /// Whether video may be sent now.
    public var isVideoAllowed: Bool { announcedVideoAllowed }

    /// The counters of the queue in front of control and RPC messages (zero while not connected).
    public var outgoingQueueStatistics: SDLOutgoingQueueStatistics { outgoing?.statistics ?? SDLOutgoingQueueStatistics() }

    /// Replaces the video candidates (a resize, a new capability); used by the next video start.
    public func setVideoCandidates(_ candidates: [SDLVideoCandidate]) {
        configuration.videoCandidates = candidates
    }

    /// Opens the video service with the first candidate the head unit accepts.
    ///
    /// A NAK naming width or height skips that resolution; naming videoProtocol or videoCodec
    /// skips that format; naming neither skips the pair. The ACK's size and MTU are
    /// authoritative. Ends a video service that is already open first (a resize).
    @discardableResult
    public func startVideo(candidates: [SDLVideoCandidate]? = nil) async throws(SDLConnectionError) -> SDLVideoServiceParameters {
        guard phase == .running, session != nil else { throw .notConnected }
        guard videoAllowed else { throw .videoNotAllowed }
        if video != nil { await endVideoService() }
        let list = candidates ?? configuration.videoCandidates
        guard !list.isEmpty else { throw .noVideoCandidates }
        var tried: [SDLVideoCandidate] = []
        for candidate in list where !refusedVideoResolutions.contains(candidate.resolution)
            && !refusedVideoFormats.contains(candidate.format) {
            // SDL Core answers a refused size by closing the app (NONE): the walk goes on when
            // the app is back, from the sizes not refused yet.
            guard videoAllowed, phase == .running else { throw .videoNotAllowed }
            tried.append(candidate)
            let asked = SDLVideoServiceParameters(resolution: candidate.resolution, format: candidate.format)
            let payload: [UInt8]
            do {
                payload = try asked.startServiceDocument.encoded()
            } catch {
                continue
            }
            var protect = try wantsProtection(.video)
            var reply: SDLMessage
            while true {
                securityFailure = nil
                reply = try await control(.startService, on: .video, payload: payload, protected: protect,
                                          timeout: protect ? configuration.security?.handshakeTimeout : nil)
                guard protect, reply.controlInfo != .startServiceACK, let failure = securityFailure else { break }
                // The handshake failed and the head unit refused: fail, or fall back in the clear.
                guard configuration.security?.policy == .preferred else {
                    throw .protectionUnavailable(.video, "the handshake failed: \(failure)")
                }
                Self.logger.warning("video streams unprotected: the handshake failed: \(failure)")
                protect = false
            }
            if reply.controlInfo == .startServiceACK {
                let document = (try? BSONDocument(decoding: reply.payload)) ?? BSONDocument()
                let granted = asked.acknowledged(by: document)
                guard videoAllowed, phase == .running else {
                    // The HMI changed while we waited: close what just opened.
                    video = granted
                    await endVideoService()
                    throw .videoNotAllowed
                }
                do throws(SDLConnectionError) {
                    try await acceptProtection(of: .video, reply: reply, asked: protect)
                } catch {
                    video = granted
                    await endVideoService()
                    throw error
                }
                openVideo(granted)
                return granted
            }
            let rejection = SDLServiceRejection(nak: reply.payload)
            if !protect, rejection.rejectedParameters.isEmpty, rejection.reason?.lowercased().contains("protected") == true {
                // SDL Core's ForceProtectedService: every size and format would be refused alike.
                throw .protectionUnavailable(.video, "the head unit starts video only protected (\(rejection.reason ?? "")); "
                                             + (configuration.security == nil ? "give the app a certificate and key" : "no library served it"))
            }
            lastVideoRejection = rejection
            Self.logger.info("video \(candidate) refused: \(rejection)")
            if rejection.namesResolution { refusedVideoResolutions.insert(candidate.resolution) }
            if rejection.namesFormat { refusedVideoFormats.insert(candidate.format) }
        }
        // Every candidate refused by name, now or in an earlier walk of this registration, is
        // final; a walk cut short by the level (Core closing the app) goes on when it is back.
        let untried = list.contains { !refusedVideoResolutions.contains($0.resolution) && !refusedVideoFormats.contains($0.format) }
        if untried, !videoAllowed || phase != .running { throw .videoNotAllowed }
        throw .videoRejected(tried: tried.isEmpty ? list : tried, last: lastVideoRejection)
    }

    /// Whether to ask for `service` protected: when the configuration lists it and a library
    /// serves this head unit. Without one, a required service fails here and a preferred one
    /// goes in the clear with a warning.
    private func wantsProtection(_ service: SDLServiceType) throws(SDLConnectionError) -> Bool {
        guard let settings = configuration.security, settings.services.contains(service) else { return false }
        do {
            try security.prepare()
            return true
        } catch {
            let reason = "\(error.message) (head unit make: \(vehicleMake ?? "not given"))"
            guard settings.policy == .preferred else { throw .protectionUnavailable(service, reason) }
            Self.logger.warning("\(service) streams unprotected: \(reason)")
            return false
        }
    }

    /// Takes the StartServiceACK of a service asked protected: the E bit grants protection; an
    /// ACK without it (a head unit with no security layer) is refused when protection is
    /// required.
    private func acceptProtection(of service: SDLServiceType, reply: SDLMessage, asked: Bool) async throws(SDLConnectionError) {
        guard asked else { return }
        guard !reply.isProtected else {
            // SDL Core ACKs as soon as its own side of the handshake is done, just before its
            // last flight reaches the app: wait for that; a grant without it is refused.
            guard await awaitEstablishment() else {
                throw .protectionUnavailable(service, securityFailure.map { "the handshake failed: \($0)" }
                                             ?? "the head unit granted it protected but the TLS handshake did not finish")
            }
            security.granted(service)
            Self.logger.info("\(service) service protected")
            eventSink.yield(.serviceProtected(service))
            return
        }
        let reason = "the head unit started it unprotected: it has no security layer"
        guard configuration.security?.policy == .preferred else { throw .protectionUnavailable(service, reason) }
        Self.logger.warning("\(service) streams unprotected: \(reason)")
    }

    /// Whether the TLS handshake finishes within the handshake timeout (at once when it has).
    private func awaitEstablishment() async -> Bool {
        if security.isEstablished { return true }
        nextEstablishmentWaiter += 1
        let token = nextEstablishmentWaiter
        let limit = configuration.security?.handshakeTimeout ?? configuration.requestTimeout
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            await self?.resumeEstablishmentWaiter(token, established: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { establishmentWaiters[token] = $0 }
    }

    private func resumeEstablishmentWaiter(_ token: Int, established: Bool) {
        establishmentWaiters.removeValue(forKey: token)?.resume(returning: established)
    }

    private func resumeEstablishmentWaiters(established: Bool) {
        let waiting = establishmentWaiters
        establishmentWaiters.removeAll()
        for waiter in waiting.values { waiter.resume(returning: established) }
    }

    /// Forgets the sizes and formats refused so far: a new registration or capability may
    /// take them.
    private func forgetVideoRefusals() {
        refusedVideoResolutions.removeAll()
        refusedVideoFormats.removeAll()
        lastVideoRejection = SDLServiceRejection(rejectedParameters: [], reason: nil)
    }

    /// Ends the video service (EndService with the session's hashId) if one is open.
    public func stopVideo() async {
        videoStartTask?.cancel()
        await endVideoService()
    }

    /// The modes the app can stream (OnAppCapabilityUpdated), or nil for none.
    ///
    /// Like ``setHapticRegions(_:)``, this is state the head unit holds: it is sent when the HMI
    /// level allows it (not in NONE, where SDL Core's policies block it), only when it differs
    /// from what this registration holds, and again after a reconnect or a return from NONE.
    public func setAppCapability(_ capability: VideoStreamingCapability?) {
        wantedAppCapability = capability
        syncHeadUnitState()
    }

    /// The rectangles the head unit should hold for its own focus and selection (haptic spatial
    /// data), in head-unit pixels.
    ///
    /// Sent as SendHapticData whenever they change and the head unit can take them (its
    /// capability says `hapticSpatialDataSupported`, and the HMI level is FULL, as SDL Core's
    /// HapticGroup policy allows), and sent again whenever the head unit may have lost them:
    /// after a reconnect (a new registration) and after the app left FULL. An empty list
    /// clears them.
    public func setHapticRegions(_ regions: [HapticRegion]) {
        wantedHaptics = regions
        syncHeadUnitState()
    }

    /// Whether the app wants the car's ambient light sensor (SubscribeVehicleData for
    /// `headLampStatus`), reported as ``SDLConnectionEvent/ambientLightChanged(_:)``; subscribed
    /// when allowed and again after a reconnect or a return from NONE. A head unit whose policy
    /// does not grant vehicle data refuses it; that is logged once per registration or level.
    public func setFollowsAmbientLight(_ follows: Bool) {
        wantsAmbientLight = follows
        syncHeadUnitState()
    }

    /// The buttons the app wants OnButtonPress for (SubscribeButton); subscribed when the level
    /// allows, again after a reconnect or a return from NONE. Buttons the head unit refuses are
    /// logged and asked for again only after such a change.
    public func setButtonSubscriptions(_ buttons: [SDLButtonName]) {
        wantedButtons = buttons
        syncHeadUnitState()
    }

    /// Replaces the head unit's haptic rectangles (SendHapticData) now and waits for the answer;
    /// empty clears them. They become the rectangles ``setHapticRegions(_:)`` keeps sent.
    ///
    /// Throws ``SDLConnectionError/hapticsNotSupported`` unless the capability says
    /// `hapticSpatialDataSupported`, because head units without it refuse the RPC.
    public func sendHapticData(_ regions: [HapticRegion]) async throws(SDLConnectionError) {
        guard capability?.hapticSpatialDataSupported == true else { throw .hapticsNotSupported }
        wantedHaptics = regions
        let epoch = heldEpoch
        let response = try await request(.sendHapticData, parameters: SDLSendHapticDataRequest(regions: regions))
        try Self.checkSuccess(response)
        if epoch == heldEpoch, wantedHaptics == regions { heldHaptics = regions }
    }

    // MARK: Establishing

    private func establish() async throws(SDLConnectionError) {
        teardown()
        await awaitClosedTransportTasks()
        generation += 1
        lossReason = nil
        let transport = makeTransport()
        self.transport = transport
        do {
            try await transport.connect()
        } catch {
            throw .transport(error)
        }
        guard phase == .connecting || phase == .reconnecting else { throw .stopped }
        startReader(transport, generation: generation)
        startWriter(transport, generation: generation)

        // The first StartService goes with the newest header this side speaks (version 5), as
        // the iOS library sends it: SDL Core warns about a version 1 header ("Unknown version:1")
        // though the spec allows one. The ACK says which version the head unit speaks.
        protocolVersion = 5
        let ack = try await control(.startService, on: .rpc,
                                    payload: (try? (["protocolVersion": .string(configuration.protocolVersion)] as BSONDocument).encoded()) ?? [])
        guard ack.controlInfo == .startServiceACK else {
            throw .serviceRejected(.rpc, SDLServiceRejection(nak: ack.payload))
        }
        let document: BSONDocument
        do {
            document = try BSONDocument(decoding: ack.payload)
        } catch {
            throw .protocolViolation(.badControlPayload(service: .rpc, info: .startServiceACK, error))
        }
        let info = SDLSessionInfo(ack: document, sessionID: ack.sessionID)
        protocolVersion = Self.negotiatedProtocolVersion(info, headerVersion: ack.version)
        sessionMTU = Self.negotiatedMTU(info.mtu, otherwise: Self.defaultMTU)
        videoMTU = sessionMTU
        let incomingLimit = Self.incomingFramePayloadLimit(sessionMTU: sessionMTU)
        parser.maximumFramePayload = incomingLimit
        assembler.maximumFramePayload = incomingLimit
        session = info

        // A new registration holds nothing of the last one's, and its permissions come anew;
        // forgotten before asking, since the head unit's OnPermissionsChange may be read in the
        // same breath as the answer, before this code runs on.
        forgetHeldState(haptics: true, appCapability: true, buttons: true)
        permissions = nil
        forgetVideoRefusals()
        let registration = try await request(.registerAppInterface, parameters: SDLRegisterAppInterfaceRequest(
            appName: configuration.appName, appID: configuration.appID, fullAppID: configuration.appID))
        try Self.checkSuccess(registration)
        let facts = (try? registration.decodeParameters(SDLRegistrationFacts.self)) ?? SDLRegistrationFacts()
        headUnitButtons = facts.buttons
        headUnitTouchAvailable = facts.touchAvailable
        headUnitPCMFormat = facts.pcmFormat ?? .standard
        vehicleMake = facts.vehicleMake
        security = SDLAppSecurityStage(library: configuration.security?.library(forMake: facts.vehicleMake), appID: configuration.appID)
        if let languages = try? registration.decodeParameters(SDLLanguages.self) {
            headUnitLanguage = (languages.language, languages.hmiDisplayLanguage)
        }
        eventSink.yield(.registered(info))

        let capabilityResponse = try await request(.getSystemCapability, parameters: SDLGetSystemCapabilityRequest(
            systemCapabilityType: "VIDEO_STREAMING", subscribe: true))
        if (try? capabilityResponse.decodeParameters(SDLResponseStatus.self))?.success == true {
            do {
                if let received = try capabilityResponse.videoStreamingCapability() {
                    capability = received
                    eventSink.yield(.capabilityChanged(received))
                }
            } catch {
                Self.logger.warning("video capability ignored, using the fallback: \(error)")
            }
        } else {
            Self.logger.warning("GetSystemCapability(VIDEO_STREAMING) failed; using the fallback H264/RAW at the registration size")
        }
    }

    /// Waits for the reader and writer of closed transports to end (a closed transport fails
    /// their pending calls at once).
    private func awaitClosedTransportTasks() async {
        let tasks = transportTasks
        transportTasks.removeAll()
        for task in tasks { await task.value }
    }

    private func startReader(_ transport: any SDLTransport, generation: Int) {
        let reader = Task { [weak self] in
            while !Task.isCancelled {
                do throws(SDLTransportError) {
                    let bytes = try await transport.read(maximumCount: 65_536)
                    guard let self else { return }
                    await self.received(bytes, generation: generation)
                } catch {
                    await self?.connectionLost(.transport(error), generation: generation)
                    return
                }
            }
        }
        readerTask = reader
        transportTasks.append(reader)
    }

    /// Writes the queued control and RPC messages of this transport in order; a failed write
    /// loses the connection.
    private func startWriter(_ transport: any SDLTransport, generation: Int) {
        let queue = SDLOutgoingQueue(limits: configuration.outgoingQueueLimits)
        outgoing = queue
        transportTasks.append(Task {
            while let bytes = await queue.next() {
                do throws(SDLTransportError) {
                    try await transport.write(bytes)
                } catch {
                    self.connectionLost(.transport(error), generation: generation)
                    return
                }
            }
        })
    }

    // MARK: Receiving

    private func received(_ bytes: [UInt8], generation: Int) async {
        guard generation == self.generation else { return }
        parser.append(bytes)
        do {
            while var frame = try parser.nextFrame() {
                if frame.needsDecryption {
                    switch security.open(frame) {
                    case .success(let opened):
                        frame = opened
                    case .failure(let refusal):
                        warnOnce("encrypted frame dropped: \(refusal.error)")
                        perform(refusal.actions)
                        continue
                    }
                }
                guard let message = try assembler.add(frame) else { continue }
                handle(message)
            }
        } catch {
            connectionLost(.protocolViolation(error), generation: generation)
        }
    }

    private func handle(_ message: SDLMessage) {
        if let info = message.controlInfo {
            switch info {
            case .heartbeat:
                let ack = SDLMessage(version: protocolVersion, serviceType: .control, sessionID: message.sessionID,
                                     messageID: message.messageID, controlInfo: .heartbeatACK, payload: [])
                // A failure has already dropped the connection; there is nobody to tell.
                try? enqueue(ack, mtu: sessionMTU, isHeartbeatACK: true)
            case .startServiceACK, .startServiceNAK, .endServiceACK, .endServiceNAK:
                let key = ControlKey(service: message.serviceType, isStart: info == .startServiceACK || info == .startServiceNAK)
                if let pending = pendingControl.removeValue(forKey: key) {
                    pending.reply.resume(returning: .success(message))
                } else {
                    Self.logger.debug("unsolicited \(info) on \(message.serviceType)")
                }
            case .endService:
                // The head unit closed a service on its own (SDL Core does at NONE): stop sending
                // and acknowledge, or Core keeps the service and refuses the next start.
                if message.serviceType == .video || message.serviceType == .audio {
                    if message.serviceType == .video { closeVideoLocally() } else { isAudioOpen = false }
                    let ack = SDLMessage(version: protocolVersion, serviceType: message.serviceType, sessionID: message.sessionID,
                                         messageID: message.messageID, controlInfo: .endServiceACK, payload: [])
                    try? enqueue(ack, mtu: sessionMTU)
                } else if message.serviceType == .rpc {
                    connectionLost(.transport(.closedByPeer), generation: generation)
                }
            default:
                Self.logger.debug("ignored control \(info) on \(message.serviceType)")
            }
            return
        }
        if message.serviceType == .control {
            // Data on the control service: the security layer's queries.
            do {
                perform(security.receive(try SDLSecurityQuery(decoding: message.payload)))
            } catch {
                warnOnce("unreadable security query answered with \(error.code): \(error)")
                perform(security.refuse(error))
            }
            return
        }
        guard message.serviceType == .rpc else { return }
        let rpc: SDLRPCMessage
        do {
            rpc = try SDLRPCMessage(decoding: message.payload)
        } catch {
            warnOnce("unreadable RPC ignored: \(error)")
            return
        }
        switch rpc.type {
        case .response:
            pendingRequests.removeValue(forKey: rpc.correlationID)?.resume(returning: .success(rpc))
        case .notification:
            handleNotification(rpc)
        case .request:
            Self.logger.debug("head unit request \(rpc.functionID) ignored")
        }
    }

    /// Does what the security layer asks: sends its queries, and after a failure closes what
    /// was protected (the head unit closes it too) and tells the engine.
    private func perform(_ actions: [SDLAppSecurityStage.Action]) {
        for action in actions {
            switch action {
            case .send(let query):
                let message = SDLMessage(version: protocolVersion, serviceType: .control, sessionID: session?.sessionID ?? 0,
                                         messageID: takeMessageID(), payload: query.encoded())
                // A failure has already dropped the connection; there is nobody to tell.
                try? enqueue(message, mtu: sessionMTU)
            case .established:
                Self.logger.info("security: TLS handshake with the head unit finished")
                resumeEstablishmentWaiters(established: true)
            case .failed(let error, let reportedByHeadUnit, let closed):
                securityFailure = error
                resumeEstablishmentWaiters(established: false)
                Self.logger.warning("security layer reset: \(error)\(reportedByHeadUnit ? "" : " (told the head unit)")")
                eventSink.yield(.securityFailed(error))
                // Nothing of a service that was protected may go on in the clear: it closes and
                // starts again with a new handshake. Services that ran in the clear go on.
                if closed.contains(.video) { closeVideoLocally() }
                if closed.contains(.audio) { isAudioOpen = false }
            }
        }
    }

    /// Logs `text` as a warning the first time, at debug level after that (at most 256 kinds
    /// are remembered, so a head unit cannot grow the set without bound).
    private func warnOnce(_ text: String) {
        if reportedUnreadable.count < 256, reportedUnreadable.insert(text).inserted {
            Self.logger.warning("\(text) (reported once)")
        } else {
            Self.logger.debug("\(text)")
        }
    }

    private func handleNotification(_ rpc: SDLRPCMessage) {
        switch rpc.functionID {
        case .onHMIStatus:
            do {
                let status = try rpc.decodeParameters(SDLHMIStatus.self)
                guard (status.windowID ?? 0) == 0 else { return }
                let previous = hmiStatus?.hmiLevel
                hmiStatus = status
                eventSink.yield(.hmiStatusChanged(status))
                updateVideoAllowed(status.allowsVideo)
                updateAudioAllowed(status.allowsAudio)
                hmiLevelChanged(from: previous, to: status.hmiLevel)
            } catch {
                warnOnce("OnHMIStatus ignored: \(error)")
            }
        case .onButtonPress:
            do {
                eventSink.yield(.buttonPressed(try rpc.decodeParameters(SDLButtonPress.self)))
            } catch {
                warnOnce("OnButtonPress ignored: \(error)")
            }
        case .onPermissionsChange:
            if let received = try? rpc.decodeParameters(SDLPermissions.self) {
                permissions = received
                // The policy wants the app's RPCs protected: protect the service before the
                // first RPC that needs it, where the app can.
                if received.requiresEncryption, configuration.security != nil, !security.protectedServices.contains(.rpc) {
                    Task { [weak self] in try? await self?.protectRPCService() }
                }
                // What was refused may be permitted now, and the reverse.
                refusedButtons.removeAll()
                ambientLightRefused = false
                syncHeadUnitState()
            }
        case .onVehicleData:
            if let light = (try? rpc.decodeParameters(SDLVehicleDataNotification.self))?.ambientLight {
                eventSink.yield(.ambientLightChanged(light))
            }
        case .onDriverDistraction:
            if let state = (try? rpc.decodeParameters(SDLDriverDistraction.self))?.state {
                let distracted = state == "DD_ON"
                if distracted != isDriverDistracted {
                    isDriverDistracted = distracted
                    eventSink.yield(.driverDistractionChanged(distracted))
                }
            }
        case .onLanguageChange:
            if let languages = try? rpc.decodeParameters(SDLLanguages.self) {
                headUnitLanguage = (languages.language, languages.hmiDisplayLanguage)
                eventSink.yield(.languageChanged(language: languages.language, displayLanguage: languages.hmiDisplayLanguage))
            }
        case .onTouchEvent:
            do {
                eventSink.yield(.touch(try SDLTouchEvent.decode(json: Data(rpc.json))))
            } catch {
                warnOnce("OnTouchEvent ignored: \(error)")
            }
        case .onSystemCapabilityUpdated:
            do {
                guard let update = try rpc.videoStreamingCapability() else { return }
                let filled = capability.map { update.filling(from: $0) } ?? update
                if filled != capability { forgetVideoRefusals() }
                capability = filled
                eventSink.yield(.capabilityChanged(filled))
            } catch {
                warnOnce("OnSystemCapabilityUpdated ignored: \(error)")
            }
        default:
            break
        }
    }

    private func updateVideoAllowed(_ allowed: Bool) {
        guard allowed != videoAllowed else { return }
        videoAllowed = allowed
        if !allowed {
            // Sending outside FULL/LIMITED gets the app unregistered: stop at once.
            videoStartTask?.cancel()
            videoStartTask = nil
            if video != nil {
                videoQueue.close()
                videoStartTask = Task { await self.endVideoService() }
                // A head unit logs the pictures that reach it after it forbade video; say which
                // were written before this side could know (SDL Core's "trying to stream when it
                // should not" for a picture in flight).
                if isWritingVideo {
                    Self.logger.info("video forbidden (\(hmiStatus?.hmiLevel.rawValue ?? "?")) while a picture was being written: it reaches the head unit after the change")
                } else if let lastVideoWrite {
                    Self.logger.info("video forbidden (\(hmiStatus?.hmiLevel.rawValue ?? "?")); the last picture was written \(Int((ContinuousClock.now - lastVideoWrite) / .milliseconds(1))) ms before")
                }
            }
        }
        announceVideoAllowed()
    }

    /// Tells whoever reads ``events`` whether video may be sent, when that changed: allowed by
    /// the HMI status and the connection running (not still registering after a reconnect).
    private func announceVideoAllowed() {
        let allowed = videoAllowed && phase == .running
        guard allowed != announcedVideoAllowed else { return }
        announcedVideoAllowed = allowed
        eventSink.yield(.videoAllowedChanged(allowed))
        if allowed, configuration.startsVideoAutomatically, video == nil { scheduleAutomaticVideoStart() }
    }

    private func scheduleAutomaticVideoStart() {
        videoStartTask?.cancel()
        videoStartTask = Task { await self.automaticVideoStart() }
    }

    private func automaticVideoStart() async {
        guard !Task.isCancelled, phase == .running, videoAllowed, video == nil else { return }
        do {
            try await startVideo()
        } catch {
            if error != .videoNotAllowed && error != .notConnected {
                Self.logger.warning("video service not started: \(error)")
                eventSink.yield(.videoFailed(error))
            }
        }
    }

    // MARK: Audio

    /// Whether audio may be streamed now (FULL or LIMITED, AUDIBLE or ATTENUATED, connected).
    public var isAudioAllowed: Bool { announcedAudioAllowed }

    /// Opens the audio service (PCM in ``headUnitPCMFormat``); does nothing when it is open.
    /// Throws ``SDLConnectionError/audioNotAllowed`` outside an audible level, and
    /// ``SDLConnectionError/serviceRejected(_:_:)`` when the head unit refuses it.
    public func startAudio() async throws(SDLConnectionError) {
        guard phase == .running, session != nil else { throw .notConnected }
        guard audioAllowed else { throw .audioNotAllowed }
        guard !isAudioOpen else { return }
        let protect = try wantsProtection(.audio)
        securityFailure = nil
        let reply = try await control(.startService, on: .audio, payload: (try? BSONDocument().encoded()) ?? [],
                                      protected: protect, timeout: protect ? configuration.security?.handshakeTimeout : nil)
        guard reply.controlInfo == .startServiceACK else {
            if protect, let failure = securityFailure {
                throw .protectionUnavailable(.audio, "the handshake failed: \(failure)")
            }
            throw .serviceRejected(.audio, SDLServiceRejection(nak: reply.payload))
        }
        do throws(SDLConnectionError) {
            try await acceptProtection(of: .audio, reply: reply, asked: protect)
        } catch {
            isAudioOpen = true
            await stopAudio()
            throw error
        }
        let document = (try? BSONDocument(decoding: reply.payload)) ?? BSONDocument()
        guard audioAllowed, phase == .running else {
            // The level changed while the head unit answered: close what just opened.
            isAudioOpen = true
            await stopAudio()
            throw .audioNotAllowed
        }
        audioMTU = Self.negotiatedMTU(document["mtu"]?.integerValue, otherwise: sessionMTU)
        isAudioOpen = true
    }

    /// Ends the audio service if it is open.
    public func stopAudio() async {
        guard isAudioOpen else { return }
        isAudioOpen = false
        security.ended(.audio)
        guard transport != nil else { return }
        var document = BSONDocument()
        if let hashID = session?.hashID { document["hashId"] = .int32(hashID) }
        do {
            _ = try await control(.endService, on: .audio, payload: (try? document.encoded()) ?? [])
        } catch {
            Self.logger.info("audio EndService not acknowledged: \(error)")
        }
    }

    /// Writes PCM (``headUnitPCMFormat``) on the audio service, split into frames per the MTU.
    /// Throws ``SDLConnectionError/audioNotAllowed`` when the service is not open or the level
    /// no longer allows audio: nothing is sent then. Pacing is the caller's (``SDLPromptPlayer``).
    public func sendAudio(_ pcm: [UInt8]) async throws(SDLConnectionError) {
        guard isAudioOpen, audioAllowed, let session, let transport else { throw .audioNotAllowed }
        let message = SDLMessage(version: protocolVersion, serviceType: .audio, sessionID: session.sessionID,
                                 messageID: takeMessageID(), payload: pcm)
        do throws(SDLConnectionError) {
            try await write(message, mtu: audioMTU, on: transport)
        } catch {
            connectionLost(error, generation: generation)
            throw error
        }
    }

    private func updateAudioAllowed(_ allowed: Bool) {
        guard allowed != audioAllowed else { return }
        audioAllowed = allowed
        if !allowed, isAudioOpen {
            // Not audible: end the service at once, like video; the player hears of it on its
            // next write.
            Task { await self.stopAudio() }
        }
        announceAudioAllowed()
    }

    private func announceAudioAllowed() {
        let allowed = audioAllowed && phase == .running
        guard allowed != announcedAudioAllowed else { return }
        announcedAudioAllowed = allowed
        eventSink.yield(.audioAllowedChanged(allowed))
    }

    // MARK: State the head unit holds

    /// The HMI levels in which SDL Core 8.2's stock policy groups allow each piece of held
    /// state: SendHapticData (HapticGroup) in FULL only; OnAppCapabilityUpdated and
    /// SubscribeButton (Base-4) in FULL, LIMITED and BACKGROUND. Sent in another level, Core
    /// blocks them ("Request is blocked by policies").
    package static let hapticDataLevels: Set<SDLHMILevel> = [.full]
    package static let appCapabilityLevels: Set<SDLHMILevel> = [.full, .limited, .background]
    package static let buttonSubscriptionLevels: Set<SDLHMILevel> = [.full, .limited, .background]

    /// Whether the policy lets the app send `rpc` (with `parameter`, for vehicle data) at
    /// `level`: as OnPermissionsChange says once it came (an RPC it does not list is not
    /// allowed), else in the `fallback` levels, SDL Core's stock ones. Asking outside them only
    /// makes Core log "Request is blocked by policies".
    private func permits(_ rpc: String, at level: SDLHMILevel, parameter: String? = nil, fallback: Set<SDLHMILevel>) -> Bool {
        guard let permissions else { return fallback.contains(level) }
        guard let permission = permissions.byRPC[rpc], permission.levels.contains(level) else { return false }
        guard let parameter, let allowed = permission.parameters else { return true }
        return allowed.contains(parameter)
    }

    /// Forgets what the head unit holds: it will be sent again when allowed.
    private func forgetHeldState(haptics: Bool, appCapability: Bool, buttons: Bool) {
        heldEpoch += 1
        if haptics { heldHaptics = nil }
        if appCapability { heldAppCapability = nil }
        if buttons {
            heldButtons.removeAll()
            refusedButtons.removeAll()
            holdsAmbientLight = false
            ambientLightRefused = false
        }
    }

    /// What a level change may have cost the head unit: leaving FULL, an HMI may drop the app's
    /// rectangles (its focus belongs to another app then); NONE is the app closed, and everything is sent
    /// again when it comes back.
    private func hmiLevelChanged(from previous: SDLHMILevel?, to level: SDLHMILevel) {
        guard previous != level else { return }
        if level == .none {
            forgetHeldState(haptics: true, appCapability: true, buttons: true)
        } else if !Self.hapticDataLevels.contains(level) {
            forgetHeldState(haptics: true, appCapability: false, buttons: false)
        } else {
            // A level that allows more may let a refused subscription through.
            refusedButtons.removeAll()
            ambientLightRefused = false
        }
        syncHeadUnitState()
    }

    /// Sends what the head unit should hold and does not, one sender at a time; a change while
    /// it sends makes it look again.
    private func syncHeadUnitState() {
        guard phase == .running else { return }
        if stateSyncTask != nil {
            stateSyncAgain = true
            return
        }
        stateSyncTask = Task { await self.runHeadUnitStateSync() }
    }

    private func runHeadUnitStateSync() async {
        repeat {
            stateSyncAgain = false
            await sendMissingHeadUnitState()
        } while stateSyncAgain && phase == .running
        stateSyncTask = nil
    }

    private func sendMissingHeadUnitState() async {
        guard phase == .running, let level = hmiStatus?.hmiLevel else { return }
        let epoch = heldEpoch
        if let wanted = wantedAppCapability, wanted != heldAppCapability,
           permits("OnAppCapabilityUpdated", at: level, fallback: Self.appCapabilityLevels) {
            do {
                try await notify(.onAppCapabilityUpdated, parameters: SDLOnAppCapabilityUpdated(wanted))
                if epoch == heldEpoch { heldAppCapability = wanted }
            } catch where error != .notConnected {
                Self.logger.warning("OnAppCapabilityUpdated not sent: \(error)")
            } catch {
            }
        }
        if let wanted = wantedHaptics, wanted != heldHaptics, capability?.hapticSpatialDataSupported == true,
           let level = hmiStatus?.hmiLevel, permits("SendHapticData", at: level, fallback: Self.hapticDataLevels) {
            do {
                let response = try await request(.sendHapticData, parameters: SDLSendHapticDataRequest(regions: wanted))
                try Self.checkSuccess(response)
                if epoch == heldEpoch { heldHaptics = wanted }
            } catch {
                // Not retried until the rectangles or the level change: a head unit refusing
                // them would refuse them again.
                Self.logger.warning("SendHapticData failed: \(error)")
            }
        }
        if wantsAmbientLight, !holdsAmbientLight, !ambientLightRefused, phase == .running, epoch == heldEpoch,
           let level = hmiStatus?.hmiLevel,
           // Core's stock groups for a navigation app grant no vehicle data: asked only when the
           // policy's permissions say so.
           permits("SubscribeVehicleData", at: level, parameter: "headLampStatus", fallback: []) {
            do {
                let response = try await request(.subscribeVehicleData, parameters: SDLHeadLampSubscriptionRequest())
                let status = try response.decodeParameters(SDLResponseStatus.self)
                if epoch == heldEpoch {
                    if status.success || status.resultCode == "IGNORED" {
                        holdsAmbientLight = true
                    } else {
                        ambientLightRefused = true
                        // Core's policy grants vehicle data only to apps whose group has it.
                        Self.logger.info("SubscribeVehicleData(headLampStatus) refused: \(status.resultCode); the map keeps the engine's day/night")
                    }
                }
            } catch {
                Self.logger.warning("SubscribeVehicleData(headLampStatus) failed: \(error)")
            }
        }
        for button in wantedButtons where !heldButtons.contains(button) && !refusedButtons.contains(button) {
            guard phase == .running, let level = hmiStatus?.hmiLevel,
                  permits("SubscribeButton", at: level, fallback: Self.buttonSubscriptionLevels), epoch == heldEpoch else { break }
            do {
                let response = try await request(.subscribeButton, parameters: SDLButtonSubscriptionRequest(buttonName: button))
                let status = try response.decodeParameters(SDLResponseStatus.self)
                guard epoch == heldEpoch else { break }
                // IGNORED: already subscribed, which is what was wanted.
                if status.success || status.resultCode == "IGNORED" {
                    heldButtons.insert(button)
                } else {
                    refusedButtons.insert(button)
                    Self.logger.info("SubscribeButton(\(button)) refused: \(status.resultCode)\(status.info.map { " (\($0))" } ?? "")")
                }
            } catch {
                Self.logger.warning("SubscribeButton(\(button)) failed: \(error)")
                break
            }
        }
    }

    /// Ends the RPC service (EndService with the session's hashId) and waits briefly for the
    /// ACK: the head unit then closes the session at once rather than on the socket's loss.
    private func endRPCService() async {
        guard transport != nil else { return }
        var document = BSONDocument()
        if let hashID = session?.hashID { document["hashId"] = .int32(hashID) }
        do {
            _ = try await control(.endService, on: .rpc, payload: (try? document.encoded()) ?? [],
                                  timeout: min(configuration.requestTimeout, .seconds(1)))
        } catch {
            Self.logger.info("RPC EndService not acknowledged: \(error)")
        }
    }

    // MARK: Video

    private func openVideo(_ parameters: SDLVideoServiceParameters) {
        video = parameters
        videoMTU = Self.negotiatedMTU(parameters.mtu, otherwise: sessionMTU)
        rtpPacketizer = parameters.format.protocol == .rtp ? (try? RTPPacketizer(mtu: RTPPacketizer.maximumMTU)) : nil
        videoQueue.open()
        let generation = self.generation
        videoSenderTask = Task { [videoQueue] in
            while let unit = await videoQueue.next() {
                guard await self.sendVideo(unit, generation: generation) else { return }
            }
        }
        eventSink.yield(.videoStarted(parameters))
    }

    /// Writes one access unit as one message; false ends the sender.
    private func sendVideo(_ unit: AccessUnit, generation: Int) async -> Bool {
        guard generation == self.generation, let session, let transport, let video else { return false }
        // The HMI status that forbids video closes the queue, but a unit the sender took just
        // before may reach this point after it: the level, not the open service, decides.
        guard videoAllowed else { return false }
        var payload = unit.data
        if video.format.protocol == .rtp, var packetizer = rtpPacketizer {
            var packets: [[UInt8]] = []
            do {
                try packetizer.packetize(unit, into: &packets)
            } catch {
                Self.logger.warning("access unit \(unit.frameNumber) not packetized: \(error)")
                return true
            }
            rtpPacketizer = packetizer
            RTPPacketizer.frameForStream(packets, into: &payload)
        }
        let message = SDLMessage(version: protocolVersion, serviceType: .video, sessionID: session.sessionID,
                                 messageID: takeMessageID(), payload: payload)
        do throws(SDLConnectionError) {
            isWritingVideo = true
            defer {
                isWritingVideo = false
                lastVideoWrite = .now
            }
            try await write(message, mtu: videoMTU, on: transport)
            return true
        } catch {
            connectionLost(error, generation: generation)
            return false
        }
    }

    /// Writes a data message: encrypted frames through ``writeSealed(_:on:)`` when its service is
    /// protected (an encryption failure is an error, never the message in the clear), else the
    /// frames straight to the transport.
    private func write(_ message: SDLMessage, mtu: Int, on transport: any SDLTransport) async throws(SDLConnectionError) {
        if security.protectedServices.contains(message.serviceType) {
            // Sealing and taking a place in line happen together, with no suspension between.
            let written = writeSealed(try sealed(message, mtu: mtu), on: transport)
            try await written.value.mapError(SDLConnectionError.transport).get()
            return
        }
        do {
            try await transport.write(message.encoded(maximumFramePayload: Self.framePayload(forMTU: mtu)))
        } catch {
            throw .transport(error)
        }
    }

    /// Writes sealed bytes after every sealed write before them. One TLS session protects every
    /// service of the connection and its records must reach the head unit in the order they were
    /// made, but video, audio and encrypted RPCs are written by different tasks: each sealed
    /// write waits for the one sealed before it.
    private func writeSealed(_ bytes: [UInt8], on transport: any SDLTransport) -> Task<Result<Void, SDLTransportError>, Never> {
        let previous = lastSealedWrite
        let write = Task<Result<Void, SDLTransportError>, Never> {
            _ = await previous?.value
            do throws(SDLTransportError) {
                try await transport.write(bytes)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        lastSealedWrite = write
        return write
    }

    /// The message's encrypted frames; an error when its service is not protected now.
    private func sealed(_ message: SDLMessage, mtu: Int) throws(SDLConnectionError) -> [UInt8] {
        guard security.protectedServices.contains(message.serviceType) else {
            throw .protectionUnavailable(message.serviceType, "the \(message.serviceType) service is not protected (the security layer was reset)")
        }
        do {
            return try security.seal(message, maximumFramePayload: Self.framePayload(forMTU: mtu))
        } catch {
            Self.logger.error("\(message.serviceType) not sent: \(error)")
            throw .security(error)
        }
    }

    /// The payload per frame for a negotiated MTU. Head units differ on whether `mtu` counts the
    /// 12-byte header; leaving it out of the payload fits both readings.
    package static func framePayload(forMTU mtu: Int) -> Int { max(1, mtu - SDLFrameHeader.size) }

    /// The protocol version to speak after the RPC StartServiceACK: the major number of its
    /// `protocolVersion` (else the ACK header's version), within 2...5.
    package static func negotiatedProtocolVersion(_ info: SDLSessionInfo, headerVersion: UInt8) -> UInt8 {
        let major = info.protocolVersion.flatMap { $0.split(separator: ".").first }.flatMap { UInt8($0) } ?? headerVersion
        return min(max(major, 2), 5)
    }

    /// The MTU a StartServiceACK's `mtu` sets, clamped into what this side works with
    /// (64...131,084 bytes), or `fallback` when the ACK has none. The fuzz target for the link
    /// applies the head unit's MTU through this too.
    package static func negotiatedMTU(_ acknowledged: Int?, otherwise fallback: Int) -> Int {
        acknowledged.map(SDLWireLimits.clampedMTU) ?? fallback
    }

    /// The largest frame payload accepted from the head unit once the session's MTU is known:
    /// its MTU, and never less than the v3 default; at most 131,084 bytes, whatever it claims.
    package static func incomingFramePayloadLimit(sessionMTU: Int) -> Int {
        max(SDLWireLimits.clampedMTU(sessionMTU), defaultMTU)
    }

    private func closeVideoLocally() {
        security.ended(.video)
        guard video != nil else { return }
        videoQueue.close()
        videoSenderTask = nil
        video = nil
        rtpPacketizer = nil
        eventSink.yield(.videoStopped)
    }

    private func endVideoService() async {
        guard video != nil else { return }
        closeVideoLocally()
        guard transport != nil else { return }
        var document = BSONDocument()
        if let hashID = session?.hashID { document["hashId"] = .int32(hashID) }
        do {
            let reply = try await control(.endService, on: .video, payload: (try? document.encoded()) ?? [])
            if reply.controlInfo != .endServiceACK { Self.logger.info("video EndService answered with \(reply.controlInfo?.description ?? "data")") }
        } catch {
            Self.logger.info("video EndService not acknowledged: \(error)")
        }
    }

    // MARK: Requests

    private func takeMessageID() -> UInt32 {
        defer { nextMessageID = nextMessageID == UInt32.max ? 1 : nextMessageID + 1 }
        return nextMessageID
    }

    /// Queues a control or RPC message for the writer. A full queue means the head unit has
    /// stopped reading: the connection is dropped rather than let memory grow.
    private func enqueue(_ message: SDLMessage, mtu: Int, isHeartbeatACK: Bool = false,
                         encrypted: Bool = false) throws(SDLConnectionError) {
        guard let outgoing else { throw lossReason ?? .notConnected }
        if encrypted {
            // Sealed or refused, never sent in the clear; in line with the other sealed writes
            // rather than in the queue, so that its record keeps its place.
            guard let transport else { throw lossReason ?? .notConnected }
            let written = writeSealed(try sealed(message, mtu: mtu), on: transport)
            let generation = self.generation
            Task {
                if case .failure(let error) = await written.value { self.connectionLost(.transport(error), generation: generation) }
            }
            return
        }
        let bytes = message.encoded(maximumFramePayload: Self.framePayload(forMTU: mtu))
        switch outgoing.enqueue(bytes, isHeartbeatACK: isHeartbeatACK) {
        case .queued, .coalesced:
            return
        case .closed:
            throw lossReason ?? .notConnected
        case .full:
            let error = SDLConnectionError.headUnitNotReading(limits: outgoing.limits)
            Self.logger.warning("\(error)")
            connectionLost(error, generation: generation)
            throw error
        }
    }

    private func control(_ info: SDLControlFrameInfo, on service: SDLServiceType, payload: [UInt8],
                         protected: Bool = false, timeout: Duration? = nil) async throws(SDLConnectionError) -> SDLMessage {
        guard transport != nil else { throw lossReason ?? .notConnected }
        let message = SDLMessage(version: protocolVersion, serviceType: service, sessionID: session?.sessionID ?? 0,
                                 messageID: protocolVersion == 1 ? 0 : takeMessageID(), controlInfo: info,
                                 isProtected: protected, payload: payload)
        let key = ControlKey(service: service, isStart: info == .startService)
        pendingControl.removeValue(forKey: key)?.reply.resume(returning: .failure(.timedOut("\(info) superseded")))
        nextControlToken += 1
        let token = nextControlToken
        let timeout = timeout ?? configuration.requestTimeout
        // The timer neither outlives the answer nor keeps a stopped connection alive.
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.failControl(key, token: token, with: .timedOut("\(info) on the \(service) service"))
        }
        defer { timer.cancel() }
        let result: Result<SDLMessage, SDLConnectionError> = await withCheckedContinuation { continuation in
            pendingControl[key] = (token, continuation)
            do throws(SDLConnectionError) {
                try enqueue(message, mtu: sessionMTU)
            } catch {
                failControl(key, token: token, with: error)
            }
        }
        return try result.get()
    }

    private func failControl(_ key: ControlKey, token: Int, with error: SDLConnectionError) {
        guard let pending = pendingControl[key], pending.token == token else { return }
        pendingControl[key] = nil
        pending.reply.resume(returning: .failure(error))
    }

    /// Sends a request and waits for its response: encrypted when the head unit's policy requires
    /// it for this RPC (the RPC service is protected first), and once more encrypted when the head
    /// unit answers ENCRYPTION_NEEDED to it in the clear.
    private func request<Parameters: Encodable>(_ function: SDLFunctionID, parameters: Parameters,
                                                timeout: Duration? = nil) async throws(SDLConnectionError) -> SDLRPCMessage {
        let encrypted = permissions?.requiresEncryption(function.description) ?? false
        if encrypted { try await protectRPCService() }
        let response = try await send(function, parameters: parameters, timeout: timeout, encrypted: encrypted)
        guard !encrypted, (try? response.decodeParameters(SDLResponseStatus.self))?.resultCode == "ENCRYPTION_NEEDED",
              configuration.security != nil else { return response }
        try await protectRPCService()
        return try await send(function, parameters: parameters, timeout: timeout, encrypted: true)
    }

    private func send<Parameters: Encodable>(_ function: SDLFunctionID, parameters: Parameters, timeout: Duration?,
                                             encrypted: Bool) async throws(SDLConnectionError) -> SDLRPCMessage {
        guard transport != nil, let session else { throw lossReason ?? .notConnected }
        let correlationID = nextCorrelationID
        nextCorrelationID = nextCorrelationID >= 0x7FFF_FFFF ? 1 : nextCorrelationID + 1
        let rpc: SDLRPCMessage
        do {
            rpc = try SDLRPCMessage(type: .request, functionID: function, correlationID: correlationID, parameters: parameters)
        } catch {
            throw .rpc(error)
        }
        let message = SDLMessage(version: protocolVersion, serviceType: .rpc, sessionID: session.sessionID,
                                 messageID: takeMessageID(), payload: rpc.encoded())
        let limit = timeout ?? configuration.requestTimeout
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            await self?.failRequest(correlationID, with: .timedOut("\(function) request \(correlationID)"))
        }
        defer { timer.cancel() }
        let result: Result<SDLRPCMessage, SDLConnectionError> = await withCheckedContinuation { continuation in
            pendingRequests[correlationID] = continuation
            do throws(SDLConnectionError) {
                try enqueue(message, mtu: sessionMTU, encrypted: encrypted)
            } catch {
                failRequest(correlationID, with: error)
            }
        }
        return try result.get()
    }

    private func failRequest(_ correlationID: UInt32, with error: SDLConnectionError) {
        pendingRequests.removeValue(forKey: correlationID)?.resume(returning: .failure(error))
    }

    private func notify<Parameters: Encodable>(_ function: SDLFunctionID, parameters: Parameters) async throws(SDLConnectionError) {
        guard let session else { throw .notConnected }
        let rpc: SDLRPCMessage
        do {
            rpc = try SDLRPCMessage(type: .notification, functionID: function,
                                    correlationID: SDLRPCMessage.notificationCorrelationID, parameters: parameters)
        } catch {
            throw .rpc(error)
        }
        let encrypted = permissions?.requiresEncryption(function.description) ?? false
        if encrypted { try await protectRPCService() }
        try enqueue(SDLMessage(version: protocolVersion, serviceType: .rpc, sessionID: session.sessionID,
                               messageID: takeMessageID(), payload: rpc.encoded()), mtu: sessionMTU, encrypted: encrypted)
    }

    /// Protects the RPC service (a second StartService on it, with the E bit) if it is not yet;
    /// requests that need it at the same moment wait for the one handshake.
    private func protectRPCService() async throws(SDLConnectionError) {
        guard !security.protectedServices.contains(.rpc) else { return }
        if let running = rpcProtection { return try await running.value.get() }
        let generation = self.generation
        let running = Task { await self.startProtectedRPCService() }
        rpcProtection = running
        let outcome = await running.value
        if generation == self.generation { rpcProtection = nil }
        try outcome.get()
    }

    private func startProtectedRPCService() async -> Result<Void, SDLConnectionError> {
        guard let settings = configuration.security else {
            return .failure(.protectionUnavailable(.rpc, "the head unit's policy requires encrypted RPCs, but the app has no security configuration; give it a certificate (SDLSecurityConfiguration)"))
        }
        do {
            try security.prepare()
        } catch {
            return .failure(.protectionUnavailable(.rpc, "\(error.message) (head unit make: \(vehicleMake ?? "not given"))"))
        }
        securityFailure = nil
        let reply: SDLMessage
        do {
            reply = try await control(.startService, on: .rpc, payload: (try? BSONDocument().encoded()) ?? [], protected: true,
                                      timeout: settings.handshakeTimeout)
        } catch {
            return .failure(error)
        }
        guard reply.controlInfo == .startServiceACK, reply.isProtected, await awaitEstablishment() else {
            return .failure(.protectionUnavailable(.rpc, securityFailure.map { "the handshake failed: \($0)" }
                                                   ?? "the head unit did not protect the RPC service (\(reply.controlInfo?.description ?? "no answer"))"))
        }
        security.granted(.rpc)
        Self.logger.info("RPC service protected")
        eventSink.yield(.serviceProtected(.rpc))
        return .success(())
    }

    private static func checkSuccess(_ response: SDLRPCMessage) throws(SDLConnectionError) {
        let status: SDLResponseStatus
        do {
            status = try response.decodeParameters(SDLResponseStatus.self)
        } catch {
            throw .rpc(error)
        }
        guard status.success else { throw .requestFailed(response.functionID, resultCode: status.resultCode, info: status.info) }
    }

    // MARK: Losing and regaining the head unit

    private func teardown() {
        readerTask?.cancel()
        readerTask = nil
        transport?.close()
        transport = nil
        outgoing?.close()
        outgoing = nil
        closeVideoLocally()
        videoSenderTask = nil
        for reply in pendingRequests.values { reply.resume(returning: .failure(.notConnected)) }
        pendingRequests.removeAll()
        for pending in pendingControl.values { pending.reply.resume(returning: .failure(.notConnected)) }
        pendingControl.removeAll()
        parser = SDLFrameParser(maximumFramePayload: Self.defaultMTU)
        assembler = SDLMessageAssembler(maximumMessageSize: configuration.maximumIncomingMessageSize, maximumFramePayload: Self.defaultMTU)
        session = nil
        hmiStatus = nil
        security.reset()
        resumeEstablishmentWaiters(established: false)
        rpcProtection = nil
        lastSealedWrite = nil
        sessionMTU = Self.defaultMTU
        videoAllowed = false
        announceVideoAllowed()
        isAudioOpen = false
        audioAllowed = false
        announceAudioAllowed()
    }

    private func connectionLost(_ error: SDLConnectionError, generation: Int) {
        guard generation == self.generation, transport != nil else { return }
        lossReason = error
        // Whoever waits on an answer learns the real reason, not just "not connected".
        for reply in pendingRequests.values { reply.resume(returning: .failure(error)) }
        pendingRequests.removeAll()
        for pending in pendingControl.values { pending.reply.resume(returning: .failure(error)) }
        pendingControl.removeAll()
        let wasRunning = phase == .running
        teardown()
        guard wasRunning else { return }
        Self.logger.warning("head unit connection lost: \(error)")
        eventSink.yield(.disconnected(error))
        phase = .reconnecting
        reconnectTask = Task { await self.reconnectLoop() }
    }

    private func reconnectLoop() async {
        var attempt = 0
        while phase == .reconnecting {
            if let maximum = configuration.reconnect.maximumAttempts, attempt >= maximum {
                phase = .stopped
                teardown()
                eventSink.yield(.stopped)
                eventSink.finish()
                return
            }
            let delay = configuration.reconnect.delay(beforeAttempt: attempt)
            eventSink.yield(.reconnecting(attempt: attempt + 1, delay: delay))
            do {
                try await Task.sleep(for: delay)
            } catch {
                return
            }
            guard phase == .reconnecting else { return }
            do {
                try await establish()
                guard phase == .reconnecting else { return }
                phase = .running
                eventSink.yield(.reconnected)
                announceVideoAllowed()
                announceAudioAllowed()
                syncHeadUnitState()
                return
            } catch {
                Self.logger.info("reconnect attempt \(attempt + 1) failed: \(error)")
                teardown()
                attempt += 1
            }
        }
    }
}

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
    /// The protocol of this transport connection: framing, exchanges, the security layer.
    private var machine: SDLConnectionMachine
    private var readerTask: Task<Void, Never>?
    /// The reader and writer of the current transport and of closed ones not yet seen to end:
    /// ``stop()`` and the next connect wait for them, so nothing of an old transport runs on.
    private var transportTasks: [Task<Void, Never>] = []
    private var reconnectTask: Task<Void, Never>?
    private var videoSenderTask: Task<Void, Never>?
    private var videoStartTask: Task<Void, Never>?
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
    public var protectedServices: Set<SDLServiceType> { machine.security.protectedServices }
    /// Whether a picture is being written now, and when the last write ended: for telling a
    /// picture in flight from one sent after video was forbidden.
    private var isWritingVideo = false
    private var lastVideoWrite: ContinuousClock.Instant?
    /// What the last HMI status allows for audio, and what was last announced.
    private var audioAllowed = false
    private var announcedAudioAllowed = false

    /// What the head unit must hold for the app (see ``setHapticRegions(_:)``): what the app
    /// wants, what this registration holds, what the head unit refused.
    private var holdings = SDLHeadUnitHoldings()
    /// The policy's permissions (OnPermissionsChange) for this registration; nil until the head
    /// unit sends them, when SDL Core's stock levels apply.
    private var permissions: SDLPermissions?
    private var stateSyncTask: Task<Void, Never>?
    private var stateSyncAgain = false

    private typealias Reply = CheckedContinuation<Result<SDLConnectionMachine.Answer, SDLConnectionError>, Never>
    /// Who waits for each exchange the machine has open, and the timers of those exchanges.
    private var waiting: [SDLConnectionMachine.Exchange: Reply] = [:]
    private var timers: [SDLConnectionMachine.Exchange: Task<Void, Never>] = [:]

    /// A connection that makes its transport with `transport` (called again on every reconnect).
    public init(configuration: Configuration, transport: @escaping @Sendable () -> any SDLTransport) {
        self.configuration = configuration
        self.makeTransport = transport
        self.videoQueue = SDLVideoQueue(limits: configuration.videoQueueLimits)
        self.machine = SDLConnectionMachine(maximumIncomingMessageSize: configuration.maximumIncomingMessageSize)
        holdings.appCapability.want(VideoStreamingCapability.appCapability(
            listing: configuration.supportedSizes.map { VideoStreamingCapability(preferredResolution: $0) }))
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
            try machine.security.prepare()
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
            machine.security.granted(service)
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
        if machine.security.isEstablished { return true }
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
        holdings.appCapability.want(capability)
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
        holdings.haptics.want(regions)
        syncHeadUnitState()
    }

    /// Whether the app wants the car's ambient light sensor (SubscribeVehicleData for
    /// `headLampStatus`), reported as ``SDLConnectionEvent/ambientLightChanged(_:)``; subscribed
    /// when allowed and again after a reconnect or a return from NONE. A head unit whose policy
    /// does not grant vehicle data refuses it; that is logged once per registration or level.
    public func setFollowsAmbientLight(_ follows: Bool) {
        holdings.ambientLight.want(follows ? true : nil)
        syncHeadUnitState()
    }

    /// The buttons the app wants OnButtonPress for (SubscribeButton); subscribed when the level
    /// allows, again after a reconnect or a return from NONE. Buttons the head unit refuses are
    /// logged and asked for again only after such a change.
    public func setButtonSubscriptions(_ buttons: [SDLButtonName]) {
        holdings.wantButtons(buttons)
        syncHeadUnitState()
    }

    /// Replaces the head unit's haptic rectangles (SendHapticData) now and waits for the answer;
    /// empty clears them. They become the rectangles ``setHapticRegions(_:)`` keeps sent.
    ///
    /// Throws ``SDLConnectionError/hapticsNotSupported`` unless the capability says
    /// `hapticSpatialDataSupported`, because head units without it refuse the RPC.
    public func sendHapticData(_ regions: [HapticRegion]) async throws(SDLConnectionError) {
        guard capability?.hapticSpatialDataSupported == true else { throw .hapticsNotSupported }
        holdings.haptics.want(regions)
        let ticket = holdings.haptics.ticket(sending: regions)
        let response = try await request(.sendHapticData, parameters: SDLSendHapticDataRequest(regions: regions))
        try Self.checkSuccess(response)
        holdings.haptics.settle(ticket, accepted: true)
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
        let ack = try await control(.startService, on: .rpc,
                                    payload: (try? (["protocolVersion": .string(configuration.protocolVersion)] as BSONDocument).encoded()) ?? [])
        guard ack.controlInfo == .startServiceACK else {
            throw .serviceRejected(.rpc, SDLServiceRejection(nak: ack.payload))
        }
        let info: SDLSessionInfo
        do {
            info = try machine.rpcServiceStarted(ack: ack)
        } catch {
            throw .protocolViolation(error)
        }
        session = info

        // A new registration holds nothing of the last one's, and its permissions come anew;
        // forgotten before asking, since the head unit's OnPermissionsChange may be read in the
        // same breath as the answer, before this code runs on.
        holdings.forgetAll()
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
        machine.security = SDLAppSecurityStage(library: configuration.security?.library(forMake: facts.vehicleMake), appID: configuration.appID)
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
        try? perform(machine.receive(bytes))
    }

    /// Does what the machine says, in order; the first write that failed is thrown once all
    /// are done (a failure that lost the connection has told everyone waiting already).
    private func perform(_ actions: [SDLConnectionMachine.Action]) throws(SDLConnectionError) {
        let generation = self.generation
        var firstFailure: SDLConnectionError?
        for action in actions {
            // A loss part-way (a full queue, a violation) ends this transport's actions.
            guard generation == self.generation, transport != nil else { break }
            switch action {
            case .write(let bytes, let lane, let exchange):
                do throws(SDLConnectionError) {
                    try write(bytes, lane: lane)
                } catch {
                    if let exchange { fail(exchange, with: error) }
                    firstFailure = firstFailure ?? error
                }
            case .answered(let exchange, let answer):
                waiting.removeValue(forKey: exchange)?.resume(returning: .success(answer))
            case .timedOut(let exchange, let what):
                fail(exchange, with: .timedOut(what))
            case .armTimer(let exchange, let delay):
                // The timer neither outlives the answer nor keeps a stopped connection alive.
                timers[exchange] = Task { [weak self] in
                    guard (try? await Task.sleep(for: delay)) != nil else { return }
                    await self?.timerFired(exchange, generation: generation)
                }
            case .cancelTimer(let exchange):
                timers.removeValue(forKey: exchange)?.cancel()
            case .notice(let notice):
                handle(notice)
            case .serviceEndedByHeadUnit(let service):
                if service == .video { closeVideoLocally() } else if service == .audio { isAudioOpen = false }
            case .securityEstablished:
                Self.logger.info("security: TLS handshake with the head unit finished")
                resumeEstablishmentWaiters(established: true)
            case .securityFailed(let error, let reportedByHeadUnit, let closed):
                securityFailure = error
                resumeEstablishmentWaiters(established: false)
                Self.logger.warning("security layer reset: \(error)\(reportedByHeadUnit ? "" : " (told the head unit)")")
                eventSink.yield(.securityFailed(error))
                // Nothing of a service that was protected may go on in the clear: it closes and
                // starts again with a new handshake. Services that ran in the clear go on.
                if closed.contains(.video) { closeVideoLocally() }
                if closed.contains(.audio) { isAudioOpen = false }
            case .log(let level, let text):
                switch level {
                case .debug: Self.logger.debug("\(text)")
                case .info: Self.logger.info("\(text)")
                case .warning: Self.logger.warning("\(text) (reported once)")
                }
            case .lost(let loss):
                switch loss {
                case .protocolViolation(let error): connectionLost(.protocolViolation(error), generation: generation)
                case .closedByHeadUnit: connectionLost(.transport(.closedByPeer), generation: generation)
                }
            }
        }
        if let firstFailure { throw firstFailure }
    }

    private func timerFired(_ exchange: SDLConnectionMachine.Exchange, generation: Int) {
        guard generation == self.generation else { return }
        timers[exchange] = nil
        try? perform(machine.timerFired(exchange))
    }

    /// Fails whoever waits for `exchange`, which the machine then forgets.
    private func fail(_ exchange: SDLConnectionMachine.Exchange, with error: SDLConnectionError) {
        machine.abandon(exchange)
        timers.removeValue(forKey: exchange)?.cancel()
        waiting.removeValue(forKey: exchange)?.resume(returning: .failure(error))
    }

    /// Logs `text` as a warning the first time, at debug level after that (at most 256 kinds
    /// are remembered, so a head unit cannot grow the set without bound).
    private func warnOnce(_ text: String) {
        if machine.isFirstReport(of: text) {
            Self.logger.warning("\(text) (reported once)")
        } else {
            Self.logger.debug("\(text)")
        }
    }

    private func handle(_ notice: SDLConnectionMachine.Notice) {
        switch notice {
        case .hmiStatus(let status):
            let previous = hmiStatus?.hmiLevel
            hmiStatus = status
            eventSink.yield(.hmiStatusChanged(status))
            updateVideoAllowed(status.allowsVideo)
            updateAudioAllowed(status.allowsAudio)
            hmiLevelChanged(from: previous, to: status.hmiLevel)
        case .buttonPress(let press):
            eventSink.yield(.buttonPressed(press))
        case .permissions(let received):
            permissions = received
            // The policy wants the app's RPCs protected: protect the service before the first
            // RPC that needs it, where the app can.
            if received.requiresEncryption, configuration.security != nil, !machine.security.protectedServices.contains(.rpc) {
                Task { [weak self] in try? await self?.protectRPCService() }
            }
            // What was refused may be permitted now, and the reverse.
            holdings.forgiveRefusals()
            syncHeadUnitState()
        case .ambientLight(let light):
            eventSink.yield(.ambientLightChanged(light))
        case .driverDistraction(let distracted):
            guard distracted != isDriverDistracted else { return }
            isDriverDistracted = distracted
            eventSink.yield(.driverDistractionChanged(distracted))
        case .languages(let languages):
            headUnitLanguage = (languages.language, languages.hmiDisplayLanguage)
            eventSink.yield(.languageChanged(language: languages.language, displayLanguage: languages.hmiDisplayLanguage))
        case .touch(let json):
            do {
                eventSink.yield(.touch(try SDLTouchEvent.decode(json: Data(json))))
            } catch {
                warnOnce("OnTouchEvent ignored: \(error)")
            }
        case .videoCapability(let update):
            let filled = capability.map { update.filling(from: $0) } ?? update
            if filled != capability { forgetVideoRefusals() }
            capability = filled
            eventSink.yield(.capabilityChanged(filled))
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
        machine.serviceStarted(.audio, mtu: document["mtu"]?.integerValue)
        isAudioOpen = true
    }

    /// Ends the audio service if it is open.
    public func stopAudio() async {
        guard isAudioOpen else { return }
        isAudioOpen = false
        machine.security.ended(.audio)
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
        guard isAudioOpen, audioAllowed, session != nil, let transport else { throw .audioNotAllowed }
        do throws(SDLConnectionError) {
            try await writeData(.audio, payload: pcm, on: transport)
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

    private func hmiLevelChanged(from previous: SDLHMILevel?, to level: SDLHMILevel) {
        guard previous != level else { return }
        holdings.levelChanged(to: level)
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
        var failed = Set<SDLHeadUnitHoldings.Kind>()
        while phase == .running, let level = hmiStatus?.hmiLevel,
              let item = holdings.next(at: level, permissions: permissions,
                                       hapticsSupported: capability?.hapticSpatialDataSupported == true, skipping: failed) {
            if let accepted = await send(item) {
                holdings.settle(item, accepted: accepted)
            } else {
                // No answer: not asked again in this pass (the next change looks again).
                failed.insert(item.kind)
            }
        }
    }

    /// Sends one piece of held state: whether the head unit took it, nil when it did not answer.
    private func send(_ item: SDLHeadUnitHoldings.Item) async -> Bool? {
        switch item {
        case .appCapability(let ticket):
            do {
                try await notify(.onAppCapabilityUpdated, parameters: SDLOnAppCapabilityUpdated(ticket.value))
                return true
            } catch where error != .notConnected {
                Self.logger.warning("OnAppCapabilityUpdated not sent: \(error)")
            } catch {
            }
        case .haptics(let ticket):
            // Refused rectangles are not sent again until they or the level change: a head unit
            // refusing them would refuse them again.
            return await subscription("SendHapticData", .sendHapticData, SDLSendHapticDataRequest(regions: ticket.value),
                                      acceptsIgnored: false)
        case .ambientLight:
            // Core's policy grants vehicle data only to apps whose group has it.
            return await subscription("SubscribeVehicleData(headLampStatus)", .subscribeVehicleData, SDLHeadLampSubscriptionRequest(),
                                      refusal: "the map keeps the engine's day/night")
        case .button(let ticket):
            return await subscription("SubscribeButton(\(ticket.value))", .subscribeButton,
                                      SDLButtonSubscriptionRequest(buttonName: ticket.value))
        }
        return nil
    }

    /// Sends a request for held state: whether the head unit took it (IGNORED, with
    /// `acceptsIgnored`, is "already held"), nil when no readable answer came.
    private func subscription<Parameters: Encodable>(_ name: String, _ function: SDLFunctionID, _ parameters: Parameters,
                                                     acceptsIgnored: Bool = true, refusal: String? = nil) async -> Bool? {
        do {
            let response = try await request(function, parameters: parameters)
            let status = try response.decodeParameters(SDLResponseStatus.self)
            if status.success || (acceptsIgnored && status.resultCode == "IGNORED") { return true }
            Self.logger.info("\(name) refused: \(status.resultCode)\(status.info.map { " (\($0))" } ?? "")\(refusal.map { "; \($0)" } ?? "")")
            return false
        } catch {
            Self.logger.warning("\(name) failed: \(error)")
            return nil
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
        machine.serviceStarted(.video, mtu: parameters.mtu)
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
        guard generation == self.generation, session != nil, let transport, let video else { return false }
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
        do throws(SDLConnectionError) {
            isWritingVideo = true
            defer {
                isWritingVideo = false
                lastVideoWrite = .now
            }
            try await writeData(.video, payload: payload, on: transport)
            return true
        } catch {
            connectionLost(error, generation: generation)
            return false
        }
    }

    /// Writes a video or audio message: encrypted frames through ``writeSealed(_:on:)`` when its
    /// service is protected (an encryption failure is an error, never the message in the clear),
    /// else the frames straight to the transport.
    private func writeData(_ service: SDLServiceType, payload: [UInt8], on transport: any SDLTransport) async throws(SDLConnectionError) {
        let message: (bytes: [UInt8], isSealed: Bool)
        do {
            message = try machine.dataMessage(service, payload: payload)
        } catch {
            throw Self.error(error, sending: service)
        }
        if message.isSealed {
            // Sealing and taking a place in line happen together, with no suspension between.
            try await writeSealed(message.bytes, on: transport).value.mapError(SDLConnectionError.transport).get()
            return
        }
        do {
            try await transport.write(message.bytes)
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

    /// What a message the machine could not make fails with.
    private static func error(_ failure: SDLConnectionMachine.SendFailure, sending service: SDLServiceType) -> SDLConnectionError {
        switch failure {
        case .rpc(let error):
            return .rpc(error)
        case .notProtected(let service):
            return .protectionUnavailable(service, "the \(service) service is not protected (the security layer was reset)")
        case .security(let error):
            logger.error("\(service) not sent: \(error)")
            return .security(error)
        }
    }

    private func closeVideoLocally() {
        machine.security.ended(.video)
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

    /// Writes bytes the machine made: queued for the writer, or in line with the other sealed
    /// writes. A full queue means the head unit has stopped reading: the connection is dropped
    /// rather than let memory grow.
    private func write(_ bytes: [UInt8], lane: SDLConnectionMachine.Lane) throws(SDLConnectionError) {
        guard let outgoing, let transport else { throw lossReason ?? .notConnected }
        switch lane {
        case .sealed:
            let written = writeSealed(bytes, on: transport)
            let generation = self.generation
            Task {
                if case .failure(let error) = await written.value { self.connectionLost(.transport(error), generation: generation) }
            }
        case .queued(let isHeartbeatACK):
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
    }

    private func control(_ info: SDLControlFrameInfo, on service: SDLServiceType, payload: [UInt8],
                         protected: Bool = false, timeout: Duration? = nil) async throws(SDLConnectionError) -> SDLMessage {
        guard transport != nil else { throw lossReason ?? .notConnected }
        let (exchange, actions) = machine.startControl(info, on: service, payload: payload, protected: protected,
                                                       timeout: timeout ?? configuration.requestTimeout)
        guard case .control(let reply) = try await answer(to: exchange, after: actions) else {
            throw .timedOut("\(info) on the \(service) service (answered with an RPC)")
        }
        return reply
    }

    /// Performs the actions that start `exchange` and waits for its answer, a failed write or
    /// its timeout.
    private func answer(to exchange: SDLConnectionMachine.Exchange,
                        after actions: [SDLConnectionMachine.Action]) async throws(SDLConnectionError) -> SDLConnectionMachine.Answer {
        let result: Result<SDLConnectionMachine.Answer, SDLConnectionError> = await withCheckedContinuation { continuation in
            waiting[exchange] = continuation
            // A write that fails fails the exchange it belongs to.
            try? perform(actions)
        }
        return try result.get()
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
        guard transport != nil, session != nil else { throw lossReason ?? .notConnected }
        let started: (exchange: SDLConnectionMachine.Exchange, actions: [SDLConnectionMachine.Action])
        do {
            started = try machine.startRequest(function, parameters: parameters, encrypted: encrypted,
                                               timeout: timeout ?? configuration.requestTimeout)
        } catch {
            throw Self.error(error, sending: .rpc)
        }
        guard case .response(let response) = try await answer(to: started.exchange, after: started.actions) else {
            throw .timedOut("\(function) request (answered with a control message)")
        }
        return response
    }

    private func notify<Parameters: Encodable>(_ function: SDLFunctionID, parameters: Parameters) async throws(SDLConnectionError) {
        guard transport != nil, session != nil else { throw lossReason ?? .notConnected }
        let encrypted = permissions?.requiresEncryption(function.description) ?? false
        if encrypted { try await protectRPCService() }
        let write: SDLConnectionMachine.Action
        do {
            write = try machine.notification(function, parameters: parameters, encrypted: encrypted)
        } catch {
            throw Self.error(error, sending: .rpc)
        }
        try perform([write])
    }

    /// Protects the RPC service (a second StartService on it, with the E bit) if it is not yet;
    /// requests that need it at the same moment wait for the one handshake.
    private func protectRPCService() async throws(SDLConnectionError) {
        guard !machine.security.protectedServices.contains(.rpc) else { return }
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
            try machine.security.prepare()
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
        machine.security.granted(.rpc)
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
        failWaiting(with: .notConnected)
        machine.reset(maximumIncomingMessageSize: configuration.maximumIncomingMessageSize)
        session = nil
        hmiStatus = nil
        resumeEstablishmentWaiters(established: false)
        rpcProtection = nil
        lastSealedWrite = nil
        videoAllowed = false
        announceVideoAllowed()
        isAudioOpen = false
        audioAllowed = false
        announceAudioAllowed()
    }

    /// Fails every exchange still waiting, and stops their timers.
    private func failWaiting(with error: SDLConnectionError) {
        let replies = waiting
        waiting.removeAll()
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
        for reply in replies.values { reply.resume(returning: .failure(error)) }
    }

    private func connectionLost(_ error: SDLConnectionError, generation: Int) {
        guard generation == self.generation, transport != nil else { return }
        lossReason = error
        // Whoever waits on an answer learns the real reason, not just "not connected".
        failWaiting(with: error)
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

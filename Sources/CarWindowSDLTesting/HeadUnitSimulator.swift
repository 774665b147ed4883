import Foundation
import Logging
import CarWindowVideoCore
import CarWindowSinks
import CarWindowProjection
import CarWindowSDLProtocol
import CarWindowSDLSecurity
import CarWindowSDL

/// A SmartDeviceLink head unit on a TCP port, written from the protocol and RPC specs: enough of
/// SDL Core's behaviour to develop and test projection without a car or an SDL Core build.
///
/// It accepts one app connection at a time (a new one after a drop), answers the RPC
/// StartService with a BSON ACK, RegisterAppInterface, GetSystemCapability, SendHapticData and
/// UnregisterAppInterface, sends the configured OnHMIStatus sequence, ACKs or NAKs video
/// StartService per configuration, and keeps what it receives: the video (RAW, or RTP turned
/// back into Annex-B) in memory and optionally in a file, haptic rectangles, app capabilities.
/// Tests and the `carwindow headunit` command drive it: change the HMI level, send touches,
/// resize, read slowly, drop the connection.
public actor HeadUnitSimulator {
    /// How the simulated head unit behaves.
    public struct Configuration: Sendable {
        /// Address to listen on.
        public var host = "127.0.0.1"
        /// Port; 0 picks a free one (see ``HeadUnitSimulator/start()``).
        public var port = 0
        /// The session MTU in the RPC StartServiceACK.
        public var mtu = 131_072
        /// The video ACK's MTU; nil leaves it out (the session MTU applies).
        public var videoMTU: Int?
        /// `hashId` in the RPC ACK.
        public var hashID: Int32 = 65_537
        /// `protocolVersion` in the RPC ACK.
        public var protocolVersion = "5.4.1"
        /// The capability GetSystemCapability returns.
        public var capability = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: 800, height: 480), maxBitrate: 4_000,
            supportedFormats: [.h264Raw, .h264RTP], hapticSpatialDataSupported: true, scale: 1, preferredFPS: 15)
        /// OnHMIStatus notifications sent right after the RegisterAppInterface response.
        /// SDL Core's order for a navigation app: NONE, then FULL, streamable and audible.
        public var initialStatuses = [SDLHMIStatus(hmiLevel: .none, videoStreamingState: .notStreamable),
                                      SDLHMIStatus(hmiLevel: .full, audioStreamingState: "AUDIBLE", videoStreamingState: .streamable)]
        /// `pcmStreamCapabilities` in the RegisterAppInterface response: Core's default.
        public var pcmSamplingRate = "16KHZ"
        /// `bitsPerSample` of `pcmStreamCapabilities`.
        public var pcmBitsPerSample = "16_BIT"
        /// The HMI levels in which each RPC the app sends is allowed, as SDL Core's stock policy
        /// table grants them to a navigation app (Base-4, Navigation-1, HapticGroup). A request
        /// outside them is answered DISALLOWED and a notification dropped, both recorded in
        /// ``Snapshot/policyBlocked`` (Core logs "Request is blocked by policies"); functions not
        /// listed are allowed in every level. The level is NONE until the first OnHMIStatus.
        public var policyLevels: [SDLFunctionID: Set<SDLHMILevel>] = [
            .onAppCapabilityUpdated: [.full, .limited, .background],
            .sendHapticData: [.full],
            .subscribeButton: [.full, .limited, .background],
            .unsubscribeButton: [.full, .limited, .background],
        ]
        /// The buttons listed in the RegisterAppInterface response (`buttonCapabilities`).
        public var buttons: [SDLButtonName] = [.navCenterLocation, .navZoomIn, .navZoomOut, .navPanUp, .navPanRight,
                                               .navPanDown, .navPanLeft, .navTiltToggle, .navRotateClockwise,
                                               .navRotateCounterClockwise, .navHeadingToggle]
        /// Whether the app's policy grants vehicle data (head lamps); SDL Core's stock table does
        /// not for Base-4, Navigation-1 and HapticGroup alone: SubscribeVehicleData is DISALLOWED.
        public var grantsVehicleData = true
        /// Whether the screen takes touches (`touchEventAvailable.pressAvailable` in the
        /// RegisterAppInterface response's display capabilities).
        public var touchAvailable = true
        /// What SDL Core 8.2 does after its HMI refuses a video size or format: it closes the app
        /// (OnHMIStatus NONE) unless the app has an audio service open; the app tries its next
        /// size once it is activated again.
        public var closesAppOnRefusedVideo = true
        /// What SDL Core does when the app goes to NONE: it ends the app's video and audio
        /// services itself (EndService), and the app must acknowledge.
        public var endsServicesOnNone = true
        /// Video sizes NAKed with rejectedParams [width, height].
        public var rejectedResolutions: Set<ImageResolution> = []
        /// When set, RegisterAppInterface is refused with this result code (`DISALLOWED`, say),
        /// as a head unit whose policy does not know the app refuses it.
        public var refusesRegistration: String?
        /// `language` and `hmiDisplayLanguage` in the RegisterAppInterface response (SDL Core
        /// sends both, `EN-US` by default); nil leaves them out.
        public var displayLanguage: String?
        /// Formats NAKed with rejectedParams [videoProtocol, videoCodec].
        public var rejectedFormats: Set<VideoStreamingFormat> = []
        /// Bytes read per read call.
        public var readChunkSize = 65_536
        /// Pause after every read: a slow head unit (`readChunkSize / readDelay` bytes a second).
        public var readDelay: Duration?
        /// The kernel receive buffer of accepted sockets (SO_RCVBUF); small values make a slow
        /// head unit push back sooner.
        public var receiveBufferSize: Int?
        /// Received video is appended here (Annex-B), if set.
        public var videoOutputPath: String?
        /// The most video bytes kept in memory; later units are only counted.
        public var maximumVideoBytesInMemory = 64 << 20
        /// Told every video unit as it arrives (Annex-B), on the simulator's executor: a live view
        /// of the stream (the browser head unit) sees all of it, memory limit or not.
        public var videoUnitObserver: (@Sendable ([UInt8]) -> Void)?

        /// SDL's security layer, as a head unit built with it runs it (the TLS client); nil
        /// answers a protected StartService with an unprotected ACK, as SDL Core built without
        /// security does.
        public var security: Security?

        /// The defaults: an 800x480 H.264 RAW/RTP head unit with haptics that puts the app in
        /// FULL/STREAMABLE after registration.
        public init() {}
    }

    /// The head unit's side of protected services.
    public struct Security: Sendable {
        /// TLS (up to 1.3) or DTLS (1.2), as SDL Core's `Protocol` setting.
        public var transport: OpenSSLHeadUnitSession.Transport
        /// The CA certificates (PEM) the app's certificate must chain to when ``verifyApp``.
        public var trustedCAsPEM: [UInt8]?
        /// Whether the app's certificate is verified (SDL Core's `VerifyPeer`).
        public var verifyApp: Bool
        /// The head unit's own certificate and key (PEM), if the app asks for one.
        public var certificatePEM: [UInt8]?
        /// The key of ``certificatePEM``.
        public var privateKeyPEM: [UInt8]?
        /// Services started only protected (SDL Core's `ForceProtectedService`): an unprotected
        /// StartService for them is refused.
        public var forceProtected: Set<SDLServiceType>
        /// RPCs the policy marks `encryption_required` (SDL-0207): OnPermissionsChange says so,
        /// and such a request that arrives in the clear is answered ENCRYPTION_NEEDED.
        public var encryptedRPCs: Set<SDLFunctionID> = []
        /// Whether OnPermissionsChange says which RPCs need encryption; false leaves the app to
        /// learn it from ENCRYPTION_NEEDED answers.
        public var announcesEncryption = true

        /// A security layer; by default TLS, verifying nothing, forcing nothing.
        public init(transport: OpenSSLHeadUnitSession.Transport = .tls, trustedCAsPEM: [UInt8]? = nil, verifyApp: Bool = false,
                    certificatePEM: [UInt8]? = nil, privateKeyPEM: [UInt8]? = nil, forceProtected: Set<SDLServiceType> = []) {
            self.transport = transport
            self.trustedCAsPEM = trustedCAsPEM
            self.verifyApp = verifyApp
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
            self.forceProtected = forceProtected
        }
    }

    /// What the simulator has seen so far.
    public struct Snapshot: Sendable {
        /// Connections accepted.
        public var connections = 0
        /// Whether an app is connected now.
        public var isConnected = false
        /// The registered app's name (nil before RegisterAppInterface or after a drop).
        public var registeredAppName: String?
        /// Its app types.
        public var appHMITypes: [String] = []
        /// The protocol version the app asked for in its first StartService.
        public var requestedProtocolVersion: String?
        /// Every video StartService: what was asked and whether it was granted.
        public var videoRequests: [(candidate: SDLVideoCandidate, accepted: Bool)] = []
        /// The open video service's parameters.
        public var video: SDLVideoServiceParameters?
        /// Video EndService messages received.
        public var videoEndCount = 0
        /// Received video messages (one access unit each), as Annex-B.
        public var videoUnits: [[UInt8]] = []
        /// All video messages counted, including those beyond the memory bound.
        public var videoUnitCount = 0
        /// Video messages that arrived with no video service open: after the app ended it (as
        /// it must when the HMI level forbids video) or before one was started. The app knew;
        /// a protocol violation.
        public var videoWhileNotAllowed = 0
        /// Video messages that arrived after the HMI level stopped allowing video but before the
        /// app ended the service (or answered the head unit's own EndService): written before the
        /// app read the change, so no app can avoid them (SDL Core logs them too). Few, and none
        /// once the service has ended.
        public var videoInFlightWhenForbidden = 0
        /// Every SendHapticData's rectangles.
        public var hapticData: [[HapticRegion]] = []
        /// Audio StartService requests granted, and EndService requests.
        public var audioStarts = 0
        /// Audio EndService requests.
        public var audioEnds = 0
        /// Whether the audio service is open.
        public var audioOpen = false
        /// The PCM received (the first 16 MiB).
        public var audio: [UInt8] = []
        /// Audio messages received, each with its size and arrival (monotonic seconds).
        public var audioMessages: [(bytes: Int, time: Double)] = []
        /// Audio messages that came with no audio service open or outside an audible level.
        public var audioWhileNotAllowed = 0
        /// Every OnAppCapabilityUpdated's JSON that the policy let through.
        public var appCapabilityUpdates: [String] = []
        /// RPCs the policy blocked: the function and the app's HMI level then.
        public var policyBlocked: [(function: SDLFunctionID, level: SDLHMILevel)] = []
        /// The header version of the app's first StartService on the RPC service.
        public var firstStartServiceHeaderVersion: UInt8?
        /// EndService messages on the RPC service.
        public var rpcEndServiceCount = 0
        /// EndServiceACKs the app sent for video EndServices this head unit started
        /// (``HeadUnitSimulator/endVideoService()``).
        public var videoEndServiceACKs = 0
        /// EndServiceACKs the app sent for audio EndServices this head unit started (at NONE).
        public var audioEndServiceACKs = 0
        /// The buttons the app subscribed to (and has not unsubscribed), this registration.
        public var buttonSubscriptions: Set<SDLButtonName> = []
        /// Every SubscribeButton request's button, in order, across registrations.
        public var subscribeButtonRequests: [SDLButtonName] = []
        /// Whether the app holds a head-lamp (vehicle data) subscription, this registration.
        public var headLampSubscribed = false
        /// SubscribeVehicleData requests, across registrations.
        public var subscribeVehicleDataRequests = 0
        /// Whether UnregisterAppInterface arrived.
        public var unregistered = false
        /// The current HMI status sent.
        public var hmiStatus: SDLHMIStatus?
        /// HeartbeatACKs received (answers to ``HeadUnitSimulator/sendHeartbeat()``).
        public var heartbeatACKs = 0
        /// Requests answered, by function.
        public var requests: [SDLFunctionID] = []
        /// Why the video file (``Configuration/videoOutputPath``) could not be opened or
        /// written; the file then ends on the last whole access unit and receives no more.
        public var videoOutputFailure: SinkError?
        /// The services running protected now.
        public var protectedServices: Set<SDLServiceType> = []
        /// TLS handshakes finished, across connections.
        public var handshakes = 0
        /// The TLS version of the last handshake ("TLSv1.3", "DTLSv1.2").
        public var securityProtocol: String?
        /// Encrypted frames received and decrypted.
        public var decryptedFrames = 0
        /// Video or audio frames that came in the clear while their service ran protected: never
        /// allowed. (On a protected RPC service only the RPCs that need it are encrypted.)
        public var plainFramesOnProtectedServices = 0
        /// Security errors this head unit sent the app, and the ones the app sent.
        public var securityErrorsSent: [SDLSecurityError] = []
        /// The app's internal-error notifications.
        public var securityErrorsReceived: [SDLSecurityErrorCode] = []
        /// Requests that arrived encrypted, by function.
        public var encryptedRequests: [SDLFunctionID] = []
        /// Requests answered ENCRYPTION_NEEDED (they came in the clear).
        public var encryptionNeeded: [SDLFunctionID] = []
    }

    static let logger = Logger(label: "carwindow.headunit")

    /// The behaviour; changes apply to the next request.
    public var configuration: Configuration
    private var listener: SDLTCPListener?
    private var transport: SDLTCPTransport?
    private var acceptTask: Task<Void, Never>?
    private var state = Snapshot()
    /// The framing of the app's connection: the same as the app's own (``SDLFraming``).
    private var framing = HeadUnitSimulator.framing(sessionID: 0, mtu: 131_072)
    private var videoFile: AnnexBFileSink?
    private var depacketizer = RTPStreamDepacketizer()
    private var waiters: [(id: Int, condition: @Sendable (Snapshot) -> Bool, continuation: CheckedContinuation<Snapshot?, Never>)] = []
    private var nextWaiterID = 0
    private var connectionGeneration = 0
    private var videoBytesInMemory = 0
    /// This head unit ended the video service itself and the app has not answered yet.
    private var awaitsVideoEndACK = false
    /// The TLS client of this connection, and the protected StartServices waiting for its
    /// handshake to finish.
    private var tls: OpenSSLHeadUnitSession?
    private var pendingProtectedStarts: [(service: SDLServiceType, messageID: UInt32, ack: BSONDocument)] = []
    private var securitySequence: UInt32 = 0
    /// Message ids of RPC messages whose frames came encrypted, until the message is handled.
    private var encryptedRPCMessageIDs = Set<UInt32>()

    /// A simulator; call ``start()`` to listen.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Tells the app the security layer failed (an internal-error notification with `code`) and
    /// resets this side's TLS state, as SDL Core does after an error: every protected service
    /// ends and starts again with a new handshake.
    public func sendSecurityError(_ code: SDLSecurityErrorCode, text: String) async {
        // Reset before the write: the app's next StartService may be read while it is awaited.
        if state.protectedServices.contains(.video) { state.video = nil }
        if state.protectedServices.contains(.audio) { state.audioOpen = false }
        resetSecurity()
        changed()
        await sendSecurityQuery(.error(code, text: text, sequenceNumber: nextSecuritySequence()))
    }

    /// Listens and returns the port.
    @discardableResult
    public func start() throws(SDLTransportError) -> Int {
        if let listener { return listener.port }
        let listener = try SDLTCPListener(host: configuration.host, port: configuration.port, receiveBufferSize: configuration.receiveBufferSize)
        self.listener = listener
        if let path = configuration.videoOutputPath {
            do {
                videoFile = try AnnexBFileSink(url: URL(fileURLWithPath: path))
            } catch {
                state.videoOutputFailure = error
            }
        }
        acceptTask = Task { await self.acceptLoop(listener) }
        return listener.port
    }

    /// The port listened on; nil before ``start()``.
    public var port: Int? { listener?.port }

    /// Stops listening and drops the connection.
    public func stop() {
        acceptTask?.cancel()
        listener?.close()
        listener = nil
        dropConnection()
        videoFile?.close()
        videoFile = nil
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        waiters.removeAll()
    }

    /// What was received so far.
    public func snapshot() -> Snapshot { state }

    /// Waits until `condition` holds for the snapshot, at most `timeout`; nil on timeout.
    public func wait(timeout: Duration, until condition: @escaping @Sendable (Snapshot) -> Bool) async -> Snapshot? {
        if condition(state) { return state }
        nextWaiterID += 1
        let id = nextWaiterID
        return await withCheckedContinuation { continuation in
            waiters.append((id, condition, continuation))
            Task {
                try? await Task.sleep(for: timeout)
                self.expireWaiter(id)
            }
        }
    }

    private func expireWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(returning: nil)
    }

    private func changed() {
        let snapshot = state
        var remaining: [(id: Int, condition: @Sendable (Snapshot) -> Bool, continuation: CheckedContinuation<Snapshot?, Never>)] = []
        for waiter in waiters {
            if waiter.condition(snapshot) { waiter.continuation.resume(returning: snapshot) } else { remaining.append(waiter) }
        }
        waiters = remaining
    }

    // MARK: Driving the app

    /// Sends an OnHMIStatus (FULL/LIMITED/BACKGROUND/NONE, streamable or not); NONE also ends
    /// the app's video and audio services, as SDL Core does (``Configuration/endsServicesOnNone``).
    public func setHMIStatus(_ status: SDLHMIStatus) async throws(SDLConnectionError) {
        state.hmiStatus = status
        changed()
        try await notify(.onHMIStatus, parameters: status)
        guard status.hmiLevel == .none, configuration.endsServicesOnNone else { return }
        if state.video != nil { try await endVideoService() }
        if state.audioOpen {
            state.audioOpen = false
            changed()
            try await write(framing.message(.audio, .endService, payload: []))
        }
    }

    /// Sends an OnTouchEvent, its coordinates rounded to whole pixels as SDL Core sends them.
    public func sendTouch(_ event: SDLTouchEvent) async throws(SDLConnectionError) {
        var whole = event
        for index in whole.touches.indices {
            whole.touches[index].coordinates = whole.touches[index].coordinates.map {
                SDLTouchEvent.Coordinate(x: $0.x.rounded(), y: $0.y.rounded())
            }
        }
        try await notify(.onTouchEvent, parameters: whole)
    }

    /// Presses a button (OnButtonPress, SHORT) as a head unit forwards it: only to an app
    /// subscribed to it. Returns whether it was sent.
    @discardableResult
    public func pressButton(_ button: SDLButtonName, mode: SDLButtonPressMode = .short) async throws(SDLConnectionError) -> Bool {
        guard state.buttonSubscriptions.contains(button) else { return false }
        try await notify(.onButtonPress, parameters: SDLButtonPress(buttonName: button, buttonPressMode: mode))
        return true
    }

    /// Reports the ambient light sensor (OnVehicleData headLampStatus) to an app subscribed to
    /// the head lamps; returns whether it was sent.
    @discardableResult
    public func sendAmbientLight(_ light: SDLAmbientLight) async throws(SDLConnectionError) -> Bool {
        guard state.headLampSubscribed else { return false }
        try await notify(.onVehicleData, parameters: ["headLampStatus": ["ambientLightSensorStatus": light.rawValue]])
        return true
    }

    /// Refuses `resolution` from now on: the app's next video start at that size gets a NAK.
    public func refuse(_ resolution: ImageResolution) {
        configuration.rejectedResolutions.insert(resolution)
    }

    /// Sends OnLanguageChange: the driver chose another language for voice and display.
    public func sendLanguageChange(to language: String) async throws(SDLConnectionError) {
        try await notify(.onLanguageChange, parameters: ["language": language, "hmiDisplayLanguage": language])
    }

    /// Sends OnDriverDistraction DD_ON or DD_OFF.
    public func sendDriverDistraction(_ on: Bool) async throws(SDLConnectionError) {
        try await notify(.onDriverDistraction, parameters: ["state": on ? "DD_ON" : "DD_OFF"])
    }

    /// Ends the app's video service from the head unit's side (an EndService on the video
    /// service), as SDL Core does when the app streams where it should not; the app should
    /// stop sending and answer with an EndServiceACK.
    public func endVideoService() async throws(SDLConnectionError) {
        state.video = nil
        awaitsVideoEndACK = true
        changed()
        try await write(framing.message(.video, .endService, payload: []))
    }

    /// Sends an OnSystemCapabilityUpdated with a new video capability (a resize) and answers
    /// later GetSystemCapability requests with it.
    public func sendCapabilityUpdate(_ capability: VideoStreamingCapability) async throws(SDLConnectionError) {
        configuration.capability = capability
        try await notify(.onSystemCapabilityUpdated, parameters: SDLSystemCapabilityParameters(
            systemCapability: SDLSystemCapability(videoStreamingCapability: capability)))
    }

    /// Sends a heartbeat on the control service; the app should answer with a HeartbeatACK.
    public func sendHeartbeat() async throws(SDLConnectionError) {
        try await write(framing.message(.control, .heartbeat, payload: []))
    }

    /// Sends raw bytes to the app, as a broken head unit might.
    public func sendRawBytes(_ bytes: [UInt8]) async throws(SDLConnectionError) {
        guard let transport else { throw .notConnected }
        do {
            try await transport.write(bytes)
        } catch {
            throw .transport(error)
        }
    }

    /// Closes the app's connection without any goodbye; the next connection is accepted.
    public func dropConnection() {
        connectionGeneration += 1
        transport?.close()
        transport = nil
        state.isConnected = false
        state.registeredAppName = nil
        state.video = nil
        state.buttonSubscriptions = []
        state.headLampSubscribed = false
        awaitsVideoEndACK = false
        state.hmiStatus = nil
        state.audioOpen = false
        changed()
    }

    // MARK: Serving

    private func acceptLoop(_ listener: SDLTCPListener) async {
        while !Task.isCancelled {
            let connection: SDLTCPTransport
            do {
                connection = try await listener.accept(timeout: .seconds(3600))
            } catch {
                if error == .closed { return }
                continue
            }
            dropConnection()
            transport = connection
            connectionGeneration += 1
            let generation = connectionGeneration
            framing = Self.framing(sessionID: framing.sessionID == 255 ? 1 : framing.sessionID + 1, mtu: configuration.mtu)
            depacketizer = RTPStreamDepacketizer()
            resetSecurity()
            state.connections += 1
            state.isConnected = true
            changed()
            await serve(connection, generation: generation)
        }
    }

    private func serve(_ connection: SDLTCPTransport, generation: Int) async {
        while generation == connectionGeneration {
            do {
                let bytes = try await connection.read(maximumCount: max(1, configuration.readChunkSize))
                framing.append(bytes)
                while var frame = try framing.nextFrame() {
                    // What a dropped connection still had buffered is not the app's doing now.
                    guard generation == connectionGeneration else { return }
                    if frame.needsDecryption {
                        guard let opened = await open(frame) else { continue }
                        frame = opened
                        if frame.header.serviceType == .rpc, encryptedRPCMessageIDs.count < 1024 {
                            encryptedRPCMessageIDs.insert(frame.header.messageID)
                        }
                    } else if frame.header.frameType != .control, frame.header.frameType != .first,
                              frame.header.serviceType == .video || frame.header.serviceType == .audio,
                              state.protectedServices.contains(frame.header.serviceType) {
                        state.plainFramesOnProtectedServices += 1
                        changed()
                    }
                    if let message = try framing.assemble(frame) { await handle(message) }
                }
                if let delay = configuration.readDelay { try? await Task.sleep(for: delay) }
            } catch {
                Self.logger.info("head unit simulator: connection ended: \(error)")
                if generation == connectionGeneration { dropConnection() }
                return
            }
        }
    }

    private func handle(_ message: SDLMessage) async {
        if let info = message.controlInfo {
            await handleControl(info, message)
        } else if message.serviceType == .video {
            receiveVideo(message.payload)
        } else if message.serviceType == .audio {
            receiveAudio(message.payload)
        } else if message.serviceType == .rpc {
            let encrypted = encryptedRPCMessageIDs.remove(message.messageID) != nil
            guard let rpc = try? SDLRPCMessage(decoding: message.payload) else { return }
            await handleRPC(rpc, encrypted: encrypted)
        } else if message.serviceType == .control {
            await handleSecurityQuery(message.payload)
        }
    }

    private func handleControl(_ info: SDLControlFrameInfo, _ message: SDLMessage) async {
        switch (info, message.serviceType) {
        case (.startService, .rpc) where message.isProtected && configuration.security != nil && state.registeredAppName != nil:
            // The app moves its registered RPC service to protected (SDL-0207).
            await acknowledgeStart(.rpc, ack: [:], request: message)
        case (.startService, .rpc):
            let document = (try? BSONDocument(decoding: message.payload)) ?? BSONDocument()
            state.requestedProtocolVersion = document["protocolVersion"]?.stringValue
            state.firstStartServiceHeaderVersion = state.firstStartServiceHeaderVersion ?? message.version
            changed()
            let ack: BSONDocument = ["hashId": .int32(configuration.hashID), "mtu": .int64(Int64(configuration.mtu)),
                                     "protocolVersion": .string(configuration.protocolVersion)]
            await sendControl(.startServiceACK, service: .rpc, document: ack, messageID: message.messageID)
        case (.startService, .video):
            let document = (try? BSONDocument(decoding: message.payload)) ?? BSONDocument()
            let width = document["width"]?.integerValue ?? 0, height = document["height"]?.integerValue ?? 0
            let format = VideoStreamingFormat(
                protocol: document["videoProtocol"]?.stringValue.flatMap(VideoStreamingProtocol.init(rawValue:)) ?? .raw,
                codec: document["videoCodec"]?.stringValue.flatMap(VideoStreamingCodec.init(rawValue:)) ?? .h264)
            let candidate = SDLVideoCandidate(resolution: ImageResolution(width: width, height: height), format: format)
            var rejection: SDLServiceRejection?
            if configuration.security?.forceProtected.contains(.video) == true, !message.isProtected {
                rejection = SDLServiceRejection(rejectedParameters: [], reason: "video must be protected (ForceProtectedService)")
            } else if configuration.rejectedResolutions.contains(candidate.resolution) {
                rejection = SDLServiceRejection(rejectedParameters: ["width", "height"], reason: "resolution \(candidate.resolution) not supported")
            } else if configuration.rejectedFormats.contains(format) {
                rejection = SDLServiceRejection(rejectedParameters: ["videoProtocol", "videoCodec"], reason: "format \(format) not supported")
            } else if state.hmiStatus?.allowsVideo != true {
                rejection = SDLServiceRejection(rejectedParameters: [], reason: "app is not FULL or LIMITED and streamable")
            }
            state.videoRequests.append((candidate, rejection == nil))
            if let rejection {
                changed()
                await sendControl(.startServiceNAK, service: .video, document: rejection.document, messageID: message.messageID)
                if configuration.closesAppOnRefusedVideo, !rejection.rejectedParameters.isEmpty, !state.audioOpen {
                    try? await setHMIStatus(SDLHMIStatus(hmiLevel: .none, videoStreamingState: .notStreamable))
                }
                return
            }
            state.video = SDLVideoServiceParameters(resolution: candidate.resolution, format: format, mtu: configuration.videoMTU)
            changed()
            var ack: BSONDocument = [:]
            if let videoMTU = configuration.videoMTU { ack["mtu"] = .int64(Int64(videoMTU)) }
            ack["height"] = .int32(Int32(clamping: height))
            ack["width"] = .int32(Int32(clamping: width))
            ack["videoProtocol"] = .string(format.protocol.rawValue)
            ack["videoCodec"] = .string(format.codec.rawValue)
            await acknowledgeStart(.video, ack: ack, request: message)
        case (.startService, .audio):
            if configuration.security?.forceProtected.contains(.audio) == true, !message.isProtected {
                await sendControl(.startServiceNAK, service: .audio,
                                  document: SDLServiceRejection(rejectedParameters: [], reason: "audio must be protected (ForceProtectedService)").document,
                                  messageID: message.messageID)
                return
            }
            guard state.hmiStatus?.allowsAudio == true else {
                await sendControl(.startServiceNAK, service: .audio,
                                  document: SDLServiceRejection(rejectedParameters: [], reason: "app is not audible").document,
                                  messageID: message.messageID)
                return
            }
            state.audioStarts += 1
            state.audioOpen = true
            changed()
            await acknowledgeStart(.audio, ack: ["mtu": .int64(Int64(configuration.mtu))], request: message)
        case (.endService, .audio):
            state.protectedServices.remove(.audio)
            state.audioEnds += 1
            state.audioOpen = false
            changed()
            await sendControl(.endServiceACK, service: .audio, document: nil, messageID: message.messageID)
        case (.endService, .video):
            state.protectedServices.remove(.video)
            awaitsVideoEndACK = false
            state.video = nil
            state.videoEndCount += 1
            changed()
            await sendControl(.endServiceACK, service: .video, document: nil, messageID: message.messageID)
        case (.endService, .rpc):
            state.rpcEndServiceCount += 1
            changed()
            await sendControl(.endServiceACK, service: .rpc, document: nil, messageID: message.messageID)
            dropConnection()
        case (.endServiceACK, .video):
            state.videoEndServiceACKs += 1
            awaitsVideoEndACK = false
            changed()
        case (.endServiceACK, .audio):
            state.audioEndServiceACKs += 1
            changed()
        case (.heartbeatACK, _):
            state.heartbeatACKs += 1
            changed()
        case (.heartbeat, _):
            await sendControl(.heartbeatACK, service: .control, document: nil, messageID: message.messageID)
        default:
            break
        }
    }

    private func handleRPC(_ rpc: SDLRPCMessage, encrypted: Bool) async {
        if rpc.type == .request, let security = configuration.security, security.encryptedRPCs.contains(rpc.functionID) {
            guard encrypted else {
                state.encryptionNeeded.append(rpc.functionID)
                changed()
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "ENCRYPTION_NEEDED",
                                                         info: "\(rpc.functionID) must be sent encrypted"))
                return
            }
        }
        if encrypted, rpc.type == .request {
            state.encryptedRequests.append(rpc.functionID)
            changed()
        }
        let level = state.hmiStatus?.hmiLevel ?? .none
        if rpc.type != .response, let allowed = configuration.policyLevels[rpc.functionID], !allowed.contains(level) {
            state.policyBlocked.append((rpc.functionID, level))
            changed()
            if rpc.type == .request {
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "DISALLOWED",
                                                         info: "Request is blocked by policies (HMI level \(level.rawValue))"))
            }
            return
        }
        switch rpc.type {
        case .notification:
            if rpc.functionID == .onAppCapabilityUpdated {
                state.appCapabilityUpdates.append(String(decoding: rpc.json, as: UTF8.self))
                changed()
            }
            return
        case .response:
            return
        case .request:
            break
        }
        state.requests.append(rpc.functionID)
        switch rpc.functionID {
        case .registerAppInterface:
            guard let request = try? rpc.decodeParameters(SDLRegisterAppInterfaceRequest.self) else {
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "INVALID_DATA"))
                return
            }
            if let code = configuration.refusesRegistration {
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: code))
                return
            }
            state.registeredAppName = request.appName
            state.appHMITypes = request.appHMIType
            state.buttonSubscriptions = []
            state.headLampSubscribed = false
            changed()
            await respond(to: rpc, RegistrationResponse(
                success: true, resultCode: "SUCCESS",
                buttonCapabilities: configuration.buttons.map { .init(name: $0.rawValue) },
                displayCapabilities: .init(screenParams: .init(touchEventAvailable: .init(
                    pressAvailable: configuration.touchAvailable, multiTouchAvailable: configuration.touchAvailable,
                    doublePressAvailable: configuration.touchAvailable))),
                pcmStreamCapabilities: .init(samplingRate: configuration.pcmSamplingRate,
                                             bitsPerSample: configuration.pcmBitsPerSample),
                language: configuration.displayLanguage, hmiDisplayLanguage: configuration.displayLanguage))
            // Core tells the app its permissions right after registering.
            try? await notify(.onPermissionsChange, parameters: permissionsChange())
            for status in configuration.initialStatuses {
                try? await setHMIStatus(status)
            }
        case .getSystemCapability:
            await respond(to: rpc, SDLSystemCapabilityParameters(
                success: true, resultCode: "SUCCESS",
                systemCapability: SDLSystemCapability(videoStreamingCapability: configuration.capability)))
        case .sendHapticData:
            guard let request = try? rpc.decodeParameters(SDLSendHapticDataRequest.self) else {
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "INVALID_DATA"))
                return
            }
            state.hapticData.append(request.regions)
            changed()
            await respond(to: rpc, SDLResponseStatus(success: true, resultCode: "SUCCESS"))
        case .subscribeButton, .unsubscribeButton:
            guard let request = try? rpc.decodeParameters(SDLButtonSubscriptionRequest.self) else {
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "INVALID_DATA"))
                return
            }
            let subscribing = rpc.functionID == .subscribeButton
            if subscribing { state.subscribeButtonRequests.append(request.buttonName) }
            // Like SDL Core: the media keys are for media apps only.
            if subscribing, [SDLButtonName.seekLeft, .seekRight, .tuneUp, .tuneDown].contains(request.buttonName) {
                changed()
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "REJECTED",
                                                         info: "subscription to a media button for a non-media app"))
                return
            }
            guard configuration.buttons.contains(request.buttonName) else {
                changed()
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "UNSUPPORTED_RESOURCE"))
                return
            }
            let changedSubscription = subscribing ? state.buttonSubscriptions.insert(request.buttonName).inserted
                : state.buttonSubscriptions.remove(request.buttonName) != nil
            changed()
            await respond(to: rpc, changedSubscription ? SDLResponseStatus(success: true, resultCode: "SUCCESS")
                : SDLResponseStatus(success: false, resultCode: "IGNORED"))
        case .subscribeVehicleData:
            state.subscribeVehicleDataRequests += 1
            guard configuration.grantsVehicleData else {
                state.policyBlocked.append((rpc.functionID, state.hmiStatus?.hmiLevel ?? .none))
                changed()
                await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "DISALLOWED",
                                                         info: "Requested parameters are disallowed by Policies"))
                return
            }
            state.headLampSubscribed = true
            changed()
            await respond(to: rpc, SDLResponseStatus(success: true, resultCode: "SUCCESS"))
        case .unregisterAppInterface:
            state.unregistered = true
            state.registeredAppName = nil
            changed()
            await respond(to: rpc, SDLResponseStatus(success: true, resultCode: "SUCCESS"))
        default:
            changed()
            await respond(to: rpc, SDLResponseStatus(success: false, resultCode: "UNSUPPORTED_REQUEST"))
        }
    }

    private func receiveAudio(_ payload: [UInt8]) {
        guard state.audioOpen, state.hmiStatus?.allowsAudio == true else {
            state.audioWhileNotAllowed += 1
            changed()
            return
        }
        if state.audio.count + payload.count <= 16 << 20 { state.audio += payload }
        if state.audioMessages.count < 100_000 { state.audioMessages.append((payload.count, SessionClock.monotonicNow)) }
        changed()
    }

    private func receiveVideo(_ payload: [UInt8]) {
        guard let video = state.video else {
            // Sent before the app read this head unit's own EndService: in flight, like SDL
            // Core's ending the service at NONE. After the app's answer it is a violation.
            if awaitsVideoEndACK {
                state.videoInFlightWhenForbidden += 1
                changed()
                return
            }
            state.videoWhileNotAllowed += 1
            changed()
            return
        }
        if state.hmiStatus?.allowsVideo != true { state.videoInFlightWhenForbidden += 1 }
        let annexB = video.format.protocol == .rtp ? depacketizer.append(payload) : payload
        state.videoUnitCount += 1
        configuration.videoUnitObserver?(annexB)
        if videoBytesInMemory + annexB.count <= configuration.maximumVideoBytesInMemory {
            state.videoUnits.append(annexB)
            videoBytesInMemory += annexB.count
        }
        do {
            try videoFile?.write(AccessUnit(data: annexB, isKeyframe: false, presentationTime: .zero, frameNumber: state.videoUnitCount))
        } catch {
            // The sink closed itself on the last whole unit; the head unit goes on without a file.
            state.videoOutputFailure = error
            videoFile = nil
        }
        changed()
    }

    /// OnPermissionsChange for the configured policy: each function of ``Configuration/policyLevels``
    /// in its levels, the buttons' RPCs, and the head lamps' vehicle data when granted.
    private func permissionsChange() -> PermissionsChange {
        var items: [PermissionsChange.Item] = configuration.policyLevels.sorted { $0.key.rawValue < $1.key.rawValue }.map {
            PermissionsChange.Item(rpcName: $0.key.description, levels: $0.value, parameters: nil)
        }
        let everywhere: Set<SDLHMILevel> = [.full, .limited, .background, .none]
        for name in ["GetSystemCapability", "OnHMIStatus", "OnSystemCapabilityUpdated", "UnregisterAppInterface", "OnButtonPress",
                     "OnButtonEvent", "OnTouchEvent"] where !items.contains(where: { $0.rpcName == name }) {
            items.append(PermissionsChange.Item(rpcName: name, levels: everywhere, parameters: nil))
        }
        if configuration.grantsVehicleData {
            for name in ["SubscribeVehicleData", "OnVehicleData"] {
                items.append(PermissionsChange.Item(rpcName: name, levels: [.full, .limited, .background], parameters: ["headLampStatus"]))
            }
        }
        let encrypted = configuration.security.map { $0.announcesEncryption ? $0.encryptedRPCs : [] } ?? []
        for function in encrypted where !items.contains(where: { $0.rpcName == function.description }) {
            items.append(PermissionsChange.Item(rpcName: function.description, levels: everywhere, parameters: nil))
        }
        for index in items.indices where encrypted.contains(where: { $0.description == items[index].rpcName }) {
            items[index].requireEncryption = true
        }
        return PermissionsChange(permissionItem: items, requireEncryption: encrypted.isEmpty ? nil : true)
    }

    private struct PermissionsChange: Encodable {
        struct Item: Encodable {
            struct Names: Encodable {
                var allowed: [String]
                var userDisallowed: [String] = []
            }
            var rpcName: String
            var hmiPermissions: Names
            var parameterPermissions: Names
            var requireEncryption: Bool?

            init(rpcName: String, levels: Set<SDLHMILevel>, parameters: [String]?) {
                self.rpcName = rpcName
                hmiPermissions = Names(allowed: levels.map(\.rawValue).sorted())
                parameterPermissions = Names(allowed: parameters ?? [])
            }
        }
        var permissionItem: [Item]
        var requireEncryption: Bool?
    }

    /// The RegisterAppInterface response: the status and the head unit's buttons.
    private struct RegistrationResponse: Encodable {
        struct Button: Encodable {
            var name: String
            var shortPressAvailable = true
            var longPressAvailable = true
            var upDownAvailable = true
        }
        struct Display: Encodable {
            struct Screen: Encodable {
                struct Touch: Encodable {
                    var pressAvailable: Bool
                    var multiTouchAvailable: Bool
                    var doublePressAvailable: Bool
                }
                var touchEventAvailable: Touch
            }
            var screenParams: Screen
        }
        var success: Bool
        var resultCode: String
        struct PCM: Encodable {
            var samplingRate: String
            var bitsPerSample: String
            var audioType = "PCM"
        }
        var buttonCapabilities: [Button]
        var displayCapabilities: Display
        var pcmStreamCapabilities: PCM
        var language: String?
        var hmiDisplayLanguage: String?
    }

    // MARK: Security

    /// ACKs a StartService: protected when the app asked so and this head unit has a security
    /// layer, after the handshake if it has not run yet on this connection.
    private func acknowledgeStart(_ service: SDLServiceType, ack: BSONDocument, request: SDLMessage) async {
        guard request.isProtected, configuration.security != nil else {
            await sendControl(.startServiceACK, service: service, document: ack, messageID: request.messageID)
            return
        }
        if tls?.isHandshakeComplete == true {
            await grantProtected(service, ack: ack, messageID: request.messageID)
            return
        }
        pendingProtectedStarts.append((service, request.messageID, ack))
        guard pendingProtectedStarts.count == 1 else { return }
        do {
            let session = try makeTLS()
            let hello = try session.start()
            await sendSecurityQuery(.handshake(hello, kind: .request, sequenceNumber: nextSecuritySequence()))
        } catch {
            await failSecurity(error, tellApp: true)
        }
    }

    private func makeTLS() throws(SDLSecurityError) -> OpenSSLHeadUnitSession {
        if let tls { return tls }
        let settings = configuration.security ?? Security()
        let session = try OpenSSLHeadUnitSession(transport: settings.transport, certificatePEM: settings.certificatePEM,
                                                 privateKeyPEM: settings.privateKeyPEM, trustedCAsPEM: settings.trustedCAsPEM,
                                                 verifyPeer: settings.verifyApp)
        tls = session
        return session
    }

    private func grantProtected(_ service: SDLServiceType, ack: BSONDocument, messageID: UInt32) async {
        state.protectedServices.insert(service)
        changed()
        await sendControl(.startServiceACK, service: service, document: ack, messageID: messageID, isProtected: true)
    }

    private func handleSecurityQuery(_ payload: [UInt8]) async {
        let query: SDLSecurityQuery
        do {
            query = try SDLSecurityQuery(decoding: payload)
        } catch {
            await sendSecurityQuery(.error(error.code, text: error.reason, sequenceNumber: 0))
            return
        }
        if query.subject == .internalError {
            state.securityErrorsReceived.append(query.errorCode ?? .internalError)
            changed()
            await failSecurity(SDLSecurityError(query.errorCode ?? .internalError, query.errorText ?? "the app reported an error"),
                               tellApp: false)
            return
        }
        guard let tls, !tls.isHandshakeComplete else {
            await sendSecurityQuery(.error(.serviceNotProtected, text: "no handshake is running", sequenceNumber: query.sequenceNumber))
            return
        }
        do {
            let reply = try tls.handshake(query.binary)
            if tls.isHandshakeComplete {
                state.handshakes += 1
                state.securityProtocol = tls.protocolVersion
                // SDL Core's order: the ACKs go out as soon as its side is done, before the last
                // flight that lets the app finish (TLS 1.3: the client's Finished).
                let waiting = pendingProtectedStarts
                pendingProtectedStarts.removeAll()
                for start in waiting { await grantProtected(start.service, ack: start.ack, messageID: start.messageID) }
            }
            if !reply.isEmpty {
                await sendSecurityQuery(.handshake(reply, kind: .request, sequenceNumber: nextSecuritySequence()))
            }
        } catch {
            await failSecurity(error, tellApp: true)
        }
    }

    /// After an error on either side: refuses the starts that waited for the handshake and
    /// forgets the TLS state and every protected service, as SDL Core does.
    private func failSecurity(_ error: SDLSecurityError, tellApp: Bool) async {
        Self.logger.info("head unit simulator: security layer reset: \(error)")
        if tellApp {
            state.securityErrorsSent.append(error)
            await sendSecurityQuery(.error(error.code, text: error.message, sequenceNumber: securitySequence))
        }
        let waiting = pendingProtectedStarts
        resetSecurity()
        for start in waiting {
            if start.service == .video { state.video = nil }
            if start.service == .audio { state.audioOpen = false }
            await sendControl(.startServiceNAK, service: start.service,
                              document: SDLServiceRejection(rejectedParameters: [], reason: "handshake failed: \(error.message)").document,
                              messageID: start.messageID)
        }
        changed()
    }

    private func resetSecurity() {
        tls?.reset()
        tls = nil
        pendingProtectedStarts.removeAll()
        state.protectedServices.removeAll()
    }

    /// The frame decrypted, or nil (and the app told) when it cannot be.
    private func open(_ frame: SDLFrame) async -> SDLFrame? {
        switch SDLFraming.open(frame, session: tls, protectedServices: state.protectedServices) {
        case .success(let opened):
            state.decryptedFrames += 1
            return opened
        case .failure(let error):
            state.securityErrorsSent.append(error)
            changed()
            await sendSecurityQuery(.error(error.code, text: error.message, sequenceNumber: 0))
            return nil
        }
    }

    private func nextSecuritySequence() -> UInt32 {
        securitySequence &+= 1
        return securitySequence
    }

    private func sendSecurityQuery(_ query: SDLSecurityQuery) async {
        try? await write(framing.message(.control, payload: query.encoded()))
    }

    // MARK: Sending

    /// The framing of a new connection: version 5 headers (as SDL Core 8 writes them), frames cut
    /// for the configured MTU and taken up to it, messages of up to 16 MiB.
    private static func framing(sessionID: UInt8, mtu: Int) -> SDLFraming {
        var framing = SDLFraming(protocolVersion: 5, mtu: mtu, incomingFramePayload: mtu, maximumIncomingMessageSize: 16 << 20)
        framing.sessionID = sessionID
        return framing
    }

    private func sendControl(_ info: SDLControlFrameInfo, service: SDLServiceType, document: BSONDocument?, messageID: UInt32,
                             isProtected: Bool = false) async {
        let payload = (try? document?.encoded()) ?? nil
        try? await write(framing.message(service, info, isProtected: isProtected, messageID: messageID, payload: payload ?? []))
    }

    private func respond<Parameters: Encodable>(to request: SDLRPCMessage, _ parameters: Parameters) async {
        guard let rpc = try? SDLRPCMessage(type: .response, functionID: request.functionID,
                                           correlationID: request.correlationID, parameters: parameters) else { return }
        let message = framing.message(.rpc, payload: rpc.encoded())
        // As SDL Core does: what must be encrypted is answered encrypted.
        if configuration.security?.encryptedRPCs.contains(request.functionID) == true, state.protectedServices.contains(.rpc),
           let tls, tls.isHandshakeComplete {
            guard let bytes = try? message.protectedEncoded(maximumFramePayload: SDLFraming.framePayload(forMTU: framing.mtu), session: tls),
                  let transport else { return }
            try? await transport.write(bytes)
            return
        }
        try? await write(message)
    }

    private func notify<Parameters: Encodable>(_ function: SDLFunctionID, parameters: Parameters) async throws(SDLConnectionError) {
        let rpc: SDLRPCMessage
        do {
            rpc = try .notification(function, parameters: parameters)
        } catch {
            throw .rpc(error)
        }
        try await write(framing.message(.rpc, payload: rpc.encoded()))
    }

    private func write(_ message: SDLMessage) async throws(SDLConnectionError) {
        guard let transport else { throw .notConnected }
        do {
            try await transport.write(framing.encoded(message))
        } catch {
            throw .transport(error)
        }
    }
}

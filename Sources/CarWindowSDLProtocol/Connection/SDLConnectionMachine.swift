/// The app's side of one SDL transport connection as a value without I/O: bytes from the head
/// unit, timer firings and the app's commands go in; what to write, which answers arrived, which
/// timers to arm and what to tell the app come out as ``Action``s.
///
/// It owns the framing (an ``SDLFraming``, which the head-unit simulator frames through too, and
/// the MTU of each service), the exchanges waiting for an answer (control StartService and
/// EndService, RPC requests, by correlation id) with their timeouts, and the security layer. It
/// knows nothing of sockets, tasks or clocks: `SDLConnection` is the shell that does the I/O and
/// keeps the callers waiting, and the fuzz target drives this same value with hostile bytes.
package struct SDLConnectionMachine {
    /// The MTU before the head unit names one: protocol versions 3 and later allow 128 KiB.
    package static let defaultMTU = 131_072

    /// An exchange that waits for the head unit's answer.
    package enum Exchange: Hashable, Sendable {
        /// A StartService (`isStart`) or EndService on `service`; `token` tells a new exchange
        /// from one it superseded.
        case control(SDLServiceType, isStart: Bool, token: Int)
        /// An RPC request.
        case request(correlationID: UInt32)
    }

    /// The head unit's answer to an exchange.
    package enum Answer {
        /// The ACK or NAK of a control exchange.
        case control(SDLMessage)
        /// The response to a request.
        case response(SDLRPCMessage)
    }

    /// How bytes must be written.
    package enum Lane: Equatable, Sendable {
        /// In order with the other control and RPC messages; a heartbeat ACK may be coalesced
        /// with one already waiting.
        case queued(isHeartbeatACK: Bool)
        /// Encrypted records: in the order they were sealed, whatever service they belong to.
        case sealed
    }

    /// What the shell must do.
    package enum Action {
        /// Write these bytes; `exchange` is the exchange a failed write fails.
        case write([UInt8], Lane, for: Exchange?)
        /// The head unit answered `exchange`.
        case answered(Exchange, Answer)
        /// `exchange` got no answer in time or was superseded: fail it with this text.
        case timedOut(Exchange, String)
        /// Call ``timerFired(_:)`` with `exchange` after `delay`, unless cancelled first.
        case armTimer(Exchange, Duration)
        /// The timer of `exchange` is no longer needed.
        case cancelTimer(Exchange)
        /// The head unit told the app something (a notification, read and checked).
        case notice(Notice)
        /// The head unit ended the video or audio service on its own (already acknowledged):
        /// stop sending on it.
        case serviceEndedByHeadUnit(SDLServiceType)
        /// The TLS handshake finished.
        case securityEstablished
        /// The security layer failed and was reset; `closed` lists the services that were
        /// protected, which must close.
        case securityFailed(SDLSecurityError, reportedByHeadUnit: Bool, closed: Set<SDLServiceType>)
        /// Something to log.
        case log(LogLevel, String)
        /// The connection is beyond saving: drop the transport. Nothing more comes out of
        /// ``receive(_:)`` until ``reset(maximumIncomingMessageSize:)``.
        case lost(Loss)
    }

    /// What a notification from the head unit says; notifications this side has no use for, and
    /// those that do not read, are left out (the second logged once per kind).
    package enum Notice: Equatable {
        /// OnHMIStatus of the main window.
        case hmiStatus(SDLHMIStatus)
        /// OnButtonPress.
        case buttonPress(SDLButtonPress)
        /// OnPermissionsChange: the policy's permissions for this registration.
        case permissions(SDLPermissions)
        /// OnVehicleData with the head lamps' ambient light.
        case ambientLight(SDLAmbientLight)
        /// OnDriverDistraction: whether the driver is distracted (DD_ON).
        case driverDistraction(Bool)
        /// OnLanguageChange.
        case languages(SDLLanguages)
        /// OnTouchEvent's JSON, for the touch bridge to decode and check.
        case touch(json: [UInt8])
        /// OnSystemCapabilityUpdated with a video streaming capability (the changed fields only).
        case videoCapability(VideoStreamingCapability)
    }

    /// How loud a ``Action/log(_:_:)`` is.
    package enum LogLevel: Sendable { case debug, info, warning }

    /// Why the connection is lost.
    package enum Loss: Error, Equatable, Sendable {
        /// The head unit broke the framing.
        case protocolViolation(SDLProtocolError)
        /// The head unit ended the RPC service: it closed the session.
        case closedByHeadUnit
    }

    /// Why a message could not be made.
    package enum SendFailure: Error, Equatable {
        /// The RPC could not be encoded.
        case rpc(SDLRPCError)
        /// The message must be encrypted but its service is not protected (now).
        case notProtected(SDLServiceType)
        /// Encrypting failed.
        case security(SDLSecurityError)
    }

    private struct ControlKey: Hashable {
        var service: SDLServiceType
        var isStart: Bool
    }

    private var framing: SDLFraming
    /// The security layer of this registration: the library for the head unit's make, the TLS
    /// session, the services granted protected.
    package var security = SDLAppSecurityStage(library: nil, appID: "")
    /// The protocol version of the headers this side writes.
    package var protocolVersion: UInt8 { framing.protocolVersion }
    /// The session id the RPC StartServiceACK gave; 0 before.
    package var sessionID: UInt8 { framing.sessionID }
    /// The session's MTU (the RPC StartServiceACK's, clamped).
    package var sessionMTU: Int { framing.mtu }
    /// The MTUs of the video and audio services, where their ACKs named one.
    private var serviceMTUs: [SDLServiceType: Int] = [:]
    private var nextCorrelationID: UInt32 = 1
    private var nextControlToken = 0
    private var pendingControl: [ControlKey: (exchange: Exchange, what: String)] = [:]
    private var pendingRequests: [UInt32: String] = [:]
    private var isLost = false
    /// Kinds of nonsense already reported: a head unit that sends the same again and again is
    /// reported once per kind (at most 256 kinds, so it cannot grow the set without bound), also
    /// across reconnects.
    private var reported = Set<String>()

    /// A machine for a new transport connection.
    package init(maximumIncomingMessageSize: Int) {
        // The first StartService goes with the newest header this side speaks (version 5), as
        // the iOS library sends it: SDL Core warns about a version 1 header ("Unknown version:1")
        // though the spec allows one. The ACK says which version the head unit speaks.
        framing = SDLFraming(protocolVersion: 5, mtu: Self.defaultMTU, incomingFramePayload: Self.defaultMTU,
                             maximumIncomingMessageSize: maximumIncomingMessageSize)
    }

    /// Starts over for a new transport connection: the exchanges still waiting are forgotten
    /// (the shell fails them) and the security layer is reset.
    package mutating func reset(maximumIncomingMessageSize: Int) {
        let (kept, reported) = (security, self.reported)
        self = SDLConnectionMachine(maximumIncomingMessageSize: maximumIncomingMessageSize)
        security = kept
        security.reset()
        self.reported = reported
    }

    /// The frame payload limits of the parser and the assembler (the fuzz target checks that
    /// the head unit cannot raise them past what this side accepts).
    package var incomingFramePayloadLimits: (parser: Int, assembler: Int) { framing.incomingFramePayloadLimits }

    /// The largest whole message accepted from the head unit.
    package var maximumIncomingMessageSize: Int { framing.maximumIncomingMessageSize }

    /// The MTU messages of `service` are written at.
    package func mtu(for service: SDLServiceType) -> Int { serviceMTUs[service] ?? sessionMTU }

    // MARK: Negotiation

    /// Takes the RPC service's StartServiceACK: the protocol version, the session id and the MTU
    /// it names (clamped) apply from now on, and the incoming frame limits follow the MTU.
    package mutating func rpcServiceStarted(ack: SDLMessage) throws(SDLProtocolError) -> SDLSessionInfo {
        let document: BSONDocument
        do {
            document = try BSONDocument(decoding: ack.payload)
        } catch {
            throw .badControlPayload(service: .rpc, info: .startServiceACK, error)
        }
        let info = SDLSessionInfo(ack: document, sessionID: ack.sessionID)
        framing.protocolVersion = Self.negotiatedProtocolVersion(info, headerVersion: ack.version)
        framing.mtu = Self.negotiatedMTU(info.mtu, otherwise: Self.defaultMTU)
        framing.sessionID = info.sessionID
        framing.incomingFramePayloadLimit = Self.incomingFramePayloadLimit(sessionMTU: framing.mtu)
        serviceMTUs.removeAll()
        return info
    }

    /// A video or audio service started; its ACK's MTU (nil: the session's) applies to it.
    package mutating func serviceStarted(_ service: SDLServiceType, mtu: Int?) {
        serviceMTUs[service] = Self.negotiatedMTU(mtu, otherwise: sessionMTU)
    }

    /// The protocol version to speak after the RPC StartServiceACK: the major number of its
    /// `protocolVersion` (else the ACK header's version), within 2...5.
    package static func negotiatedProtocolVersion(_ info: SDLSessionInfo, headerVersion: UInt8) -> UInt8 {
        let major = info.protocolVersion.flatMap { $0.split(separator: ".").first }.flatMap { UInt8($0) } ?? headerVersion
        return min(max(major, 2), 5)
    }

    /// The MTU a StartServiceACK's `mtu` sets, clamped into what this side works with
    /// (64...131,084 bytes), or `fallback` when the ACK has none.
    package static func negotiatedMTU(_ acknowledged: Int?, otherwise fallback: Int) -> Int {
        acknowledged.map(SDLWireLimits.clampedMTU) ?? fallback
    }

    /// The largest frame payload accepted from the head unit once the session's MTU is known:
    /// its MTU, and never less than the v3 default; at most 131,084 bytes, whatever it claims.
    package static func incomingFramePayloadLimit(sessionMTU: Int) -> Int {
        max(SDLWireLimits.clampedMTU(sessionMTU), defaultMTU)
    }

    // MARK: Commands

    /// Starts a StartService or EndService exchange on `service`. One of the same kind still
    /// waiting is superseded (it times out at once): a late answer never answers the new one.
    package mutating func startControl(_ info: SDLControlFrameInfo, on service: SDLServiceType, payload: [UInt8],
                                       protected: Bool = false, timeout: Duration) -> (Exchange, [Action]) {
        var actions: [Action] = []
        let key = ControlKey(service: service, isStart: info == .startService)
        if let superseded = pendingControl.removeValue(forKey: key) {
            actions += [.cancelTimer(superseded.exchange), .timedOut(superseded.exchange, "\(info) superseded")]
        }
        nextControlToken += 1
        let exchange = Exchange.control(service, isStart: key.isStart, token: nextControlToken)
        pendingControl[key] = (exchange, "\(info) on the \(service) service")
        let message = framing.message(service, info, isProtected: protected, payload: payload)
        actions += [.armTimer(exchange, timeout), write(message, for: exchange)]
        return (exchange, actions)
    }

    /// Starts an RPC request: encrypted when `encrypted` (refused, never sent in the clear, when
    /// the RPC service is not protected).
    package mutating func startRequest<Parameters: Encodable>(
        _ function: SDLFunctionID, parameters: Parameters, encrypted: Bool, timeout: Duration
    ) throws(SendFailure) -> (Exchange, [Action]) {
        let correlationID = nextCorrelationID
        let rpc: SDLRPCMessage
        do {
            rpc = try SDLRPCMessage(type: .request, functionID: function, correlationID: correlationID, parameters: parameters)
        } catch {
            throw .rpc(error)
        }
        let exchange = Exchange.request(correlationID: correlationID)
        let bytes = try rpcWrite(rpc, encrypted: encrypted, for: exchange)
        nextCorrelationID = nextCorrelationID >= 0x7FFF_FFFF ? 1 : nextCorrelationID + 1
        pendingRequests[correlationID] = "\(function) request \(correlationID)"
        return (exchange, [.armTimer(exchange, timeout), bytes])
    }

    /// A notification to the head unit, encrypted when `encrypted`.
    package mutating func notification<Parameters: Encodable>(
        _ function: SDLFunctionID, parameters: Parameters, encrypted: Bool
    ) throws(SendFailure) -> Action {
        let rpc: SDLRPCMessage
        do {
            rpc = try .notification(function, parameters: parameters)
        } catch {
            throw .rpc(error)
        }
        return try rpcWrite(rpc, encrypted: encrypted, for: nil)
    }

    /// The bytes of a video or audio message: encrypted when the service is protected.
    package mutating func dataMessage(_ service: SDLServiceType, payload: [UInt8]) throws(SendFailure) -> (bytes: [UInt8], isSealed: Bool) {
        let message = framing.message(service, payload: payload)
        guard security.protectedServices.contains(service) else {
            return (framing.encoded(message, mtu: mtu(for: service)), false)
        }
        return (try sealed(message, mtu: mtu(for: service)), true)
    }

    /// A timer armed by ``Action/armTimer(_:_:)`` fired: the exchange times out if it still waits.
    package mutating func timerFired(_ exchange: Exchange) -> [Action] {
        switch exchange {
        case .control(let service, let isStart, _):
            let key = ControlKey(service: service, isStart: isStart)
            guard let pending = pendingControl[key], pending.exchange == exchange else { return [] }
            pendingControl[key] = nil
            return [.timedOut(exchange, pending.what)]
        case .request(let correlationID):
            guard let what = pendingRequests.removeValue(forKey: correlationID) else { return [] }
            return [.timedOut(exchange, what)]
        }
    }

    /// Stops waiting for `exchange` (its caller gave up on it).
    package mutating func abandon(_ exchange: Exchange) {
        switch exchange {
        case .control(let service, let isStart, _):
            let key = ControlKey(service: service, isStart: isStart)
            if pendingControl[key]?.exchange == exchange { pendingControl[key] = nil }
        case .request(let correlationID):
            pendingRequests[correlationID] = nil
        }
    }

    /// Whether `text` is reported for the first time (and so worth a warning rather than a debug
    /// line).
    package mutating func isFirstReport(of text: String) -> Bool {
        reported.count < 256 && reported.insert(text).inserted
    }

    // MARK: Receiving

    /// Bytes from the head unit, in any cut: whole messages are handled as they complete.
    package mutating func receive(_ bytes: some Collection<UInt8>) -> [Action] {
        guard !isLost else { return [] }
        framing.append(bytes)
        var actions: [Action] = []
        do {
            while !isLost, var frame = try framing.nextFrame() {
                if frame.needsDecryption {
                    switch security.open(frame) {
                    case .success(let opened):
                        frame = opened
                    case .failure(let refusal):
                        actions.append(report("encrypted frame dropped: \(refusal.error)"))
                        perform(refusal.actions, into: &actions)
                        continue
                    }
                }
                guard let message = try framing.assemble(frame) else { continue }
                handle(message, into: &actions)
            }
        } catch {
            isLost = true
            actions.append(.lost(.protocolViolation(error)))
        }
        return actions
    }

    private mutating func handle(_ message: SDLMessage, into actions: inout [Action]) {
        if let info = message.controlInfo {
            handleControl(info, message, into: &actions)
            return
        }
        switch message.serviceType {
        case .control:
            // Data on the control service: the security layer's queries.
            do {
                perform(security.receive(try SDLSecurityQuery(decoding: message.payload)), into: &actions)
            } catch {
                actions.append(report("unreadable security query answered with \(error.code): \(error)"))
                perform(security.refuse(error), into: &actions)
            }
        case .rpc:
            let rpc: SDLRPCMessage
            do {
                rpc = try SDLRPCMessage(decoding: message.payload)
            } catch {
                actions.append(report("unreadable RPC ignored: \(error)"))
                return
            }
            switch rpc.type {
            case .response:
                guard pendingRequests.removeValue(forKey: rpc.correlationID) != nil else {
                    actions.append(.log(.debug, "unsolicited \(rpc.functionID) response \(rpc.correlationID)"))
                    return
                }
                let exchange = Exchange.request(correlationID: rpc.correlationID)
                actions += [.cancelTimer(exchange), .answered(exchange, .response(rpc))]
            case .notification:
                if let notice = read(rpc, into: &actions) { actions.append(.notice(notice)) }
            case .request:
                actions.append(.log(.debug, "head unit request \(rpc.functionID) ignored"))
            }
        default:
            break
        }
    }

    private mutating func handleControl(_ info: SDLControlFrameInfo, _ message: SDLMessage, into actions: inout [Action]) {
        switch info {
        case .heartbeat:
            let ack = SDLMessage(version: framing.protocolVersion, serviceType: .control, sessionID: message.sessionID,
                                 messageID: message.messageID, controlInfo: .heartbeatACK, payload: [])
            actions.append(write(ack, isHeartbeatACK: true, for: nil))
        case .startServiceACK, .startServiceNAK, .endServiceACK, .endServiceNAK:
            let key = ControlKey(service: message.serviceType, isStart: info == .startServiceACK || info == .startServiceNAK)
            guard let pending = pendingControl.removeValue(forKey: key) else {
                actions.append(.log(.debug, "unsolicited \(info) on \(message.serviceType)"))
                return
            }
            actions += [.cancelTimer(pending.exchange), .answered(pending.exchange, .control(message))]
        case .endService:
            switch message.serviceType {
            case .video, .audio:
                // The head unit closed a service on its own (SDL Core does at NONE): stop sending
                // and acknowledge, or Core keeps the service and refuses the next start.
                security.ended(message.serviceType)
                let ack = SDLMessage(version: framing.protocolVersion, serviceType: message.serviceType, sessionID: message.sessionID,
                                     messageID: message.messageID, controlInfo: .endServiceACK, payload: [])
                actions += [.serviceEndedByHeadUnit(message.serviceType), write(ack, for: nil)]
            case .rpc:
                isLost = true
                actions.append(.lost(.closedByHeadUnit))
            default:
                actions.append(.log(.debug, "ignored EndService on \(message.serviceType)"))
            }
        default:
            actions.append(.log(.debug, "ignored control \(info) on \(message.serviceType)"))
        }
    }

    /// What a notification says, or nil for one of no use or that does not read.
    private mutating func read(_ rpc: SDLRPCMessage, into actions: inout [Action]) -> Notice? {
        switch rpc.functionID {
        case .onHMIStatus:
            do {
                let status = try rpc.decodeParameters(SDLHMIStatus.self)
                return (status.windowID ?? 0) == 0 ? .hmiStatus(status) : nil
            } catch {
                actions.append(report("OnHMIStatus ignored: \(error)"))
            }
        case .onButtonPress:
            do {
                return .buttonPress(try rpc.decodeParameters(SDLButtonPress.self))
            } catch {
                actions.append(report("OnButtonPress ignored: \(error)"))
            }
        case .onPermissionsChange:
            return (try? rpc.decodeParameters(SDLPermissions.self)).map(Notice.permissions)
        case .onVehicleData:
            return (try? rpc.decodeParameters(SDLVehicleDataNotification.self))?.ambientLight.map(Notice.ambientLight)
        case .onDriverDistraction:
            guard let state = (try? rpc.decodeParameters(SDLDriverDistraction.self))?.state else { return nil }
            return .driverDistraction(state == "DD_ON")
        case .onLanguageChange:
            return (try? rpc.decodeParameters(SDLLanguages.self)).map(Notice.languages)
        case .onTouchEvent:
            return .touch(json: rpc.json)
        case .onSystemCapabilityUpdated:
            do {
                return try rpc.videoStreamingCapability().map(Notice.videoCapability)
            } catch {
                actions.append(report("OnSystemCapabilityUpdated ignored: \(error)"))
            }
        default:
            break
        }
        return nil
    }

    /// Turns what the security layer asks for into actions: its queries go on the control
    /// service.
    private mutating func perform(_ steps: [SDLAppSecurityStage.Action], into actions: inout [Action]) {
        for step in steps {
            switch step {
            case .send(let query):
                actions.append(write(framing.message(.control, payload: query.encoded()), for: nil))
            case .established:
                actions.append(.securityEstablished)
            case .failed(let error, let reportedByHeadUnit, let closed):
                actions.append(.securityFailed(error, reportedByHeadUnit: reportedByHeadUnit, closed: closed))
            }
        }
    }

    private mutating func report(_ text: String) -> Action {
        .log(isFirstReport(of: text) ? .warning : .debug, text)
    }

    // MARK: Writing

    private func write(_ message: SDLMessage, isHeartbeatACK: Bool = false, for exchange: Exchange?) -> Action {
        .write(framing.encoded(message), .queued(isHeartbeatACK: isHeartbeatACK), for: exchange)
    }

    private mutating func rpcWrite(_ rpc: SDLRPCMessage, encrypted: Bool, for exchange: Exchange?) throws(SendFailure) -> Action {
        let message = framing.message(.rpc, payload: rpc.encoded())
        guard encrypted else { return write(message, for: exchange) }
        // Sealed or refused, never sent in the clear.
        return .write(try sealed(message, mtu: framing.mtu), .sealed, for: exchange)
    }

    private func sealed(_ message: SDLMessage, mtu: Int) throws(SendFailure) -> [UInt8] {
        guard security.protectedServices.contains(message.serviceType) else { throw .notProtected(message.serviceType) }
        do {
            return try security.seal(message, maximumFramePayload: SDLFraming.framePayload(forMTU: mtu))
        } catch {
            throw .security(error)
        }
    }
}

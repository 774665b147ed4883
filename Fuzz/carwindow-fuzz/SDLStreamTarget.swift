import CarWindow
import Foundation
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport

/// Bytes from the head unit, given to the connection's own protocol machine
/// (`SDLConnectionMachine`, which `SDLConnection` runs behind its socket): cut into frames (split
/// across transport reads anywhere), reassembled into messages, control payloads read as BSON,
/// notifications read into what they say (touches through the touch bridge), security queries
/// and encrypted frames refused by a connection with no security library.
///
/// The driver acts as the connection does: it opens the RPC service, takes its ACK through the
/// machine (a hostile MTU reaches the frame limits as it does in a drive), then registers and
/// asks for video; a video ACK starts the service and a video access unit is sent at the MTU it
/// gives. Everything the machine writes must parse back into one message; every timer it armed
/// fires at the end.
///
/// The first input byte chooses the size of each transport read; the rest is the stream.
/// With `checksFrameLimit`, the frame size limit the stream leaves must still be this side's.
enum SDLStreamTarget {
    static func run(_ bytes: [UInt8], checksFrameLimit: Bool) {
        var input = FuzzInput(bytes)
        let readSize = 1 + Int(input.byte()) * 16
        let stream = input.remainder()
        var link = LinkDriver()
        var alive = link.open()
        var start = 0
        while alive, start < stream.count {
            let end = min(start + readSize, stream.count)
            alive = link.perform(link.machine.receive(stream[start..<end]))
            start = end
        }
        if alive { link.fireTimers() }
        if checksFrameLimit { link.checkFrameLimit() }
    }
}

/// Runs the machine as `SDLConnection` does, with the I/O checked instead of done.
private struct LinkDriver {
    typealias Machine = SDLConnectionMachine

    static let maximumMessageSize = SDLConnection.Configuration(appName: "fuzz", appID: "fuzz", videoCandidates: [])
        .maximumIncomingMessageSize
    /// The stream a session would have before the video ACK: 800x480 encoded for a 1200x720
    /// display at scale 1.5.
    static let stream = VideoStreamingCapability(preferredResolution: ImageResolution(width: 1200, height: 720), scale: 1.5)
        .headUnitDisplay.chooseStreamResolution().stream!
    static let askedVideo = SDLVideoServiceParameters(resolution: ImageResolution(stream.encodedSize), format: .h264Raw)
    /// A video access unit's worth of bytes, long enough to take several frames at a small MTU.
    static let accessUnit = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    var machine = Machine(maximumIncomingMessageSize: maximumMessageSize)
    var armed = Set<Machine.Exchange>()
    var rpcStart: Machine.Exchange?
    var videoStart: Machine.Exchange?

    /// Asks for the RPC service; false if that already fails.
    mutating func open() -> Bool {
        let (exchange, actions) = machine.startControl(.startService, on: .rpc, payload: [], timeout: .seconds(10))
        rpcStart = exchange
        return perform(actions)
    }

    /// Does what the machine says; false when the connection would drop the head unit.
    mutating func perform(_ actions: [Machine.Action]) -> Bool {
        // The machine cut these writes when it made them: an RPC StartServiceACK among the
        // actions changes the MTU for what comes after this batch, not for what is in it.
        let mtu = machine.sessionMTU
        for action in actions {
            switch action {
            case .write(let bytes, let lane, _):
                check(bytes, lane: lane, mtu: mtu)
            case .armTimer(let exchange, _):
                armed.insert(exchange)
            case .cancelTimer(let exchange):
                armed.remove(exchange)
            case .answered(let exchange, .control(let reply)) where exchange == rpcStart:
                guard reply.controlInfo == .startServiceACK, (try? machine.rpcServiceStarted(ack: reply)) != nil else { return false }
                guard register() else { return false }
            case .answered(let exchange, .control(let reply)) where exchange == videoStart:
                guard reply.controlInfo == .startServiceACK else {
                    _ = SDLServiceRejection(nak: reply.payload).description
                    continue
                }
                let granted = Self.askedVideo.acknowledged(by: (try? BSONDocument(decoding: reply.payload)) ?? BSONDocument())
                machine.serviceStarted(.video, mtu: granted.mtu)
                projectionLinkVideoStarted(granted)
                guard let unit = try? machine.dataMessage(.video, payload: Self.accessUnit) else {
                    fatalError("an access unit on an unprotected video service could not be framed")
                }
                check(unit.bytes, lane: .queued(isHeartbeatACK: false), payload: Self.accessUnit, mtu: machine.mtu(for: .video))
            case .notice(.touch(let json)):
                // As the connection reads a touch: through the bridge that checks it.
                _ = try? SDLTouchEvent.decode(json: Data(json))
            case .answered, .timedOut, .notice, .serviceEndedByHeadUnit, .securityEstablished, .securityFailed, .log:
                break
            case .lost(let loss):
                _ = "\(loss)"
                return false
            }
        }
        return true
    }

    /// What the connection does once the RPC service is open: registers, and (as a session
    /// would once allowed) asks for video.
    mutating func register() -> Bool {
        let registration = SDLRegisterAppInterfaceRequest(appName: "fuzz", appID: "fuzz")
        guard let request = try? machine.startRequest(.registerAppInterface, parameters: registration, encrypted: false,
                                                      timeout: .seconds(10)) else {
            fatalError("the registration request could not be made")
        }
        guard let video = try? Self.askedVideo.startServiceDocument.encoded() else { fatalError("the video StartService cannot be encoded") }
        let start = machine.startControl(.startService, on: .video, payload: video, timeout: .seconds(10))
        videoStart = start.0
        return perform(request.1) && perform(start.1)
    }

    /// Every timer the machine armed fires: the exchanges still waiting time out, once.
    mutating func fireTimers() {
        for exchange in armed {
            let actions = machine.timerFired(exchange)
            guard actions.allSatisfy({ if case .timedOut = $0 { true } else { false } }), actions.count <= 1 else {
                fatalError("a timer firing did more than time its exchange out: \(actions.count) actions")
            }
        }
        armed.removeAll()
        for exchange in [rpcStart, videoStart].compactMap({ $0 }) where !machine.timerFired(exchange).isEmpty {
            fatalError("an exchange timed out twice")
        }
    }

    /// What `SDLProjectionLink.videoStarted` does with the ACK's size: the display size is the
    /// ACK's size times the stream's scale, and the session takes that as its display.
    func projectionLinkVideoStarted(_ parameters: SDLVideoServiceParameters) {
        let stream = Self.stream
        guard stream.encodedSize != parameters.resolution.videoSize else { return }
        let acknowledged = stream.acknowledged(width: parameters.resolution.width, height: parameters.resolution.height)
        var display = stream.display
        display.size = acknowledged.displaySize
        display.alternatives = nil
        RPCTarget.useDisplay(display)
    }

    /// Bytes the machine writes must parse back into one whole message (with `payload`, when
    /// given) at the MTU they were cut for.
    func check(_ bytes: [UInt8], lane: Machine.Lane, payload: [UInt8]? = nil, mtu: Int? = nil) {
        guard lane != .sealed else { fatalError("a connection without a security library sealed a message") }
        let framePayload = SDLFraming.framePayload(forMTU: mtu ?? machine.sessionMTU)
        // A control message is one frame whatever its size (the protocol cannot split it); every
        // other frame must keep to the MTU.
        var parser = SDLFrameParser(maximumFramePayload: max(bytes.count, 1))
        var assembler = SDLMessageAssembler(maximumMessageSize: max(bytes.count, 1), maximumFramePayload: max(bytes.count, 1))
        parser.append(bytes)
        var received: [SDLMessage] = []
        do {
            while let frame = try parser.nextFrame() {
                guard frame.header.frameType == .control || frame.payload.count <= framePayload else {
                    fatalError("our own \(frame.header.frameType) frame of \(frame.payload.count) bytes exceeds the MTU's \(framePayload)")
                }
                if let whole = try assembler.add(frame) { received.append(whole) }
            }
        } catch {
            fatalError("our own message at MTU \(mtu ?? machine.sessionMTU) does not parse: \(error)")
        }
        guard received.count == 1, parser.bufferedByteCount == 0 else {
            fatalError("our own message at MTU \(mtu ?? machine.sessionMTU) reassembles as \(received.count) messages")
        }
        if let payload, received[0].payload != payload {
            fatalError("an access unit at MTU \(mtu ?? machine.sessionMTU) does not reassemble to what was sent")
        }
    }

    /// The frame size limit must be this side's: a head unit that may raise it past the largest
    /// message we accept decides how much memory one frame takes (issue 10, fault 2).
    func checkFrameLimit() {
        let limits = machine.incomingFramePayloadLimits
        for (name, limit) in [("parser", limits.parser), ("assembler", limits.assembler)] where limit > Self.maximumMessageSize {
            fatalError("the head unit raised the \(name)'s frame payload limit to \(limit) bytes, above the \(Self.maximumMessageSize) bytes accepted for a whole message")
        }
    }
}

import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport

/// Bytes from the head unit, received the way `SDLConnection` receives them: cut into frames
/// (split across transport reads anywhere), reassembled into messages, control payloads read
/// as BSON, RPC headers decoded (their JSON is the `rpc` target's, which keeps this one fast).
/// An RPC StartServiceACK sets the MTU and the frame limits through the connection's own
/// functions, so a hostile MTU reaches the frame parser and the assembler as it does in a drive.
/// What the connection sends back (heartbeat ACKs, a request, a video access unit at the
/// acknowledged MTU) must reassemble to what was sent.
///
/// The first input byte chooses the size of each transport read; the rest is the stream.
/// With `checksFrameLimit`, the frame size limit the stream leaves must still be this side's.
enum SDLStreamTarget {
    static func run(_ bytes: [UInt8], checksFrameLimit: Bool) {
        var input = FuzzInput(bytes)
        let readSize = 1 + Int(input.byte()) * 16
        let stream = input.remainder()
        var link = LinkModel()
        var start = 0
        while start < stream.count {
            let end = min(start + readSize, stream.count)
            guard link.receive(stream[start..<end]) else { break }
            start = end
        }
        if checksFrameLimit { link.checkFrameLimit() }
    }
}

/// The receiving half of `SDLConnection`, without its tasks and timers.
private struct LinkModel {
    static let maximumMessageSize = SDLConnection.Configuration(appName: "fuzz", appID: "fuzz", videoCandidates: [])
        .maximumIncomingMessageSize
    /// The stream a session would have before the video ACK: 800x480 encoded for a 1200x720
    /// display at scale 1.5.
    static let stream = VideoStreamingCapability(preferredResolution: ImageResolution(width: 1200, height: 720), scale: 1.5)
        .headUnitDisplay.chooseStreamResolution().stream!
    /// A video access unit's worth of bytes, long enough to take several frames at a small MTU.
    static let accessUnit = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    /// The RegisterAppInterface request the connection sends once the RPC service is open.
    static let registration = try! SDLRPCMessage(
        type: .request, functionID: .registerAppInterface, correlationID: 1,
        parameters: SDLRegisterAppInterfaceRequest(appName: "fuzz", appID: "fuzz")).encoded()

    var parser = SDLFrameParser(maximumFramePayload: SDLConnection.defaultMTU)
    var assembler = SDLMessageAssembler(maximumMessageSize: maximumMessageSize, maximumFramePayload: SDLConnection.defaultMTU)
    /// The first StartService goes with a version 1 header; the ACK says which version follows.
    var protocolVersion: UInt8 = 1
    var sessionID: UInt8 = 0
    var sessionMTU = SDLConnection.defaultMTU
    var videoMTU = SDLConnection.defaultMTU
    var nextMessageID: UInt32 = 1

    /// False when the connection would drop the head unit.
    mutating func receive(_ bytes: ArraySlice<UInt8>) -> Bool {
        parser.append(bytes)
        do {
            while let frame = try parser.nextFrame() {
                guard let message = try assembler.add(frame) else { continue }
                guard handle(message) else { return false }
            }
            return true
        } catch {
            _ = error.description
            return false
        }
    }

    /// One message as `SDLConnection.handle` and `establish` read it; false drops the connection.
    mutating func handle(_ message: SDLMessage) -> Bool {
        guard let info = message.controlInfo else {
            if message.serviceType == .rpc { _ = try? SDLRPCMessage(decoding: message.payload) }
            return true
        }
        switch (info, message.serviceType) {
        case (.heartbeat, _):
            send(SDLMessage(version: protocolVersion, serviceType: .control, sessionID: message.sessionID,
                            messageID: message.messageID, controlInfo: .heartbeatACK, payload: []), mtu: sessionMTU)
        case (.startServiceACK, .rpc):
            guard let document = try? BSONDocument(decoding: message.payload) else { return false }
            let session = SDLSessionInfo(ack: document, sessionID: message.sessionID)
            protocolVersion = SDLConnection.negotiatedProtocolVersion(session, headerVersion: message.version)
            sessionMTU = SDLConnection.negotiatedMTU(session.mtu, otherwise: SDLConnection.defaultMTU)
            videoMTU = sessionMTU
            let incomingLimit = SDLConnection.incomingFramePayloadLimit(sessionMTU: sessionMTU)
            parser.maximumFramePayload = incomingLimit
            assembler.maximumFramePayload = incomingLimit
            sessionID = session.sessionID
            send(SDLMessage(version: protocolVersion, serviceType: .rpc, sessionID: sessionID,
                            messageID: takeMessageID(), payload: Self.registration), mtu: sessionMTU)
        case (.startServiceACK, .video):
            let document = (try? BSONDocument(decoding: message.payload)) ?? BSONDocument()
            let asked = SDLVideoServiceParameters(resolution: ImageResolution(Self.stream.encodedSize), format: .h264Raw)
            let granted = asked.acknowledged(by: document)
            videoMTU = SDLConnection.negotiatedMTU(granted.mtu, otherwise: sessionMTU)
            projectionLinkVideoStarted(granted)
            send(SDLMessage(version: protocolVersion, serviceType: .video, sessionID: sessionID,
                            messageID: takeMessageID(), payload: Self.accessUnit), mtu: videoMTU)
        case (.startServiceNAK, _):
            _ = SDLServiceRejection(nak: message.payload).description
        default:
            break
        }
        return true
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

    mutating func takeMessageID() -> UInt32 {
        defer { nextMessageID = nextMessageID == UInt32.max ? 1 : nextMessageID + 1 }
        return nextMessageID
    }

    /// Encodes `message` as the connection writes it at `mtu` and checks that the frames
    /// reassemble to the same message.
    func send(_ message: SDLMessage, mtu: Int) {
        let framePayload = SDLConnection.framePayload(forMTU: mtu)
        let bytes = message.encoded(maximumFramePayload: framePayload)
        var parser = SDLFrameParser(maximumFramePayload: framePayload)
        var assembler = SDLMessageAssembler(maximumMessageSize: message.payload.count, maximumFramePayload: framePayload)
        parser.append(bytes)
        var received: [SDLMessage] = []
        do {
            while let frame = try parser.nextFrame() {
                if let whole = try assembler.add(frame) { received.append(whole) }
            }
        } catch {
            fatalError("our own \(message.serviceType) message at MTU \(mtu) does not parse: \(error)")
        }
        var expected = message
        if message.version == 1 { expected.messageID = 0 }
        guard received == [expected], parser.bufferedByteCount == 0 else {
            fatalError("our own \(message.serviceType) message at MTU \(mtu) reassembles as \(received.count) messages")
        }
    }

    /// The frame size limit must be this side's: a head unit that may raise it past the largest
    /// message we accept decides how much memory one frame takes (issue 10, fault 2).
    func checkFrameLimit() {
        for (name, limit) in [("parser", parser.maximumFramePayload), ("assembler", assembler.maximumFramePayload)]
        where limit > Self.maximumMessageSize {
            fatalError("the head unit raised the \(name)'s frame payload limit to \(limit) bytes, above the \(Self.maximumMessageSize) bytes accepted for a whole message")
        }
    }
}

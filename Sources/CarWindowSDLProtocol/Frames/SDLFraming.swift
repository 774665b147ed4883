/// Messages to and from the bytes of one transport connection, for either end of it: the frame
/// parser and message assembler with their limits on the way in; headers, message ids and the
/// MTU's frame size (encrypted where a service is protected) on the way out.
///
/// The app's ``SDLConnectionMachine`` and the head-unit simulator both frame through this, so
/// the two ends of every test speak through one implementation of the framing.
package struct SDLFraming {
    /// The protocol version of the headers written.
    package var protocolVersion: UInt8
    /// The session id of the headers written.
    package var sessionID: UInt8 = 0
    /// The MTU messages are cut for (each service may have its own: see ``encoded(_:mtu:)``).
    package var mtu: Int
    private var parser: SDLFrameParser
    private var assembler: SDLMessageAssembler
    private var nextMessageID: UInt32 = 1

    /// Framing that writes `protocolVersion` headers cut for `mtu` and accepts frames of up to
    /// `incomingFramePayload` bytes and messages of up to `maximumIncomingMessageSize`.
    package init(protocolVersion: UInt8, mtu: Int, incomingFramePayload: Int, maximumIncomingMessageSize: Int) {
        self.protocolVersion = protocolVersion
        self.mtu = mtu
        parser = SDLFrameParser(maximumFramePayload: incomingFramePayload)
        assembler = SDLMessageAssembler(maximumMessageSize: maximumIncomingMessageSize, maximumFramePayload: incomingFramePayload)
    }

    // MARK: Reading

    /// The largest frame payload accepted, for the parser and the assembler alike.
    package var incomingFramePayloadLimit: Int {
        get { parser.maximumFramePayload }
        set {
            parser.maximumFramePayload = newValue
            assembler.maximumFramePayload = newValue
        }
    }

    /// The frame payload limits of the parser and the assembler, each as it is.
    package var incomingFramePayloadLimits: (parser: Int, assembler: Int) {
        (parser.maximumFramePayload, assembler.maximumFramePayload)
    }

    /// The largest whole message accepted.
    package var maximumIncomingMessageSize: Int { assembler.maximumMessageSize }

    /// Bytes as they came from the transport, in any cut.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        parser.append(bytes)
    }

    /// The next whole frame received, or nil until more bytes come. An encrypted frame comes as
    /// it is: the owner opens it (or drops it) before it ``assemble(_:)``s it.
    package mutating func nextFrame() throws(SDLProtocolError) -> SDLFrame? {
        try parser.nextFrame()
    }

    /// Adds a (clear) frame; the message it completes, if any.
    package mutating func assemble(_ frame: SDLFrame) throws(SDLProtocolError) -> SDLMessage? {
        try assembler.add(frame)
    }

    // MARK: Writing

    /// The next message id (1 after the largest, never 0: version 1 headers use 0 for none).
    package mutating func takeMessageID() -> UInt32 {
        defer { nextMessageID = nextMessageID == UInt32.max ? 1 : nextMessageID + 1 }
        return nextMessageID
    }

    /// A message of this connection with the next message id (or `messageID`: an answer carries
    /// the id of what it answers).
    package mutating func message(_ service: SDLServiceType, _ info: SDLControlFrameInfo? = nil, isProtected: Bool = false,
                                  messageID: UInt32? = nil, payload: [UInt8]) -> SDLMessage {
        SDLMessage(version: protocolVersion, serviceType: service, sessionID: sessionID,
                   messageID: messageID ?? (protocolVersion == 1 ? 0 : takeMessageID()), controlInfo: info,
                   isProtected: isProtected, payload: payload)
    }

    /// `message`'s frames cut for `mtu` (this connection's by default), back to back.
    package func encoded(_ message: SDLMessage, mtu: Int? = nil) -> [UInt8] {
        message.encoded(maximumFramePayload: Self.framePayload(forMTU: mtu ?? self.mtu))
    }

    /// The payload per frame for a negotiated MTU. Head units differ on whether `mtu` counts the
    /// 12-byte header; leaving it out of the payload fits both readings.
    package static func framePayload(forMTU mtu: Int) -> Int { max(1, mtu - SDLFrameHeader.size) }

    /// Opens an encrypted frame of a service protected with `session`; a frame of a service that
    /// is not protected (or before the handshake finished) is refused with `serviceNotProtected`,
    /// one that does not decrypt with `decryptionFailed`. Either end drops such a frame and tells
    /// the other with an internal error.
    package static func open(_ frame: SDLFrame, session: (any SDLSecuritySession)?,
                             protectedServices: Set<SDLServiceType>) -> Result<SDLFrame, SDLSecurityError> {
        guard let session, session.isHandshakeComplete, protectedServices.contains(frame.header.serviceType) else {
            return .failure(SDLSecurityError(.serviceNotProtected,
                                             "an encrypted frame arrived on the \(frame.header.serviceType) service, which is not protected"))
        }
        do {
            return .success(try frame.decrypted(with: session))
        } catch {
            return .failure(SDLSecurityError(.decryptionFailed, error.message))
        }
    }
}

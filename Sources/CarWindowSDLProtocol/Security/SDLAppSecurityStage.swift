import Foundation

/// The app's side of SDL's security layer on one transport connection, as a value without I/O:
/// it takes the head unit's security queries and encrypted frames and says what to send back.
///
/// The head unit (the TLS client) starts the handshake when the app asks for a protected
/// service; this stage answers each handshake step with the same sequence number, tells the head
/// unit of every failure with an internal-error notification, and resets the TLS state after an
/// error on either side, as both ends of SDL do. It is not `Sendable`: it owns a TLS session.
package struct SDLAppSecurityStage {
    /// What the owner must do after a step.
    package enum Action: Equatable {
        /// Send this query on the control service (a single frame, E bit clear).
        case send(SDLSecurityQuery)
        /// The handshake finished: protected services can start.
        case established
        /// The security layer failed and was reset. `reportedByHeadUnit` tells whether the head
        /// unit said so (an internal error it sent) or this side did; `closed` lists the services
        /// that were protected, which are gone: nothing of theirs may go on in the clear.
        case failed(SDLSecurityError, reportedByHeadUnit: Bool, closed: Set<SDLServiceType>)
    }

    /// The most handshake bytes one connection may receive before it is refused: a handshake
    /// takes a few kilobytes, a peer that never finishes one must not take more.
    package static let handshakeByteLimit = 256 * 1024

    private let library: (any SDLSecurityLibrary)?
    private let appID: String
    private var session: (any SDLSecuritySession)?
    private var handshakeBytes = 0
    /// The services the head unit granted protected (StartServiceACK with the E bit).
    package private(set) var protectedServices: Set<SDLServiceType> = []

    /// A stage for the app `appID`, with the library chosen for this head unit's make (nil: the
    /// app has none for it, and answers handshakes with "not supported").
    package init(library: (any SDLSecurityLibrary)?, appID: String) {
        self.library = library
        self.appID = appID
    }

    /// Whether this side can protect services at all.
    package var isAvailable: Bool { library != nil }
    /// Whether the handshake has finished on this connection.
    package var isEstablished: Bool { session?.isHandshakeComplete ?? false }

    /// Makes the TLS session ahead of a protected StartService, so that the head unit's first
    /// handshake step finds it; a library that cannot serve the app fails here.
    package mutating func prepare() throws(SDLSecurityError) {
        guard session == nil else { return }
        guard let library else {
            throw SDLSecurityError(.notSupported, "no security library serves this head unit; give one for its make")
        }
        session = try library.makeSession(appID: appID)
    }

    /// The head unit granted `service` protected.
    package mutating func granted(_ service: SDLServiceType) { protectedServices.insert(service) }
    /// `service` ended; its next start negotiates again.
    package mutating func ended(_ service: SDLServiceType) { protectedServices.remove(service) }

    /// Takes one security query from the head unit.
    package mutating func receive(_ query: SDLSecurityQuery) -> [Action] {
        if query.subject == .internalError {
            let code = query.errorCode ?? .internalError
            // About frames sent before a reset (they were in flight when the head unit reset):
            // nothing is protected now, and the handshake that may be running is not at fault.
            if code == .serviceNotProtected || code == .decryptionFailed, protectedServices.isEmpty {
                return []
            }
            let error = SDLSecurityError(code, "the head unit reported \(code) (0x\(String(code.rawValue, radix: 16)))"
                                         + (query.errorText.map { ": \($0.trimmingCharacters(in: .whitespacesAndNewlines))" } ?? ""))
            let closed = protectedServices
            reset()
            return [.failed(error, reportedByHeadUnit: true, closed: closed)]
        }
        guard let session else {
            let error = SDLSecurityError(library == nil ? .notSupported : .serviceNotProtected,
                                         library == nil ? "handshake data arrived, but the app has no security library for this head unit"
                                                        : "handshake data arrived before the app asked for a protected service")
            return [.send(.error(error.code, text: error.message, sequenceNumber: query.sequenceNumber))]
        }
        handshakeBytes += query.binary.count
        guard handshakeBytes <= Self.handshakeByteLimit else {
            return fail(SDLSecurityError(.handshakeFailed, "the head unit sent more than \(Self.handshakeByteLimit / 1024) KiB of handshake without finishing"),
                        sequenceNumber: query.sequenceNumber)
        }
        let wasEstablished = session.isHandshakeComplete
        do {
            let reply = try session.handshake(query.binary)
            var actions: [Action] = []
            if !reply.isEmpty {
                actions.append(.send(.handshake(reply, kind: .response, sequenceNumber: query.sequenceNumber)))
            }
            if !wasEstablished, session.isHandshakeComplete { actions.append(.established) }
            return actions
        } catch {
            return fail(error, sequenceNumber: query.sequenceNumber)
        }
    }

    /// Answers a query that could not be read with its error code.
    package func refuse(_ error: SDLSecurityQueryError) -> [Action] {
        [.send(.error(error.code, text: error.reason, sequenceNumber: 0))]
    }

    /// The frame with its payload decrypted, or the actions for a frame that cannot be: one for
    /// a service that is not protected, or that does not decrypt. Such a frame is dropped.
    package mutating func open(_ frame: SDLFrame) -> Result<SDLFrame, SDLAppSecurityStageRefusal> {
        SDLFraming.open(frame, session: session, protectedServices: protectedServices).mapError { error in
            SDLAppSecurityStageRefusal(error: error, actions: [.send(.error(error.code, text: error.message, sequenceNumber: 0))])
        }
    }

    /// The bytes of a data message on a protected service: encrypted frames. Throws rather than
    /// ever returning the message in the clear.
    package func seal(_ message: SDLMessage, maximumFramePayload: Int) throws(SDLSecurityError) -> [UInt8] {
        guard let session, session.isHandshakeComplete else {
            throw SDLSecurityError(.encryptionFailed, "the \(message.serviceType) service is protected but no TLS session is established")
        }
        return try message.protectedEncoded(maximumFramePayload: maximumFramePayload, session: session)
    }

    /// Forgets the TLS state and the protected services; the next protected start handshakes anew.
    package mutating func reset() {
        session?.reset()
        session = nil
        handshakeBytes = 0
        protectedServices.removeAll()
    }

    private mutating func fail(_ error: SDLSecurityError, sequenceNumber: UInt32) -> [Action] {
        let closed = protectedServices
        reset()
        return [.send(.error(error.code, text: error.message, sequenceNumber: sequenceNumber)),
                .failed(error, reportedByHeadUnit: false, closed: closed)]
    }
}

/// Why an encrypted frame was dropped, and what to tell the head unit.
package struct SDLAppSecurityStageRefusal: Error {
    package var error: SDLSecurityError
    package var actions: [SDLAppSecurityStage.Action]
}

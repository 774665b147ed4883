import CarWindowSDLProtocol

/// The head unit's side of one connection (the TLS client), for the head unit
/// simulator and tests: it starts the handshake the way SDL Core does.
public final class OpenSSLHeadUnitSession: SDLSecuritySession {
    /// The record layer the head unit speaks.
    public enum Transport: Sendable {
        /// TLS 1.2–1.3.
        case tls
        /// DTLS 1.2, SDL Core's default.
        case dtls
    }

    /// The record layer this session speaks.
    public let transport: Transport
    private let context: SSLContext
    private var engine: TLSEngine?

    /// Configures a head unit session; no bytes move until ``start()``.
    ///
    /// - Parameters:
    ///   - transport: TLS or DTLS.
    ///   - certificatePEM: the head unit's PEM certificate (and chain), for apps that verify it.
    ///   - privateKeyPEM: its unencrypted PEM private key; give both or neither.
    ///   - trustedCAsPEM: PEM CA certificates that may issue the app's certificate.
    ///   - verifyPeer: whether to verify the app's certificate; needs `trustedCAsPEM`.
    /// - Throws: `SDLSecurityError` when a PEM is malformed, the key does not
    ///   match the certificate, only one of them is given, or `verifyPeer` lacks CAs.
    public init(transport: Transport = .tls, certificatePEM: [UInt8]? = nil, privateKeyPEM: [UInt8]? = nil, trustedCAsPEM: [UInt8]? = nil, verifyPeer: Bool = false) throws(SDLSecurityError) {
        var identity: Identity?
        switch (certificatePEM, privateKeyPEM) {
        case let (certificate?, key?):
            identity = try Identity(certificate: .memory(certificate, role: "certificate"), privateKey: .memory(key, role: "private key"))
        case (nil, nil):
            identity = nil
        default:
            throw SDLSecurityError(.invalidCertificate, "A head unit certificate needs its private key and the other way round. Give both or neither.")
        }
        var authorities: [X509Certificate] = []
        if let trustedCAsPEM { authorities = try X509Certificate.all(in: .memory(trustedCAsPEM, role: "trusted CA")) }
        guard !verifyPeer || !authorities.isEmpty else {
            throw SDLSecurityError(.invalidCertificate, "verifyPeer needs trusted CA certificates to verify the app against. Pass the CA PEM, or turn verifyPeer off.")
        }
        self.transport = transport
        context = try SSLContext(isServer: false, isDatagram: transport == .dtls, identity: identity, trustedCAs: authorities, verifyPeer: verifyPeer)
    }

    /// The negotiated protocol, such as "TLSv1.3" or "DTLSv1.2"; nil before ``start()``.
    public var protocolVersion: String? { engine?.protocolVersion }

    /// Starts a fresh handshake, forgetting any earlier one, and returns the ClientHello to send to the app.
    ///
    /// - Throws: `SDLSecurityError` with `.internalError` when OpenSSL cannot create the session.
    public func start() throws(SDLSecurityError) -> [UInt8] {
        reset()
        return try handshake([])
    }

    /// Feeds the app's handshake records in and returns what to send back; starts the handshake if ``start()`` was not called.
    ///
    /// - Throws: `SDLSecurityError`; `.invalidCertificate` or `.expiredCertificate`
    ///   when `verifyPeer` is on and the app's certificate fails verification.
    public func handshake(_ incoming: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        if let engine { return try engine.handshake(incoming) }
        let engine = try TLSEngine(context: context)
        self.engine = engine
        return try engine.handshake(incoming)
    }

    /// Whether the handshake has finished.
    public var isHandshakeComplete: Bool { engine?.isHandshakeComplete ?? false }

    /// Encrypts `plaintext` into records, returned concatenated.
    ///
    /// - Throws: `SDLSecurityError` with `.encryptionFailed`, for example before the handshake has finished.
    public func encrypt(_ plaintext: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        guard let engine else { throw .handshakeNotFinished(.encryptionFailed) }
        return try engine.encrypt(plaintext)
    }

    /// Encrypts one frame's payload and appends its records to `output`, without copying the
    /// plaintext or buffering the records on the way.
    ///
    /// - Throws: `SDLSecurityError` with `.encryptionFailed`, for example before the handshake has finished.
    public func encrypt(_ plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws(SDLSecurityError) {
        guard let engine else { throw .handshakeNotFinished(.encryptionFailed) }
        try engine.encrypt(plaintext, appendingTo: &output)
    }

    /// Decrypts whole records, given concatenated.
    ///
    /// - Throws: `SDLSecurityError` with `.decryptionFailed` for truncated, oversized
    ///   or corrupt records, or before the handshake has finished.
    public func decrypt(_ ciphertext: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        guard let engine else { throw .handshakeNotFinished(.decryptionFailed) }
        return try engine.decrypt(ciphertext)
    }

    /// Frees the TLS state; ``start()`` then begins a new handshake.
    public func reset() {
        engine = nil
    }
}

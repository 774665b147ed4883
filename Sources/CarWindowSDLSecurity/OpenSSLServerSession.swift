import CarWindowSDLProtocol

/// The app's side of one connection: a TLS or DTLS server that picks the record
/// layer from the first bytes the head unit sends.
public final class OpenSSLServerSession: SDLSecuritySession {
    /// The app this session was made for.
    public let appID: String
    private let streamContext: SSLContext
    private let datagramContext: SSLContext
    private var engine: TLSEngine?

    init(appID: String, streamContext: SSLContext, datagramContext: SSLContext) {
        self.appID = appID
        self.streamContext = streamContext
        self.datagramContext = datagramContext
    }

    /// The protocol chosen, such as "TLSv1.3" or "DTLSv1.2"; nil before the first handshake bytes.
    public var protocolVersion: String? { engine?.protocolVersion }

    /// Feeds the head unit's handshake records in; the first call picks TLS or DTLS from them.
    ///
    /// - Throws: `SDLSecurityError`; `.sslInvalidData` when the first bytes are
    ///   neither a TLS nor a DTLS handshake record.
    public func handshake(_ incoming: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        if let engine { return try engine.handshake(incoming) }
        guard !incoming.isEmpty else { return [] }
        guard let isDatagram = RecordFraming.sniffDatagram(incoming) else {
            throw SDLSecurityError(.sslInvalidData, "The first handshake bytes are neither a TLS record (16 03 0X) nor a DTLS record (16 FE FF/FD). Check that the head unit speaks TLS or DTLS.")
        }
        let engine = try TLSEngine(context: isDatagram ? datagramContext : streamContext)
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

    /// TLS: one record per frame, as SDL Core sends. DTLS: whole records of the 1,400-byte link
    /// MTU, at most 16,000 bytes of them per frame, since a DTLS reader on a memory BIO (SDL
    /// Core's) takes what one read returns, up to about 16.5 KiB, as one datagram and loses the
    /// rest.
    public func maximumPlaintextPerFrame(payloadLimit: Int) -> Int {
        guard let engine, engine.isDatagram else { return max(1, min(payloadLimit, 16_384) - 90) }
        let records = max(1, min(payloadLimit, 16_000) / Limits.dtlsLinkMTU)
        return records * engine.datagramPlaintextPerRecord
    }

    /// Frees the TLS state; the next handshake picks TLS or DTLS afresh.
    public func reset() {
        engine = nil
    }
}

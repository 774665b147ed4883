import COpenSSL
import CarWindowSDLProtocol

/// An `SSL_CTX` for one role (server or client) and one record layer (TLS or DTLS).
///
/// `@unchecked Sendable` is sound because the context is fully configured inside
/// `init` and never changed afterwards, and OpenSSL allows `SSL_new` on a shared,
/// no-longer-modified `SSL_CTX` from any number of threads at once.
final class SSLContext: @unchecked Sendable {
    let pointer: OpaquePointer
    let isServer: Bool
    let isDatagram: Bool

    /// Makes and configures a context.
    ///
    /// - Parameters:
    ///   - identity: our certificate chain (leaf first) and its key; optional for a client.
    ///   - trustedCAs: the authorities that may have issued the peer's certificate.
    ///   - verifyPeer: whether to demand and verify the peer's certificate.
    init(isServer: Bool, isDatagram: Bool, identity: Identity?, trustedCAs: [X509Certificate], verifyPeer: Bool) throws(SDLSecurityError) {
        let method = switch (isServer, isDatagram) {
        case (true, false): TLS_server_method()
        case (true, true): DTLS_server_method()
        case (false, false): TLS_client_method()
        case (false, true): DTLS_client_method()
        }
        OpenSSLFailure.clear()
        guard let context = SSL_CTX_new(method) else {
            throw SDLSecurityError(.internalError, "OpenSSL could not create an SSL context\(OpenSSLFailure.drainedSuffix()).")
        }
        do throws(SDLSecurityError) {
            try Self.configure(context, isServer: isServer, isDatagram: isDatagram, identity: identity, trustedCAs: trustedCAs, verifyPeer: verifyPeer)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        self.pointer = context
        self.isServer = isServer
        self.isDatagram = isDatagram
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    private static func configure(_ context: OpaquePointer, isServer: Bool, isDatagram: Bool, identity: Identity?, trustedCAs: [X509Certificate], verifyPeer: Bool) throws(SDLSecurityError) {
        // OpenSSL 3's default security level 1 already rules out DTLS 1.0; say so explicitly.
        let (lowest, highest) = isDatagram ? (DTLS1_2_VERSION, DTLS1_2_VERSION) : (TLS1_2_VERSION, TLS1_3_VERSION)
        guard sdltls_ctx_set_min_proto_version(context, lowest) == 1, sdltls_ctx_set_max_proto_version(context, highest) == 1 else {
            throw SDLSecurityError(.internalError, "OpenSSL refused the protocol version range\(OpenSSLFailure.drainedSuffix()).")
        }
        // Every session is a fresh handshake: a cache or tickets would only hold
        // memory, and TLS 1.3 tickets would reach the head unit after it considers
        // the handshake finished.
        SSL_CTX_set_options(context, sdltls_op_no_ticket() | sdltls_op_no_renegotiation())
        sdltls_ctx_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        _ = SSL_CTX_set_num_tickets(context, 0)

        if let identity {
            try use(identity, in: context)
        }
        let store = SSL_CTX_get_cert_store(context)
        for authority in trustedCAs where X509_STORE_add_cert(store, authority.pointer) != 1 {
            throw SDLSecurityError(.invalidCertificate, "OpenSSL refused a trusted CA certificate\(OpenSSLFailure.drainedSuffix()).")
        }
        let demand = isServer ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER
        SSL_CTX_set_verify(context, verifyPeer ? demand : SSL_VERIFY_NONE, nil)
    }

    private static func use(_ identity: Identity, in context: OpaquePointer) throws(SDLSecurityError) {
        guard SSL_CTX_use_certificate(context, identity.leaf.pointer) == 1 else {
            throw SDLSecurityError(.invalidCertificate, "OpenSSL refused the certificate in the \(identity.certificateOrigin)\(OpenSSLFailure.drainedSuffix()).")
        }
        for certificate in identity.intermediates where sdltls_ctx_add1_chain_cert(context, certificate.pointer) != 1 {
            throw SDLSecurityError(.invalidCertificate, "OpenSSL refused a chain certificate in the \(identity.certificateOrigin)\(OpenSSLFailure.drainedSuffix()).")
        }
        guard SSL_CTX_use_PrivateKey(context, identity.key.pointer) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw SDLSecurityError(.invalidCertificate, "OpenSSL refused the key in the \(identity.keyOrigin)\(OpenSSLFailure.drainedSuffix()).")
        }
    }
}

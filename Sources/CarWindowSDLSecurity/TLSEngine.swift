import COpenSSL
import CarWindowSDLProtocol

/// One `SSL` joined to two memory BIOs: what the peer sent goes into `input`,
/// what OpenSSL wants sent comes out of `output`. Shared by both sides' sessions.
final class TLSEngine {
    let context: SSLContext
    let ssl: OpaquePointer
    /// Owned by `ssl`, which frees both BIOs with itself.
    private let input: OpaquePointer
    private let output: OpaquePointer
    private var handshakeBytes = 0
    /// Set once OpenSSL has failed fatally; the `SSL` cannot be used again.
    private var failure: SDLSecurityError?

    init(context: SSLContext) throws(SDLSecurityError) {
        OpenSSLFailure.clear()
        guard let ssl = SSL_new(context.pointer) else {
            throw SDLSecurityError(.internalError, "OpenSSL could not create a session\(OpenSSLFailure.drainedSuffix()).")
        }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw SDLSecurityError(.internalError, "OpenSSL could not create a memory BIO\(OpenSSLFailure.drainedSuffix()).")
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw SDLSecurityError(.internalError, "OpenSSL could not create a memory BIO\(OpenSSLFailure.drainedSuffix()).")
        }
        // An empty BIO must read as "try again later", not as end of stream.
        sdltls_bio_set_mem_eof_return(input, -1)
        sdltls_bio_set_mem_eof_return(output, -1)
        SSL_set_bio(ssl, input, output)
        if context.isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        if context.isDatagram {
            // A memory BIO has no path MTU to query, so state it.
            SSL_set_options(ssl, sdltls_op_no_query_mtu())
            guard sdltls_dtls_set_link_mtu(ssl, Limits.dtlsLinkMTU) == 1 else {
                SSL_free(ssl)
                throw SDLSecurityError(.internalError, "OpenSSL refused the DTLS link MTU of \(Limits.dtlsLinkMTU)\(OpenSSLFailure.drainedSuffix()).")
            }
            sdltls_dtls_use_slow_timer(ssl)
        }
        self.context = context
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit {
        SSL_free(ssl)
    }

    var isDatagram: Bool { context.isDatagram }
    /// The plaintext one DTLS record carries at the link MTU (what encrypt cuts to).
    var datagramPlaintextPerRecord: Int { max(1, DTLS_get_data_mtu(ssl)) }

    var isHandshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    /// The negotiated protocol, such as "TLSv1.3" or "DTLSv1.2".
    var protocolVersion: String { SSL_get_version(ssl).map { String(cString: $0) } ?? "unknown" }

    // MARK: Handshake

    /// Feeds the peer's handshake records in and returns what to send back.
    func handshake(_ incoming: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        try ensureUsable(.handshakeFailed)
        guard !isHandshakeComplete else {
            guard incoming.isEmpty else {
                // Refused without ending the session: the established keys are still good.
                throw SDLSecurityError(.sslInvalidData, "Handshake data arrived after the handshake had finished. Reset the session to start a new handshake.")
            }
            return []
        }
        guard incoming.count <= Limits.maxInputPerCall else {
            throw fail(.sslInvalidData, "A handshake message of \(incoming.count) bytes exceeds the \(Limits.maxInputPerCall)-byte limit. The peer is misbehaving; reset the session.")
        }
        guard let records = RecordFraming.records(in: incoming, isDatagram: isDatagram) else {
            throw fail(.sslInvalidData, "The handshake data is not whole \(isDatagram ? "DTLS" : "TLS") records (truncated or malformed). Check that the peer sends complete records.")
        }
        try count(handshakeBytes: incoming.count)
        // DTLS takes one record per read (see RecordFraming); TLS takes the stream whole.
        let batches = isDatagram ? records : [incoming[...]]
        // A client's first step has nothing to read.
        if batches.isEmpty { try step() }
        for batch in batches {
            try feed(batch)
            try step()
        }
        let reply = drainOutput()
        try count(handshakeBytes: reply.count)
        return reply
    }

    private func step() throws(SDLSecurityError) {
        OpenSSLFailure.clear()
        let result = SSL_do_handshake(ssl)
        guard result != 1 else { return }
        let reason = SSL_get_error(ssl, result)
        guard reason != SSL_ERROR_WANT_READ, reason != SSL_ERROR_WANT_WRITE else { return }
        let error = handshakeError(sslError: reason)
        failure = error
        throw error
    }

    private func count(handshakeBytes added: Int) throws(SDLSecurityError) {
        handshakeBytes += added
        guard handshakeBytes <= Limits.maxHandshakeBytes else {
            throw fail(.handshakeFailed, "The handshake exceeded \(Limits.maxHandshakeBytes) bytes in total. The peer is misbehaving; reset the session.")
        }
    }

    // MARK: Application data

    /// Encrypts `plaintext`; also returns anything OpenSSL queued since the last call (alerts, key updates).
    func encrypt(_ plaintext: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        var records: [UInt8] = []
        var failure: SDLSecurityError?
        plaintext.withUnsafeBytes { bytes in
            do throws(SDLSecurityError) {
                try encrypt(bytes, appendingTo: &records)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return records
    }

    /// Encrypts `plaintext` and appends the records (and anything OpenSSL queued since the last
    /// call) to `output`, with no copy of the plaintext and no buffer of its own.
    func encrypt(_ plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws(SDLSecurityError) {
        try ensureUsable(.encryptionFailed)
        guard isHandshakeComplete else { throw .handshakeNotFinished(.encryptionFailed) }
        // DTLS sends each record as one datagram, so each must fit the MTU;
        // TLS splits a large write into 16 KiB records by itself.
        let chunk = isDatagram ? datagramPlaintextPerRecord : max(1, plaintext.count)
        var offset = 0
        while offset < plaintext.count {
            let end = min(offset + chunk, plaintext.count)
            var written = 0
            OpenSSLFailure.clear()
            let result = SSL_write_ex(ssl, plaintext.baseAddress.map { $0 + offset }, end - offset, &written)
            guard result == 1, written == end - offset else {
                throw fail(.encryptionFailed, "Encryption failed\(OpenSSLFailure.drainedSuffix()). Reset the session and handshake again.")
            }
            offset = end
        }
        drainOutput(appendingTo: &output)
    }

    /// Decrypts whole records and returns their plaintext.
    func decrypt(_ ciphertext: [UInt8]) throws(SDLSecurityError) -> [UInt8] {
        try ensureUsable(.decryptionFailed)
        guard isHandshakeComplete else { throw .handshakeNotFinished(.decryptionFailed) }
        guard ciphertext.count <= Limits.maxInputPerCall else {
            throw SDLSecurityError(.decryptionFailed, "Protected data of \(ciphertext.count) bytes exceeds the \(Limits.maxInputPerCall)-byte limit per message. Send smaller messages.")
        }
        guard let records = RecordFraming.records(in: ciphertext, isDatagram: isDatagram) else {
            throw SDLSecurityError(.decryptionFailed, "The protected data is not whole \(isDatagram ? "DTLS" : "TLS") records (truncated or malformed). Check that the peer sends complete records.")
        }
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        for batch in isDatagram ? records : [ciphertext[...]] {
            try feed(batch)
            try readAvailable(into: &plaintext, using: &buffer)
        }
        // What OpenSSL answers while reading (a key update, an alert) waits for the
        // next encrypt, so that it goes out before records under newer keys.
        guard sdltls_bio_pending(output) <= Limits.maxPendingOutput else {
            throw fail(.decryptionFailed, "The peer made this session queue more than \(Limits.maxPendingOutput) bytes of replies without sending data. Reset the session.")
        }
        return plaintext
    }

    private func readAvailable(into plaintext: inout [UInt8], using buffer: inout [UInt8]) throws(SDLSecurityError) {
        while true {
            var count = 0
            OpenSSLFailure.clear()
            let result = buffer.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress, $0.count, &count) }
            if result == 1 {
                guard plaintext.count + count <= Limits.maxDecryptedPerCall else {
                    throw fail(.decryptionFailed, "The plaintext exceeds \(Limits.maxDecryptedPerCall) bytes per message. Send smaller messages.")
                }
                plaintext += buffer[..<count]
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                throw fail(.decryptionFailed, "The peer closed the TLS session (close_notify). Reset the session and handshake again.")
            default:
                throw fail(.decryptionFailed, "Decryption failed\(OpenSSLFailure.drainedSuffix()): the data is corrupt or from another session. Reset the session and handshake again.")
            }
        }
    }

    // MARK: BIOs and failure

    private func feed(_ bytes: ArraySlice<UInt8>) throws(SDLSecurityError) {
        guard !bytes.isEmpty else { return }
        OpenSSLFailure.clear()
        var written = 0
        let result = bytes.withUnsafeBytes { BIO_write_ex(input, $0.baseAddress, $0.count, &written) }
        guard result == 1, written == bytes.count else {
            throw fail(.internalError, "OpenSSL could not buffer \(bytes.count) bytes\(OpenSSLFailure.drainedSuffix()).")
        }
    }

    private func drainOutput() -> [UInt8] {
        var bytes: [UInt8] = []
        drainOutput(appendingTo: &bytes)
        return bytes
    }

    /// Moves what OpenSSL wrote to the end of `bytes` (grown only when it lacks the room).
    private func drainOutput(appendingTo bytes: inout [UInt8]) {
        let pending = sdltls_bio_pending(output)
        guard pending > 0 else { return }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: pending))
        var count = 0
        bytes.withUnsafeMutableBufferPointer { buffer in
            _ = BIO_read_ex(output, buffer.baseAddress.map { $0 + start }, pending, &count)
        }
        bytes.removeLast(pending - min(count, pending))
    }

    private func ensureUsable(_ code: SDLSecurityErrorCode) throws(SDLSecurityError) {
        if let failure {
            throw SDLSecurityError(code, "The session failed earlier and cannot be used: \(failure.message) Reset it and handshake again.")
        }
    }

    /// Records a fatal failure, after which OpenSSL's state is unusable.
    private func fail(_ code: SDLSecurityErrorCode, _ message: String) -> SDLSecurityError {
        let error = SDLSecurityError(code, message)
        failure = error
        return error
    }
}

extension SDLSecurityError {
    static func handshakeNotFinished(_ code: SDLSecurityErrorCode) -> SDLSecurityError {
        SDLSecurityError(code, "The TLS handshake has not finished. Finish the handshake before sending or receiving protected data.")
    }
}

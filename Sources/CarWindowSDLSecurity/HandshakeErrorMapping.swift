import COpenSSL
import CarWindowSDLProtocol

extension TLSEngine {
    /// Turns a failed `SSL_do_handshake` into the code SDL expects: our own
    /// verification or the peer's certificate alerts become certificate errors,
    /// malformed or out-of-place records become `.sslInvalidData`, the rest `.handshakeFailed`.
    func handshakeError(sslError: Int32) -> SDLSecurityError {
        let failure = OpenSSLFailure.drain()
        let detail = failure.map { " (OpenSSL: \($0.text))" } ?? ""
        guard sslError != SSL_ERROR_ZERO_RETURN else {
            return SDLSecurityError(.handshakeFailed, "The peer closed the session during the handshake. Reset and try again.")
        }
        guard let failure, failure.library == ERR_LIB_SSL else {
            return SDLSecurityError(.handshakeFailed, "The handshake failed\(detail). Reset and try again; if it keeps failing, compare both sides' TLS settings.")
        }
        switch failure.reason {
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            return verificationError()
        case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
            return SDLSecurityError(.expiredCertificate, "The peer rejected our certificate as expired or not yet valid\(detail). Renew the certificate, or check both clocks.")
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE,
             SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN,
             SSL_R_TLSV1_ALERT_UNKNOWN_CA:
            return SDLSecurityError(.invalidCertificate, "The peer rejected our certificate\(detail). Use a certificate issued by a CA the peer trusts.")
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            return SDLSecurityError(.invalidCertificate, "A certificate was required but not sent\(detail). Configure a certificate on the side that must present one.")
        case SSL_R_WRONG_VERSION_NUMBER, SSL_R_UNKNOWN_PROTOCOL, SSL_R_PACKET_LENGTH_TOO_LONG,
             SSL_R_ENCRYPTED_LENGTH_TOO_LONG, SSL_R_RECORD_LENGTH_MISMATCH, SSL_R_BAD_PACKET,
             SSL_R_BAD_PACKET_LENGTH, SSL_R_BAD_RECORD_TYPE, SSL_R_LENGTH_MISMATCH,
             SSL_R_LENGTH_TOO_SHORT, SSL_R_BAD_LENGTH, SSL_R_BAD_HANDSHAKE_LENGTH,
             SSL_R_EXCESSIVE_MESSAGE_SIZE, SSL_R_UNEXPECTED_MESSAGE, SSL_R_UNEXPECTED_RECORD:
            return SDLSecurityError(.sslInvalidData, "The handshake data is malformed or out of place\(detail). Check that the peer speaks TLS 1.2+ or DTLS 1.2.")
        default:
            return SDLSecurityError(.handshakeFailed, "The handshake failed\(detail). Reset and try again; if it keeps failing, compare both sides' TLS settings.")
        }
    }

    /// Our verification of the peer's certificate failed; the verify result says why.
    private func verificationError() -> SDLSecurityError {
        let result = SSL_get_verify_result(ssl)
        let why = X509_verify_cert_error_string(result).map { String(cString: $0) } ?? "verify error \(result)"
        switch Int32(truncatingIfNeeded: result) {
        case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID:
            return SDLSecurityError(.expiredCertificate, "The peer's certificate is outside its validity period: \(why). The peer must renew it; also check both clocks.")
        default:
            return SDLSecurityError(.invalidCertificate, "The peer's certificate did not verify: \(why). Check that it was issued by a CA in the trusted CA PEM.")
        }
    }
}

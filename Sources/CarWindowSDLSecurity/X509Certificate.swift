import COpenSSL
import CarWindowSDLProtocol

/// Owns one reference to an `X509`.
final class X509Certificate {
    let pointer: OpaquePointer

    private init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(pointer)
    }

    /// Every certificate in `pem`, in order: for a chain, the leaf first.
    ///
    /// - Throws: `.invalidCertificate` naming the source when it holds no certificate or a damaged one.
    static func all(in pem: PEMInput) throws(SDLSecurityError) -> [X509Certificate] {
        OpenSSLFailure.clear()
        let certificates = pem.withBIO { bio in
            var found: [X509Certificate] = []
            while let pointer = PEM_read_bio_X509(bio, nil, nil, nil) {
                found.append(X509Certificate(taking: pointer))
            }
            return found
        }
        guard let certificates else {
            throw SDLSecurityError(.internalError, "Cannot read the \(pem.origin)\(OpenSSLFailure.drainedSuffix()).")
        }
        // Reading stops at the first failure; "no start line" is the normal end of
        // the text, anything else is a damaged certificate block.
        let stop = OpenSSLFailure.drain()
        if let stop, !(stop.library == ERR_LIB_PEM && stop.reason == PEM_R_NO_START_LINE) {
            throw SDLSecurityError(.invalidCertificate, "The \(pem.origin) holds a damaged certificate (OpenSSL: \(stop.text)). Export it again as PEM.")
        }
        guard !certificates.isEmpty else {
            throw SDLSecurityError(.invalidCertificate, "The \(pem.origin) holds no PEM certificate (expected \"-----BEGIN CERTIFICATE-----\"). Give a PEM certificate, not DER or a key.")
        }
        return certificates
    }
}

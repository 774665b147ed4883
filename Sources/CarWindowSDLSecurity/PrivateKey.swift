import COpenSSL
import CarWindowSDLProtocol

/// Owns one reference to an `EVP_PKEY`.
final class PrivateKey {
    let pointer: OpaquePointer

    /// Reads the first private key in `pem`.
    ///
    /// - Throws: `.invalidCertificate` naming the source when it holds no usable
    ///   key; passphrase-protected keys are refused rather than prompting on a terminal.
    init(pem: PEMInput) throws(SDLSecurityError) {
        OpenSSLFailure.clear()
        // A nil callback would make OpenSSL ask for a passphrase on the terminal.
        let key = pem.withBIO { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) } ?? nil
        guard let key else {
            throw SDLSecurityError(.invalidCertificate, "The \(pem.origin) holds no usable PEM private key\(OpenSSLFailure.drainedSuffix()). Give an unencrypted PEM key (\"-----BEGIN PRIVATE KEY-----\").")
        }
        pointer = key
    }

    deinit {
        EVP_PKEY_free(pointer)
    }
}

import COpenSSL
import CarWindowSDLProtocol

/// A certificate chain and its private key, checked to belong together.
struct Identity {
    var leaf: X509Certificate
    var intermediates: [X509Certificate]
    var key: PrivateKey
    var certificateOrigin: String
    var keyOrigin: String

    /// Parses both PEM inputs and checks that the key is the one the leaf certificate was issued for.
    ///
    /// - Throws: `.invalidCertificate` naming the file or PEM at fault.
    init(certificate: PEMInput, privateKey: PEMInput) throws(SDLSecurityError) {
        let chain = try X509Certificate.all(in: certificate)
        let key = try PrivateKey(pem: privateKey)
        guard let leaf = chain.first else {
            throw SDLSecurityError(.invalidCertificate, "The \(certificate.origin) holds no certificate.")
        }
        OpenSSLFailure.clear()
        guard X509_check_private_key(leaf.pointer, key.pointer) == 1 else {
            throw SDLSecurityError(.invalidCertificate, "The private key in the \(privateKey.origin) does not match the certificate in the \(certificate.origin)\(OpenSSLFailure.drainedSuffix()). Use the key the certificate was issued for.")
        }
        self.leaf = leaf
        self.intermediates = Array(chain.dropFirst())
        self.key = key
        self.certificateOrigin = certificate.origin
        self.keyOrigin = privateKey.origin
    }
}

import CarWindowSDLProtocol

/// The default security library: the app's side (the TLS server) on OpenSSL, for any vehicle make.
///
/// Its sessions accept TLS 1.2–1.3 or DTLS 1.2, whichever the head unit starts.
/// The head unit's certificate is not verified unless `verifyPeer` is true:
/// production head units are authenticated by the car maker's own scheme and
/// security library, so verification here is for test setups with a known CA.
public struct OpenSSLSecurityLibrary: SDLSecurityLibrary {
    /// The vehicle makes served; empty means any make.
    public let vehicleMakes: Set<String>
    private let streamContext: SSLContext
    private let datagramContext: SSLContext

    /// Loads the app's certificate and key from PEM files.
    ///
    /// - Parameters:
    ///   - certificateFile: path of the app's PEM certificate, optionally followed by its chain.
    ///   - privateKeyFile: path of the certificate's unencrypted PEM private key.
    ///   - trustedCAsFile: path of PEM CA certificates that may issue the head unit's certificate.
    ///   - verifyPeer: whether to demand and verify the head unit's certificate; needs `trustedCAsFile`.
    ///   - vehicleMakes: the makes served; empty means any.
    /// - Throws: `SDLSecurityError` naming the file that is missing, unreadable,
    ///   not PEM, or whose key does not match the certificate.
    public init(certificateFile: String, privateKeyFile: String, trustedCAsFile: String? = nil, verifyPeer: Bool = false, vehicleMakes: Set<String> = []) throws(SDLSecurityError) {
        var trustedCAs: PEMInput?
        if let trustedCAsFile { trustedCAs = try .file(trustedCAsFile, role: "trusted CA") }
        try self.init(
            certificate: .file(certificateFile, role: "certificate"),
            privateKey: .file(privateKeyFile, role: "private key"),
            trustedCAs: trustedCAs, verifyPeer: verifyPeer, vehicleMakes: vehicleMakes)
    }

    /// Loads the app's certificate and key from PEM bytes in memory.
    ///
    /// - Parameters:
    ///   - certificatePEM: the app's PEM certificate, optionally followed by its chain.
    ///   - privateKeyPEM: the certificate's unencrypted PEM private key.
    ///   - trustedCAsPEM: PEM CA certificates that may issue the head unit's certificate.
    ///   - verifyPeer: whether to demand and verify the head unit's certificate; needs `trustedCAsPEM`.
    ///   - vehicleMakes: the makes served; empty means any.
    /// - Throws: `SDLSecurityError` saying which PEM is not PEM or whose key does not match the certificate.
    public init(certificatePEM: [UInt8], privateKeyPEM: [UInt8], trustedCAsPEM: [UInt8]? = nil, verifyPeer: Bool = false, vehicleMakes: Set<String> = []) throws(SDLSecurityError) {
        var trustedCAs: PEMInput?
        if let trustedCAsPEM { trustedCAs = try .memory(trustedCAsPEM, role: "trusted CA") }
        try self.init(
            certificate: .memory(certificatePEM, role: "certificate"),
            privateKey: .memory(privateKeyPEM, role: "private key"),
            trustedCAs: trustedCAs, verifyPeer: verifyPeer, vehicleMakes: vehicleMakes)
    }

    private init(certificate: PEMInput, privateKey: PEMInput, trustedCAs: PEMInput?, verifyPeer: Bool, vehicleMakes: Set<String>) throws(SDLSecurityError) {
        let identity = try Identity(certificate: certificate, privateKey: privateKey)
        let authorities = try trustedCAs.map(X509Certificate.all(in:)) ?? []
        guard !verifyPeer || !authorities.isEmpty else {
            throw SDLSecurityError(.invalidCertificate, "verifyPeer needs trusted CA certificates to verify the head unit against. Pass the CA PEM, or turn verifyPeer off.")
        }
        self.vehicleMakes = vehicleMakes
        streamContext = try SSLContext(isServer: true, isDatagram: false, identity: identity, trustedCAs: authorities, verifyPeer: verifyPeer)
        datagramContext = try SSLContext(isServer: true, isDatagram: true, identity: identity, trustedCAs: authorities, verifyPeer: verifyPeer)
    }

    /// Makes a server session for one connection of the app with `appID`.
    ///
    /// Does not throw: the certificate was loaded and checked at init.
    public func makeSession(appID: String) throws(SDLSecurityError) -> any SDLSecuritySession {
        OpenSSLServerSession(appID: appID, streamContext: streamContext, datagramContext: datagramContext)
    }
}

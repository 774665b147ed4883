@testable import CarWindowSDLSecurity
import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

extension TestCertificates {
    /// The default library serving `pair`'s certificate.
    func library(_ pair: KeyPath<TestCertificates, Pair> = \.app, verifyPeer: Bool = false) throws -> OpenSSLSecurityLibrary {
        let pair = self[keyPath: pair]
        return try OpenSSLSecurityLibrary(certificatePEM: pair.certificate, privateKeyPEM: pair.key,
                                          trustedCAsPEM: ca.certificate, verifyPeer: verifyPeer)
    }

    /// A head unit that trusts this CA.
    func headUnit(_ transport: OpenSSLHeadUnitSession.Transport, verifyPeer: Bool = true, withCertificate: Bool = false) throws -> OpenSSLHeadUnitSession {
        try OpenSSLHeadUnitSession(transport: transport,
                                   certificatePEM: withCertificate ? headUnit.certificate : nil,
                                   privateKeyPEM: withCertificate ? headUnit.key : nil,
                                   trustedCAsPEM: ca.certificate, verifyPeer: verifyPeer)
    }
}

/// Passes handshake blobs between head unit and app until both are done.
///
/// - Returns: the number of round trips used.
@discardableResult
func connect(_ client: OpenSSLHeadUnitSession, _ server: any SDLSecuritySession, maxRounds: Int = 8) throws(SDLSecurityError) -> Int {
    var toServer = try client.start()
    for round in 1...maxRounds {
        let toClient = try server.handshake(toServer)
        toServer = toClient.isEmpty ? [] : try client.handshake(toClient)
        if client.isHandshakeComplete, server.isHandshakeComplete, toServer.isEmpty { return round }
    }
    throw SDLSecurityError(.handshakeFailed, "test: no handshake after \(maxRounds) rounds")
}

/// A recognisable payload of `count` bytes.
func payload(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
}

/// The code of the `SDLSecurityError` that `body` throws, or nil (recording an issue) when it throws none.
func errorCode<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> SDLSecurityErrorCode? {
    errorThrown(body, sourceLocation: sourceLocation)?.code
}

/// The `SDLSecurityError` that `body` throws, or nil (recording an issue) when it throws none.
func errorThrown<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> SDLSecurityError? {
    do {
        _ = try body()
        Issue.record("expected an SDLSecurityError, got none", sourceLocation: sourceLocation)
    } catch let error as SDLSecurityError {
        return error
    } catch {
        Issue.record("expected an SDLSecurityError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@testable import CarWindowSDLSecurity
import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

@Suite("Handshake")
struct HandshakeTests {
    typealias Transport = OpenSSLHeadUnitSession.Transport

    @Test("completes over memory and the server picks the record layer itself", arguments: [Transport.tls, .dtls])
    func completes(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        let rounds = try connect(client, server)
        #expect(rounds <= 3)
        let expected = transport == .tls ? "TLSv1.3" : "DTLSv1.2"
        #expect(client.protocolVersion == expected)
        #expect((server as? OpenSSLServerSession)?.protocolVersion == expected)
    }

    @Test("an app certificate from another CA fails the head unit's verification", arguments: [Transport.tls, .dtls])
    func untrustedApp(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library(\.otherApp).makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        let error = errorThrown { try connect(client, server) }
        #expect(error?.code == .invalidCertificate)
        #expect(error?.message.contains("unable to get local issuer certificate") == true)
    }

    @Test("an expired app certificate gives expiredCertificate", arguments: [Transport.tls, .dtls])
    func expiredApp(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library(\.expiredApp).makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        #expect(errorCode { try connect(client, server) } == .expiredCertificate)
    }

    @Test("without verifyPeer the head unit accepts any app certificate")
    func unverified() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library(\.otherApp).makeSession(appID: "app")
        let client = try fixtures.headUnit(.tls, verifyPeer: false)
        try connect(client, server)
    }

    @Test("mutual authentication with the head unit's certificate", arguments: [Transport.tls, .dtls])
    func mutual(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library(verifyPeer: true).makeSession(appID: "app")
        try connect(fixtures.headUnit(transport, withCertificate: true), server)
    }

    @Test("a verifying app refuses a head unit without a certificate", arguments: [Transport.tls, .dtls])
    func missingClientCertificate(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library(verifyPeer: true).makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        #expect(errorCode { try connect(client, server) } == .invalidCertificate)
    }

    @Test("a certificate chain (leaf then CA) is accepted")
    func chain() throws {
        let fixtures = try TestCertificates.load()
        let library = try OpenSSLSecurityLibrary(certificatePEM: fixtures.app.certificate + fixtures.ca.certificate, privateKeyPEM: fixtures.app.key)
        try connect(fixtures.headUnit(.tls), library.makeSession(appID: "app"))
    }

    @Test("reset forgets the session; a new handshake works, even over the other record layer")
    func reset() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(.tls)
        try connect(client, server)
        #expect(try server.decrypt(client.encrypt(payload(100))) == payload(100))

        server.reset()
        #expect(!server.isHandshakeComplete)
        #expect(errorCode { try server.encrypt([1]) } == .encryptionFailed)
        try connect(client, server)
        #expect(try client.decrypt(server.encrypt(payload(100))) == payload(100))

        server.reset()
        let datagramClient = try fixtures.headUnit(.dtls)
        try connect(datagramClient, server)
        #expect((server as? OpenSSLServerSession)?.protocolVersion == "DTLSv1.2")
    }

    @Test("after a failed handshake, reset lets both sides start again")
    func resetAfterFailure() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(.tls)
        _ = try server.handshake(client.start())
        // A plaintext handshake record where TLS 1.3 expects the encrypted Finished.
        let stray: [UInt8] = [0x16, 0x03, 0x03, 0x00, 0x04, 0x14, 0x00, 0x00, 0x00]
        #expect(errorCode { try server.handshake(stray) } == .sslInvalidData)
        let later = errorThrown { try server.handshake(stray) }
        #expect(later?.message.contains("failed earlier") == true)
        server.reset()
        try connect(client, server)
        #expect(try server.decrypt(client.encrypt(payload(7))) == payload(7))
    }

    @Test("vehicle makes compare case-insensitively; empty serves any make")
    func vehicleMakes() throws {
        let fixtures = try TestCertificates.load()
        let any = try fixtures.library()
        #expect(any.serves(make: "Whatever"))
        let ford = try OpenSSLSecurityLibrary(certificatePEM: fixtures.app.certificate, privateKeyPEM: fixtures.app.key, vehicleMakes: ["Ford"])
        #expect(ford.serves(make: "FORD"))
        #expect(!ford.serves(make: "Toyota"))
    }
}

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("one library serves sessions in parallel tasks")
    func parallelSessions() async throws {
        let fixtures = try TestCertificates.load()
        let library = try fixtures.library()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let server = try library.makeSession(appID: "app-\(index)")
                    let client = try fixtures.headUnit(index.isMultiple(of: 2) ? .tls : .dtls)
                    try connect(client, server)
                    #expect(try server.decrypt(client.encrypt(payload(index * 100))) == payload(index * 100))
                }
            }
            try await group.waitForAll()
        }
    }
}

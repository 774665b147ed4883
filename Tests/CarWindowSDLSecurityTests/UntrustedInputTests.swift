@testable import CarWindowSDLSecurity
import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

@Suite("Untrusted input")
struct UntrustedInputTests {
    typealias Transport = OpenSSLHeadUnitSession.Transport

    @Test("garbage into the server's handshake is sslInvalidData")
    func garbage() throws {
        let fixtures = try TestCertificates.load()
        let library = try fixtures.library()
        var generator = SystemRandomNumberGenerator()
        for length in [1, 2, 3, 13, 100, 5000] {
            let noise = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let server = try library.makeSession(appID: "app")
            #expect(errorCode { try server.handshake([0x42] + noise) } == .sslInvalidData)
        }
        // A record header that promises more than it carries.
        let server = try library.makeSession(appID: "app")
        #expect(errorCode { try server.handshake([0x16, 0x03, 0x01, 0x40, 0x00, 0x01]) } == .sslInvalidData)
    }

    @Test("a whole record with a nonsense ClientHello is refused with a typed error", arguments: [Transport.tls, .dtls])
    func nonsenseHello(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let body: [UInt8] = [0x01, 0x00, 0x00, 0x03, 0xDE, 0xAD, 0xBE]
        let header: [UInt8] = transport == .tls
            ? [0x16, 0x03, 0x01, 0x00, UInt8(body.count)]
            : [0x16, 0xFE, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, UInt8(body.count)]
        #expect(errorCode { try server.handshake(header + body) } == .sslInvalidData)
    }

    @Test("a truncated record into decrypt is a typed error, and the whole record still decrypts after", arguments: [Transport.tls, .dtls])
    func truncated(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        try connect(client, server)
        let records = try client.encrypt(payload(1000))
        for cut in [1, 5, records.count - 1] {
            #expect(errorCode { try server.decrypt(Array(records.prefix(cut))) } == .decryptionFailed)
        }
        #expect(try server.decrypt(records) == payload(1000))
    }

    @Test("a tampered TLS record fails decryption; DTLS drops it silently")
    func tampered() throws {
        let fixtures = try TestCertificates.load()
        for transport in [Transport.tls, .dtls] {
            let server = try fixtures.library().makeSession(appID: "app")
            let client = try fixtures.headUnit(transport)
            try connect(client, server)
            var records = try client.encrypt(payload(100))
            records[records.count - 1] ^= 0x01
            if transport == .tls {
                #expect(errorCode { try server.decrypt(records) } == .decryptionFailed)
                #expect(errorCode { try server.encrypt([1]) } == .encryptionFailed)
            } else {
                #expect(try server.decrypt(records) == [])
                #expect(try server.decrypt(client.encrypt(payload(5))) == payload(5))
            }
        }
    }

    @Test("encrypt and decrypt before the handshake has finished are typed errors")
    func beforeHandshake() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(.tls)
        #expect(errorCode { try server.decrypt([0x17, 0x03, 0x03, 0x00, 0x00]) } == .decryptionFailed)
        #expect(errorCode { try server.encrypt([1, 2, 3]) } == .encryptionFailed)
        _ = try server.handshake(client.start())
        let error = errorThrown { try server.decrypt([0x17, 0x03, 0x03, 0x00, 0x00]) }
        #expect(error?.code == .decryptionFailed)
        #expect(error?.message.contains("handshake has not finished") == true)
        #expect(errorCode { try client.encrypt([1]) } == .encryptionFailed)
    }

    @Test("oversized input is refused", arguments: [Transport.tls, .dtls])
    func oversized(transport: Transport) throws {
        let fixtures = try TestCertificates.load()
        let library = try fixtures.library()
        let hello = try fixtures.headUnit(transport).start()
        let huge = hello + [UInt8](repeating: 0, count: 1 << 20)
        #expect(errorCode { try library.makeSession(appID: "app").handshake(huge) } == .sslInvalidData)

        let server = try library.makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        try connect(client, server)
        #expect(errorCode { try server.decrypt(huge) } == .decryptionFailed)
        #expect(try server.decrypt(client.encrypt(payload(3))) == payload(3))
    }

    @Test("a handshake that drags on past 256 KiB is refused")
    func handshakeBudget() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let hello = try fixtures.headUnit(.dtls).start()
        var code: SDLSecurityErrorCode?
        // DTLS ignores a repeated ClientHello, so only the budget can end this.
        for _ in 0..<(2 * (256 << 10) / hello.count) where code == nil {
            do throws(SDLSecurityError) {
                _ = try server.handshake(hello)
            } catch {
                code = error.code
            }
        }
        #expect(code == .handshakeFailed)
    }
}

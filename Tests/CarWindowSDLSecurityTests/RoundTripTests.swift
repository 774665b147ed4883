@testable import CarWindowSDLSecurity
import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

@Suite("Encrypt and decrypt")
struct RoundTripTests {
    static let sizes = [0, 1, 1000, 16 * 1024 + 1, 200 * 1024]

    @Test("round trips both ways", arguments: [OpenSSLHeadUnitSession.Transport.tls, .dtls], sizes)
    func roundTrip(transport: OpenSSLHeadUnitSession.Transport, size: Int) throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(transport)
        try connect(client, server)
        let data = payload(size)

        let toApp = try client.encrypt(data)
        #expect(toApp.count >= size)
        #expect(try server.decrypt(toApp) == data)

        let toHeadUnit = try server.encrypt(data)
        #expect(try client.decrypt(toHeadUnit) == data)
    }

    @Test("DTLS records fit the 1400-byte link MTU")
    func datagramRecordsFitMTU() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(.dtls)
        try connect(client, server)
        var records = try server.encrypt(payload(20_000))[...]
        var count = 0
        while !records.isEmpty {
            let length = 13 + (Int(records[records.startIndex + 11]) << 8 | Int(records[records.startIndex + 12]))
            #expect(length <= 1400)
            records = records.dropFirst(length)
            count += 1
        }
        #expect(count >= 15)
    }

    @Test("several messages decrypt in order, and each side's records belong to its own session")
    func sequence() throws {
        let fixtures = try TestCertificates.load()
        let server = try fixtures.library().makeSession(appID: "app")
        let client = try fixtures.headUnit(.tls)
        try connect(client, server)
        let first = try client.encrypt(payload(10)), second = try client.encrypt(payload(20))
        #expect(try server.decrypt(first + second) == payload(10) + payload(20))
    }
}

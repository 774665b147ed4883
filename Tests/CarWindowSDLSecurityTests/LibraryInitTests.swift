@testable import CarWindowSDLSecurity
import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

@Suite("Loading certificates")
struct LibraryInitTests {
    @Test("loads from files")
    func files() throws {
        let fixtures = try TestCertificates.load()
        let library = try OpenSSLSecurityLibrary(certificateFile: fixtures.app.certificateFile, privateKeyFile: fixtures.app.keyFile,
                                                 trustedCAsFile: fixtures.ca.certificateFile, verifyPeer: true)
        try connect(fixtures.headUnit(.dtls, withCertificate: true), library.makeSession(appID: "app"))
    }

    @Test("a missing file is named")
    func missingFile() throws {
        let fixtures = try TestCertificates.load()
        let path = fixtures.directory + "/does-not-exist.pem"
        let error = errorThrown {
            try OpenSSLSecurityLibrary(certificateFile: path, privateKeyFile: fixtures.app.keyFile)
        }
        #expect(error?.code == .internalError)
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("certificate file") == true)
    }

    @Test("a directory instead of a file is named")
    func directory() throws {
        let fixtures = try TestCertificates.load()
        let error = errorThrown {
            try OpenSSLSecurityLibrary(certificateFile: fixtures.app.certificateFile, privateKeyFile: fixtures.directory)
        }
        #expect(error?.message.contains(fixtures.directory) == true)
    }

    @Test("a file that is not PEM is named")
    func notPEM() throws {
        let fixtures = try TestCertificates.load()
        let error = errorThrown {
            try OpenSSLSecurityLibrary(certificateFile: fixtures.directory + "/index.txt", privateKeyFile: fixtures.app.keyFile)
        }
        #expect(error?.code == .invalidCertificate)
        #expect(error?.message.contains("index.txt") == true)
        // A certificate where the key belongs.
        let swapped = errorThrown {
            try OpenSSLSecurityLibrary(certificateFile: fixtures.app.certificateFile, privateKeyFile: fixtures.app.certificateFile)
        }
        #expect(swapped?.message.contains("private key file") == true)
    }

    @Test("a key that does not match the certificate is refused, naming both")
    func mismatchedKey() throws {
        let fixtures = try TestCertificates.load()
        let error = errorThrown {
            try OpenSSLSecurityLibrary(certificateFile: fixtures.app.certificateFile, privateKeyFile: fixtures.headUnit.keyFile)
        }
        #expect(error?.code == .invalidCertificate)
        #expect(error?.message.contains(fixtures.headUnit.keyFile) == true)
        #expect(error?.message.contains(fixtures.app.certificateFile) == true)
        #expect(errorCode {
            try OpenSSLSecurityLibrary(certificatePEM: fixtures.app.certificate, privateKeyPEM: fixtures.otherApp.key)
        } == .invalidCertificate)
        #expect(errorCode {
            try OpenSSLHeadUnitSession(certificatePEM: fixtures.headUnit.certificate, privateKeyPEM: fixtures.app.key)
        } == .invalidCertificate)
    }

    @Test("empty PEM and verifyPeer without CAs are refused")
    func emptyAndMisconfigured() throws {
        let fixtures = try TestCertificates.load()
        #expect(errorCode {
            try OpenSSLSecurityLibrary(certificatePEM: [], privateKeyPEM: fixtures.app.key)
        } == .invalidCertificate)
        #expect(errorCode {
            try OpenSSLSecurityLibrary(certificatePEM: fixtures.app.certificate, privateKeyPEM: fixtures.app.key, verifyPeer: true)
        } == .invalidCertificate)
        #expect(errorCode { try OpenSSLHeadUnitSession(verifyPeer: true) } == .invalidCertificate)
    }
}

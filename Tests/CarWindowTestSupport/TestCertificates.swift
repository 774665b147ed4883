import Foundation

/// Certificates made with the `openssl` CLI once per test run: a CA, an app and a
/// head unit certificate it issued, an expired app certificate, and an app
/// certificate from another CA.
///
/// `openssl ca` is used rather than `x509 -req` because only it takes explicit
/// `-startdate`/`-enddate` in OpenSSL 3.0: valid certificates start a day in the
/// past (clock skew), and the expired one ran from two days ago to yesterday.
package struct TestCertificates: Sendable {
    /// A certificate and its key, as files and as PEM bytes.
    package struct Pair: Sendable {
        package var certificateFile: String
        package var keyFile: String
        package var certificate: [UInt8]
        package var key: [UInt8]
    }

    package var directory: String
    package var ca: Pair
    package var app: Pair
    package var headUnit: Pair
    package var expiredApp: Pair
    package var otherCA: Pair
    package var otherApp: Pair

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The certificates of this test run, made once.
    package static let shared = Result { () throws(Failure) in try make() }

    /// The certificates, or a failure that names the openssl command at fault.
    package static func load() throws -> TestCertificates { try shared.get() }

    private static func make() throws(Failure) -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-certificates-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try configuration.write(toFile: directory + "/ca.cnf", atomically: true, encoding: .utf8)
            try Data().write(to: URL(fileURLWithPath: directory + "/index.txt"))
            try "01\n".write(toFile: directory + "/serial", atomically: true, encoding: .utf8)
        } catch {
            throw Failure(description: "Cannot prepare \(directory): \(error)")
        }
        let day: TimeInterval = 86_400
        let issuer = Issuer(directory: directory)
        let ca = try issuer.issue("ca", by: nil, from: -day, to: 3650 * day)
        let otherCA = try issuer.issue("other-ca", by: nil, from: -day, to: 3650 * day)
        return TestCertificates(
            directory: directory,
            ca: ca,
            app: try issuer.issue("app", by: "ca", from: -day, to: 30 * day),
            headUnit: try issuer.issue("head-unit", by: "ca", from: -day, to: 30 * day),
            expiredApp: try issuer.issue("expired-app", by: "ca", from: -2 * day, to: -day),
            otherCA: otherCA,
            otherApp: try issuer.issue("other-app", by: "other-ca", from: -day, to: 30 * day))
    }

    private static let configuration = """
        [ca]
        default_ca = test
        [test]
        database = index.txt
        new_certs_dir = .
        serial = serial
        default_md = sha256
        policy = any
        unique_subject = no
        x509_extensions = leaf
        [any]
        commonName = supplied
        [leaf]
        basicConstraints = CA:FALSE
        keyUsage = critical, digitalSignature
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid
        [root]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        """
}

/// Runs `openssl` in the fixture directory.
private struct Issuer {
    var directory: String

    /// Makes a P-256 key and a certificate for `name`, issued by `issuer` (self-signed when nil),
    /// valid between the two offsets from now.
    func issue(_ name: String, by issuer: String?, from start: TimeInterval, to end: TimeInterval) throws(TestCertificates.Failure) -> TestCertificates.Pair {
        try openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)")
        var signing = ["-selfsign", "-keyfile", "\(name).key", "-extensions", "root"]
        if let issuer { signing = ["-cert", "\(issuer).pem", "-keyfile", "\(issuer).key"] }
        try openssl(["ca", "-config", "ca.cnf", "-batch", "-notext", "-in", "\(name).csr", "-out", "\(name).pem",
                     "-startdate", Self.stamp(start), "-enddate", Self.stamp(end)] + signing)
        let certificateFile = "\(directory)/\(name).pem"
        let keyFile = "\(directory)/\(name).key"
        guard let certificate = FileManager.default.contents(atPath: certificateFile),
              let key = FileManager.default.contents(atPath: keyFile) else {
            throw TestCertificates.Failure(description: "openssl did not write \(certificateFile) or \(keyFile)")
        }
        return TestCertificates.Pair(certificateFile: certificateFile, keyFile: keyFile, certificate: Array(certificate), key: Array(key))
    }

    private func openssl(_ arguments: String...) throws(TestCertificates.Failure) {
        try openssl(arguments)
    }

    private func openssl(_ arguments: [String]) throws(TestCertificates.Failure) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let log = Pipe()
        process.standardOutput = log
        process.standardError = log
        do {
            try process.run()
        } catch {
            throw TestCertificates.Failure(description: "Cannot run /usr/bin/openssl: \(error)")
        }
        let output = log.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestCertificates.Failure(description: "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: output, as: UTF8.self))")
        }
    }

    /// GeneralizedTime, which `openssl ca -startdate/-enddate` accepts.
    private static func stamp(_ offset: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: Date(timeIntervalSinceNow: offset))
    }
}

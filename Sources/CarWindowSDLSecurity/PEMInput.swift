import COpenSSL
import CarWindowSDLProtocol

/// PEM text and a phrase naming where it came from, so that every error can say which file is wrong.
struct PEMInput {
    var bytes: [UInt8]
    /// For example "certificate file /etc/app.pem" or "certificate PEM".
    var origin: String

    /// PEM given in memory; `role` names it in errors ("certificate", "private key").
    ///
    /// - Throws: `.invalidCertificate` when the bytes are too large to be a PEM certificate or key.
    static func memory(_ bytes: [UInt8], role: String) throws(SDLSecurityError) -> PEMInput {
        let origin = "\(role) PEM"
        guard bytes.count <= Limits.maxPEMFileSize else {
            throw SDLSecurityError(.invalidCertificate, "The \(origin) is larger than \(Limits.maxPEMFileSize) bytes, too large for a PEM certificate or key.")
        }
        return PEMInput(bytes: bytes, origin: origin)
    }

    /// Reads the file at `path`; `role` names it in errors.
    ///
    /// - Throws: `.internalError` naming the file when it is missing, unreadable or too large.
    static func file(_ path: String, role: String) throws(SDLSecurityError) -> PEMInput {
        let origin = "\(role) file \(path)"
        OpenSSLFailure.clear()
        guard let bio = BIO_new_file(path, "rb") else {
            throw SDLSecurityError(.internalError, "Cannot open the \(origin)\(OpenSSLFailure.drainedSuffix()). Check the path and the file's permissions.")
        }
        defer { BIO_free(bio) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var count = 0
            guard BIO_read_ex(bio, &chunk, chunk.count, &count) == 1 else { break }
            bytes += chunk[..<count]
            guard bytes.count <= Limits.maxPEMFileSize else {
                throw SDLSecurityError(.internalError, "The \(origin) is larger than \(Limits.maxPEMFileSize) bytes, too large for a PEM certificate or key. Check the path.")
            }
        }
        // A file BIO's read fails both at end of file and on an I/O error such as
        // reading a directory; only the error leaves something in the queue.
        if let failure = OpenSSLFailure.drain() {
            throw SDLSecurityError(.internalError, "Cannot read the \(origin) (OpenSSL: \(failure.text)). Check that it is a readable file.")
        }
        return PEMInput(bytes: bytes, origin: origin)
    }

    /// Runs `body` with a read-only memory BIO over the PEM bytes, or returns nil when OpenSSL cannot allocate one.
    func withBIO<Result>(_ body: (OpaquePointer) -> Result) -> Result? {
        bytes.withUnsafeBytes { buffer in
            // OpenSSL refuses a null buffer, which is what an empty array may give.
            let bio = buffer.isEmpty ? BIO_new(BIO_s_mem()) : BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            guard let bio else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}

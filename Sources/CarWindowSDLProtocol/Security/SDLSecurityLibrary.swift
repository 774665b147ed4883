import Foundation

/// The error codes of SDL's security layer, with their byte values on the wire (SDL-0317).
public enum SDLSecurityErrorCode: UInt8, Sendable, CaseIterable {
    /// A security query shorter than its header, or whose JSON runs past its end.
    case invalidQuerySize = 0x01
    /// A security query of an unknown type or id.
    case invalidQueryID = 0x02
    /// The peer has no security layer, or not for this request.
    case notSupported = 0x03
    /// StartService with the E bit for a service already protected.
    case serviceAlreadyProtected = 0x04
    /// Encrypted data for a service that is not protected.
    case serviceNotProtected = 0x05
    /// An encrypted frame that did not decrypt.
    case decryptionFailed = 0x06
    /// Data that could not be encrypted.
    case encryptionFailed = 0x07
    /// Bytes that are no TLS or DTLS record.
    case sslInvalidData = 0x08
    /// The handshake failed for a reason other than the certificate.
    case handshakeFailed = 0x09
    /// The peer's certificate does not verify.
    case invalidCertificate = 0x0A
    /// The peer's certificate has expired or is not valid yet.
    case expiredCertificate = 0x0B
    /// Anything else.
    case internalError = 0xFF
}

/// What went wrong in the security layer: the code the peer is told and a sentence for people.
public struct SDLSecurityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The code sent to the peer in an internal-error notification.
    public var code: SDLSecurityErrorCode
    /// What was wrong and what to do.
    public var message: String

    /// An error with its wire code and explanation.
    public init(_ code: SDLSecurityErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The explanation.
    public var description: String { message }
}

/// One TLS or DTLS session over one transport connection, as the app (the TLS server) runs it.
///
/// A session is owned by one connection and used from it alone, so it need not be `Sendable`.
/// Every byte handed in comes from the head unit: an implementation bounds what it buffers and
/// throws ``SDLSecurityError`` for anything it cannot take, never traps.
public protocol SDLSecuritySession: AnyObject {
    /// Takes the head unit's handshake records and returns the records to send back (empty when
    /// there are none yet).
    func handshake(_ incoming: [UInt8]) throws(SDLSecurityError) -> [UInt8]
    /// Whether the handshake has finished, so that ``encrypt(_:)`` and ``decrypt(_:)`` work.
    var isHandshakeComplete: Bool { get }
    /// One frame's payload as the records that carry it.
    func encrypt(_ plaintext: [UInt8]) throws(SDLSecurityError) -> [UInt8]
    /// One frame's payload as the records that carry it, appended to `output`: the path every
    /// protected video frame takes. The default calls ``encrypt(_:)``; a library that can write
    /// its records straight into `output` saves a copy and two allocations a frame.
    func encrypt(_ plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws(SDLSecurityError)
    /// One encrypted frame's records as the payload they carry.
    func decrypt(_ ciphertext: [UInt8]) throws(SDLSecurityError) -> [UInt8]
    /// Forgets the TLS state, as both sides do after an error; the next handshake starts afresh.
    func reset()
    /// The most plaintext one frame may carry when its payload may hold `payloadLimit` bytes of
    /// records. The default keeps to one TLS record per frame, as SDL Core does.
    func maximumPlaintextPerFrame(payloadLimit: Int) -> Int
}

extension SDLSecuritySession {
    public func encrypt(_ plaintext: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws(SDLSecurityError) {
        output += try encrypt(Array(plaintext))
    }

    /// One record per frame: at most 16,384 bytes of plaintext (TLS's largest record), less
    /// 90 bytes for the record's header, nonce, tag and padding, as SDL Core reckons it.
    public func maximumPlaintextPerFrame(payloadLimit: Int) -> Int {
        max(1, min(payloadLimit, 16_384) - 90)
    }
}

/// A security library: a car maker's own, or `OpenSSLSecurityLibrary` as the default. It makes
/// one ``SDLSecuritySession`` per connection to a head unit of a make it serves.
///
/// Several libraries may be offered; the link uses the first whose ``vehicleMakes`` holds the
/// make the head unit names in its RegisterAppInterface response, as sdl_ios does.
public protocol SDLSecurityLibrary: Sendable {
    /// The vehicle makes served, compared without regard to case; empty serves every make.
    var vehicleMakes: Set<String> { get }
    /// A new session for the app with this id (the policy app id the head unit knows it by).
    func makeSession(appID: String) throws(SDLSecurityError) -> any SDLSecuritySession
}

extension SDLSecurityLibrary {
    /// Whether this library serves head units of `make` (nil when the head unit named none: only
    /// a library for every make serves it).
    public func serves(make: String?) -> Bool {
        guard !vehicleMakes.isEmpty else { return true }
        guard let make else { return false }
        return vehicleMakes.contains { $0.caseInsensitiveCompare(make) == .orderedSame }
    }
}

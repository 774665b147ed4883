/// Bounds on what the peer can make us hold, because every byte handed to a
/// session comes from the other end of a cable.
enum Limits {
    /// Largest blob accepted by one `handshake(_:)` or `decrypt(_:)` call.
    static let maxInputPerCall = 1 << 20
    /// Largest total of bytes consumed and produced by one handshake.
    static let maxHandshakeBytes = 256 << 10
    /// Largest plaintext one `decrypt(_:)` call may produce.
    static let maxDecryptedPerCall = 16 << 20
    /// Largest output the session may hold back between calls (alerts, key updates).
    static let maxPendingOutput = 256 << 10
    /// DTLS link MTU: whole records of this size travel inside one SDL frame.
    static let dtlsLinkMTU = 1400
    /// Largest PEM file read at init; certificate chains are a few KiB.
    static let maxPEMFileSize = 1 << 20
}

import SystemPackage
import CarWindowSystemSupport

/// A byte stream to a head unit: TCP here; USB (AOA/iAP) or Bluetooth RFCOMM could follow
/// behind the same four calls.
///
/// Implementations must never block the caller's thread (Swift's cooperative pool has as many
/// threads as cores): blocking system calls belong on threads of their own.
public protocol SDLTransport: AnyObject, Sendable {
    /// Opens the stream; throws when the head unit cannot be reached.
    func connect() async throws(SDLTransportError)
    /// Returns at least one byte and at most `maximumCount`, waiting as long as it takes;
    /// throws ``SDLTransportError/closedByPeer`` at end of stream and ``SDLTransportError/closed``
    /// after ``close()``.
    func read(maximumCount: Int) async throws(SDLTransportError) -> [UInt8]
    /// Sends every byte, in order; writes never interleave. Waits while the peer is slow.
    func write(_ bytes: [UInt8]) async throws(SDLTransportError)
    /// Closes the stream; pending and later reads and writes fail with ``SDLTransportError/closed``.
    func close()
}

/// Why a transport operation failed.
public enum SDLTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host name could not be resolved.
    case unresolvableHost(String, reason: String)
    /// A system call failed.
    case systemCallFailed(operation: String, Errno)
    /// The peer did not answer in time.
    case timedOut(operation: String)
    /// The peer closed the stream.
    case closedByPeer
    /// This side closed the transport.
    case closed

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .unresolvableHost(let host, let reason): "cannot resolve \(host): \(reason); check the head unit's address"
        case .systemCallFailed(let operation, let error): "\(operation) failed: \(error.nameAndText)"
        case .timedOut(let operation): "\(operation) timed out; the head unit does not answer"
        case .closedByPeer: "the head unit closed the connection"
        case .closed: "the transport was closed"
        }
    }
}

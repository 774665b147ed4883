import Glibc
import SystemPackage
import CarWindowSystemSupport

/// Where encoded pictures go: a file, a UDP receiver, a head unit's video service.
///
/// Whoever streams (a `ProjectionSession`) hands every access unit to its sink, in decoding
/// order. A sink never reorders; files and RTP never drop or buffer beyond one access unit, so
/// what the encoder's rate control decided reaches the wire unchanged, and a head unit's sink
/// that must drop under back-pressure drops whole units and asks for an IDR
/// (``needsKeyframe``).
///
/// The sink belongs to whoever streams into it, which closes it when the stream ends: a
/// session closes the sinks its `VideoSinkFactory` makes.
///
/// - Important: Not thread-safe: only its owner calls it, one call at a time.
public protocol VideoSink: AnyObject {
    /// Sends or stores one access unit. After an error that ends the output
    /// (``SinkError/endsOutput``) the sink has closed itself, leaving what it wrote before whole
    /// (a file ends on a whole access unit), and later writes throw ``SinkError/closed(_:)``;
    /// after any other error it takes the next unit as usual.
    func write(_ unit: AccessUnit) throws(SinkError)
    /// Releases the file or socket; later writes throw ``SinkError/closed(_:)``. Calling it twice is harmless.
    func close()
    /// A stream of `size` pictures is about to begin (or begins again after
    /// ``streamDidStop()``); its first access unit is an IDR. Files, RTP and a head-unit link's
    /// sink need nothing here (the default). Throwing refuses the stream: a session reports the
    /// error and does not stream to this sink.
    func streamWillStart(_ size: VideoSize) throws(SinkError)
    /// The stream paused or ended (suspension, a resize, a stop); a later
    /// ``streamWillStart(_:)`` may follow. The default does nothing.
    func streamDidStop()
    /// Whether the next access unit must be an IDR because the sink dropped one (a head-unit
    /// link under back-pressure drops whole units, then needs a picture that decodes alone).
    /// The default is false: files and RTP never drop.
    var needsKeyframe: Bool { get }
    /// Why the sink stopped taking units for good, or could not finish what it wrote when it
    /// closed (an MP4 file whose index could not be written); nil while all is well. The default
    /// is nil.
    var failure: SinkError? { get }
    /// Errors of single outputs that did not make ``write(_:)`` throw because another output of
    /// this sink took the unit (a `TeeSink`'s failing member), since the last call; each is
    /// handed out once. A projection session reports them as error events. The default is none.
    func takeOutputErrors() -> [SinkError]
}

extension VideoSink {
    public var needsKeyframe: Bool { false }
    public var failure: SinkError? { nil }
    public func takeOutputErrors() -> [SinkError] { [] }
    public func streamWillStart(_ size: VideoSize) throws(SinkError) {}
    public func streamDidStop() {}
}

/// Why a sink could not take an access unit, each case saying what failed and what to do.
public enum SinkError: Error, CustomStringConvertible, Equatable {
    /// A file could not be opened (a missing folder is `ENOENT`: sinks never create folders).
    case cannotOpenFile(path: String, Errno)
    /// Another writer holds the file's lock: another process (or another sink of this one) is
    /// writing it, and this sink left it untouched.
    case fileLocked(path: String)
    /// Writing to a file failed (a full disk is `ENOSPC`, `ulimit -f` is `EFBIG`). A file sink
    /// that fails while writing a unit closes the file on the last whole access unit.
    case writeFailed(path: String, Errno)
    /// The last step of a file could not be written (an MP4's index, or cutting a failed
    /// write back): the pictures are on disk but the file is damaged.
    case finishFailed(path: String, Errno)
    /// Every output of a `TeeSink` has failed (each was reported on its own); nothing takes
    /// the stream any more.
    case allOutputsFailed(count: Int)
    /// The host name did not resolve to any IPv4 or IPv6 address.
    case unresolvableHost(host: String, port: Int, reason: String)
    /// A socket call failed; `operation` names it (`socket`, `connect`, `send`).
    case socketFailed(operation: String, destination: String, Errno)
    /// The byte writer given to `RTPStreamSink` threw `underlying` (kept whole: cast it back to
    /// the writer's own error type). Two are equal when their errors are of the same type and
    /// read the same.
    case transportFailed(underlying: any Error)
    /// The sink was closed; the name says which kind.
    case closed(String)
    /// A setting cannot be used (port, payload type, MTU).
    case invalidConfiguration(String)
    /// The access unit cannot be sent (no NAL unit, presentation time not finite).
    case invalidAccessUnit(frameNumber: Int, reason: String)

    /// One sentence: what failed, the error number's name, and what to do.
    public var description: String {
        switch self {
        case .cannotOpenFile(let path, let error):
            "cannot open \(path) for writing: \(error.nameAndText); \(Self.advice(for: error, path: path))"
        case .fileLocked(let path):
            "\(path) is being written by another process (or another output of this one), so it was left untouched; stop that writer or choose another path"
        case .writeFailed(let path, let error):
            "writing to \(path) failed: \(error.nameAndText); \(Self.advice(for: error, path: path))"
        case .finishFailed(let path, let error):
            "finishing \(path) failed: \(error.nameAndText); the pictures are on disk but players may not open it; \(Self.advice(for: error, path: path))"
        case .allOutputsFailed(let count):
            "every output (\(count)) has failed, so nothing takes the stream; see the error of each"
        case .unresolvableHost(let host, let port, let reason):
            "cannot resolve \(host) (port \(port)): \(reason); check the host name or use a numeric address"
        case .socketFailed(let operation, let destination, let error):
            "\(operation) to \(destination) failed: \(error.nameAndText); \(Self.networkAdvice(for: error, destination: destination))"
        case .transportFailed(let underlying):
            "the byte stream writer failed: \(underlying); reconnect and send a new IDR first"
        case .closed(let sink):
            "the \(sink) is closed; create a new sink to send more"
        case .invalidConfiguration(let reason):
            "invalid sink configuration: \(reason)"
        case .invalidAccessUnit(let frame, let reason):
            "access unit of frame \(frame) cannot be sent: \(reason); check the encoder's output"
        }
    }

    /// Whether two errors name the same failure: the same case with equal values.
    public static func == (lhs: SinkError, rhs: SinkError) -> Bool {
        switch (lhs, rhs) {
        case let (.cannotOpenFile(a, b), .cannotOpenFile(c, d)): a == c && b == d
        case let (.fileLocked(a), .fileLocked(b)): a == b
        case let (.writeFailed(a, b), .writeFailed(c, d)): a == c && b == d
        case let (.finishFailed(a, b), .finishFailed(c, d)): a == c && b == d
        case let (.allOutputsFailed(a), .allOutputsFailed(b)): a == b
        case let (.unresolvableHost(a, b, c), .unresolvableHost(d, e, f)): a == d && b == e && c == f
        case let (.socketFailed(a, b, c), .socketFailed(d, e, f)): a == d && b == e && c == f
        case let (.transportFailed(a), .transportFailed(b)):
            // Errors of any type: the same type reading the same stands for the same failure.
            type(of: a) == type(of: b) && String(reflecting: a) == String(reflecting: b)
        case let (.closed(a), .closed(b)): a == b
        case let (.invalidConfiguration(a), .invalidConfiguration(b)): a == b
        case let (.invalidAccessUnit(a, b), .invalidAccessUnit(c, d)): a == c && b == d
        case (.cannotOpenFile, _), (.fileLocked, _), (.writeFailed, _), (.finishFailed, _), (.allOutputsFailed, _),
             (.unresolvableHost, _), (.socketFailed, _), (.transportFailed, _), (.closed, _), (.invalidConfiguration, _),
             (.invalidAccessUnit, _):
            false
        }
    }

    /// Whether the sink that threw this cannot take more units: true for a failed file, socket
    /// setup or byte writer, a closed sink and a bad configuration; false for a unit refused on
    /// its own (``invalidAccessUnit(frameNumber:reason:)``) and for a datagram that a network
    /// hiccup dropped (`ENOBUFS`, `EAGAIN`, an unreachable network), after which the next IDR
    /// gets through.
    public var endsOutput: Bool {
        switch self {
        case .invalidAccessUnit:
            false
        case .socketFailed(let operation, _, let error):
            !(operation == "send" && [ENOBUFS, EAGAIN, EINTR, ENETUNREACH, EHOSTUNREACH, ENETDOWN, ECONNREFUSED].contains(error.rawValue))
        case .cannotOpenFile, .fileLocked, .writeFailed, .finishFailed, .allOutputsFailed, .unresolvableHost,
             .transportFailed, .closed, .invalidConfiguration:
            true
        }
    }

    /// The error for a file that `open` (with its lock) refused.
    package static func opening(path: String, _ error: Errno) -> SinkError {
        error.rawValue == EWOULDBLOCK ? .fileLocked(path: path) : .cannotOpenFile(path: path, error)
    }

    /// What a person can do about a socket's common error numbers: the file advice
    /// (``advice(for:path:)``) would send them looking for folders and permissions.
    private static func networkAdvice(for error: Errno, destination: String) -> String {
        switch error.rawValue {
        case EACCES, EPERM:
            "the system refuses to send there (a broadcast address, or a firewall rule); give one receiver's address"
        case EADDRNOTAVAIL, EAFNOSUPPORT, EINVAL:
            "the address cannot be sent to from this machine; give one receiver's unicast address"
        default:
            advice(for: error, path: destination)
        }
    }

    /// What a person can do about the common error numbers.
    private static func advice(for error: Errno, path: String) -> String {
        switch error.rawValue {
        case ENOENT, ENOTDIR: "create the folder first (sinks never create folders) or choose another path"
        case EACCES, EPERM, EROFS: "choose a place this user may write to"
        case ENOSPC, EDQUOT: "free some disk space or write elsewhere"
        case EFBIG: "the file reached this process's file size limit (ulimit -f) or the file system's largest file; raise the limit or write elsewhere"
        case EISDIR: "name a file, not a folder"
        case ECONNREFUSED: "start the receiver first or check the port"
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN: "check the network connection and the address"
        case EPIPE, ECONNRESET, ENOTCONN: "the receiver went away: reconnect and start again with an IDR"
        case EMSGSIZE: "lower the MTU"
        case EMFILE, ENFILE: "close other files or raise the descriptor limit"
        default: "check \(path) and try again"
        }
    }
}

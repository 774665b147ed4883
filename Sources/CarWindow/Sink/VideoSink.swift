import Glibc

/// Where encoded pictures go: a file, a UDP receiver, a head unit's byte stream.
///
/// The encoder stage hands every access unit to one sink, in decoding order; a sink never
/// reorders, drops or buffers beyond one access unit, so what the encoder's rate control
/// decided reaches the wire unchanged.
///
/// - Important: Not thread-safe: the pipeline stage that owns the encoder owns the sink.
public protocol VideoSink: AnyObject {
    /// Sends or stores one access unit; after an error the sink may still be used for the next one
    /// unless the error is ``SinkError/closed(_:)``.
    func write(_ unit: AccessUnit) throws(SinkError)
    /// Releases the file or socket; later writes throw ``SinkError/closed(_:)``. Calling it twice is harmless.
    func close()
    /// A stream is about to begin at `stream`'s size; its first access unit is an IDR. A
    /// head-unit link starts its video service here; files and RTP need nothing (the default).
    /// Throwing refuses the stream: the session reports the error and does not stream.
    func streamWillStart(_ stream: StreamResolution) throws(SinkError)
    /// The stream paused or ended (suspension, a resize, a stop); a later
    /// ``streamWillStart(_:)`` may follow. The default does nothing.
    func streamDidStop()
    /// Whether the next access unit must be an IDR because the sink dropped one (a head-unit
    /// link under back-pressure drops whole units, then needs a picture that decodes alone).
    /// The default is false: files and RTP never drop.
    var needsKeyframe: Bool { get }
}

extension VideoSink {
    public var needsKeyframe: Bool { false }
    public func streamWillStart(_ stream: StreamResolution) throws(SinkError) {}
    public func streamDidStop() {}
}

/// Why a sink could not take an access unit, each case saying what failed and what to do.
public enum SinkError: Error, CustomStringConvertible, Equatable {
    /// A file could not be opened (a missing folder is `ENOENT`: sinks never create folders).
    case cannotOpenFile(path: String, Errno)
    /// Writing to a file failed (a full disk is `ENOSPC`).
    case writeFailed(path: String, Errno)
    /// The host name did not resolve to any IPv4 or IPv6 address.
    case unresolvableHost(host: String, port: Int, reason: String)
    /// A socket call failed; `operation` names it (`socket`, `connect`, `send`).
    case socketFailed(operation: String, destination: String, Errno)
    /// The byte writer given to ``RTPStreamSink`` threw; its error is kept as text.
    case transportFailed(String)
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
            "cannot open \(path) for writing: \(error); \(Self.advice(for: error, path: path))"
        case .writeFailed(let path, let error):
            "writing to \(path) failed: \(error); \(Self.advice(for: error, path: path))"
        case .unresolvableHost(let host, let port, let reason):
            "cannot resolve \(host) (port \(port)): \(reason); check the host name or use a numeric address"
        case .socketFailed(let operation, let destination, let error):
            "\(operation) to \(destination) failed: \(error); \(Self.advice(for: error, path: destination))"
        case .transportFailed(let reason):
            "the byte stream writer failed: \(reason); reconnect and send a new IDR first"
        case .closed(let sink):
            "the \(sink) is closed; create a new sink to send more"
        case .invalidConfiguration(let reason):
            "invalid sink configuration: \(reason)"
        case .invalidAccessUnit(let frame, let reason):
            "access unit of frame \(frame) cannot be sent: \(reason); check the encoder's output"
        }
    }

    /// What a person can do about the common error numbers.
    private static func advice(for error: Errno, path: String) -> String {
        switch error.rawValue {
        case ENOENT, ENOTDIR: "create the folder first (sinks never create folders) or choose another path"
        case EACCES, EPERM, EROFS: "choose a place this user may write to"
        case ENOSPC, EDQUOT, EFBIG: "free some disk space or write elsewhere"
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

/// Hands every access unit to several sinks: a file and a live RTP receiver, say.
///
/// Each sink gets every unit even when another one fails; the first error is thrown afterwards,
/// so a full disk does not stop the live stream (and the session asks for an IDR).
///
/// - Important: Not thread-safe, like every sink: the session that owns it calls it.
public final class TeeSink: VideoSink {
    /// The sinks, in the order they are written to.
    public let sinks: [any VideoSink]

    /// A sink writing to each of `sinks` in turn.
    public init(_ sinks: [any VideoSink]) {
        self.sinks = sinks
    }

    public func write(_ unit: AccessUnit) throws(SinkError) {
        var firstError: SinkError?
        for sink in sinks {
            do {
                try sink.write(unit)
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
    }

    public func streamWillStart(_ stream: StreamResolution) throws(SinkError) {
        for sink in sinks { try sink.streamWillStart(stream) }
    }

    public func streamDidStop() {
        for sink in sinks { sink.streamDidStop() }
    }

    public func close() {
        for sink in sinks { sink.close() }
    }
}

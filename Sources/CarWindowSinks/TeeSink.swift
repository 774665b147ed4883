import CarWindowVideoCore
/// Hands every access unit to several outputs: the head unit, a recording, a live RTP receiver.
///
/// The outputs fail independently, so a full disk never stops the stream to the car:
/// - An output whose error ends it (`SinkError.endsOutput`: a failed write, a closed file) is
///   closed, reported once (``takeOutputErrors()`` and the `outputFailed` handler) and left
///   out of later writes; the rest go on.
/// - An output that refuses one unit (`SinkError.invalidAccessUnit(frameNumber:reason:)`, a
///   dropped datagram) is reported the same way and gets an IDR next (``needsKeyframe``); one
///   that refuses ``refusalLimit`` units in a row, IDRs included, counts as failed.
/// - ``write(_:)`` throws only when no output took the unit: the refusal when some output still
///   works, `SinkError.allOutputsFailed(count:)` (which ends the stream) when none does.
///
/// - Important: Not thread-safe, like every sink: the session that owns it calls it.
public final class TeeSink: VideoSink {
    /// The outputs, in the order they are written to.
    public let sinks: [any VideoSink]
    /// Every output that failed for good, with its error, in the order they failed.
    public private(set) var failures: [SinkError] = []
    /// Units in a row an output may refuse before it counts as failed: a refusal that never
    /// ends would otherwise make every picture an IDR.
    public static let refusalLimit = 10

    /// Which outputs have not failed.
    private var working: [Bool]
    private var refusalsInARow: [Int]
    private var isClosed = false
    private let outputFailed: (@Sendable (SinkError) -> Void)?
    private var unreported: [SinkError] = []
    /// Outputs that refused a unit and take no picture well until the next IDR.
    private var awaitingKeyframe: [Bool]

    /// A sink writing to each of `sinks` in turn; `outputFailed` is called once for every output
    /// that fails for good (while writing, starting or closing), with its error, on the thread
    /// that writes or closes the tee.
    public init(_ sinks: [any VideoSink], outputFailed: (@Sendable (SinkError) -> Void)? = nil) {
        self.sinks = sinks
        self.working = Array(repeating: true, count: sinks.count)
        self.refusalsInARow = Array(repeating: 0, count: sinks.count)
        self.awaitingKeyframe = Array(repeating: false, count: sinks.count)
        self.outputFailed = outputFailed
    }

    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard !isClosed else { throw .closed("tee sink") }
        var taken = false
        var refusal: SinkError?
        for index in sinks.indices where working[index] {
            do {
                try sinks[index].write(unit)
                taken = true
                refusalsInARow[index] = 0
                if unit.isKeyframe { awaitingKeyframe[index] = false }
            } catch {
                refusalsInARow[index] += 1
                if error.endsOutput || refusalsInARow[index] >= Self.refusalLimit {
                    drop(index, because: error)
                } else {
                    awaitingKeyframe[index] = true
                    if let refusal { unreported.append(refusal) }
                    refusal = error
                }
            }
        }
        if taken {
            if let refusal { unreported.append(refusal) }
            return
        }
        if let refusal { throw refusal }
        throw .allOutputsFailed(count: sinks.count)
    }

    /// Whether any output still works.
    public var hasWorkingOutput: Bool { working.contains(true) }

    public var needsKeyframe: Bool {
        sinks.indices.contains { working[$0] && (awaitingKeyframe[$0] || sinks[$0].needsKeyframe) }
    }

    /// `SinkError.allOutputsFailed(count:)` once every output has failed; nil before.
    public var failure: SinkError? {
        hasWorkingOutput || sinks.isEmpty ? nil : .allOutputsFailed(count: sinks.count)
    }

    public func takeOutputErrors() -> [SinkError] {
        var errors: [SinkError] = []
        for index in sinks.indices where working[index] { errors += sinks[index].takeOutputErrors() }
        guard !unreported.isEmpty else { return errors }
        defer { unreported.removeAll() }
        return unreported + errors
    }

    /// Starts every working output; one that refuses is dropped, and the tee refuses only when
    /// none is left.
    public func streamWillStart(_ size: VideoSize) throws(SinkError) {
        var lastError: SinkError?
        for index in sinks.indices where working[index] {
            do {
                try sinks[index].streamWillStart(size)
            } catch {
                lastError = error
                drop(index, because: error)
            }
        }
        if !hasWorkingOutput, !sinks.isEmpty { throw lastError ?? .allOutputsFailed(count: sinks.count) }
    }

    public func streamDidStop() {
        for index in sinks.indices where working[index] { sinks[index].streamDidStop() }
    }

    /// Closes every output; one that could not finish its file (`VideoSink.failure`) is
    /// reported to `outputFailed`.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        for index in sinks.indices where working[index] {
            sinks[index].close()
            if let failure = sinks[index].failure {
                working[index] = false
                record(failure)
            }
        }
    }

    private func drop(_ index: Int, because error: SinkError) {
        working[index] = false
        // A sink that failed has closed itself; closing again is harmless and covers the rest.
        sinks[index].close()
        let failure = sinks[index].failure ?? error
        record(failure)
        unreported.append(failure)
    }

    private func record(_ failure: SinkError) {
        failures.append(failure)
        outputFailed?(failure)
    }
}

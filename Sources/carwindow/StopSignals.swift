import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Dispatch
import Foundation
import Glibc

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP turned into an orderly stop: the first one asks the
/// command to stop, and it finishes its files (the MP4 gets its index), prints its summary and
/// exits with 128 + the signal's number. A second one exits at once, files unfinished.
///
/// The signals are ignored (SIG_IGN) and read by Dispatch signal sources, so nothing runs in
/// a signal handler and the stop request reaches Swift concurrency as a plain call.
/// `SIGXFSZ` is ignored too: past a file size limit (`ulimit -f`) a write then fails with
/// `EFBIG` and the sink reports it, instead of the process being killed mid-file.
final class StopSignals: Sendable {
    static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    private struct State {
        var received: Int32?
        var handlers: [@Sendable (Int32) -> Void] = []
    }
    private let state = LockedState(State())
    /// Kept so the sources live as long as the process; set once, before anyone else sees it.
    nonisolated(unsafe) private var sources: [any DispatchSourceSignal] = []

    /// Starts listening; call once, early in a command.
    static func install() -> StopSignals {
        signal(SIGXFSZ, SIG_IGN)
        let signals = StopSignals()
        let queue = DispatchQueue(label: "carwindow.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in handled {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [signals] in signals.deliver(number) }
            source.resume()
            sources.append(source)
        }
        signals.sources = sources
        return signals
    }

    /// The first signal received, if any.
    var received: Int32? { state.withLock { $0.received } }

    /// The exit status for the signal received: 128 + its number.
    var exitStatus: Int32? { received.map(ExitStatus.signal) }

    /// Calls `handler` when the first signal comes (at once if it came already).
    func onStop(_ handler: @escaping @Sendable (Int32) -> Void) {
        let already = state.withLock { state -> Int32? in
            if state.received == nil { state.handlers.append(handler) }
            return state.received
        }
        if let already { handler(already) }
    }

    private func deliver(_ number: Int32) {
        let handlers = state.withLock { state -> [@Sendable (Int32) -> Void]? in
            guard state.received == nil else { return nil }
            state.received = number
            defer { state.handlers = [] }
            return state.handlers
        }
        guard let handlers else {
            Console.write("\n\(Self.name(number)) again: exiting at once; files are left unfinished\n", to: STDERR_FILENO)
            _exit(ExitStatus.signal(number))
        }
        Console.warning("\(Self.name(number)): stopping, finishing the files (\(Self.name(number)) again exits at once)")
        for handler in handlers { handler(number) }
    }

    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }
}

import Dispatch

/// Lets the session's frame loop sleep until a deadline or until something changes, whichever
/// comes first, without a polling timer and without a task per wait.
///
/// A signal that arrives while nobody waits is remembered, so a change made between the loop's
/// last look and its next wait is never lost. Wake-ups may be spurious (a timer firing after a
/// signal already woke the loop); the loop simply asks the pacer again.
///
/// - Important: Thread-safe.
final class WakeSignal: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        var pending = false
    }
    private let state = LockedState(State())
    // Dispatch sources are thread-safe; the one timer is re-armed for every wait.
    private nonisolated(unsafe) let timer: any DispatchSourceTimer

    init(label: String) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
        timer.setEventHandler { [weak self] in self?.signal() }
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    deinit {
        timer.cancel()
        state.withLock { $0.waiter?.resume(); $0.waiter = nil }
    }

    /// Wakes the waiter, or the next one to wait.
    func signal() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at `deadline` (seconds on ``SessionClock``), at the next signal, or at once when
    /// a signal is pending. No deadline waits for a signal only.
    func wait(until deadline: Double?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = state.withLock { state in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow {
                continuation.resume()
                return
            }
            if let deadline {
                let nanoseconds = deadline.isFinite ? UInt64(max(deadline, 0) * 1e9) : UInt64.max / 2
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: max(nanoseconds, 1)))
            } else {
                timer.schedule(deadline: .distantFuture)
            }
        }
    }
}

/// The monotonic clock of sessions, in seconds; the same base as `DispatchTime`.
enum SessionClock {
    static var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

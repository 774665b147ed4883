import Dispatch
import CarWindowSystemSupport

/// Lets the session's frame loop sleep until a deadline or until something changes, whichever
/// comes first, without a polling timer and without a task per wait.
///
/// A signal that arrives while nobody waits is remembered, so a change made between the loop's
/// last look and its next wait is never lost. Wake-ups may be spurious (a timer firing after a
/// signal already woke the loop); the loop simply asks the pacer again.
///
/// Deadlines are seconds on the ``SessionClock`` the signal was made for. On the monotonic
/// clock one dispatch timer is re-armed for every wait; on a manual clock the clock itself
/// wakes the waiter when a test advances it to the deadline, and a loop that ``attach()``ed
/// counts as busy for ``ManualSessionClock/settle()`` from each wake-up until its next wait.
///
/// - Important: Thread-safe.
package final class WakeSignal: Sendable {
    private struct State {
        // Unsafe: a checked continuation allocates per wait, and every wait here is resumed
        // exactly once, by signal() or deinit, under the lock that hands it over.
        var waiter: UnsafeContinuation<Void, Never>?
        var pending = false
    }
    private let state = LockedState(State())
    // Dispatch sources are thread-safe; the one timer is re-armed for every wait. Nil on a
    // manual clock.
    private nonisolated(unsafe) let timer: (any DispatchSourceTimer)?
    private let manual: (clock: ManualSessionClock, id: Int)?

    package init(clock: SessionClock, label: String) {
        switch clock.kind {
        case .monotonic:
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
            self.timer = timer
            manual = nil
            timer.setEventHandler { [weak self] in self?.signal() }
            timer.schedule(deadline: .distantFuture)
            timer.activate()
        case .manual(let clock):
            timer = nil
            manual = (clock, clock.addSleeper())
        }
    }

    deinit {
        if let manual { manual.clock.removeSleeper(manual.id) }
        timer?.cancel()
        state.withLock { $0.waiter?.resume(); $0.waiter = nil }
    }

    /// A loop starts that will wait on this signal: a manual clock waits for it to sleep before
    /// it moves on. Call ``detach()`` when the loop ends. Does nothing on the monotonic clock.
    package func attach() {
        if let manual { manual.clock.setAttached(manual.id, true) }
    }

    /// The loop that ``attach()``ed has ended.
    package func detach() {
        if let manual { manual.clock.setAttached(manual.id, false) }
    }

    /// Wakes the waiter, or the next one to wait.
    package func signal() {
        if let manual {
            manual.clock.signal(manual.id)
            return
        }
        // Resumed under the lock, which the woken waiter takes once more: see wait(until:).
        state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return
            }
            state.waiter = nil
            waiter.resume()
        }
    }

    /// Returns at `deadline` (seconds on the signal's clock), at the next signal, or at once
    /// when a signal is pending. No deadline waits for a signal only.
    package func wait(until deadline: Double?) async {
        if let manual {
            await manual.clock.wait(manual.id, until: deadline)
            return
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
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
            guard let timer else { return }
            if let deadline {
                let nanoseconds = deadline.isFinite ? UInt64(max(deadline, 0) * 1e9) : UInt64.max / 2
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: max(nanoseconds, 1)))
            } else {
                timer.schedule(deadline: .distantFuture)
            }
        }
        // The concurrency runtime does not tell ThreadSanitizer that a resume which races ahead
        // of the suspension happens before the task goes on (its fast path skips the
        // annotation), so everything the woken loop writes next would be reported as racing
        // with the resume. Taking the lock the resumer held makes that ordering visible; it is
        // uncontended and allocates nothing.
        state.withLock { _ in }
    }
}

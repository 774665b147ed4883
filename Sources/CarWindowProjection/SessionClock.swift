import Dispatch
import CarWindowSystemSupport
import CarWindowVideoCore

/// The time a ``ProjectionSession`` runs on: what its frame pacing, refinements, keep-alives,
/// camera animations, gesture timing and statistics read, and what its frame loop sleeps on.
///
/// Sessions run on ``monotonic``, the default of ``ProjectionSessionConfiguration/clock``. The
/// package's own tests give sessions a manual clock instead, which moves only when a test
/// advances it, so that frame rates and keep-alive spacing are checked exactly, whatever else
/// runs on the machine.
public struct SessionClock: Sendable {
    enum Kind: Sendable {
        case monotonic
        case manual(ManualSessionClock)
    }

    let kind: Kind

    /// The system's monotonic clock: it never jumps when the wall clock is set, and it is the
    /// clock of `DispatchTime`.
    public static let monotonic = SessionClock(kind: .monotonic)

    /// Time that moves only when `clock` is advanced.
    package static func manual(_ clock: ManualSessionClock) -> SessionClock {
        SessionClock(kind: .manual(clock))
    }

    /// Seconds since the clock's origin (the boot, for ``monotonic``).
    package var now: Double {
        switch kind {
        case .monotonic: Self.monotonicNow
        case .manual(let clock): clock.now
        }
    }

    /// Seconds on the monotonic clock; the same base as `DispatchTime`. What the machine's own
    /// work (render and encode times) is measured in, whatever clock a session runs on.
    package static var monotonicNow: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// Time for tests: it stands still until ``advance(by:settling:)`` moves it, and moving it runs
/// what became due in order, each deadline at its own moment.
///
/// Every ``WakeSignal`` made on it is a sleeper the clock knows. A sleeper that is *attached*
/// (a session's frame loop while it runs, a drive while it drives) is busy from the moment it
/// is woken, by its deadline or by a signal, until it waits again; ``settle()`` waits until no
/// attached sleeper is busy. Advancing settles, moves the time to the earliest deadline, wakes
/// the sleepers due then, settles again, and so on up to the target: a frame loop then draws,
/// encodes and sends every frame that falls due, with the clock reading that frame's moment.
///
/// Times are seconds as `Double`, the unit of ``FramePacer``: the clock stops exactly at the
/// deadlines the pacer computed, so a woken loop always finds its deadline reached.
///
/// - Important: Thread-safe.
package final class ManualSessionClock: Sendable {
    private struct Sleeper {
        var waiter: CheckedContinuation<Void, Never>?
        /// A signal that came while nobody waited; the next wait returns at once.
        var pending = false
        var deadline: Double?
        /// Loops that will wait on this sleeper again (0 or 1 in practice).
        var attached = 0

        var isBusy: Bool { attached > 0 && waiter == nil }
        var isSleeping: Bool { attached > 0 && waiter != nil }
    }

    private struct State {
        var now: Double
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        /// Waiters woken so far, by deadlines and signals alike.
        var wakeCount = 0
        var settleWaiters: [CheckedContinuation<Void, Never>] = []
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        var isSettled: Bool { !sleepers.values.contains { $0.isBusy } }
        var sleepingCount: Int { sleepers.values.count(where: { $0.isSleeping }) }

        /// The waiters of ``settle()`` and ``waitForSleepers(_:)`` that may go on now.
        mutating func takeReleased() -> [CheckedContinuation<Void, Never>] {
            var released: [CheckedContinuation<Void, Never>] = []
            if isSettled {
                released = settleWaiters
                settleWaiters = []
            }
            let sleeping = sleepingCount
            released += sleeperWaiters.filter { $0.count <= sleeping }.map(\.continuation)
            sleeperWaiters.removeAll { $0.count <= sleeping }
            return released
        }
    }

    // Every continuation is resumed under this lock, and every woken task takes it once more
    // before it goes on: the concurrency runtime does not tell ThreadSanitizer that a resume
    // which races ahead of the suspension happens before the task continues, and the lock makes
    // that ordering visible. Resuming only enqueues the task, so nothing runs under the lock.
    private let state: LockedState<State>

    /// A clock reading `now` seconds.
    package init(now: Double = 0) {
        state = LockedState(State(now: now))
    }

    /// Seconds since the clock's origin.
    package var now: Double { state.withLock { $0.now } }

    /// How many waits have ended so far, when every attached sleeper sleeps; nil while one is
    /// busy. Equal readings mean nothing on this clock woke in between.
    package var settledWakeCount: Int? {
        state.withLock { $0.isSettled ? $0.wakeCount : nil }
    }

    /// Returns once every attached sleeper sleeps: each frame loop on this clock has done what
    /// was due and waits for a deadline or a signal.
    package func settle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let settled = state.withLock { state in
                if state.isSettled { return true }
                state.settleWaiters.append(continuation)
                return false
            }
            if settled { continuation.resume() }
        }
        state.withLock { _ in }  // See `state`.
    }

    /// Returns once at least `count` attached sleepers sleep (a drive started in a task has
    /// reached its first wait, say).
    package func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enough = state.withLock { state in
                if state.sleepingCount >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if enough { continuation.resume() }
        }
        state.withLock { _ in }  // See `state`.
    }

    /// Moves the clock forward by `duration`: see ``advance(to:settling:)``.
    package func advance(by duration: Duration, settling: (@Sendable () async -> Void)? = nil) async {
        await advance(to: now + duration.inSeconds, settling: settling)
    }

    /// Moves the clock to `target` seconds one deadline at a time: it settles, moves to the
    /// earliest deadline not after `target`, wakes the sleepers due then, and repeats; at last
    /// it reads `target`. `settling` replaces ``settle()`` where a test must also wait for work
    /// the clock cannot see (tiles loading on their own threads). A target in the past changes
    /// nothing.
    package func advance(to target: Double, settling: (@Sendable () async -> Void)? = nil) async {
        while true {
            if let settling { await settling() } else { await settle() }
            let wokeAny: Bool = state.withLock { state in
                let next = state.sleepers.values.compactMap { $0.waiter == nil ? nil : $0.deadline }.min()
                guard let next, next <= target else { return false }
                state.now = max(state.now, next)
                var woken: [CheckedContinuation<Void, Never>] = []
                for (id, sleeper) in state.sleepers {
                    guard let waiter = sleeper.waiter, let deadline = sleeper.deadline, deadline <= state.now else { continue }
                    state.sleepers[id]?.waiter = nil
                    state.sleepers[id]?.deadline = nil
                    woken.append(waiter)
                }
                state.wakeCount += woken.count
                for waiter in woken { waiter.resume() }
                return !woken.isEmpty
            }
            if !wokeAny { break }
        }
        state.withLock { $0.now = max($0.now, target) }
    }

    // MARK: Sleepers (for WakeSignal)

    func addSleeper() -> Int {
        state.withLock { state in
            state.nextID += 1
            state.sleepers[state.nextID] = Sleeper()
            return state.nextID
        }
    }

    func removeSleeper(_ id: Int) {
        state.withLock { state in
            state.sleepers.removeValue(forKey: id)?.waiter?.resume()
            for continuation in state.takeReleased() { continuation.resume() }
        }
    }

    func setAttached(_ id: Int, _ attached: Bool) {
        state.withLock { state in
            state.sleepers[id]?.attached += attached ? 1 : -1
            for continuation in state.takeReleased() { continuation.resume() }
        }
    }

    func signal(_ id: Int) {
        state.withLock { state in
            guard let sleeper = state.sleepers[id] else { return }
            guard let waiter = sleeper.waiter else {
                state.sleepers[id]?.pending = true
                return
            }
            state.sleepers[id]?.waiter = nil
            state.sleepers[id]?.deadline = nil
            state.wakeCount += 1
            waiter.resume()
        }
    }

    func wait(_ id: Int, until deadline: Double?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            state.withLock { state in
                guard let sleeper = state.sleepers[id] else { continuation.resume(); return }
                if sleeper.pending || deadline.map({ $0 <= state.now }) == true {
                    state.sleepers[id]?.pending = false
                    continuation.resume()
                    return
                }
                state.sleepers[id]?.waiter = continuation
                state.sleepers[id]?.deadline = deadline.flatMap { $0.isFinite ? $0 : nil }
                for waiter in state.takeReleased() { waiter.resume() }
            }
        }
        state.withLock { _ in }  // See `state`.
    }
}

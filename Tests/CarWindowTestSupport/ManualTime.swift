import CarWindowSystemSupport
import CarWindowMap
import CarWindowProjection

/// Time for session tests: sessions on ``clock`` stand still until the test advances it.
/// Advancing stops at every deadline on the way and waits there until the sessions have drawn,
/// encoded and sent what fell due and the tiles those frames asked for have arrived, so a
/// session does the same in manual time on every run, however loaded the machine is. Only the
/// time is simulated: the drawing, the encoding and the tile loads really happen.
final class ManualTime: Sendable {
    let manual: ManualSessionClock
    var clock: SessionClock { .manual(manual) }
    private let sessions = LockedState<[ProjectionSession]>([])

    init(startingAt seconds: Double = 100) {
        manual = ManualSessionClock(now: seconds)
    }

    /// Seconds on the clock.
    var now: Double { manual.now }

    /// Counts `session`'s tile loads as work in progress when settling.
    func watch(_ session: ProjectionSession) {
        sessions.withLock { $0.append(session) }
    }

    private func tileLoadsInFlight() async -> Int {
        var total = 0
        for session in sessions.withLock({ $0 }) {
            if let renderer = await session.renderer { total += await renderer.tileLoadsInFlight }
        }
        return total
    }

    /// Returns once every loop on the clock waits for a deadline or a change and no tile load
    /// is under way that would wake one. Nothing on the clock woke between the two readings of
    /// the wake count, so the tile count between them is the count of a quiet moment.
    func settle() async {
        let giveUp = ContinuousClock.now + hangGuard
        while true {
            await manual.settle()
            guard let wakes = manual.settledWakeCount else { continue }
            if await tileLoadsInFlight() == 0, manual.settledWakeCount == wakes { return }
            if ContinuousClock.now > giveUp {
                // The test's own expectations fail on what did not arrive; this says why.
                print("ManualTime: the sessions' tile loads did not finish within the hang guard")
                return
            }
            // Tiles load on their own threads: real work, waited for.
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Moves the clock on by `seconds`, running everything that falls due on the way.
    func advance(by seconds: Double) async {
        await manual.advance(by: .seconds(seconds), settling: { await self.settle() })
    }
}

import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// The pacer driven by a simulated clock: the same sequence every run.
@Suite struct FramePacerTests {
    /// Runs the pacer from `start` to `end`, calling `change` at each time it returns true for,
    /// and returns every non-wait action with its time.
    static func simulate(_ pacer: inout FramePacer, from start: Double, to end: Double,
                         changes: (Double) -> Bool) -> [(Double, FramePacer.Action)] {
        var time = start
        var actions: [(Double, FramePacer.Action)] = []
        let step = 0.001
        while time < end {
            if changes(time) { pacer.markChanged() }
            switch pacer.nextAction(at: time) {
            case .wait(let until):
                time = min(max(until, time + step), time + 0.01)
            case let action:
                actions.append((time, action))
                time += step
            }
        }
        return actions
    }

    @Test func movingMapRendersEvenlyAtTheNegotiatedRate() {
        var pacer = FramePacer(configuration: .init(framesPerSecond: 30))
        // The engine moves the camera every 5 ms for two seconds.
        let actions = Self.simulate(&pacer, from: 0, to: 2, changes: { _ in true })
        let renders = actions.filter { $0.1 == .render }.map(\.0)
        #expect(renders.count >= 59 && renders.count <= 61, "\(renders.count) frames in 2 s at 30 fps")
        let gaps = zip(renders.dropFirst(), renders).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 1.0 / 30) < 0.002 }, "uneven gaps \(gaps)")
    }

    @Test func headUnitRateIsNeverExceededAndNonsenseFallsBackToFifteen() {
        // A head unit that asks for 5 fps gets 5: its limit wins over the 15 fps default.
        #expect(FramePacer.Configuration(framesPerSecond: 5).framesPerSecond == 5)
        #expect(FramePacer.Configuration(framesPerSecond: 0.2).framesPerSecond == 1)
        #expect(FramePacer.Configuration(framesPerSecond: .nan).framesPerSecond == 15)
        #expect(FramePacer.Configuration(framesPerSecond: -3).framesPerSecond == 15)
    }

    @Test func staticMapOnlySendsKeepAlivesUnderOneSecondApart() {
        var pacer = FramePacer()
        let actions = Self.simulate(&pacer, from: 0, to: 10, changes: { _ in false })
        // The first frame, its refinements, then keep-alives only.
        #expect(actions.filter { $0.1 == .render }.count == 1)
        #expect(actions.filter { $0.1 == .refine }.count == 3)
        let sends = actions.map(\.0)
        let gaps = zip(sends.dropFirst(), sends).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 < 1 }, "a gap reached the head unit's timeout: \(gaps.max() ?? 0)")
        let keepAlives = actions.filter { $0.1 == .keepAlive }.count
        #expect(keepAlives >= 18 && keepAlives <= 20, "\(keepAlives) keep-alives in 10 s at 0.5 s")
    }

    @Test func refinementFramesFollowAStop() {
        var pacer = FramePacer(configuration: .init(framesPerSecond: 15, refinementFrames: 3))
        // Moving for one second, then still.
        let actions = Self.simulate(&pacer, from: 0, to: 3, changes: { $0 < 1 })
        let lastRender = actions.lastIndex { $0.1 == .render } ?? 0
        let after = actions[(lastRender + 1)...].map(\.1)
        #expect(Array(after.prefix(3)) == [.refine, .refine, .refine])
        #expect(after.dropFirst(3).allSatisfy { $0 == .keepAlive })
    }

    /// A change just after a refinement or keep-alive waits for the next slot after that
    /// picture: no two pictures of any kind are closer than the negotiated interval (a drive had
    /// 7 of 1,568 pictures 18-50 ms after the previous one at 15 fps).
    @Test func noTwoPicturesAreCloserThanTheInterval() {
        var pacer = FramePacer(configuration: .init(framesPerSecond: 15, refinementFrames: 3))
        #expect(pacer.nextAction(at: 0) == .render)
        #expect(pacer.nextAction(at: 0.07) == .refine)
        pacer.markChanged()
        #expect(pacer.nextAction(at: 0.075) == .wait(until: 0.07 + 1.0 / 15))
        // Moving in bursts with stops between them: refinements and keep-alives interleave.
        let actions = Self.simulate(&pacer, from: 0.2, to: 10, changes: { time in
            let phase = time.truncatingRemainder(dividingBy: 0.9)
            return phase < 0.25 || (phase > 0.41 && phase < 0.43)
        })
        let times = actions.map(\.0)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(actions.contains { $0.1 == .refine } && actions.contains { $0.1 == .render })
        #expect(gaps.allSatisfy { $0 >= 1.0 / 15 - 1e-9 }, "the shortest gap is \(gaps.min() ?? 0) s")
    }

    @Test func aChangeWhileIdleDrawsAtOnce() {
        var pacer = FramePacer()
        _ = Self.simulate(&pacer, from: 0, to: 5, changes: { _ in false })
        pacer.markChanged()
        #expect(pacer.nextAction(at: 5.0001) == .render)
    }

    @Test func restartDrawsAgain() {
        var pacer = FramePacer()
        #expect(pacer.nextAction(at: 0) == .render)
        pacer.restart()
        #expect(pacer.nextAction(at: 0.001) == .render)
    }
}

import Testing
@testable import CarWindowH264

/// The governor against an encoder that makes each picture exactly the size it was given, and
/// against pictures it did not choose (an IDR, a still period).
@Suite struct WindowRateGovernorTests {
    static let target = 600_000
    static let fps = 15.0
    static var average: Double { Double(target) / fps }

    /// Sums of every run of `fps` consecutive pictures: the one-second windows a head unit sees.
    func slidingWindows(_ sizes: [Int]) -> [Int] {
        let count = Int(Self.fps)
        guard sizes.count >= count else { return [] }
        return (0...(sizes.count - count)).map { sizes[$0..<($0 + count)].reduce(0, +) }
    }

    @Test func steadyPicturesKeepAverageBudgets() {
        var governor = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        var sizes: [Int] = []
        for index in 0..<60 {
            let time = Double(index) / Self.fps
            let budget = governor.budget(at: time)
            #expect(abs(Double(budget) - Self.average) <= 1, "picture \(index) got \(budget)")
            governor.record(bits: budget, at: time)
            sizes.append(budget)
        }
        #expect(slidingWindows(sizes).allSatisfy { abs($0 - Self.target) <= Int(Self.fps) })
    }

    /// An IDR of eight average pictures is paid back within its own second: every window that
    /// holds it stays at the target, and no later window runs over.
    @Test func anIDRIsPaidBackInsideItsWindow() {
        var governor = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        let idr = Int(8 * Self.average)
        var sizes = [idr]
        _ = governor.budget(at: 0)
        governor.record(bits: idr, at: 0)
        for index in 1..<60 {
            let time = Double(index) / Self.fps
            let budget = governor.budget(at: time)
            governor.record(bits: budget, at: time)
            sizes.append(budget)
        }
        #expect(sizes[1] == Int(WindowRateGovernor.minimumShare * Self.average))
        let windows = slidingWindows(sizes)
        #expect(windows.allSatisfy { $0 <= Self.target + 1 }, "\(windows)")
        // And the stream does not starve after it: the later windows are back at the target.
        #expect(windows.suffix(30).allSatisfy { $0 >= Self.target - Int(Self.average) }, "\(windows)")
    }

    /// A still period saves nothing up: the first picture after it gets an average budget, not
    /// the unspent second.
    @Test func aStillPeriodSavesNothingUp() {
        var governor = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        for index in 0..<15 {
            let time = Double(index) / Self.fps
            governor.record(bits: governor.budget(at: time), at: time)
        }
        let afterStill = governor.budget(at: 6)
        #expect(abs(Double(afterStill) - Self.average) <= 1, "\(afterStill)")
    }

    /// Under budget, a picture gets at most twice the average; over it, at least 0.3 of it.
    @Test func budgetsStayWithinTheirShares() {
        var governor = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        for index in 0..<14 { governor.record(bits: 1, at: Double(index) / Self.fps) }
        #expect(governor.budget(at: 14 / Self.fps) == Int(WindowRateGovernor.maximumShare * Self.average))
        governor.reset()
        governor.record(bits: Self.target * 3, at: 0)
        #expect(governor.budget(at: 1 / Self.fps) == Int(WindowRateGovernor.minimumShare * Self.average))
        // A second later the big picture no longer counts.
        #expect(abs(Double(governor.budget(at: 1.0)) - Self.average) <= 1)
    }

    /// A partial correction (for sliced encoders) hands out only that share of the room above
    /// an average picture, but cuts as deep as the whole correction does.
    @Test func aPartialCorrectionRaisesSlowlyAndCutsWhole() {
        var whole = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        var partial = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps, correction: 0.35)
        for index in 0..<14 {
            whole.record(bits: Int(Self.average / 2), at: Double(index) / Self.fps)
            partial.record(bits: Int(Self.average / 2), at: Double(index) / Self.fps)
        }
        let room = Double(whole.budget(at: 14 / Self.fps)) - Self.average
        let raised = Double(partial.budget(at: 14 / Self.fps)) - Self.average
        #expect(room > Self.average / 2, "the whole correction gives the unspent bits: \(room)")
        #expect(abs(raised - 0.35 * room) <= 1, "\(raised) of \(room) above average")

        whole.reset()
        partial.reset()
        whole.record(bits: Self.target, at: 0)
        partial.record(bits: Self.target, at: 0)
        #expect(partial.budget(at: 1 / Self.fps) == whole.budget(at: 1 / Self.fps))
        #expect(partial.budget(at: 1 / Self.fps) == Int(WindowRateGovernor.minimumShare * Self.average))
    }

    /// A time that goes back (a new stream on the same encoder) starts the window over.
    @Test func timeGoingBackStartsOver() {
        var governor = WindowRateGovernor(target: Self.target, framesPerSecond: Self.fps)
        governor.record(bits: Self.target * 3, at: 10)
        #expect(abs(Double(governor.budget(at: 2)) - Self.average) <= 1)
    }
}

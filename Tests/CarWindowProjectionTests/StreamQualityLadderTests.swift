import Testing
@testable import CarWindowProjection

/// The ladder fed pictures on a simulated clock: the same answers every run.
@Suite struct StreamQualityLadderTests {
    /// Feeds pictures at the ladder's own rate from `start` for `seconds`, each of `bits` and
    /// QP `quantizer`, following the rate as it changes; returns every change with its time.
    static func feed(_ ladder: inout StreamQualityLadder, from start: Double, seconds: Double, bits: Int = 40_000,
                     quantizer: Int?) -> [(time: Double, quality: StreamQuality)] {
        var time = start
        var changes: [(Double, StreamQuality)] = []
        while time < start + seconds {
            if let changed = ladder.record(bits: bits, quantizer: quantizer, isKeyframe: false, at: time) {
                changes.append((time, changed))
            }
            time += 1 / ladder.quality.framesPerSecond
        }
        return changes
    }

    @Test func levelsLowerTheRateToFiveThenTheDetail() {
        let fifteen = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        #expect(fifteen.levels == [StreamQuality(framesPerSecond: 15), StreamQuality(framesPerSecond: 10),
                                   StreamQuality(framesPerSecond: 7.5), StreamQuality(framesPerSecond: 5),
                                   StreamQuality(framesPerSecond: 5, resolutionScale: 0.75),
                                   StreamQuality(framesPerSecond: 5, resolutionScale: 0.5)])
        // A head unit that asks for fewer than five pictures a second keeps its rate.
        let three = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 3, bitrate: 600_000)
        #expect(three.levels.map(\.framesPerSecond) == [3, 3, 3])
        #expect(three.levels.map(\.resolutionScale) == [1, 0.75, 0.5])
    }

    @Test func aStreamStartsWhereItsBitsPerPixelAllow() {
        #expect(StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000).quality
                == StreamQuality(framesPerSecond: 15))
        // 1080p at 600 kbit/s: 0.019 bits per pixel at 15 fps, 0.058 at 5, 0.10 at 5 fps and 75%.
        #expect(StreamQualityLadder(width: 1920, height: 1080, framesPerSecond: 15, bitrate: 600_000).quality
                == StreamQuality(framesPerSecond: 5, resolutionScale: 0.75))
        // 720p at 600 kbit/s: 0.043 at 15 fps, 0.065 at 10.
        #expect(StreamQualityLadder(width: 1280, height: 720, framesPerSecond: 15, bitrate: 600_000).quality
                == StreamQuality(framesPerSecond: 10))
        // Too few bits for any level: the last one.
        #expect(StreamQualityLadder(width: 1920, height: 1080, framesPerSecond: 15, bitrate: 10_000).quality
                == StreamQuality(framesPerSecond: 5, resolutionScale: 0.5))
    }

    @Test func coarseSecondsStepDownOnceSettled() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        let changes = Self.feed(&ladder, from: 100, seconds: 4.5, quantizer: 48)
        // Not before two seconds on the level, then one step per two settled seconds.
        #expect(changes.map(\.quality) == [StreamQuality(framesPerSecond: 10), StreamQuality(framesPerSecond: 7.5)])
        #expect(changes.first.map { $0.time >= 102 && $0.time < 102.1 } ?? false, "changes \(changes)")
        #expect(changes[1].time - changes[0].time >= StreamQualityLadder.settleSeconds)
    }

    @Test func aFineStreamStaysAndAKeyframeCountsForNothing() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        #expect(Self.feed(&ladder, from: 0, seconds: 10, quantizer: 40).isEmpty)
        for step in 0..<30 {
            #expect(ladder.record(bits: 900_000, quantizer: 51, isKeyframe: true, at: 10 + Double(step) / 15) == nil)
        }
        #expect(ladder.quality == StreamQuality(framesPerSecond: 15))
    }

    @Test func theLadderGoesDownToTheDetailAndStaysAtTheBottom() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        let changes = Self.feed(&ladder, from: 0, seconds: 20, quantizer: 51)
        #expect(changes.map(\.quality) == Array(ladder.levels.dropFirst()))
        #expect(ladder.quality == StreamQuality(framesPerSecond: 5, resolutionScale: 0.5))
    }

    @Test func itStepsUpOnlyWhenTheStepWouldStayFine() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        _ = Self.feed(&ladder, from: 0, seconds: 2.1, quantizer: 50)
        #expect(ladder.quality == StreamQuality(framesPerSecond: 10))
        // 10 -> 15 fps costs 3.5 QP: from 38 that is 41.5, over the line of 40.
        #expect(Self.feed(&ladder, from: 3, seconds: 10, quantizer: 38).isEmpty)
        // From 30 it is 33.5: up, after three seconds on the level.
        let changes = Self.feed(&ladder, from: 13, seconds: 5, quantizer: 30)
        #expect(changes.map(\.quality) == [StreamQuality(framesPerSecond: 15)])
    }

    @Test func moreDetailWaitsUntilTheLargestPictureWouldFit() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        let down = Self.feed(&ladder, from: 0, seconds: 9, quantizer: 51)
        #expect(down.last?.quality == StreamQuality(framesPerSecond: 5, resolutionScale: 0.75), "\(down)")
        // A fine QP, but pictures of 200 kbit: at full detail 356 kbit, over half the second.
        #expect(Self.feed(&ladder, from: 10, seconds: 10, bits: 200_000, quantizer: 30).isEmpty)
        // Pictures of 120 kbit (213 at full detail) let it go up.
        let up = Self.feed(&ladder, from: 20, seconds: 5, bits: 120_000, quantizer: 30)
        #expect(up.map(\.quality) == [StreamQuality(framesPerSecond: 5)])
    }

    @Test func aStreamNeverGoesAboveTheLevelItsBitsPerPixelStartedItOn() {
        // 1080p at 600 kbit/s starts at 5 fps and 75% detail, and stays there however fine.
        var ladder = StreamQualityLadder(width: 1920, height: 1080, framesPerSecond: 15, bitrate: 600_000)
        #expect(Self.feed(&ladder, from: 0, seconds: 20, bits: 20_000, quantizer: 20).isEmpty)
        #expect(ladder.quality == StreamQuality(framesPerSecond: 5, resolutionScale: 0.75))
    }

    @Test func withoutAQuantizerOvershootStepsDownAndAStepUpIsTriedLater() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        // 15 pictures of 50 kbit: 750 kbit a second, 1.25x the target.
        let down = Self.feed(&ladder, from: 0, seconds: 2.1, bits: 50_000, quantizer: nil)
        #expect(down.map(\.quality) == [StreamQuality(framesPerSecond: 10)])
        // At the target nothing moves until the retry.
        let after = Self.feed(&ladder, from: 2.1, seconds: 10.5, bits: 60_000, quantizer: nil)
        #expect(after.map(\.quality) == [StreamQuality(framesPerSecond: 15)])
        #expect(after[0].time - down[0].time >= StreamQualityLadder.blindRetry)
    }

    @Test func timeGoingBackStartsTheRecordOver() {
        var ladder = StreamQualityLadder(width: 800, height: 480, framesPerSecond: 15, bitrate: 600_000)
        #expect(Self.feed(&ladder, from: 50, seconds: 0.9, quantizer: 51).isEmpty)
        // A clock that went back: the pictures stamped after it do not count. With them, the
        // two seconds up to 12 s would average QP 45.5 and step down.
        #expect(Self.feed(&ladder, from: 10, seconds: 2.2, quantizer: 43).isEmpty)
        #expect(ladder.quality == StreamQuality(framesPerSecond: 15))
    }

    @Test func theGateHoldsAPictureUntilTheWindowHasRoomForIt() {
        var gate = BitrateGate()
        // Nothing sent yet, or no drawn picture to estimate from: draw.
        #expect(gate.holdUntil(at: 0, target: 100_000, framesPerSecond: 5) == nil)
        gate.record(bits: 80_000, at: 0, drawn: true, isKeyframe: true)
        #expect(gate.holdUntil(at: 0.2, target: 100_000, framesPerSecond: 5) == nil, "an IDR says nothing of the pictures after it")
        gate.record(bits: 10_000, at: 0.2, drawn: true, isKeyframe: false)
        // 90 kbit in the window and 10 expected: 100 fits 115.
        #expect(gate.holdUntil(at: 0.4, target: 100_000, framesPerSecond: 5) == nil)
        gate.record(bits: 20_000, at: 0.4, drawn: true, isKeyframe: false)
        // 110 kbit in the window and 13 expected: the next waits until the IDR has left it, at 1 s.
        let until = gate.holdUntil(at: 0.6, target: 100_000, framesPerSecond: 5)
        #expect(until.map { abs($0 - 1) < 0.001 } ?? false, "held until \(String(describing: until))")
        #expect(gate.holdUntil(at: 1.01, target: 100_000, framesPerSecond: 5) == nil)
    }

    @Test func aPictureLargerThanTheWindowWaitsOnlyForAnEmptyOne() {
        var gate = BitrateGate()
        gate.record(bits: 300_000, at: 0, drawn: true, isKeyframe: false)
        gate.record(bits: 300_000, at: 0.5, drawn: true, isKeyframe: false)
        let until = gate.holdUntil(at: 0.6, target: 100_000, framesPerSecond: 5)
        #expect(until.map { abs($0 - 1.5) < 0.001 } ?? false, "held until \(String(describing: until))")
        #expect(gate.holdUntil(at: 1.51, target: 100_000, framesPerSecond: 5) == nil)
        // A clock that went back starts the record over.
        gate.record(bits: 300_000, at: 0.1, drawn: false, isKeyframe: false)
        #expect(gate.holdUntil(at: 0.2, target: 1_000_000, framesPerSecond: 5) == nil)
    }
}

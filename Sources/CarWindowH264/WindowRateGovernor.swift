/// Steers an encoder so that every one-second window of its stream stays near the target
/// bitrate: a head unit sizes its buffer for the bitrate it gave us, per second, not on average.
///
/// Encoders' own rate control works to the average: an IDR costs several seconds' worth of
/// pictures and is paid back over the next ones, so the window holding it runs over the target
/// and the next one under it. The governor gives each picture the bits that bring the one-second
/// window ending with it to the target: the pictures of the last second count as they were, and
/// the slots of that second without a picture (the stream's start, a still map) count as average
/// pictures, so a still period saves nothing up to spend in a burst. Each budget is kept within
/// [``minimumShare``, ``maximumShare``] of an average picture, so nothing is starved to nothing
/// and no single picture takes a burst.
///
/// A plain value: the encoder asks it for each picture's budget, then tells it the size.
package struct WindowRateGovernor: Sendable {
    /// Bits per second the windows aim at.
    package var target: Int
    /// Pictures per second the stream runs at.
    package var framesPerSecond: Double
    /// The share of a window's unspent bits one picture's budget takes above an average picture,
    /// in (0, 1]: 1 gives the next picture all of it, which suits an encoder that meets each
    /// picture's budget; an encoder that follows a new budget only over a few pictures needs
    /// less, or it overshoots when it catches up. Cuts below an average picture are always whole:
    /// a window over the target is what a head unit cannot absorb.
    package let correction: Double
    /// A budget is at least this share of an average picture.
    package static let minimumShare = 0.3
    /// A budget is at most this share of an average picture.
    package static let maximumShare = 2.0
    /// Sizes and presentation times of the pictures in the last second, oldest first; a ring of
    /// fixed capacity so that recording allocates nothing.
    private var bits: [Int]
    private var times: [Double]
    private var start = 0
    private var count = 0

    /// A governor for `target` bits per second at `framesPerSecond` that hands out `correction`
    /// of a window's unspent bits per picture.
    package init(target: Int, framesPerSecond: Double, correction: Double = 1) {
        self.target = target
        self.framesPerSecond = framesPerSecond
        self.correction = min(max(correction, 0.05), 1)
        // The frame rate is at most 240 (EncoderSettings.validate): a second holds at most 241 pictures.
        bits = [Int](repeating: 0, count: 256)
        times = [Double](repeating: 0, count: 256)
    }

    /// Bits an average picture gets at the target.
    package var averagePicture: Double { Double(target) / max(framesPerSecond, 0.001) }

    /// The bits the picture at `time` (seconds) may take. Pictures recorded more than a second
    /// before it no longer count.
    package mutating func budget(at time: Double) -> Int {
        dropPictures(before: time - 1 + 0.5 / max(framesPerSecond, 0.001))
        var spent = 0.0
        for index in 0..<count { spent += Double(bits[(start + index) % bits.count]) }
        let slots = max(framesPerSecond - 1, 0)
        let empty = max(slots - Double(count), 0)
        let average = averagePicture
        let left = Double(target) - spent - empty * average
        let bounded = min(max(left, Self.minimumShare * average), Self.maximumShare * average)
        return Int(bounded < average ? bounded : average + correction * (bounded - average))
    }

    /// Records the size of the picture at `time`.
    package mutating func record(bits size: Int, at time: Double) {
        if count == bits.count {
            start = (start + 1) % bits.count
            count -= 1
        }
        let slot = (start + count) % bits.count
        bits[slot] = size
        times[slot] = time
        count += 1
    }

    /// Forgets every picture (a new stream, an IDR after a break).
    package mutating func reset() {
        start = 0
        count = 0
    }

    private mutating func dropPictures(before cutoff: Double) {
        // Presentation times only grow; one that went back starts the window over.
        while count > 0, times[start] <= cutoff {
            start = (start + 1) % bits.count
            count -= 1
        }
        if count > 0, times[(start + count - 1) % bits.count] > cutoff + 1 { reset() }
    }
}

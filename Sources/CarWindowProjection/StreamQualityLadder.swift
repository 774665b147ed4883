import Foundation

/// What a stream carries while its bitrate cannot carry the head unit's size and frame rate:
/// fewer pictures a second first, then less detail in each (``resolutionScale``). The stream's
/// size never changes, so the head unit sees the same stream, only blurrier or less fluid.
public struct StreamQuality: Sendable, Equatable, CustomStringConvertible {
    /// Pictures a second while the map moves; at most the stream's negotiated rate.
    public var framesPerSecond: Double
    /// The share of the stream's width and height whose detail each picture keeps, in
    /// (0, 1]: at 0.5 a picture is drawn at full size, reduced to half its width and height
    /// and enlarged again before encoding, so it costs the bits of a picture a quarter the size.
    public var resolutionScale: Double

    /// A quality as given.
    public init(framesPerSecond: Double, resolutionScale: Double = 1) {
        self.framesPerSecond = framesPerSecond
        self.resolutionScale = resolutionScale
    }

    public var description: String {
        let rate = framesPerSecond.rounded() == framesPerSecond ? "\(Int(framesPerSecond))" : String(format: "%.1f", framesPerSecond)
        return resolutionScale < 1 ? "\(rate) fps, detail \(Int((resolutionScale * 100).rounded()))%" : "\(rate) fps, full detail"
    }
}

/// Decides, picture by picture, the ``StreamQuality`` a stream's bitrate can carry.
///
/// The signal is the encoder's quantiser (H.264 QP, 0-51): the rate control raises it until each
/// picture fits its share of the bitrate, and a map above ``degradeQuantizer`` is a smear of
/// blocks. There the ladder steps down: the next lower frame rate gives each picture more bits
/// (halving the rate doubles a picture's budget, worth about 6 QP), and below the lowest rate
/// the next lower resolution. It steps back up, never above the level the stream's bits per
/// pixel started it on, when the quantiser, raised by what the step up costs (6 QP per doubling
/// of pixels a second), would stay at or below ``recoverQuantizer``. Where the encoder does not
/// report its quantiser, whole seconds over the target step down and a step up is tried after
/// ``blindRetry`` seconds.
///
/// Only drawn pictures count: refinements and keep-alives re-encode a still picture. A plain
/// value: the session records each sent picture and applies what it answers.
package struct StreamQualityLadder: Sendable {
    /// Mean QP over ``judgedSeconds`` of pictures at or above which the stream steps down.
    package static let degradeQuantizer = 45.0
    /// The mean QP a step up may lead to at most: OpenH264's own ceiling at low bitrates, where
    /// lines and labels still read.
    package static let recoverQuantizer = 40.0
    /// Lowest frame rate the ladder goes to: below it a moving map jumps rather than moves.
    package static let lowestFramesPerSecond = 5.0
    /// Resolution scales below full detail, tried in order at the lowest frame rate.
    package static let resolutionScales = [0.75, 0.5]
    /// A stream starts on the first level where a pixel gets at least this many bits a second,
    /// so its first seconds need not climb down: 1080p at 15 fps and 600 kbit/s (0.019) reached
    /// QP 51 within half a second and stepped down to 5 fps and 50% in three; 800x480 at 15 fps
    /// and 600 kbit/s (0.10) moves at QP 33-40. One drive each: started from 0.035 (7.5 fps),
    /// 1080p's first three windows ran at 1.06-1.26x the target and the ladder took three
    /// seconds to reach 5 fps and 50%; from 0.06 (5 fps, 75%) at 0.82-1.47x, and one step.
    package static let startingBitsPerPixel = 0.06
    /// Seconds of pictures whose mean QP decides a step down: a camera animation or the tiles
    /// of a new view take QP 51 for half a second (800x480 at 600 kbit/s, which moves at QP
    /// 33-40), and a stream that stepped down for that, with a player joining an RTP stream at
    /// the same time, kept ffmpeg from showing a picture within 5 s.
    package static let judgedSeconds = 2.0
    /// Seconds on a level before stepping down again: the rate control needs a few pictures to
    /// follow a new budget, and the pictures judged must all be of this level.
    package static let settleSeconds = 2.0
    /// Seconds on a level before stepping up.
    package static let recoverSeconds = 3.0
    /// A step up is taken only while the largest recent picture, with the better level's
    /// pixels, would take at most this share of a second's bits.
    package static let largestPictureShare = 0.5
    /// Without a quantiser: seconds on a lower level before a step up is tried.
    package static let blindRetry = 10.0
    /// Without a quantiser: a second of pictures this far over the target steps down.
    package static let overshootRatio = 1.15

    /// Every level, best first.
    package let levels: [StreamQuality]
    /// The level in force.
    package private(set) var index: Int
    /// The best level this stream may reach: the one its bits per pixel start it on. Above it
    /// a steady mean QP said a step up was fine, and the next turn's pictures did not fit (1080p
    /// at 600 kbit/s back at full detail: windows of 1.6x the target).
    private let ceiling: Int
    /// Bits per second the stream may take.
    package let bitrate: Int
    private var enteredAt: Double?
    /// The drawn pictures of the last two seconds: time, bits and QP (negative when unknown).
    /// Two seconds of drawn pictures at up to 60 a second.
    private var recent = SentUnits(capacity: 128)

    /// The ladder for a stream of `width` x `height` at `framesPerSecond` and `bitrate`, on the
    /// level its bits per pixel allow.
    package init(width: Int, height: Int, framesPerSecond: Double, bitrate: Int) {
        let rate = max(framesPerSecond, 1)
        let floor = min(Self.lowestFramesPerSecond, rate)
        var rates: [Double] = []
        for divisor in [1.0, 1.5, 2, 3, 4, 6] {
            let candidate = max(rate / divisor, floor)
            if rates.last.map({ candidate < $0 - 0.01 }) ?? true { rates.append(candidate) }
        }
        var levels = rates.map { StreamQuality(framesPerSecond: $0) }
        for scale in Self.resolutionScales {
            levels.append(StreamQuality(framesPerSecond: rates[rates.count - 1], resolutionScale: scale))
        }
        self.levels = levels
        self.bitrate = bitrate
        let pixels = Double(max(width, 1) * max(height, 1))
        index = levels.firstIndex {
            Double(bitrate) / (pixels * $0.resolutionScale * $0.resolutionScale * $0.framesPerSecond) >= Self.startingBitsPerPixel
        } ?? levels.count - 1
        ceiling = index
    }

    /// The quality in force.
    package var quality: StreamQuality { levels[index] }

    /// Records a drawn picture of `size` bits sent at `time` (seconds), with the encoder's mean
    /// QP where known; returns the new quality when the ladder moves.
    package mutating func record(bits size: Int, quantizer: Int?, isKeyframe: Bool, at time: Double) -> StreamQuality? {
        // The level counts from the first picture, or from a clock that went back.
        if enteredAt.map({ time < $0 }) ?? true { enteredAt = time }
        // An IDR's quantiser says how the stream started, not what its pictures cost.
        guard !isKeyframe else { return nil }
        recent.append(time: time, bits: size, quantizer: quantizer.map(Double.init) ?? -1)
        recent.drop(atOrBefore: time - 2)
        guard let entered = enteredAt else { return nil }
        let onLevel = time - entered
        let lastSecond = summary(since: time - 1)
        let twoSeconds = summary(since: time - Self.judgedSeconds)
        let level = quality
        // A second's worth of pictures at this level, allowing for a late one.
        let enough = max(3, Int(level.framesPerSecond * 0.8))
        if onLevel >= Self.settleSeconds, twoSeconds.pictures >= 2 * enough, index + 1 < levels.count {
            let tooCoarse = twoSeconds.quantizer.map { $0 >= Self.degradeQuantizer } ?? false
            let overshot = lastSecond.quantizer == nil && Double(lastSecond.bits) > Double(bitrate) * Self.overshootRatio
            if tooCoarse || overshot { return move(to: index + 1, at: time) }
        }
        if onLevel >= Self.recoverSeconds, index > ceiling {
            guard twoSeconds.pictures >= 2 * enough else { return nil }
            let better = levels[index - 1]
            // A picture of more detail takes more bits whatever the rate: the largest of the
            // last two seconds, with the better level's pixels, must fit half a second's bits
            // (1080p at 600 kbit/s went back to full detail on a steady mean QP, and the next
            // turn's pictures made a window of 1.6x the target).
            let detailRatio = (better.resolutionScale * better.resolutionScale) / (level.resolutionScale * level.resolutionScale)
            guard Double(twoSeconds.largest) * detailRatio <= Self.largestPictureShare * Double(bitrate) else { return nil }
            if let quantizer = twoSeconds.quantizer {
                if quantizer + cost(from: level, to: better) <= Self.recoverQuantizer {
                    return move(to: index - 1, at: time)
                }
            } else if onLevel >= Self.blindRetry {
                return move(to: index - 1, at: time)
            }
        }
        return nil
    }

    /// QP a move from `level` to `better` adds: 6 per doubling of the pixels a second.
    private func cost(from level: StreamQuality, to better: StreamQuality) -> Double {
        let ratio = (better.framesPerSecond * better.resolutionScale * better.resolutionScale)
            / (level.framesPerSecond * level.resolutionScale * level.resolutionScale)
        return 6 * log2(max(ratio, 1))
    }

    private mutating func move(to newIndex: Int, at time: Double) -> StreamQuality {
        index = newIndex
        enteredAt = time
        // What the pictures cost at the old level says nothing about the new one.
        recent.removeAll()
        return quality
    }

    /// Pictures, bits, the largest picture's bits and mean QP (nil when any is unknown) of the
    /// pictures since `cutoff`.
    private func summary(since cutoff: Double) -> (pictures: Int, bits: Int, largest: Int, quantizer: Double?) {
        var pictures = 0, total = 0, largest = 0, quantizerSum = 0.0, known = true
        recent.forEach { time, bits, quantizer in
            guard time > cutoff else { return }
            pictures += 1
            total += bits
            largest = max(largest, bits)
            if quantizer < 0 { known = false } else { quantizerSum += quantizer }
        }
        return (pictures, total, largest, known && pictures > 0 ? quantizerSum / Double(pictures) : nil)
    }
}

/// Holds a moving picture back while the bits sent in the last second leave no room for it, so
/// that no one-second window runs far over the head unit's bitrate even where the encoder
/// cannot make a picture fit its budget (a turn at 1080p and 5 fps took 30 KB at QP 51, against
/// 15 KB a picture). The picture is drawn as soon as enough of the window has passed: the change
/// shows later, never dropped.
///
/// The room a picture needs is estimated from the drawn pictures before it. A plain value, fed
/// every unit sent and asked before each drawn picture.
package struct BitrateGate: Sendable {
    /// A window may reach this share of the target with the next picture in it.
    package static let headroom = 1.2
    /// Weight of the newest drawn picture in the estimate of the next one.
    static let estimateWeight = 0.3
    /// A second of units at up to 60 pictures a second, with keep-alives and refinements between.
    private var sent = SentUnits(capacity: 256)
    /// Bits the next drawn picture is expected to take.
    private var estimate: Double?

    package init() {}

    /// Records a unit of `size` bits sent at `time`; a drawn picture other than an IDR also
    /// updates the estimate of the next one.
    package mutating func record(bits size: Int, at time: Double, drawn: Bool, isKeyframe: Bool) {
        sent.append(time: time, bits: size, quantizer: -1)
        if drawn, !isKeyframe {
            estimate = estimate.map { $0 + Self.estimateWeight * (Double(size) - $0) } ?? Double(size)
        }
    }

    /// Nil when a picture may be drawn at `time` for a stream of `target` bits a second at
    /// `framesPerSecond`; else the time from which the last second's bits leave room for it. A
    /// picture larger than the whole window waits only until the window is empty.
    ///
    /// The room asked for is the estimate, but no more than an average picture's share: the
    /// encoder's governor sizes the next picture to what the window has left, and a gate that
    /// reserved room for a large estimate held pictures the governor would have made small
    /// (800x480 at 111 kbit/s and 5 fps: windows at 0.45-0.95x the target, against 0.9-1.0x).
    package mutating func holdUntil(at time: Double, target: Int, framesPerSecond: Double) -> Double? {
        sent.drop(atOrBefore: time - 1)
        guard let estimated = self.estimate, sent.count > 0 else { return nil }
        let estimate = min(estimated, Double(target) / max(framesPerSecond, 1))
        let limit = Self.headroom * Double(target)
        var inWindow = 0.0
        sent.forEach { _, bits, _ in inWindow += Double(bits) }
        guard inWindow + estimate > limit else { return nil }
        // The first unit whose leaving makes room, or the last one: the window is empty then.
        var until: Double?
        sent.forEach { time, bits, _ in
            guard until == nil else { return }
            inWindow -= Double(bits)
            if inWindow + estimate <= limit { until = time + 1 + 1e-6 }
        }
        return until ?? sent.newestTime.map { $0 + 1 + 1e-6 }
    }
}

/// The units of the last seconds, oldest first: time sent, bits and QP (negative when not
/// known). A ring of fixed capacity, so recording allocates nothing; times only grow, and one
/// that went back starts the record over.
struct SentUnits: Sendable {
    private var times: [Double]
    private var bits: [Int]
    private var quantizers: [Double]
    private var start = 0
    private(set) var count = 0

    init(capacity: Int) {
        times = [Double](repeating: 0, count: capacity)
        bits = [Int](repeating: 0, count: capacity)
        quantizers = [Double](repeating: -1, count: capacity)
    }

    /// The newest unit's time, if any.
    var newestTime: Double? { count > 0 ? times[(start + count - 1) % times.count] : nil }

    mutating func append(time: Double, bits size: Int, quantizer: Double) {
        if let newest = newestTime, newest > time { removeAll() }
        if count == times.count { dropOldest() }
        let slot = (start + count) % times.count
        times[slot] = time
        bits[slot] = size
        quantizers[slot] = quantizer
        count += 1
    }

    /// Forgets the units sent at `cutoff` or before.
    mutating func drop(atOrBefore cutoff: Double) {
        while count > 0, times[start] <= cutoff { dropOldest() }
    }

    mutating func removeAll() {
        start = 0
        count = 0
    }

    /// Calls `body` with each unit, oldest first.
    func forEach(_ body: (_ time: Double, _ bits: Int, _ quantizer: Double) -> Void) {
        for offset in 0..<count {
            let slot = (start + offset) % times.count
            body(times[slot], bits[slot], quantizers[slot])
        }
    }

    private mutating func dropOldest() {
        start = (start + 1) % times.count
        count -= 1
    }
}

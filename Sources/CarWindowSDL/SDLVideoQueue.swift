import CarWindowVideoCore
import CarWindowSystemSupport

/// Bounds on the access units waiting to go to the head unit.
public struct SDLVideoQueueLimits: Sendable, Equatable {
    /// Most bytes waiting (a single unit larger than this is still admitted into an empty queue,
    /// or an IDR bigger than the limit could never be sent).
    public var maximumBytes: Int
    /// Most units waiting.
    public var maximumUnits: Int

    /// Limits; the defaults hold about half a second of 15 fps video at generous bitrates.
    public init(maximumBytes: Int = 2 << 20, maximumUnits: Int = 8) {
        self.maximumBytes = maximumBytes
        self.maximumUnits = maximumUnits
    }
}

/// What happened to an access unit handed to ``SDLConnection/send(_:)``.
public enum SDLVideoSendResult: Sendable, Equatable {
    /// Queued for sending.
    case queued
    /// Dropped whole because the queue was full; from now on only an IDR is taken.
    case droppedQueueFull
    /// Dropped because an IDR is required first (after a drop or at the start of a service).
    case droppedAwaitingKeyframe
    /// Dropped because no video service is open (not allowed, not started, or being restarted).
    case notStreaming
}

/// Counts a test or a log can read.
public struct SDLVideoQueueStatistics: Sendable, Equatable {
    /// Units taken into the queue.
    public var queuedUnits = 0
    /// Units dropped whole (full queue or awaiting an IDR).
    public var droppedUnits = 0
    /// Units removed from the queue because a newer IDR superseded them.
    public var supersededUnits = 0
    /// The most bytes ever waiting.
    public var peakBytes = 0
    /// The most units ever waiting.
    public var peakUnits = 0
}

/// The bounded queue between the encoder and the video service's writer.
///
/// Only whole access units are ever dropped, and after any drop only an IDR is taken, so what
/// reaches the head unit always decodes: a P frame whose reference was dropped would smear
/// until the next IDR. One consumer at a time.
final class SDLVideoQueue: Sendable {
    private struct State {
        var units: [AccessUnit] = []
        var head = 0
        var bytes = 0
        var isOpen = false
        var needsKeyframe = true
        var waiter: CheckedContinuation<AccessUnit?, Never>?
        var statistics = SDLVideoQueueStatistics()
    }

    let limits: SDLVideoQueueLimits
    private let state = LockedState(State())

    init(limits: SDLVideoQueueLimits) {
        self.limits = limits
    }

    /// Whether the next unit must be an IDR.
    var needsKeyframe: Bool { state.withLock { $0.needsKeyframe } }

    var statistics: SDLVideoQueueStatistics { state.withLock { $0.statistics } }

    /// Starts taking units for a new video service; the first must be an IDR.
    func open() {
        state.withLock { state in
            state.units.removeAll()
            state.head = 0
            state.bytes = 0
            state.isOpen = true
            state.needsKeyframe = true
        }
    }

    /// Stops taking units, forgets the waiting ones and wakes the consumer with nil.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<AccessUnit?, Never>? in
            state.isOpen = false
            state.units.removeAll()
            state.head = 0
            state.bytes = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Offers a unit; the second value is true when this call made the queue need an IDR.
    func enqueue(_ unit: AccessUnit) -> (SDLVideoSendResult, keyframeNowNeeded: Bool) {
        let (result, waiter, becameNeedy) = state.withLock { state -> (SDLVideoSendResult, CheckedContinuation<AccessUnit?, Never>?, Bool) in
            guard state.isOpen else { return (.notStreaming, nil, false) }
            if state.needsKeyframe && !unit.isKeyframe {
                state.statistics.droppedUnits += 1
                return (.droppedAwaitingKeyframe, nil, false)
            }
            let waiting = state.units.count - state.head
            let fits = waiting == 0 || (waiting < limits.maximumUnits && state.bytes + unit.data.count <= limits.maximumBytes)
            if !fits {
                if unit.isKeyframe {
                    // An IDR makes everything before it unnecessary: drop the waiting units
                    // (whole, none in flight) rather than the picture that restores the stream.
                    state.statistics.supersededUnits += waiting
                    state.units.removeAll()
                    state.head = 0
                    state.bytes = 0
                } else {
                    state.statistics.droppedUnits += 1
                    let became = !state.needsKeyframe
                    state.needsKeyframe = true
                    return (.droppedQueueFull, nil, became)
                }
            }
            state.needsKeyframe = false
            state.statistics.queuedUnits += 1
            if let waiter = state.waiter {
                state.waiter = nil
                return (.queued, waiter, false)
            }
            state.units.append(unit)
            state.bytes += unit.data.count
            state.statistics.peakBytes = max(state.statistics.peakBytes, state.bytes)
            state.statistics.peakUnits = max(state.statistics.peakUnits, state.units.count - state.head)
            return (.queued, nil, false)
        }
        waiter?.resume(returning: unit)
        return (result, becameNeedy)
    }

    /// The next unit, waiting for one; nil once the queue is closed.
    func next() async -> AccessUnit? {
        await withCheckedContinuation { continuation in
            let immediate = state.withLock { state -> AccessUnit?? in
                if state.head < state.units.count {
                    let unit = state.units[state.head]
                    state.head += 1
                    state.bytes -= unit.data.count
                    if state.head > 32 && state.head * 2 > state.units.count {
                        state.units.removeFirst(state.head)
                        state.head = 0
                    }
                    return .some(unit)
                }
                if !state.isOpen { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }
}

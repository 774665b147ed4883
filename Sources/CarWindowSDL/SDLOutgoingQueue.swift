import CarWindowSystemSupport

/// Bounds on the control and RPC messages waiting to be written to the head unit.
public struct SDLOutgoingQueueLimits: Sendable, Equatable {
    /// Most messages waiting.
    public var maximumMessages: Int
    /// Most bytes waiting (a single message larger than this is still taken into an empty queue).
    public var maximumBytes: Int

    /// Limits; the defaults are far above what a working head unit ever leaves waiting (a few
    /// requests and answers), so reaching them means the head unit stopped reading.
    public init(maximumMessages: Int = 256, maximumBytes: Int = 4 << 20) {
        self.maximumMessages = maximumMessages
        self.maximumBytes = maximumBytes
    }
}

/// Counts a test or a log can read.
public struct SDLOutgoingQueueStatistics: Sendable, Equatable {
    /// Messages taken into the queue.
    public var queuedMessages = 0
    /// HeartbeatACKs not queued because one was already waiting.
    public var coalescedHeartbeatACKs = 0
    /// The most messages ever waiting.
    public var peakMessages = 0
    /// The most bytes ever waiting.
    public var peakBytes = 0
}

/// The bounded queue between the connection and the writer of its control and RPC messages.
///
/// One queue serves one transport: a reconnect makes a new one, so nothing meant for the new
/// head-unit session can leak onto the old socket. A HeartbeatACK is not queued while another
/// waits (a head unit that floods heartbeats learns the app is alive from one answer); any other
/// message that does not fit is refused, and the connection then gives up on the head unit.
final class SDLOutgoingQueue: Sendable {
    /// What happened to an offered message.
    enum Admission: Equatable {
        case queued
        case coalesced
        case full
        case closed
    }

    private struct Entry {
        var bytes: [UInt8]
        var isHeartbeatACK: Bool
    }

    private struct State {
        var entries: [Entry] = []
        var head = 0
        var bytes = 0
        var heartbeatACKWaiting = false
        var isOpen = true
        var waiter: CheckedContinuation<[UInt8]?, Never>?
        var statistics = SDLOutgoingQueueStatistics()
    }

    let limits: SDLOutgoingQueueLimits
    private let state = LockedState(State())

    init(limits: SDLOutgoingQueueLimits) {
        self.limits = limits
    }

    var statistics: SDLOutgoingQueueStatistics { state.withLock { $0.statistics } }

    /// Offers the bytes of one message (all its frames).
    func enqueue(_ bytes: [UInt8], isHeartbeatACK: Bool = false) -> Admission {
        let (admission, waiter) = state.withLock { state -> (Admission, CheckedContinuation<[UInt8]?, Never>?) in
            guard state.isOpen else { return (.closed, nil) }
            let waiting = state.entries.count - state.head
            if isHeartbeatACK, state.heartbeatACKWaiting {
                state.statistics.coalescedHeartbeatACKs += 1
                return (.coalesced, nil)
            }
            guard waiting == 0 || (waiting < limits.maximumMessages && state.bytes + bytes.count <= limits.maximumBytes) else {
                return (.full, nil)
            }
            state.statistics.queuedMessages += 1
            if let waiter = state.waiter {
                state.waiter = nil
                return (.queued, waiter)
            }
            state.entries.append(Entry(bytes: bytes, isHeartbeatACK: isHeartbeatACK))
            state.bytes += bytes.count
            if isHeartbeatACK { state.heartbeatACKWaiting = true }
            state.statistics.peakMessages = max(state.statistics.peakMessages, waiting + 1)
            state.statistics.peakBytes = max(state.statistics.peakBytes, state.bytes)
            return (.queued, nil)
        }
        waiter?.resume(returning: bytes)
        return admission
    }

    /// The next message's bytes, waiting for one; nil once the queue is closed.
    func next() async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            let immediate = state.withLock { state -> [UInt8]?? in
                if state.head < state.entries.count {
                    let entry = state.entries[state.head]
                    state.entries[state.head].bytes = []
                    state.head += 1
                    state.bytes -= entry.bytes.count
                    if entry.isHeartbeatACK { state.heartbeatACKWaiting = false }
                    if state.head == state.entries.count {
                        state.entries.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return .some(entry.bytes)
                }
                if !state.isOpen { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// Refuses further messages, forgets the waiting ones and wakes the writer with nil.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            state.isOpen = false
            state.entries.removeAll()
            state.head = 0
            state.bytes = 0
            state.heartbeatACKWaiting = false
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

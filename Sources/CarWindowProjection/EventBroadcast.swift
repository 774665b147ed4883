import CarWindowSystemSupport

/// Hands every event to every consumer: each ``subscribe()`` makes a new `AsyncStream` that
/// gets the events yielded from then on, so a link and an engine can both iterate a session's
/// events without taking them from each other.
///
/// Each consumer has its own bounded buffer (the newest `bufferLimit` events are kept), so a
/// consumer that stops reading never stalls the producer or the other consumers. A stream ends
/// when ``finish()`` is called, or at once when it is made after that.
///
/// - Important: Thread-safe.
package final class EventBroadcast<Event: Sendable>: Sendable {
    private struct State {
        var consumers: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextID = 0
        var isFinished = false
    }
    private let state = LockedState(State())
    private let bufferLimit: Int

    /// A broadcast whose consumers each keep the newest `bufferLimit` unread events.
    package init(bufferLimit: Int) {
        self.bufferLimit = bufferLimit
    }

    /// A new stream of the events yielded from now on; finished already when the broadcast is.
    package func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id: Int? = state.withLock { state in
            guard !state.isFinished else { return nil }
            defer { state.nextID += 1 }
            state.consumers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // A consumer that stops iterating (its task cancelled, its stream dropped) is forgotten.
        // `onTermination` may run synchronously inside `finish()`, which is never called under
        // the lock, so taking it here cannot deadlock.
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.consumers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Hands `event` to every consumer. Yielding never runs a consumer's code or the
    /// termination handler, so it is done under the lock, which keeps events in order
    /// across producers.
    package func yield(_ event: Event) {
        state.withLock { state in
            for continuation in state.consumers.values { continuation.yield(event) }
        }
    }

    /// Ends every stream, present and future.
    package func finish() {
        let consumers = state.withLock { state in
            state.isFinished = true
            defer { state.consumers.removeAll() }
            return Array(state.consumers.values)
        }
        for continuation in consumers { continuation.finish() }
    }

    /// How many streams are open (for tests).
    package var consumerCount: Int { state.withLock { $0.consumers.count } }
}

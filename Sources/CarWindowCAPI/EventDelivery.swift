import Foundation
import CCarWindow
import CarWindow
import CarWindowSystemSupport

/// The engine's event callback with its user data; the header makes the engine promise both may
/// be used from the session's event thread.
struct EventCallback: @unchecked Sendable {
    let function: carwindow_event_callback
    let userData: UnsafeMutableRawPointer?
}

/// Something to tell the engine.
enum DeliveredEvent: Sendable {
    case session(ProjectionSessionEvent)
    case headUnit(String)
}

/// Delivers a session's events to the engine's C callback on a thread of its own, in order.
///
/// The session's events arrive on Swift's threads, which must never run engine code that may
/// block or call back into the API (those calls wait for Swift's threads). So they are queued
/// here, at most ``capacity`` (oldest dropped, then reported), and one plain thread per session
/// hands them to the callback.
final class EventDelivery: Sendable {
    /// The most events that wait for a slow callback.
    static let capacity = 4096

    private struct Queue {
        var items: [DeliveredEvent] = []
        var head = 0
        var dropped = 0
        /// No more events come: deliver what is queued, then end.
        var finished = false
        /// Closed from the callback itself: deliver nothing more.
        var abandoned = false
    }
    private let queue = LockedState(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let callback: EventCallback
    private let sessionToken: UInt

    init(callback: EventCallback, sessionToken: UInt) {
        self.callback = callback
        self.sessionToken = sessionToken
        let thread = Thread { [self] in run() }
        thread.name = "carwindow-events"
        thread.start()
    }

    func enqueue(_ event: DeliveredEvent) {
        queue.withLock { queue in
            guard !queue.finished else { return }
            if queue.items.count - queue.head >= Self.capacity {
                queue.head += 1
                queue.dropped += 1
            }
            queue.items.append(event)
        }
        available.signal()
    }

    /// No events follow; the thread delivers what is queued and ends. When `waiting`, returns once
    /// it has (the caller is not the event thread, which cannot wait for itself: when it is, the
    /// rest is dropped and the thread ends after the callback under way returns).
    func finish() {
        let onEventThread = CallingThread.deliveringToken == sessionToken
        queue.withLock { queue in
            queue.finished = true
            if onEventThread { queue.abandoned = true }
        }
        available.signal()
        if !onEventThread { ended.wait() }
    }

    private func run() {
        CallingThread.markDelivering(token: sessionToken)
        defer { ended.signal() }
        while true {
            available.wait()
            while let next = take() {
                switch next {
                case .event(let event): deliver(event)
                case .dropped(let count): deliverDropped(count)
                case .end: return
                }
            }
        }
    }

    private enum Next {
        case event(DeliveredEvent)
        case dropped(Int)
        case end
    }

    private func take() -> Next? {
        queue.withLock { queue in
            if queue.abandoned { return .end }
            if queue.dropped > 0 {
                defer { queue.dropped = 0 }
                return .dropped(queue.dropped)
            }
            if queue.head < queue.items.count {
                let event = queue.items[queue.head]
                queue.head += 1
                // Keep the array from growing for ever: drop the delivered prefix now and then.
                if queue.head >= 1024, queue.head * 2 >= queue.items.count {
                    queue.items.removeFirst(queue.head)
                    queue.head = 0
                }
                return .event(event)
            }
            return queue.finished ? .end : nil
        }
    }

    private func deliverDropped(_ count: Int) {
        var event = carwindow_event()
        event.type = CARWINDOW_EVENT_EVENTS_DROPPED
        event.dropped = Int64(count)
        call(&event, message: "\(count) events were dropped: the event callback fell more than \(Self.capacity) behind")
    }

    private func deliver(_ delivered: DeliveredEvent) {
        var event = carwindow_event()
        switch delivered {
        case .headUnit(let message):
            event.type = CARWINDOW_EVENT_HEAD_UNIT
            call(&event, message: message)
        case .session(let sessionEvent):
            let message = EventTranslation.fill(&event, from: sessionEvent)
            if case .hapticRegions(let regions) = sessionEvent {
                let converted = regions.map(CRegion.make)
                converted.withUnsafeBufferPointer { buffer in
                    event.regions = buffer.baseAddress
                    event.region_count = buffer.count
                    call(&event, message: message)
                }
            } else {
                call(&event, message: message)
            }
        }
    }

    private func call(_ event: inout carwindow_event, message: String) {
        let function = callback.function
        message.withCString { text in
            event.message = text
            withUnsafePointer(to: &event) { function($0, callback.userData) }
        }
    }
}

/// One piece of state the head unit keeps for the app (its haptic rectangles, the app's
/// capability, a subscription): what the app wants it to hold, what this registration is known
/// to hold, and whether the head unit refused it.
///
/// The head unit forgets such state when the app registers again or leaves a level, and it
/// refuses some of it for a level or a policy. The connection sends the wanted value when it
/// ``needsSending``, takes a ``Ticket`` before it sends, and ``settle(_:accepted:)``s the answer:
/// an answer to a send made before the state was ``forget()``-ed is not taken as holding.
package struct SDLHeldState<Value: Equatable> {
    /// What was sent, and when: the ``SDLHeldState`` it came from takes the answer only if
    /// nothing was forgotten since.
    package struct Ticket {
        package let value: Value
        fileprivate let epoch: Int
    }

    /// What the app wants the head unit to hold; nil for nothing.
    package private(set) var wanted: Value?
    /// What the head unit is known to hold; nil when nothing is known.
    package private(set) var held: Value?
    /// Whether the head unit refused ``wanted``: not asked again until it may have changed its
    /// mind (``forgiveRefusal()``) or the app wants something else.
    package private(set) var isRefused = false
    private var epoch = 0

    /// Nothing wanted, nothing held.
    package init() {}

    /// Whether the head unit should be sent ``wanted``: it is wanted, not held and not refused.
    package var needsSending: Bool {
        guard let wanted else { return false }
        return wanted != held && !isRefused
    }

    /// Wants `value` (nil: nothing). A new value may be taken where the last was refused.
    package mutating func want(_ value: Value?) {
        if value != wanted { isRefused = false }
        wanted = value
    }

    /// The wanted value, to send now; nil when there is nothing to send.
    package func ticket() -> Ticket? {
        guard needsSending, let wanted else { return nil }
        return Ticket(value: wanted, epoch: epoch)
    }

    /// Takes the head unit's answer to the send `ticket` was taken for: accepted, the head unit
    /// holds it; refused, it is not asked again for now. Ignored when the state was forgotten
    /// since the ticket was taken. Returns whether the answer was taken.
    @discardableResult
    package mutating func settle(_ ticket: Ticket, accepted: Bool) -> Bool {
        guard ticket.epoch == epoch else { return false }
        if accepted {
            held = ticket.value
        } else if ticket.value == wanted {
            isRefused = true
        }
        return true
    }

    /// A ticket for sending `value` whatever is held or refused: an explicit send the app asked
    /// for and waits on.
    package func ticket(sending value: Value) -> Ticket {
        Ticket(value: value, epoch: epoch)
    }

    /// The head unit may have lost what it held (a new registration, a level it drops such
    /// state in): held and refused are forgotten, and answers on their way are not taken.
    package mutating func forget() {
        epoch += 1
        held = nil
        isRefused = false
    }

    /// The head unit may take now what it refused (a new level or policy).
    package mutating func forgiveRefusal() {
        isRefused = false
    }
}

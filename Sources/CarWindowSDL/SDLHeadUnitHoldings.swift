import CarWindowProjection

/// Everything the head unit holds for the app, each an ``SDLHeldState``: the app's streaming
/// capability, its haptic rectangles, the ambient light subscription and the button
/// subscriptions; and the rules for when each may be sent and when the head unit forgets it.
///
/// A value without I/O: the connection asks it for the ``next(at:permissions:hapticsSupported:skipping:)``
/// piece to send and settles the head unit's answer.
struct SDLHeadUnitHoldings {
    /// One piece to send, with the ticket that settles its answer.
    enum Item {
        case appCapability(SDLHeldState<VideoStreamingCapability>.Ticket)
        case haptics(SDLHeldState<[HapticRegion]>.Ticket)
        case ambientLight(SDLHeldState<Bool>.Ticket)
        case button(SDLHeldState<SDLButtonName>.Ticket)

        var kind: Kind {
            switch self {
            case .appCapability: .appCapability
            case .haptics: .haptics
            case .ambientLight: .ambientLight
            case .button: .buttons
            }
        }
    }

    /// The kinds of held state, in the order they are sent.
    enum Kind: Hashable { case appCapability, haptics, ambientLight, buttons }

    /// The HMI levels in which SDL Core 8.2's stock policy groups allow each piece of held
    /// state: SendHapticData (HapticGroup) in FULL only; OnAppCapabilityUpdated and
    /// SubscribeButton (Base-4) in FULL, LIMITED and BACKGROUND. Sent in another level, Core
    /// blocks them ("Request is blocked by policies").
    static let hapticDataLevels: Set<SDLHMILevel> = [.full]
    static let appCapabilityLevels: Set<SDLHMILevel> = [.full, .limited, .background]
    static let buttonSubscriptionLevels: Set<SDLHMILevel> = [.full, .limited, .background]

    var appCapability = SDLHeldState<VideoStreamingCapability>()
    var haptics = SDLHeldState<[HapticRegion]>()
    /// Wanted as `true` while the app follows the car's ambient light.
    var ambientLight = SDLHeldState<Bool>()
    /// The buttons in the order the app listed them; each one's state.
    private(set) var wantedButtons: [SDLButtonName] = []
    private var buttons: [SDLButtonName: SDLHeldState<SDLButtonName>] = [:]

    /// Wants OnButtonPress for `list`. Buttons no longer wanted stay subscribed (the head unit
    /// keeps them until the app registers again) and are not asked again.
    mutating func wantButtons(_ list: [SDLButtonName]) {
        wantedButtons = list
        for button in list where buttons[button]?.wanted == nil {
            buttons[button, default: SDLHeldState()].want(button)
        }
    }

    /// A new registration, or NONE (the app closed): the head unit holds nothing any more.
    mutating func forgetAll() {
        appCapability.forget()
        haptics.forget()
        ambientLight.forget()
        for button in buttons.keys { buttons[button]?.forget() }
    }

    /// What a level change may have cost the head unit: leaving FULL, an HMI may drop the app's
    /// rectangles (its focus belongs to another app then); NONE is the app closed, and everything
    /// is sent again when it comes back. A level that allows more may let a refusal through.
    mutating func levelChanged(to level: SDLHMILevel) {
        if level == .none {
            forgetAll()
        } else if !Self.hapticDataLevels.contains(level) {
            haptics.forget()
        } else {
            forgiveRefusals()
        }
    }

    /// The policy changed (OnPermissionsChange): what was refused may be permitted now.
    mutating func forgiveRefusals() {
        ambientLight.forgiveRefusal()
        haptics.forgiveRefusal()
        for button in buttons.keys { buttons[button]?.forgiveRefusal() }
    }

    /// The next piece to send at `level`, or nil when the head unit holds all it may now.
    /// `skipping` leaves out kinds that already failed in this pass.
    func next(at level: SDLHMILevel, permissions: SDLPermissions?, hapticsSupported: Bool,
              skipping: Set<Kind> = []) -> Item? {
        if !skipping.contains(.appCapability), let ticket = appCapability.ticket(),
           Self.permits("OnAppCapabilityUpdated", at: level, permissions: permissions, fallback: Self.appCapabilityLevels) {
            return .appCapability(ticket)
        }
        if !skipping.contains(.haptics), hapticsSupported, let ticket = haptics.ticket(),
           Self.permits("SendHapticData", at: level, permissions: permissions, fallback: Self.hapticDataLevels) {
            return .haptics(ticket)
        }
        // Core's stock groups for a navigation app grant no vehicle data: asked only when the
        // policy's permissions say so.
        if !skipping.contains(.ambientLight), let ticket = ambientLight.ticket(),
           Self.permits("SubscribeVehicleData", at: level, parameter: "headLampStatus", permissions: permissions, fallback: []) {
            return .ambientLight(ticket)
        }
        if !skipping.contains(.buttons),
           Self.permits("SubscribeButton", at: level, permissions: permissions, fallback: Self.buttonSubscriptionLevels) {
            for button in wantedButtons {
                if let ticket = buttons[button]?.ticket() { return .button(ticket) }
            }
        }
        return nil
    }

    /// Takes the head unit's answer to `item`.
    mutating func settle(_ item: Item, accepted: Bool) {
        switch item {
        case .appCapability(let ticket): appCapability.settle(ticket, accepted: accepted)
        case .haptics(let ticket): haptics.settle(ticket, accepted: accepted)
        case .ambientLight(let ticket): ambientLight.settle(ticket, accepted: accepted)
        case .button(let ticket): buttons[ticket.value]?.settle(ticket, accepted: accepted)
        }
    }

    /// Whether the policy lets the app send `rpc` (with `parameter`, for vehicle data) at
    /// `level`: as OnPermissionsChange says once it came (an RPC it does not list is not
    /// allowed), else in the `fallback` levels, SDL Core's stock ones. Asking outside them only
    /// makes Core log "Request is blocked by policies".
    static func permits(_ rpc: String, at level: SDLHMILevel, parameter: String? = nil, permissions: SDLPermissions?,
                        fallback: Set<SDLHMILevel>) -> Bool {
        guard let permissions else { return fallback.contains(level) }
        guard let permission = permissions.byRPC[rpc], permission.levels.contains(level) else { return false }
        guard let parameter, let allowed = permission.parameters else { return true }
        return allowed.contains(parameter)
    }
}

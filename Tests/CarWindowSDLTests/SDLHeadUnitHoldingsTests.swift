import Testing
import CarWindowMap
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL

/// What the head unit holds for the app, and when each piece is sent, as a value: the rules
/// `SDLConnection` follows, without a head unit.
struct SDLHeadUnitHoldingsTests {
    static let regions = [HapticRegion(id: 1, rect: ScreenRect(x: 0, y: 0, width: 40, height: 40))]

    /// Sends everything `holdings` offers at `level`, the head unit accepting all but `refused`;
    /// returns the kinds sent, in order.
    static func sendAll(_ holdings: inout SDLHeadUnitHoldings, at level: SDLHMILevel,
                        refusing refused: Set<SDLButtonName> = []) -> [String] {
        var sent: [String] = []
        while let item = holdings.next(at: level, permissions: nil, hapticsSupported: true), sent.count < 20 {
            switch item {
            case .appCapability: sent.append("capability")
            case .haptics: sent.append("haptics")
            case .ambientLight: sent.append("light")
            case .button(let ticket):
                sent.append("button \(ticket.value)")
                holdings.settle(item, accepted: !refused.contains(ticket.value))
                continue
            }
            holdings.settle(item, accepted: true)
        }
        return sent
    }

    @Test func eachPieceIsSentOnceInOrderAndOnlyWhereTheLevelAllows() {
        var holdings = SDLHeadUnitHoldings()
        holdings.appCapability.want(VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480)))
        holdings.haptics.want(Self.regions)
        holdings.wantButtons([.navZoomIn, .navZoomOut])
        // NONE allows nothing; LIMITED the capability and the buttons, not the rectangles.
        #expect(Self.sendAll(&holdings, at: .none).isEmpty)
        #expect(Self.sendAll(&holdings, at: .limited) == ["capability", "button NAV_ZOOM_IN", "button NAV_ZOOM_OUT"])
        #expect(Self.sendAll(&holdings, at: .full) == ["haptics"])
        #expect(Self.sendAll(&holdings, at: .full).isEmpty)
    }

    @Test func leavingFullForgetsTheRectanglesAndNoneForgetsEverything() {
        var holdings = SDLHeadUnitHoldings()
        holdings.haptics.want(Self.regions)
        holdings.wantButtons([.navCenterLocation])
        _ = Self.sendAll(&holdings, at: .full)
        holdings.levelChanged(to: .limited)
        #expect(Self.sendAll(&holdings, at: .limited).isEmpty)
        #expect(Self.sendAll(&holdings, at: .full) == ["haptics"])
        holdings.levelChanged(to: .none)
        #expect(Self.sendAll(&holdings, at: .full) == ["haptics", "button NAV_CENTER_LOCATION"])
    }

    @Test func aRefusedButtonIsAskedAgainOnlyAfterTheLevelOrPolicyChanged() {
        var holdings = SDLHeadUnitHoldings()
        holdings.wantButtons([.navZoomIn, .navZoomOut])
        #expect(Self.sendAll(&holdings, at: .full, refusing: [.navZoomIn]) == ["button NAV_ZOOM_IN", "button NAV_ZOOM_OUT"])
        #expect(Self.sendAll(&holdings, at: .full).isEmpty)
        holdings.forgiveRefusals()
        #expect(Self.sendAll(&holdings, at: .full) == ["button NAV_ZOOM_IN"])
    }

    @Test func theAmbientLightIsAskedForOnlyWhereThePolicyGrantsVehicleData() throws {
        var holdings = SDLHeadUnitHoldings()
        holdings.ambientLight.want(true)
        // Without OnPermissionsChange, SDL Core's stock groups grant a navigation app no vehicle data.
        #expect(holdings.next(at: .full, permissions: nil, hapticsSupported: true) == nil)
        let json = #"{"permissionItem":[{"rpcName":"SubscribeVehicleData","hmiPermissions":{"allowed":["FULL"],"userDisallowed":[]},"parameterPermissions":{"allowed":["headLampStatus"],"userDisallowed":[]}}]}"#
        let permissions = try SDLRPCMessage(type: .notification, functionID: .onPermissionsChange, correlationID: 0,
                                            json: Array(json.utf8)).decodeParameters(SDLPermissions.self)
        guard case .ambientLight? = holdings.next(at: .full, permissions: permissions, hapticsSupported: true) else {
            Issue.record("the ambient light was not offered where the policy grants headLampStatus")
            return
        }
        #expect(holdings.next(at: .limited, permissions: permissions, hapticsSupported: true) == nil)
    }

    @Test func rectanglesWaitForAHeadUnitThatTakesThem() {
        var holdings = SDLHeadUnitHoldings()
        holdings.haptics.want(Self.regions)
        #expect(holdings.next(at: .full, permissions: nil, hapticsSupported: false) == nil)
        // A pass that failed to reach the head unit skips the kind, and only that kind.
        holdings.wantButtons([.navZoomIn])
        guard case .button? = holdings.next(at: .full, permissions: nil, hapticsSupported: true, skipping: [.haptics]) else {
            Issue.record("skipping the rectangles skipped more")
            return
        }
    }
}

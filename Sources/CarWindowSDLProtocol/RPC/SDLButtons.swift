import Foundation

/// A head unit's button (RPC `ButtonName`). A struct, not an enum, so that names a newer head
/// unit invents still decode and are simply not acted on.
public struct SDLButtonName: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The name on the wire, like `NAV_ZOOM_IN`.
    public var rawValue: String

    /// A button from its wire name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The wire name.
    public var description: String { rawValue }

    /// Centre the map on the vehicle (recenter).
    public static let navCenterLocation = SDLButtonName(rawValue: "NAV_CENTER_LOCATION")
    /// Zoom in one level.
    public static let navZoomIn = SDLButtonName(rawValue: "NAV_ZOOM_IN")
    /// Zoom out one level.
    public static let navZoomOut = SDLButtonName(rawValue: "NAV_ZOOM_OUT")
    /// Look up.
    public static let navPanUp = SDLButtonName(rawValue: "NAV_PAN_UP")
    /// Look up and right.
    public static let navPanUpRight = SDLButtonName(rawValue: "NAV_PAN_UP_RIGHT")
    /// Look right.
    public static let navPanRight = SDLButtonName(rawValue: "NAV_PAN_RIGHT")
    /// Look down and right.
    public static let navPanDownRight = SDLButtonName(rawValue: "NAV_PAN_DOWN_RIGHT")
    /// Look down.
    public static let navPanDown = SDLButtonName(rawValue: "NAV_PAN_DOWN")
    /// Look down and left.
    public static let navPanDownLeft = SDLButtonName(rawValue: "NAV_PAN_DOWN_LEFT")
    /// Look left.
    public static let navPanLeft = SDLButtonName(rawValue: "NAV_PAN_LEFT")
    /// Look up and left.
    public static let navPanUpLeft = SDLButtonName(rawValue: "NAV_PAN_UP_LEFT")
    /// Between a tilted and a flat map.
    public static let navTiltToggle = SDLButtonName(rawValue: "NAV_TILT_TOGGLE")
    /// Turn the map clockwise.
    public static let navRotateClockwise = SDLButtonName(rawValue: "NAV_ROTATE_CLOCKWISE")
    /// Turn the map counter-clockwise.
    public static let navRotateCounterClockwise = SDLButtonName(rawValue: "NAV_ROTATE_COUNTERCLOCKWISE")
    /// Between heading-up and north-up.
    public static let navHeadingToggle = SDLButtonName(rawValue: "NAV_HEADING_TOGGLE")
    /// Select (a knob's press).
    public static let ok = SDLButtonName(rawValue: "OK")
    /// Seek left (a media key: SDL Core refuses it to a navigation app).
    public static let seekLeft = SDLButtonName(rawValue: "SEEKLEFT")
    /// Seek right (a media key).
    public static let seekRight = SDLButtonName(rawValue: "SEEKRIGHT")
    /// Tune up (a media key).
    public static let tuneUp = SDLButtonName(rawValue: "TUNEUP")
    /// Tune down (a media key).
    public static let tuneDown = SDLButtonName(rawValue: "TUNEDOWN")
}

/// How long a button was held (RPC `ButtonPressMode`).
public enum SDLButtonPressMode: String, Sendable, Equatable, Codable {
    /// A short press.
    case short = "SHORT"
    /// A long press.
    case long = "LONG"
}

/// An OnButtonPress from the head unit.
public struct SDLButtonPress: Sendable, Equatable, Codable {
    /// Which button.
    public var buttonName: SDLButtonName
    /// Short or long.
    public var buttonPressMode: SDLButtonPressMode

    /// A press.
    public init(buttonName: SDLButtonName, buttonPressMode: SDLButtonPressMode = .short) {
        self.buttonName = buttonName
        self.buttonPressMode = buttonPressMode
    }
}

/// `SubscribeButton` and `UnsubscribeButton` request parameters.
package struct SDLButtonSubscriptionRequest: Sendable, Equatable, Codable {
    package var buttonName: SDLButtonName

    package init(buttonName: SDLButtonName) { self.buttonName = buttonName }
}

/// The part of the RegisterAppInterface response the connection reads: the buttons the head
/// unit has and whether its screen takes touches. Entries that do not decode are skipped, so
/// one odd entry hides only itself.
package struct SDLRegistrationFacts: Sendable, Equatable, Decodable {
    /// Every button the head unit says it has, at most ``maximumButtons``.
    package var buttons: [SDLButtonName] = []
    /// `displayCapabilities.screenParams.touchEventAvailable.pressAvailable`; nil when absent.
    package var touchAvailable: Bool?
    /// `pcmStreamCapabilities`: the PCM its audio service takes; nil when absent or not PCM.
    package var pcmFormat: SDLPCMFormat?
    /// `vehicleType.make`: which car maker's security library serves this head unit; at most
    /// 256 characters, nil when absent.
    package var vehicleMake: String?

    /// More than any head unit has; a hostile list stops here.
    package static let maximumButtons = 256

    enum CodingKeys: String, CodingKey { case buttonCapabilities, displayCapabilities, pcmStreamCapabilities, vehicleType }

    private struct VehicleType: Decodable { var make: String? }

    private struct PCM: Decodable {
        var samplingRate: String?
        var bitsPerSample: String?
        var audioType: String?
    }

    private struct Display: Decodable {
        struct Screen: Decodable {
            struct Touch: Decodable { var pressAvailable: Bool? }
            var touchEventAvailable: Touch?
        }
        var screenParams: Screen?
    }

    private struct LenientButton: Decodable {
        var name: SDLButtonName?
        enum CodingKeys: String, CodingKey { case name }
        init(from decoder: any Decoder) throws {
            name = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(SDLButtonName.self, forKey: .name)
        }
    }

    package init(buttons: [SDLButtonName] = [], touchAvailable: Bool? = nil) {
        self.buttons = buttons
        self.touchAvailable = touchAvailable
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let pcm = (try? container.decodeIfPresent(PCM.self, forKey: .pcmStreamCapabilities)) ?? nil {
            pcmFormat = SDLPCMFormat(samplingRate: pcm.samplingRate, bitsPerSample: pcm.bitsPerSample, audioType: pcm.audioType)
        }
        touchAvailable = ((try? container.decodeIfPresent(Display.self, forKey: .displayCapabilities)) ?? nil)?
            .screenParams?.touchEventAvailable?.pressAvailable
        vehicleMake = ((try? container.decodeIfPresent(VehicleType.self, forKey: .vehicleType)) ?? nil)?.make
            .map { String($0.prefix(256)) }
        let entries = (try? container.decodeIfPresent([LenientButton].self, forKey: .buttonCapabilities)) ?? nil
        var seen = Set<SDLButtonName>()
        for name in (entries ?? []).compactMap(\.name) where seen.count < Self.maximumButtons && seen.insert(name).inserted {
            buttons.append(name)
        }
    }
}

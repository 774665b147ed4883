import Foundation

/// What the car's ambient light sensor says (`headLampStatus.ambientLightSensorStatus` in
/// OnVehicleData): the head unit's day/night signal.
public enum SDLAmbientLight: String, Sendable, Equatable, Codable {
    case day = "DAY"
    case night = "NIGHT"
    case twilight1 = "TWILIGHT_1"
    case twilight2 = "TWILIGHT_2"
    case twilight3 = "TWILIGHT_3"
    case twilight4 = "TWILIGHT_4"
    case unknown = "UNKNOWN"
    case invalid = "INVALID"

    /// Whether the map should be dark: night and the two darker twilights. Nil when the sensor
    /// does not know.
    public var isDark: Bool? {
        switch self {
        case .night, .twilight3, .twilight4: true
        case .day, .twilight1, .twilight2: false
        case .unknown, .invalid: nil
        }
    }
}

/// `SubscribeVehicleData` for the head lamps only: the one vehicle datum a map needs.
package struct SDLHeadLampSubscriptionRequest: Sendable, Equatable, Codable {
    package var headLampStatus = true
    package init() {}
}

/// The parts of head-unit notifications the connection reads besides video: OnVehicleData's
/// ambient light, OnDriverDistraction's state, OnLanguageChange's languages. Fields that do not
/// decode are left out rather than failing the notification.
package struct SDLVehicleDataNotification: Decodable {
    package var ambientLight: SDLAmbientLight?

    enum CodingKeys: String, CodingKey { case headLampStatus }
    private struct HeadLamps: Decodable { var ambientLightSensorStatus: String? }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let lamps = (try? container.decodeIfPresent(HeadLamps.self, forKey: .headLampStatus)) ?? nil
        ambientLight = lamps?.ambientLightSensorStatus.flatMap(SDLAmbientLight.init(rawValue:))
    }
}

/// OnDriverDistraction: `DD_ON` while the car moves (or the head unit otherwise restricts the
/// driver's interaction).
package struct SDLDriverDistraction: Decodable {
    package var state: String
}

/// OnLanguageChange, and the languages of the RegisterAppInterface response.
package struct SDLLanguages: Decodable, Equatable {
    package var language: String?
    package var hmiDisplayLanguage: String?
}

/// OnPermissionsChange: what the head unit's policy lets the app do, RPC by RPC, in which HMI
/// levels and with which parameters. Entries that do not decode are skipped.
package struct SDLPermissions: Sendable, Equatable, Decodable {
    /// What one RPC may do.
    package struct Permission: Sendable, Equatable {
        /// The HMI levels it is allowed in.
        package var levels: Set<SDLHMILevel>
        /// The parameters it may carry (vehicle data names); nil when the head unit lists none.
        package var parameters: Set<String>?
        /// Whether it must travel encrypted (SDL-0207's `requireEncryption` of the item).
        package var requiresEncryption = false
    }

    /// By RPC name (`SendHapticData`, `SubscribeVehicleData`, ...), at most ``maximumItems``.
    package var byRPC: [String: Permission] = [:]
    /// The app-wide `requireEncryption`: the policy wants the app's RPC service protected.
    package var requiresEncryption = false

    /// More than SDL has RPCs; a hostile list stops here.
    package static let maximumItems = 512

    enum CodingKeys: String, CodingKey { case permissionItem, requireEncryption }

    private struct Item: Decodable {
        struct Names: Decodable { var allowed: [String]? }
        var rpcName: String?
        var hmiPermissions: Names?
        var parameterPermissions: Names?
        var requireEncryption: Bool?
    }

    private struct LenientItem: Decodable {
        var item: Item?
        init(from decoder: any Decoder) throws { item = try? Item(from: decoder) }
    }

    package init(byRPC: [String: Permission] = [:], requiresEncryption: Bool = false) {
        self.byRPC = byRPC
        self.requiresEncryption = requiresEncryption
    }

    /// Whether `rpc` must be sent encrypted: its item says so (SDL Core answers it
    /// ENCRYPTION_NEEDED otherwise).
    package func requiresEncryption(_ rpc: String) -> Bool { byRPC[rpc]?.requiresEncryption ?? false }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let items = try container.decode([LenientItem].self, forKey: .permissionItem)
        for entry in items.prefix(Self.maximumItems) {
            guard let item = entry.item, let name = item.rpcName else { continue }
            let levels = Set((item.hmiPermissions?.allowed ?? []).compactMap(SDLHMILevel.init(rawValue:)))
            byRPC[name] = Permission(levels: levels, parameters: item.parameterPermissions?.allowed.map { Set($0.prefix(256)) },
                                     requiresEncryption: item.requireEncryption ?? false)
        }
        requiresEncryption = (try? container.decodeIfPresent(Bool.self, forKey: .requireEncryption)) ?? nil ?? false
    }
}

import Foundation

/// An app's HMI level: how visible it is on the head unit.
public enum SDLHMILevel: String, Sendable, Equatable, Codable {
    /// On screen, in front.
    case full = "FULL"
    /// Partly visible (navigation under another app's overlay); streaming continues.
    case limited = "LIMITED"
    /// Running but not visible.
    case background = "BACKGROUND"
    /// Registered, never opened or closed by the user.
    case none = "NONE"
}

/// Whether the head unit shows our video right now.
public enum SDLVideoStreamingState: String, Sendable, Equatable, Codable {
    /// The head unit shows the video.
    case streamable = "STREAMABLE"
    /// The app must stop its video service.
    case notStreamable = "NOT_STREAMABLE"
}

/// An `OnHMIStatus` notification.
public struct SDLHMIStatus: Sendable, Equatable, Codable {
    /// The app's level.
    public var hmiLevel: SDLHMILevel
    /// Audio state, as sent (AUDIBLE, ATTENUATED, NOT_AUDIBLE).
    public var audioStreamingState: String?
    /// What the head unit's HMI is doing (MAIN, MENU, ALERT...).
    public var systemContext: String?
    /// The video state; absent means streamable (older head units).
    public var videoStreamingState: SDLVideoStreamingState?
    /// The window the status is about; absent or 0 is the main window.
    public var windowID: Int?

    /// A status from its fields.
    public init(hmiLevel: SDLHMILevel, audioStreamingState: String? = "NOT_AUDIBLE", systemContext: String? = "MAIN",
                videoStreamingState: SDLVideoStreamingState? = .streamable, windowID: Int? = nil) {
        self.hmiLevel = hmiLevel
        self.audioStreamingState = audioStreamingState
        self.systemContext = systemContext
        self.videoStreamingState = videoStreamingState
        self.windowID = windowID
    }

    /// Whether video may be sent: FULL or LIMITED, and not NOT_STREAMABLE (absent counts as
    /// streamable, as in both reference libraries). Sending outside this gets the app
    /// unregistered for a protocol violation.
    public var allowsVideo: Bool {
        (hmiLevel == .full || hmiLevel == .limited) && videoStreamingState != .notStreamable
    }

    /// Whether audio may be streamed: FULL or LIMITED, and the head unit plays the app's audio
    /// (`audioStreamingState` AUDIBLE, or ATTENUATED under another source).
    public var allowsAudio: Bool {
        (hmiLevel == .full || hmiLevel == .limited)
            && (audioStreamingState == "AUDIBLE" || audioStreamingState == "ATTENUATED")
    }
}

/// The fields every RPC response carries.
public struct SDLResponseStatus: Sendable, Equatable, Codable {
    /// Whether the request succeeded.
    public var success: Bool
    /// SUCCESS, REJECTED, DISALLOWED, INVALID_DATA...
    public var resultCode: String
    /// The head unit's explanation, if any.
    public var info: String?

    /// A response status.
    public init(success: Bool, resultCode: String, info: String? = nil) {
        self.success = success
        self.resultCode = resultCode
        self.info = info
    }
}

/// The RPC spec version a request speaks (`syncMsgVersion`).
package struct SDLMessageVersion: Sendable, Equatable, Codable {
    /// Major version.
    package var majorVersion: Int
    /// Minor version.
    package var minorVersion: Int
    /// Patch version.
    package var patchVersion: Int?

    /// A version from its parts.
    package init(majorVersion: Int, minorVersion: Int, patchVersion: Int?) {
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.patchVersion = patchVersion
    }
}

/// `RegisterAppInterface` request parameters.
package struct SDLRegisterAppInterfaceRequest: Sendable, Equatable, Codable {
    /// The RPC spec version spoken: 8.0.0.
    package var syncMsgVersion = SDLMessageVersion(majorVersion: 8, minorVersion: 0, patchVersion: 0)
    /// Name shown on the head unit.
    package var appName: String
    /// False: a navigation app is not a media app.
    package var isMediaApplication = false
    /// Language of the app's voice prompts.
    package var languageDesired = "EN-US"
    /// Language of the app's text.
    package var hmiDisplayLanguageDesired = "EN-US"
    /// ["NAVIGATION"]: the type that may stream video.
    package var appHMIType = ["NAVIGATION"]
    /// The policy id of the app.
    package var appID: String
    /// The full app id (policy tables from SDL 5 use it).
    package var fullAppID: String?

    /// A navigation app's registration.
    package init(appName: String, appID: String, fullAppID: String? = nil) {
        self.appName = appName
        self.appID = appID
        self.fullAppID = fullAppID
    }
}

/// `GetSystemCapability` request parameters.
package struct SDLGetSystemCapabilityRequest: Sendable, Equatable, Codable {
    /// VIDEO_STREAMING here.
    package var systemCapabilityType: String
    /// True: also send `OnSystemCapabilityUpdated` on changes (resizes).
    package var subscribe: Bool?

    /// A request for a capability.
    package init(systemCapabilityType: String, subscribe: Bool?) {
        self.systemCapabilityType = systemCapabilityType
        self.subscribe = subscribe
    }
}

/// A `SystemCapability` holding a video streaming capability, as in GetSystemCapability
/// responses and OnSystemCapabilityUpdated.
package struct SDLSystemCapability: Sendable, Equatable, Codable {
    /// The capability's kind (VIDEO_STREAMING, DISPLAYS...).
    package var systemCapabilityType: String
    /// Present for VIDEO_STREAMING.
    package var videoStreamingCapability: VideoStreamingCapability?

    /// A video streaming system capability.
    package init(videoStreamingCapability: VideoStreamingCapability) {
        self.systemCapabilityType = "VIDEO_STREAMING"
        self.videoStreamingCapability = videoStreamingCapability
    }
}

/// The parameters of a GetSystemCapability response and an OnSystemCapabilityUpdated.
package struct SDLSystemCapabilityParameters: Codable {
    var success: Bool?
    var resultCode: String?
    var info: String?
    var systemCapability: SDLSystemCapability?

    package init(success: Bool? = nil, resultCode: String? = nil, info: String? = nil,
                 systemCapability: SDLSystemCapability?) {
        self.success = success
        self.resultCode = resultCode
        self.info = info
        self.systemCapability = systemCapability
    }
}

/// `SendHapticData` parameters.
package struct SDLSendHapticDataRequest: Codable, Equatable {
    package struct Rect: Codable, Equatable {
        package var x: Double
        package var y: Double
        package var width: Double
        package var height: Double

        package init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
    }

    package struct HapticRect: Codable, Equatable {
        package var id: Int
        package var rect: Rect

        package init(id: Int, rect: Rect) {
            self.id = id
            self.rect = rect
        }
    }

    package var hapticRectData: [HapticRect]

    package init(rectangles: [HapticRect]) {
        hapticRectData = rectangles
    }
}

/// `OnAppCapabilityUpdated` parameters: the head unit's modes this app can stream, so the head
/// unit offers only those in later resizes.
package struct SDLOnAppCapabilityUpdated: Codable, Equatable {
    struct AppCapability: Codable, Equatable {
        var appCapabilityType = "VIDEO_STREAMING"
        var videoStreamingCapability: VideoStreamingCapability
    }

    var appCapability: AppCapability

    package init(_ capability: VideoStreamingCapability) {
        appCapability = AppCapability(videoStreamingCapability: capability)
    }
}

extension VideoStreamingCapability {
    /// The capability an app reports with OnAppCapabilityUpdated for `modes` (flattened, in the
    /// head unit's order): the first mode with all its fields, the others nested under it, each
    /// mode once (a resolution and scale seen before is left out), every field kept. Nil when
    /// `modes` is empty.
    public static func appCapability(listing modes: [VideoStreamingCapability]) -> VideoStreamingCapability? {
        struct ModeKey: Hashable { var resolution: ImageResolution?; var scale: Double? }
        var seen = Set<ModeKey>()
        var unique: [VideoStreamingCapability] = []
        for mode in modes {
            var flat = mode
            flat.additionalVideoStreamingCapabilities = nil
            if seen.insert(ModeKey(resolution: flat.preferredResolution, scale: flat.scale ?? 1)).inserted { unique.append(flat) }
        }
        guard var first = unique.first else { return nil }
        if unique.count > 1 { first.additionalVideoStreamingCapabilities = Array(unique.dropFirst()) }
        return first
    }
}

extension SDLRPCMessage {
    /// The video streaming capability inside a GetSystemCapability response or an
    /// OnSystemCapabilityUpdated, decoded with the capability's own checks and warnings; nil when
    /// the message carries another kind of capability.
    package func videoStreamingCapability() throws(SDLRPCError) -> VideoStreamingCapability? {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(json))
        } catch {
            throw .badParameters(functionID, "not JSON: \(error)")
        }
        guard let parameters = object as? [String: Any] else { throw .badParameters(functionID, "not a JSON object") }
        guard let system = parameters["systemCapability"] as? [String: Any],
              let video = system["videoStreamingCapability"] else { return nil }
        do {
            let data = try JSONSerialization.data(withJSONObject: video)
            return try VideoStreamingCapability(json: data)
        } catch let error as VideoStreamingCapabilityError {
            throw .badParameters(functionID, error.description)
        } catch {
            throw .badParameters(functionID, String(describing: error))
        }
    }
}

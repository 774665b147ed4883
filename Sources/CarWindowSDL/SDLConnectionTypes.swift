import CarWindowProjection
/// One (resolution, format) pair to offer the head unit in a video StartService.
public struct SDLVideoCandidate: Sendable, Hashable, CustomStringConvertible {
    /// The encoded size to ask for.
    public var resolution: ImageResolution
    /// RAW or RTP H.264.
    public var format: VideoStreamingFormat

    /// A candidate.
    public init(resolution: ImageResolution, format: VideoStreamingFormat) {
        self.resolution = resolution
        self.format = format
    }

    /// Every resolution with every format, resolutions first in the given order (the most
    /// wanted size is tried in each format before a smaller size).
    public static func combinations(resolutions: [ImageResolution], formats: [VideoStreamingFormat]) -> [SDLVideoCandidate] {
        resolutions.flatMap { resolution in formats.map { SDLVideoCandidate(resolution: resolution, format: $0) } }
    }

    /// `800x480 H264/RAW`.
    public var description: String { "\(resolution) \(format)" }
}

/// How reconnecting backs off: `initialDelay x multiplier^attempt`, capped at `maximumDelay`.
public struct SDLReconnectPolicy: Sendable, Equatable {
    /// Wait before the first retry.
    public var initialDelay: Duration
    /// Growth per failed attempt.
    public var multiplier: Double
    /// The longest wait.
    public var maximumDelay: Duration
    /// Attempts before giving up; nil retries for ever, 0 never reconnects.
    public var maximumAttempts: Int?

    /// A policy; by default 0.25 s doubling up to 10 s, for ever.
    public init(initialDelay: Duration = .milliseconds(250), multiplier: Double = 2, maximumDelay: Duration = .seconds(10),
                maximumAttempts: Int? = nil) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// Never reconnect: a lost connection stays lost.
    public static let never = SDLReconnectPolicy(maximumAttempts: 0)

    /// The wait before attempt `attempt` (0-based).
    public func delay(beforeAttempt attempt: Int) -> Duration {
        let growth = multiplier.isFinite && multiplier >= 1 ? multiplier : 1
        let factor = pow(growth, Double(min(attempt, 64)))
        let scaled = initialDelay * (factor.isFinite ? min(factor, 1e9) : 1e9)
        return min(scaled, maximumDelay)
    }
}

/// What ``SDLConnection`` reports, in order, on ``SDLConnection/events``.
public enum SDLConnectionEvent: Sendable, Equatable {
    /// The RPC service is open and the app registered (also after each reconnect).
    case registered(SDLSessionInfo)
    /// A new HMI status for the main window.
    case hmiStatusChanged(SDLHMIStatus)
    /// Whether video may be sent changed (FULL/LIMITED and not NOT_STREAMABLE).
    case videoAllowedChanged(Bool)
    /// The video capability, from GetSystemCapability or a resize (OnSystemCapabilityUpdated,
    /// already filled in from the previous capability).
    case capabilityChanged(VideoStreamingCapability)
    /// A button the app subscribed to was pressed (OnButtonPress); see
    /// ``SDLConnection/setButtonSubscriptions(_:)``.
    case buttonPressed(SDLButtonPress)
    /// The car's ambient light sensor changed (OnVehicleData), once the head lamps are
    /// subscribed (``SDLConnection/setFollowsAmbientLight(_:)``).
    case ambientLightChanged(SDLAmbientLight)
    /// Driver distraction turned on (the car moves) or off (OnDriverDistraction).
    case driverDistractionChanged(Bool)
    /// The head unit's language changed (OnLanguageChange): voice and display language. Core
    /// then unregisters the app, which registers again in the new language.
    case languageChanged(language: String?, displayLanguage: String?)
    /// A touch, read from OnTouchEvent and checked (`SDLTouchEvent.decode(json:)`), in head-unit
    /// pixels (divide by the scale with `TouchEvent.inRenderedPixels(scale:)`).
    case touch(TouchEvent)
    /// A video service opened with these (authoritative) parameters: encode at this size, and
    /// start with an IDR.
    case videoStarted(SDLVideoServiceParameters)
    /// The video service closed (HMI lost, stop, disconnect).
    case videoStopped
    /// Whether audio may be streamed changed (FULL/LIMITED and AUDIBLE or ATTENUATED).
    case audioAllowedChanged(Bool)
    /// The video service could not be opened: every candidate was refused.
    case videoFailed(SDLConnectionError)
    /// A unit was dropped: the next one sent must be an IDR (``SDLConnection/needsKeyframe``).
    case keyframeNeeded
    /// A service now runs protected (the head unit's StartServiceACK carried the E bit).
    case serviceProtected(SDLServiceType)
    /// The security layer failed (a handshake, a certificate, a frame that did not decrypt) and
    /// was reset; protected services that were open are closed and start again with a new
    /// handshake.
    case securityFailed(SDLSecurityError)
    /// The connection was lost; reconnecting follows unless the policy forbids it.
    case disconnected(SDLConnectionError)
    /// A reconnect attempt will start after `delay`.
    case reconnecting(attempt: Int, delay: Duration)
    /// Reconnected and registered again after a loss.
    case reconnected
    /// The connection ended for good (``SDLConnection/stop()`` or reconnecting gave up).
    case stopped
}

/// Why the connection or one of its operations failed.
public enum SDLConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The transport failed.
    case transport(SDLTransportError)
    /// The head unit broke the framing; the connection was closed.
    case protocolViolation(SDLProtocolError)
    /// An RPC could not be read or written.
    case rpc(SDLRPCError)
    /// No answer in time.
    case timedOut(String)
    /// A StartService was refused.
    case serviceRejected(SDLServiceType, SDLServiceRejection)
    /// Every video candidate was refused; the last rejection is attached.
    case videoRejected(tried: [SDLVideoCandidate], last: SDLServiceRejection)
    /// A request was answered with failure.
    case requestFailed(SDLFunctionID, resultCode: String, info: String?)
    /// No connection is up.
    case notConnected
    /// ``SDLConnection/stop()`` was called.
    case stopped
    /// Video is not allowed in the current HMI state.
    case videoNotAllowed
    /// Audio is not allowed in the current HMI state, or no audio service is open.
    case audioNotAllowed
    /// The head unit does not take haptic data (hapticSpatialDataSupported is not true).
    case hapticsNotSupported
    /// No video candidates were given.
    case noVideoCandidates
    /// The head unit read nothing while the queue of control and RPC messages filled up to its
    /// limits; the connection was dropped to bound memory.
    case headUnitNotReading(limits: SDLOutgoingQueueLimits)
    /// A service that ``SDLSecurityConfiguration/policy`` requires protected could not be: the
    /// reason says why (no library for the make, a head unit without security, a failed handshake).
    case protectionUnavailable(SDLServiceType, String)
    /// The security layer failed while the service ran (encryption, the head unit's error).
    case security(SDLSecurityError)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .transport(let error): "transport: \(error)"
        case .protocolViolation(let error): "protocol violation by the head unit: \(error)"
        case .rpc(let error): "RPC: \(error)"
        case .timedOut(let what): "\(what) timed out; the head unit does not answer"
        case .serviceRejected(let service, let rejection): "the head unit refused the \(service) service: \(rejection)"
        case .videoRejected(let tried, let last): "the head unit refused every video format tried (\(tried.map(\.description).joined(separator: ", "))); last: \(last)"
        case .requestFailed(let function, let code, let info): "\(function) failed with \(code)" + (info.map { ": \($0)" } ?? "")
        case .notConnected: "not connected to a head unit"
        case .stopped: "the connection was stopped"
        case .videoNotAllowed: "video is not allowed now: the app must be FULL or LIMITED and streamable"
        case .audioNotAllowed: "audio is not allowed now: the app must be FULL or LIMITED and AUDIBLE or ATTENUATED, with its audio service open"
        case .hapticsNotSupported: "the head unit does not support haptic data (hapticSpatialDataSupported is not true)"
        case .noVideoCandidates: "no video resolution and format to offer"
        case .protectionUnavailable(let service, let reason): "the \(service) service must be protected but cannot be: \(reason)"
        case .security(let error): "security layer: \(error)"
        case .headUnitNotReading(let limits): "the head unit stopped reading: \(limits.maximumMessages) messages or \(limits.maximumBytes) bytes waited to be written, so the connection was dropped to bound memory; check the head unit, the link reconnects"
        }
    }
}

import Foundation

import Foundation
import Logging
import CarWindowSystemSupport
import CarWindowVideoCore

/// A size in pixels as SmartDeviceLink sends it (the RPC struct `ImageResolution`); the session
/// speaks `VideoSize` (``videoSize``, ``init(_:)``).
public struct ImageResolution: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Pixels across (`resolutionWidth`).
    public var width: Int
    /// Pixels down (`resolutionHeight`).
    public var height: Int

    /// A size in pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// The same size as the session and the sinks take it.
    public init(_ size: VideoSize) {
        self.init(width: size.width, height: size.height)
    }

    /// This size as the session and the sinks take it.
    public var videoSize: VideoSize { VideoSize(width: width, height: height) }

    /// `800x480`, the form logs and refusal reasons use.
    public var description: String { "\(width)x\(height)" }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case width = "resolutionWidth"
        case height = "resolutionHeight"
    }

    /// Decodes `resolutionWidth` and `resolutionHeight`. Both are mandatory in the RPC spec, so
    /// a missing one is an error rather than a guess.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        CapabilityFieldAudit.noteUnknownFields(in: decoder, known: CodingKeys.allCases.map(\.rawValue))
        width = try container.decodeInteger(forKey: .width)
        height = try container.decodeInteger(forKey: .height)
    }
}

/// How video travels inside the protocol's video service.
public enum VideoStreamingProtocol: String, Sendable, Hashable, Codable, CaseIterable {
    /// Annex-B byte stream.
    case raw = "RAW"
    /// RFC 6184 RTP inside RFC 4571 framing.
    case rtp = "RTP"
    /// RTSP: listed by some head units, not produced here.
    case rtsp = "RTSP"
    /// RTMP: listed by some head units, not produced here.
    case rtmp = "RTMP"
    /// WebM: listed by some head units, not produced here.
    case webm = "WEBM"
}

/// The video codecs a head unit can name.
public enum VideoStreamingCodec: String, Sendable, Hashable, Codable, CaseIterable {
    /// H.264: the only codec this library encodes.
    case h264 = "H264"
    /// H.265 (HEVC).
    case h265 = "H265"
    /// Theora.
    case theora = "Theora"
    /// VP8.
    case vp8 = "VP8"
    /// VP9.
    case vp9 = "VP9"
}

/// One protocol and codec pair the head unit accepts.
public struct VideoStreamingFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How the stream is framed.
    public var `protocol`: VideoStreamingProtocol
    /// How pictures are compressed.
    public var codec: VideoStreamingCodec

    /// A protocol and codec pair.
    public init(protocol: VideoStreamingProtocol, codec: VideoStreamingCodec) {
        self.protocol = `protocol`
        self.codec = codec
    }

    /// H.264 as an Annex-B byte stream: what every head unit accepts when it says nothing.
    public static let h264Raw = VideoStreamingFormat(protocol: .raw, codec: .h264)
    /// H.264 in RTP packets.
    public static let h264RTP = VideoStreamingFormat(protocol: .rtp, codec: .h264)

    /// `H264/RAW`, the form logs use.
    public var description: String { "\(codec.rawValue)/\(self.protocol.rawValue)" }
}

/// What a head unit says about the video it can show (RPC `VideoStreamingCapability`), as it
/// travels: SmartDeviceLink's key names and units. The session takes `headUnitDisplay` (CarWindowSDL).
///
/// Every field is optional because head units leave out what they do not know and resize
/// updates carry only what changed; ``filling(from:)`` restores the rest.
public struct VideoStreamingCapability: Sendable, Equatable, Codable {
    /// The size of the head unit's video area in its own pixels.
    public var preferredResolution: ImageResolution?
    /// The most the head unit can take, in kbit/s.
    public var maxBitrate: Int?
    /// Accepted formats in the head unit's order of preference.
    public var supportedFormats: [VideoStreamingFormat]?
    /// Whether the head unit wants haptic rectangles (`SendHapticData`).
    public var hapticSpatialDataSupported: Bool?
    /// The physical diagonal of the screen in inches.
    public var diagonalScreenSize: Double?
    /// The screen's pixel density.
    public var pixelPerInch: Double?
    /// Display pixels per video pixel, as sent; the session clamps it
    /// (`HeadUnitDisplay.effectiveScale`).
    public var scale: Double?
    /// The frame rate the head unit wants; our frame rate follows it unless the app asks for less.
    public var preferredFPS: Int?
    /// Other modes the head unit can show, in its order of preference; each may nest further.
    public var additionalVideoStreamingCapabilities: [VideoStreamingCapability]?

    /// A capability from its fields; all absent by default, as a head unit may send them.
    public init(preferredResolution: ImageResolution? = nil, maxBitrate: Int? = nil,
                supportedFormats: [VideoStreamingFormat]? = nil, hapticSpatialDataSupported: Bool? = nil,
                diagonalScreenSize: Double? = nil, pixelPerInch: Double? = nil, scale: Double? = nil,
                preferredFPS: Int? = nil, additionalVideoStreamingCapabilities: [VideoStreamingCapability]? = nil) {
        self.preferredResolution = preferredResolution
        self.maxBitrate = maxBitrate
        self.supportedFormats = supportedFormats
        self.hapticSpatialDataSupported = hapticSpatialDataSupported
        self.diagonalScreenSize = diagonalScreenSize
        self.pixelPerInch = pixelPerInch
        self.scale = scale
        self.preferredFPS = preferredFPS
        self.additionalVideoStreamingCapabilities = additionalVideoStreamingCapabilities
    }

    /// The H.264 formats we can send (RAW, RTP) in the head unit's order; H.264/RAW when the
    /// head unit lists none, which is both reference libraries' fallback.
    public var streamableFormats: [VideoStreamingFormat] {
        guard let supportedFormats else { return [.h264Raw] }
        return supportedFormats.filter { $0 == .h264Raw || $0 == .h264RTP }
    }

    /// This update with every missing field taken from `current`, as OnSystemCapabilityUpdated
    /// (a resize) needs: a head unit may send only the fields that changed.
    public func filling(from current: VideoStreamingCapability) -> VideoStreamingCapability {
        VideoStreamingCapability(
            preferredResolution: preferredResolution ?? current.preferredResolution,
            maxBitrate: maxBitrate ?? current.maxBitrate,
            supportedFormats: supportedFormats ?? current.supportedFormats,
            hapticSpatialDataSupported: hapticSpatialDataSupported ?? current.hapticSpatialDataSupported,
            diagonalScreenSize: diagonalScreenSize ?? current.diagonalScreenSize,
            pixelPerInch: pixelPerInch ?? current.pixelPerInch,
            scale: scale ?? current.scale,
            preferredFPS: preferredFPS ?? current.preferredFPS,
            additionalVideoStreamingCapabilities: additionalVideoStreamingCapabilities
                ?? current.additionalVideoStreamingCapabilities)
    }

    /// This capability and all its nested ones, depth-first in the head unit's order, each
    /// without nested capabilities: the same order and inheritance as
    /// `HeadUnitDisplay.allModes`, so that the `n`th of each describes the same mode.
    ///
    /// A nested mode is another layout of the same screen and link, so it inherits the
    /// stream-wide fields it leaves out (bitrate, formats, frame rate, haptics, diagonal); its
    /// resolution, scale and pixel density are its own.
    public var allCapabilities: [VideoStreamingCapability] {
        var result: [VideoStreamingCapability] = []
        appendFlattened(to: &result, inheriting: nil)
        return result
    }

    private func appendFlattened(to result: inout [VideoStreamingCapability], inheriting parent: VideoStreamingCapability?) {
        var own = self
        own.additionalVideoStreamingCapabilities = nil
        if let parent {
            own.maxBitrate = own.maxBitrate ?? parent.maxBitrate
            own.supportedFormats = own.supportedFormats ?? parent.supportedFormats
            own.preferredFPS = own.preferredFPS ?? parent.preferredFPS
            own.hapticSpatialDataSupported = own.hapticSpatialDataSupported ?? parent.hapticSpatialDataSupported
            own.diagonalScreenSize = own.diagonalScreenSize ?? parent.diagonalScreenSize
        }
        result.append(own)
        for nested in additionalVideoStreamingCapabilities ?? [] {
            nested.appendFlattened(to: &result, inheriting: own)
        }
    }

    /// `kilobits` x 1000, saturating at the ends of `Int` so that no value off the wire traps;
    /// a non-positive value stays non-positive, which the encoder settings ignore.
    package static func bitsPerSecond(kilobits: Int) -> Int {
        let (bits, overflow) = kilobits.multipliedReportingOverflow(by: 1000)
        guard overflow else { return bits }
        return kilobits > 0 ? .max : .min
    }

    // MARK: Decoding

    enum CodingKeys: String, CodingKey, CaseIterable {
        case preferredResolution, maxBitrate, supportedFormats, hapticSpatialDataSupported
        case diagonalScreenSize, pixelPerInch, scale, preferredFPS, additionalVideoStreamingCapabilities
    }

    /// How deep `additionalVideoStreamingCapabilities` may nest. Real head units nest one level;
    /// the bound keeps hostile input from recursing without end.
    public static let maximumNesting = 8

    /// Decodes with SDL's key names; prefer ``init(json:logger:)``, which logs the ignored
    /// fields once and throws ``VideoStreamingCapabilityError`` with key paths.
    public init(from decoder: any Decoder) throws {
        let nesting = decoder.codingPath.filter { $0.stringValue == CodingKeys.additionalVideoStreamingCapabilities.rawValue }.count
        guard nesting <= Self.maximumNesting else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: CapabilityFieldAudit.nestingMarker))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        CapabilityFieldAudit.noteUnknownFields(in: decoder, known: CodingKeys.allCases.map(\.rawValue))
        preferredResolution = try container.decodeIfPresent(ImageResolution.self, forKey: .preferredResolution)
        maxBitrate = try container.decodeIntegerIfPresent(forKey: .maxBitrate)
        if let entries = try container.decodeIfPresent([FormatEntry].self, forKey: .supportedFormats) {
            supportedFormats = entries.compactMap(\.format)
        }
        hapticSpatialDataSupported = try container.decodeIfPresent(Bool.self, forKey: .hapticSpatialDataSupported)
        diagonalScreenSize = try container.decodeIfPresent(Double.self, forKey: .diagonalScreenSize)
        pixelPerInch = try container.decodeIfPresent(Double.self, forKey: .pixelPerInch)
        scale = try container.decodeIfPresent(Double.self, forKey: .scale)
        preferredFPS = try container.decodeIntegerIfPresent(forKey: .preferredFPS)
        additionalVideoStreamingCapabilities = try container.decodeIfPresent(
            [VideoStreamingCapability].self, forKey: .additionalVideoStreamingCapabilities)
    }

    /// A format entry whose protocol or codec may be one a newer head unit invented: such an
    /// entry is dropped with a warning instead of failing the whole capability.
    private struct FormatEntry: Decodable {
        var format: VideoStreamingFormat?

        enum CodingKeys: String, CodingKey, CaseIterable { case `protocol`, codec }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            CapabilityFieldAudit.noteUnknownFields(in: decoder, known: CodingKeys.allCases.map(\.rawValue))
            let protocolName = try container.decode(String.self, forKey: .protocol)
            let codecName = try container.decode(String.self, forKey: .codec)
            if let videoProtocol = VideoStreamingProtocol(rawValue: protocolName),
               let codec = VideoStreamingCodec(rawValue: codecName) {
                format = VideoStreamingFormat(protocol: videoProtocol, codec: codec)
            } else {
                format = nil
                CapabilityFieldAudit.note(
                    "\(CapabilityFieldAudit.keyPath(decoder.codingPath)) (unknown format \(codecName)/\(protocolName))",
                    in: decoder)
            }
        }
    }

    /// The logger for capability warnings.
    public static let defaultLogger = Logger(label: "carwindow.capabilities")

    /// Decodes the JSON of a `videoStreamingCapability` object with SmartDeviceLink's key names.
    ///
    /// Fields this library does not know (and formats it cannot name) are skipped with one
    /// warning that lists them all, so a newer head unit still streams; a field of the wrong type
    /// fails with its key path, because guessing a size or bitrate would stream something wrong.
    public init(json: Data, logger: Logger = VideoStreamingCapability.defaultLogger) throws(VideoStreamingCapabilityError) {
        let audit = CapabilityFieldAudit()
        let decoder = JSONDecoder()
        decoder.userInfo[CapabilityFieldAudit.userInfoKey] = audit
        do {
            self = try decoder.decode(VideoStreamingCapability.self, from: json)
        } catch let error as DecodingError {
            throw VideoStreamingCapabilityError(error)
        } catch {
            throw .notJSON(String(describing: error))
        }
        let ignored = audit.ignored
        if !ignored.isEmpty {
            logger.warning("video streaming capability: ignored \(ignored.joined(separator: ", "))")
        }
    }
}

/// Why a video streaming capability could not be decoded.
public enum VideoStreamingCapabilityError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not a JSON object.
    case notJSON(String)
    /// A field holds the wrong JSON type (or a number that does not fit).
    case wrongType(keyPath: String, detail: String)
    /// A mandatory field (a resolution side, a format's protocol or codec) is missing.
    case missingField(keyPath: String)
    /// `additionalVideoStreamingCapabilities` nests deeper than ``VideoStreamingCapability/maximumNesting``.
    case nestingTooDeep(keyPath: String)

    init(_ error: DecodingError) {
        switch error {
        case .typeMismatch(_, let context):
            self = .wrongType(keyPath: CapabilityFieldAudit.keyPath(context.codingPath), detail: context.debugDescription)
        case .valueNotFound(_, let context):
            self = .wrongType(keyPath: CapabilityFieldAudit.keyPath(context.codingPath), detail: context.debugDescription)
        case .keyNotFound(let key, let context):
            self = .missingField(keyPath: CapabilityFieldAudit.keyPath(context.codingPath + [key]))
        case .dataCorrupted(let context):
            if context.debugDescription == CapabilityFieldAudit.nestingMarker {
                self = .nestingTooDeep(keyPath: CapabilityFieldAudit.keyPath(context.codingPath))
            } else if context.codingPath.isEmpty {
                self = .notJSON(context.underlyingError.map { String(describing: $0) } ?? context.debugDescription)
            } else {
                self = .wrongType(keyPath: CapabilityFieldAudit.keyPath(context.codingPath), detail: context.debugDescription)
            }
        @unknown default:
            self = .notJSON(String(describing: error))
        }
    }

    /// What was wrong, where, and what to check.
    public var description: String {
        switch self {
        case .notJSON(let detail):
            "video streaming capability is not a JSON object (\(detail)); check what the head unit sent"
        case .wrongType(let keyPath, let detail):
            "video streaming capability field \(keyPath) has the wrong type (\(detail)); the head unit breaks the RPC spec"
        case .missingField(let keyPath):
            "video streaming capability lacks the mandatory field \(keyPath)"
        case .nestingTooDeep(let keyPath):
            "video streaming capability nests deeper than \(VideoStreamingCapability.maximumNesting) levels at \(keyPath)"
        }
    }
}

extension KeyedDecodingContainer {
    /// An integer field, read as a JSON number first: Foundation's own `Int` decoding reports a
    /// fractional number as invalid JSON without the key, and the error must name the field.
    func decodeInteger(forKey key: Key) throws -> Int {
        let number = try decode(Double.self, forKey: key)
        // 2^53: beyond it a Double no longer holds every integer, and no capability needs more.
        guard number.rounded() == number, abs(number) <= 9_007_199_254_740_992 else {
            throw DecodingError.typeMismatch(Int.self, .init(
                codingPath: codingPath + [key], debugDescription: "expected an integer, found \(number)"))
        }
        return Int(number)
    }

    func decodeIntegerIfPresent(forKey key: Key) throws -> Int? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        return try decodeInteger(forKey: key)
    }
}

/// Collects what one decode skipped so it is logged once, not once per nested object.
final class CapabilityFieldAudit: Sendable {
    static let userInfoKey = CodingUserInfoKey(rawValue: "carwindow.capabilityFieldAudit")!
    static let nestingMarker = "additionalVideoStreamingCapabilities nests too deep"

    private let names = LockedState<[String]>([])

    var ignored: [String] { names.withLock { $0 } }

    static func note(_ name: String, in decoder: any Decoder) {
        if let audit = decoder.userInfo[userInfoKey] as? CapabilityFieldAudit {
            audit.names.withLock { $0.append(name) }
        } else {
            VideoStreamingCapability.defaultLogger.warning("video streaming capability: ignored \(name)")
        }
    }

    /// Records the keys of the object being decoded that `known` does not name.
    static func noteUnknownFields(in decoder: any Decoder, known: [String]) {
        guard let container = try? decoder.container(keyedBy: AnyKey.self) else { return }
        let unknown = container.allKeys.map(\.stringValue).filter { !known.contains($0) }.sorted()
        for name in unknown {
            note(keyPath(decoder.codingPath + [AnyKey(stringValue: name)]), in: decoder)
        }
    }

    /// `a.b[2].c`, the form the errors and warnings use.
    static func keyPath(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "(top level)" : text
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

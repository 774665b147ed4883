import Foundation
import Logging
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowTestSupport

/// SmartDeviceLink's `VideoStreamingCapability` JSON: decoding untrusted input, resize updates,
/// and what the session takes from it. The session's choices themselves are in
/// ``CapabilitiesTests``.
@Suite struct SDLCapabilityTests {
    // MARK: Helpers

    static func decode(_ json: String, logger: Logger? = nil) throws -> VideoStreamingCapability {
        try VideoStreamingCapability(json: Data(json.utf8), logger: logger ?? VideoStreamingCapability.defaultLogger)
    }

    static func capability(_ width: Int, _ height: Int, scale: Double? = nil, diagonal: Double? = nil,
                           nested: [VideoStreamingCapability]? = nil) -> VideoStreamingCapability {
        VideoStreamingCapability(preferredResolution: ImageResolution(width: width, height: height),
                                 diagonalScreenSize: diagonal, scale: scale,
                                 additionalVideoStreamingCapabilities: nested)
    }

    /// What SDL Core's default HMI capabilities file sends for a basic 8-inch screen.
    static let coreCapabilityJSON = """
        {
          "preferredResolution": { "resolutionWidth": 800, "resolutionHeight": 480 },
          "maxBitrate": 20000,
          "supportedFormats": [ { "protocol": "RAW", "codec": "H264" }, { "protocol": "RTP", "codec": "H264" } ],
          "hapticSpatialDataSupported": true,
          "diagonalScreenSize": 8,
          "pixelPerInch": 96,
          "scale": 1
        }
        """

    // MARK: Decoding

    @Test func realCoreCapabilityDecodesAndStreams() throws {
        let capability = try Self.decode(Self.coreCapabilityJSON)
        #expect(capability.preferredResolution == ImageResolution(width: 800, height: 480))
        #expect(capability.maxBitrate == 20_000)
        #expect(capability.supportedFormats == [.h264Raw, .h264RTP])
        #expect(capability.streamableFormats == [.h264Raw, .h264RTP])
        #expect(capability.hapticSpatialDataSupported == true)
        #expect(capability.diagonalScreenSize == 8)
        #expect(capability.pixelPerInch == 96)
        #expect(capability.scale == 1)
        #expect(capability.preferredFPS == nil)
        #expect(capability.additionalVideoStreamingCapabilities == nil)

        let display = capability.headUnitDisplay
        #expect(display.effectiveScale == 1)
        let stream = try #require(display.chooseStreamResolution().stream)
        #expect(stream.displaySize == VideoSize(width: 800, height: 480))
        #expect(stream.encodedSize == VideoSize(width: 800, height: 480))
        let settings = EncoderSettings(stream: stream)
        #expect(settings == EncoderSettings(width: 800, height: 480, framesPerSecond: 15, bitrate: 20_000_000))
        #expect(throws: Never.self) { try settings.validate() }
    }

    @Test func encodingRoundTripsThroughSDLKeyNames() throws {
        let original = Self.capability(1280, 720, scale: 1.5, diagonal: 10,
                                       nested: [Self.capability(720, 1280)])
        let json = try JSONEncoder().encode(original)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"resolutionWidth\":1280"))
        #expect(text.contains("additionalVideoStreamingCapabilities"))
        #expect(try VideoStreamingCapability(json: json) == original)
    }

    @Test func missingFieldsDecodeAsAbsent() throws {
        let capability = try Self.decode("{}")
        #expect(capability == VideoStreamingCapability())
        #expect(capability.headUnitDisplay == HeadUnitDisplay())
        #expect(capability.headUnitDisplay.effectiveScale == 1)
        #expect(capability.streamableFormats == [.h264Raw])
        guard case .noMatch(let reason) = capability.headUnitDisplay.chooseStreamResolution() else {
            Issue.record("a capability without a resolution must not stream")
            return
        }
        #expect(reason.contains("no display size"))
        // Nulls are absences too.
        #expect(try Self.decode(#"{"scale": null, "maxBitrate": null}"#) == VideoStreamingCapability())
    }

    @Test func unknownFieldsAreIgnoredWithOneWarning() throws {
        let handler = CapturingLogHandler()
        let logger = Logger(label: "test") { _ in handler }
        let capability = try Self.decode("""
            {
              "preferredResolution": { "resolutionWidth": 800, "resolutionHeight": 480, "depth": 24 },
              "frameOrientation": "any",
              "supportedFormats": [ { "protocol": "RAW", "codec": "AV1" }, { "protocol": "RTP", "codec": "H264" } ],
              "additionalVideoStreamingCapabilities": [ { "preferredResolution": { "resolutionWidth": 400, "resolutionHeight": 240 }, "hdr": true } ]
            }
            """, logger: logger)
        #expect(capability.preferredResolution == ImageResolution(width: 800, height: 480))
        #expect(capability.supportedFormats == [.h264RTP])
        #expect(capability.additionalVideoStreamingCapabilities?.first?.preferredResolution == ImageResolution(width: 400, height: 240))
        let warnings = handler.warnings
        #expect(warnings.count == 1)
        let warning = warnings.first ?? ""
        for name in ["frameOrientation", "preferredResolution.depth", "supportedFormats[0] (unknown format AV1/RAW)",
                     "additionalVideoStreamingCapabilities[0].hdr"] {
            #expect(warning.contains(name), "\(warning) should name \(name)")
        }
        // A clean capability logs nothing.
        _ = try Self.decode(Self.coreCapabilityJSON, logger: logger)
        #expect(handler.warnings.count == 1)
    }

    @Test(arguments: [
        (#"{"maxBitrate": "fast"}"#, VideoStreamingCapabilityError.wrongType(keyPath: "maxBitrate", detail: "")),
        (#"{"preferredResolution": {"resolutionWidth": "800", "resolutionHeight": 480}}"#,
         .wrongType(keyPath: "preferredResolution.resolutionWidth", detail: "")),
        (#"{"supportedFormats": [{"protocol": "RAW", "codec": "H264"}, {"protocol": 1, "codec": "H264"}]}"#,
         .wrongType(keyPath: "supportedFormats[1].protocol", detail: "")),
        (#"{"scale": true}"#, .wrongType(keyPath: "scale", detail: "")),
        (#"{"hapticSpatialDataSupported": 1}"#, .wrongType(keyPath: "hapticSpatialDataSupported", detail: "")),
        (#"{"supportedFormats": {"protocol": "RAW"}}"#, .wrongType(keyPath: "supportedFormats", detail: "")),
        (#"{"additionalVideoStreamingCapabilities": [{"preferredFPS": 1.5}]}"#,
         .wrongType(keyPath: "additionalVideoStreamingCapabilities[0].preferredFPS", detail: "")),
        // Foundation reports these as invalid JSON without a key; ours name the field.
        (#"{"maxBitrate": 1.5}"#, .wrongType(keyPath: "maxBitrate", detail: "")),
        (#"{"preferredResolution": {"resolutionWidth": 1e30, "resolutionHeight": 480}}"#,
         .wrongType(keyPath: "preferredResolution.resolutionWidth", detail: "")),
        (#"{"preferredResolution": {"resolutionWidth": 800}}"#,
         .missingField(keyPath: "preferredResolution.resolutionHeight")),
        (#"[1, 2]"#, .wrongType(keyPath: "(top level)", detail: "")),
        (#"{"maxBitrate": 2"#, .notJSON("")),
    ])
    func wrongTypesNameTheKeyPath(json: String, expected: VideoStreamingCapabilityError) {
        do {
            _ = try VideoStreamingCapability(json: Data(json.utf8))
            Issue.record("\(json) decoded")
        } catch {
            switch (error, expected) {
            case (.wrongType(let path, _), .wrongType(let expectedPath, _)): #expect(path == expectedPath, "\(error)")
            case (.missingField(let path), .missingField(let expectedPath)): #expect(path == expectedPath)
            case (.notJSON, .notJSON): break
            default: Issue.record("\(json): got \(error), expected \(expected)")
            }
            #expect(!error.description.isEmpty)
        }
    }

    @Test func nestingIsBounded() {
        var json = #"{"preferredFPS": 30}"#
        for _ in 0..<(VideoStreamingCapability.maximumNesting + 1) {
            json = #"{"additionalVideoStreamingCapabilities": ["# + json + "]}"
        }
        #expect {
            try VideoStreamingCapability(json: Data(json.utf8))
        } throws: { error in
            guard case .nestingTooDeep = error as? VideoStreamingCapabilityError else { return false }
            return true
        }
    }

    // MARK: Resize

    @Test func resizeUpdateFillsMissingFields() throws {
        let current = try Self.decode(Self.coreCapabilityJSON)
        let update = try Self.decode(#"{"preferredResolution": {"resolutionWidth": 1024, "resolutionHeight": 600}}"#)
        let merged = update.filling(from: current)
        #expect(merged.preferredResolution == ImageResolution(width: 1024, height: 600))
        #expect(merged.maxBitrate == 20_000)
        #expect(merged.supportedFormats == [.h264Raw, .h264RTP])
        #expect(merged.hapticSpatialDataSupported == true)
        #expect(merged.diagonalScreenSize == 8)
        #expect(merged.pixelPerInch == 96)
        #expect(merged.scale == 1)
        #expect(merged.headUnitDisplay.chooseStreamResolution().stream?.encodedSize == VideoSize(width: 1024, height: 600))

        // A scale-only update keeps the resolution and shrinks the stream.
        let scaled = try Self.decode(#"{"scale": 2}"#).filling(from: current)
        #expect(scaled.preferredResolution == ImageResolution(width: 800, height: 480))
        #expect(scaled.headUnitDisplay.chooseStreamResolution().stream?.encodedSize == VideoSize(width: 400, height: 240))

        // Fields the update does carry win, even false.
        let noHaptics = try Self.decode(#"{"hapticSpatialDataSupported": false}"#).filling(from: current)
        #expect(noHaptics.hapticSpatialDataSupported == false)
    }

    // MARK: To the session

    @Test func theSessionGetsTheDisplayFieldsWithTheBitrateInBitsPerSecond() throws {
        let capability = try Self.decode(Self.coreCapabilityJSON)
        #expect(capability.headUnitDisplay == HeadUnitDisplay(
            size: VideoSize(width: 800, height: 480), scale: 1, diagonalInches: 8, maximumBitrate: 20_000_000))
        let nested = Self.capability(1280, 720, scale: 1.5, diagonal: 10, nested: [Self.capability(720, 1280)])
        #expect(nested.headUnitDisplay == HeadUnitDisplay(
            size: VideoSize(width: 1280, height: 720), scale: 1.5, diagonalInches: 10,
            alternatives: [HeadUnitDisplay(size: VideoSize(width: 720, height: 1280))]))
        #expect(ImageResolution(VideoSize(width: 320, height: 192)) == ImageResolution(width: 320, height: 192))
        #expect(ImageResolution(width: 320, height: 192).videoSize == VideoSize(width: 320, height: 192))
    }

    @Test(arguments: [
        // kbit/s off the wire -> bit/s for the session; beyond Int the product saturates.
        (20_000, 20_000_000), (1, 1000), (0, 0), (-5, -5000),
        (Int.max, Int.max), (Int.max / 1000 + 1, Int.max), (Int.min, Int.min),
    ])
    func bitratesConvertWithoutTrapping(kilobits: Int, bits: Int) {
        #expect(VideoStreamingCapability(maxBitrate: kilobits).headUnitDisplay.maximumBitrate == bits)
    }

    /// The link finds the formats of the mode the session chose by flattening both alike.
    @Test func nestedModesFlattenAlikeOnBothSides() {
        let root = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: 1920, height: 1080), maxBitrate: 8000,
            supportedFormats: [.h264RTP], hapticSpatialDataSupported: true, preferredFPS: 30,
            additionalVideoStreamingCapabilities: [
                Self.capability(1600, 900, nested: [Self.capability(1024, 600), Self.capability(900, 1600)]),
                VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480),
                                         supportedFormats: [.h264Raw], scale: 1.0),
                Self.capability(1280, 720, scale: 1.5),
            ])
        let modes = root.allCapabilities
        #expect(modes.map(\.headUnitDisplay) == root.headUnitDisplay.allModes)
        // The nested mode inherits the stream-wide fields it leaves out, formats and haptics too.
        #expect(modes.map(\.supportedFormats) == [[.h264RTP], [.h264RTP], [.h264RTP], [.h264RTP], [.h264Raw], [.h264RTP]])
        #expect(modes.allSatisfy { $0.maxBitrate == 8000 && $0.preferredFPS == 30 && $0.hapticSpatialDataSupported == true })
        #expect(modes.allSatisfy { $0.additionalVideoStreamingCapabilities == nil })
    }
}

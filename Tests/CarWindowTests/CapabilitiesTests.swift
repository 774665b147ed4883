import Foundation
import Logging
import Testing
@testable import CarWindow
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowSystemSupport
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSDLTesting
@testable import CarWindowSDL
@testable import CarWindowSimulation

/// Video streaming capabilities: decoding, stream size choice, encoder settings, scale.
///
/// Expected values follow the rules in SmartDeviceLink's iOS library as summarised in the
/// project's projection reference; sizes are worked out by hand in each row (display / scale,
/// rounded, then rounded down to even).
@Suite struct CapabilitiesTests {
    // MARK: Helpers

    /// Keeps every message logged through it, so a test can count the warnings.
    final class CapturingLogHandler: LogHandler, Sendable {
        let messages = LockedState<[(Logger.Level, String)]>([])
        var metadata: Logger.Metadata { get { [:] } set {} }
        var metadataProvider: Logger.MetadataProvider? { get { nil } set {} }
        var logLevel: Logger.Level { get { .trace } set {} }
        subscript(metadataKey _: String) -> Logger.Metadata.Value? { get { nil } set {} }
        func log(event: LogEvent) {
            messages.withLock { $0.append((event.level, event.message.description)) }
        }
        var warnings: [String] { messages.withLock { $0.filter { $0.0 == .warning }.map(\.1) } }
    }

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
        #expect(capability.effectiveScale == 1)
        #expect(capability.preferredFPS == nil)
        #expect(capability.additionalVideoStreamingCapabilities == nil)

        let stream = try #require(capability.chooseStreamResolution().stream)
        #expect(stream.displaySize == ImageResolution(width: 800, height: 480))
        #expect(stream.encodedSize == ImageResolution(width: 800, height: 480))
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
        #expect(capability.effectiveScale == 1)
        #expect(capability.streamableFormats == [.h264Raw])
        guard case .noMatch(let reason) = capability.chooseStreamResolution() else {
            Issue.record("a capability without a resolution must not stream")
            return
        }
        #expect(reason.contains("no preferredResolution"))
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

    // MARK: Scale

    @Test(arguments: [
        // (display, scale sent, effective scale, encoded size): encoded = round(display / scale), even.
        (ImageResolution(width: 800, height: 480), 1.0 as Double?, 1.0, ImageResolution(width: 800, height: 480)),
        (ImageResolution(width: 800, height: 480), nil, 1.0, ImageResolution(width: 800, height: 480)),
        // 800 / 1.5 = 533.3 -> 533 -> 532; 480 / 1.5 = 320.
        (ImageResolution(width: 800, height: 480), 1.5, 1.5, ImageResolution(width: 532, height: 320)),
        (ImageResolution(width: 1920, height: 1080), 1.5, 1.5, ImageResolution(width: 1280, height: 720)),
        (ImageResolution(width: 1920, height: 1080), 2, 2, ImageResolution(width: 960, height: 540)),
        // Clamped: 0 -> 1 and 20 -> 10 (1920 / 10 = 192, 1080 / 10 = 108).
        (ImageResolution(width: 1920, height: 1080), 0, 1, ImageResolution(width: 1920, height: 1080)),
        (ImageResolution(width: 1920, height: 1080), 20, 10, ImageResolution(width: 192, height: 108)),
        (ImageResolution(width: 1920, height: 1080), -3, 1, ImageResolution(width: 1920, height: 1080)),
        // Odd sides become even for 4:2:0: 801x481 -> 800x480.
        (ImageResolution(width: 801, height: 481), 1, 1, ImageResolution(width: 800, height: 480)),
    ])
    func scaleGivesTheEncodedSize(display: ImageResolution, scale: Double?, effective: Double, encoded: ImageResolution) throws {
        let capability = VideoStreamingCapability(preferredResolution: display, scale: scale)
        #expect(capability.effectiveScale == effective)
        let stream = try #require(capability.chooseStreamResolution().stream)
        #expect(stream.scale == effective)
        #expect(stream.displaySize == display)
        #expect(stream.encodedSize == encoded)
    }

    @Test func nonFiniteScaleMeansOne() {
        #expect(VideoStreamingCapability(scale: .nan).effectiveScale == 1)
        #expect(VideoStreamingCapability(scale: .infinity).effectiveScale == 1)
    }

    @Test func touchesDivideAndHapticRectsMultiplyByScale() throws {
        let stream = try #require(Self.capability(1200, 720, scale: 1.5).chooseStreamResolution().stream)
        #expect(stream.encodedSize == ImageResolution(width: 800, height: 480))
        // The head unit's bottom-right corner is our frame's bottom-right corner.
        #expect(stream.encodedFramePoint(fromHeadUnit: SIMD2(1200, 720)) == SIMD2(800, 480))
        #expect(stream.encodedFramePoint(fromHeadUnit: SIMD2(300, 150)) == SIMD2(200, 100))
        #expect(stream.headUnitRect(fromEncodedFrame: ScreenRect(x: 10, y: 20, width: 30, height: 40))
                == ScreenRect(x: 15, y: 30, width: 45, height: 60))
    }

    @Test func acknowledgedSizeIsAuthoritative() throws {
        let stream = try #require(Self.capability(1200, 720, scale: 1.5).chooseStreamResolution().stream)
        let acked = stream.acknowledged(width: 640, height: 384)
        #expect(acked.encodedSize == ImageResolution(width: 640, height: 384))
        #expect(acked.displaySize == ImageResolution(width: 960, height: 576))
        #expect(acked.scale == 1.5)
    }

    // MARK: Supported sizes

    @Test func disabledRangeRefusesItsOrientation() {
        #expect(SupportedSizeRange.disabled.isDisabled)
        #expect(!SupportedSizeRange().isDisabled)
        let sizes = SupportedSizes(landscape: .disabled, portrait: nil)
        let landscape = Self.capability(800, 480)
        guard case .noMatch(let reason) = landscape.chooseStreamResolution(for: sizes) else {
            Issue.record("a disabled landscape range must refuse 800x480")
            return
        }
        #expect(reason.contains("candidate 0: landscape 800x480"))
        #expect(reason.contains("disabled"))
        // The nested portrait mode still streams.
        let withPortrait = Self.capability(800, 480, nested: [Self.capability(480, 800)])
        #expect(withPortrait.chooseStreamResolution(for: sizes).stream?.displaySize == ImageResolution(width: 480, height: 800))
    }

    @Test func orientationPicksTheRange() {
        let sizes = SupportedSizes(
            landscape: SupportedSizeRange(minimumResolution: ImageResolution(width: 640, height: 360)),
            portrait: SupportedSizeRange(maximumResolution: ImageResolution(width: 400, height: 700)))
        let table: [(VideoStreamingCapability, Bool)] = [
            (Self.capability(800, 480), true),   // landscape, above 640x360
            (Self.capability(600, 400), false),  // landscape, narrower than 640
            (Self.capability(480, 800), false),  // portrait, taller than 700
            (Self.capability(360, 640), true),   // portrait, within 400x700
            (Self.capability(500, 500), false),  // square counts as landscape: below 640 wide
        ]
        for (capability, matches) in table {
            #expect((capability.chooseStreamResolution(for: sizes).stream != nil) == matches,
                    "\(capability.preferredResolution.map(String.init(describing:)) ?? "-")")
        }
    }

    @Test func resolutionLimitsApplyToTheScaledSize() {
        let sizes = SupportedSizes(landscape: SupportedSizeRange(minimumResolution: ImageResolution(width: 500, height: 300),
                                                                 maximumResolution: ImageResolution(width: 1024, height: 768)))
        // 1920x1080 is too big at scale 1, fits at 2 (960x540), is too small at 4 (480x270).
        #expect(Self.capability(1920, 1080, scale: 1).chooseStreamResolution(for: sizes).stream == nil)
        #expect(Self.capability(1920, 1080, scale: 2).chooseStreamResolution(for: sizes).stream?.encodedSize
                == ImageResolution(width: 960, height: 540))
        guard case .noMatch(let reason) = Self.capability(1920, 1080, scale: 4).chooseStreamResolution(for: sizes) else {
            Issue.record("480x270 is below the minimum")
            return
        }
        #expect(reason.contains("480x270 is below the minimum 500x300"))
    }

    @Test(arguments: [
        (nil as Double?, false), (6.5, false), (7, true), (8, true),
    ])
    func minimumDiagonal(diagonal: Double?, matches: Bool) {
        let sizes = SupportedSizes(landscape: SupportedSizeRange(minimumDiagonal: 7))
        #expect((Self.capability(800, 480, diagonal: diagonal).chooseStreamResolution(for: sizes).stream != nil) == matches)
        // Without a minimum the diagonal does not matter, even when unknown.
        #expect(Self.capability(800, 480, diagonal: diagonal).chooseStreamResolution(for: .any).stream != nil)
    }

    @Test(arguments: [
        // Normalized aspect (long / short) against 1.3...1.8.
        (ImageResolution(width: 800, height: 480), true),    // 1.667
        (ImageResolution(width: 480, height: 800), true),    // portrait, also 1.667
        (ImageResolution(width: 1920, height: 720), false),  // 2.667
        (ImageResolution(width: 640, height: 600), false),   // 1.067
        (ImageResolution(width: 1280, height: 720), true),   // 1.778
    ])
    func aspectRatioLimits(display: ImageResolution, matches: Bool) {
        let range = SupportedSizeRange(minimumAspectRatio: 1.3, maximumAspectRatio: 1.8)
        let sizes = SupportedSizes(landscape: range, portrait: range)
        let capability = VideoStreamingCapability(preferredResolution: display)
        #expect((capability.chooseStreamResolution(for: sizes).stream != nil) == matches)
    }

    @Test func nestedCapabilitiesArePickedInOrder() throws {
        let root = VideoStreamingCapability(
            preferredResolution: ImageResolution(width: 1920, height: 1080), maxBitrate: 8000,
            supportedFormats: [.h264RTP], preferredFPS: 30,
            additionalVideoStreamingCapabilities: [
                Self.capability(1600, 900, nested: [Self.capability(1024, 600), Self.capability(900, 1600)]),
                Self.capability(800, 480, scale: 1.0),
                Self.capability(1280, 720, scale: 1.5),
            ])
        #expect(root.allCapabilities.compactMap(\.preferredResolution) == [
            ImageResolution(width: 1920, height: 1080), ImageResolution(width: 1600, height: 900),
            ImageResolution(width: 1024, height: 600), ImageResolution(width: 900, height: 1600),
            ImageResolution(width: 800, height: 480), ImageResolution(width: 1280, height: 720),
        ])
        let sizes = SupportedSizes(landscape: SupportedSizeRange(maximumResolution: ImageResolution(width: 1000, height: 700)),
                                   portrait: .disabled)
        let stream = try #require(root.chooseStreamResolution(for: sizes).stream)
        // 1920x1080 and 1600x900 are too big, 1024x600 too wide; 900x1600 is portrait (disabled);
        // 800x480 is the first that fits, ahead of 1280x720 at 1.5 (853x480).
        #expect(stream.displaySize == ImageResolution(width: 800, height: 480))
        // The nested mode inherits the stream-wide fields it leaves out.
        #expect(stream.capability.maxBitrate == 8000)
        #expect(stream.capability.preferredFPS == 30)
        #expect(stream.capability.supportedFormats == [.h264RTP])
        #expect(stream.capability.additionalVideoStreamingCapabilities == nil)

        let matching = root.matchingCapabilities(for: sizes).compactMap(\.preferredResolution)
        #expect(matching == [ImageResolution(width: 800, height: 480), ImageResolution(width: 1280, height: 720)])
        #expect(root.matchingCapabilities().count == 6)
    }

    @Test func noMatchListsEveryCandidate() {
        let root = Self.capability(1920, 1080, nested: [Self.capability(480, 800), VideoStreamingCapability()])
        let sizes = SupportedSizes(landscape: SupportedSizeRange(maximumResolution: ImageResolution(width: 1280, height: 720)),
                                   portrait: .disabled)
        guard case .noMatch(let reason) = root.chooseStreamResolution(for: sizes) else {
            Issue.record("nothing should fit")
            return
        }
        #expect(reason.contains("candidate 0: landscape 1920x1080 at scale 1.0: scaled size 1920x1080 is above the maximum 1280x720"))
        #expect(reason.contains("candidate 1: portrait 480x800 at scale 1.0: the orientation is disabled"))
        #expect(reason.contains("candidate 2: no preferredResolution"))
        #expect(root.matchingCapabilities(for: sizes).isEmpty)
    }

    @Test func sizesBeyondH264AreRefused() {
        guard case .noMatch(let reason) = Self.capability(8000, 4000).chooseStreamResolution() else {
            Issue.record("8000x4000 is beyond level 5.1")
            return
        }
        #expect(reason.contains("H.264 cannot carry"))
        #expect(Self.capability(8000, 4000, scale: 2).chooseStreamResolution().stream?.encodedSize
                == ImageResolution(width: 4000, height: 2000))
        #expect(Self.capability(0, 480).chooseStreamResolution().stream == nil)
        #expect(Self.capability(Int.max, Int.max).chooseStreamResolution().stream == nil)
    }

    // MARK: Encoder settings

    @Test(arguments: [
        // (head unit fps, head unit kbit/s, app fps, app bit/s) -> (fps, bit/s)
        (nil as Int?, nil as Int?, nil as Double?, nil as Int?, 15.0, 600_000),
        (30, 20_000, nil, nil, 30, 20_000_000),
        (30, 20_000, 20, 1_000_000, 20, 1_000_000),        // app lower: app wins
        (30, 20_000, 60, 50_000_000, 30, 20_000_000),      // app higher: head unit wins
        (nil, nil, 10, 400_000, 10, 400_000),              // lower than the defaults
        (nil, nil, 30, 2_000_000, 15, 600_000),            // higher than the defaults
        (0, 0, -5, -1, 15, 600_000),                       // nonsense is ignored
        (1000, Int.max, nil, nil, 60, 200_000_000),        // capped at what the stream can serve
    ])
    func encoderSettingsMerge(headUnitFPS: Int?, headUnitKbps: Int?, appFPS: Double?, appBitrate: Int?,
                              fps: Double, bitrate: Int) throws {
        let capability = VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480),
                                                  maxBitrate: headUnitKbps, preferredFPS: headUnitFPS)
        let stream = try #require(capability.chooseStreamResolution().stream)
        let settings = EncoderSettings(stream: stream, customFramesPerSecond: appFPS, customBitrate: appBitrate)
        #expect(settings.framesPerSecond == fps)
        #expect(settings.bitrate == bitrate)
        #expect(settings.width == 800 && settings.height == 480)
        #expect(throws: Never.self) { try settings.validate() }
    }

    /// A head unit may ask for any frame rate; a stream runs at 60 at most, because drawing,
    /// encoding and the pacer cannot serve more (at 2^31-1 the pacer drew without pause and
    /// pegged a core).
    @Test(arguments: [61, 240, 1000, Int(Int32.max), Int.max])
    func absurdHeadUnitFrameRatesStreamAtSixtyAtMost(headUnitFPS: Int) throws {
        let capability = VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480),
                                                  preferredFPS: headUnitFPS)
        let stream = try #require(capability.chooseStreamResolution().stream)
        let settings = EncoderSettings(stream: stream)
        #expect(settings.framesPerSecond == 60)
        #expect(FramePacer.Configuration(framesPerSecond: Double(headUnitFPS)).framesPerSecond == 60)
        #expect(EncoderSettings(stream: stream, customFramesPerSecond: 1e9).framesPerSecond == 60)
    }

    /// The StartService ACK's size comes off the wire: no value may trap on its way into the
    /// display size.
    @Test(arguments: [Int.max, Int(Int32.max), 1 << 40, -5])
    func anAcknowledgedSizeOfAnyValueGivesADisplaySizeWithoutTrapping(side: Int) throws {
        let capability = VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480), scale: 10)
        let stream = try #require(capability.chooseStreamResolution().stream)
        let acked = stream.acknowledged(width: side, height: 480)
        #expect(acked.encodedSize == ImageResolution(width: side, height: 480))
        #expect((0...VideoStreamingCapability.maximumDisplaySide).contains(acked.displaySize.width))
        #expect(acked.displaySize.height == 4800)
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
        #expect(merged.chooseStreamResolution().stream?.encodedSize == ImageResolution(width: 1024, height: 600))

        // A scale-only update keeps the resolution and shrinks the stream.
        let scaled = try Self.decode(#"{"scale": 2}"#).filling(from: current)
        #expect(scaled.preferredResolution == ImageResolution(width: 800, height: 480))
        #expect(scaled.chooseStreamResolution().stream?.encodedSize == ImageResolution(width: 400, height: 240))

        // Fields the update does carry win, even false.
        let noHaptics = try Self.decode(#"{"hapticSpatialDataSupported": false}"#).filling(from: current)
        #expect(noHaptics.hapticSpatialDataSupported == false)
    }
}

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
@testable import CarWindowTestSupport

/// A head unit's display: the stream size chosen from it, scale, encoder settings, resizes.
///
/// Expected values follow the rules in SmartDeviceLink's iOS library as summarised in the
/// project's projection reference; sizes are worked out by hand in each row (display / scale,
/// rounded, then rounded down to even). ``SDLCapabilityTests`` covers the JSON that carries them.
@Suite struct CapabilitiesTests {

    static func display(_ width: Int, _ height: Int, scale: Double? = nil, diagonal: Double? = nil,
                        alternatives: [HeadUnitDisplay]? = nil) -> HeadUnitDisplay {
        HeadUnitDisplay(size: VideoSize(width: width, height: height), scale: scale, diagonalInches: diagonal,
                        alternatives: alternatives)
    }

    // MARK: Scale

    @Test(arguments: [
        // (display, scale sent, effective scale, encoded size): encoded = round(display / scale), even.
        (VideoSize(width: 800, height: 480), 1.0 as Double?, 1.0, VideoSize(width: 800, height: 480)),
        (VideoSize(width: 800, height: 480), nil, 1.0, VideoSize(width: 800, height: 480)),
        // 800 / 1.5 = 533.3 -> 533 -> 532; 480 / 1.5 = 320.
        (VideoSize(width: 800, height: 480), 1.5, 1.5, VideoSize(width: 532, height: 320)),
        (VideoSize(width: 1920, height: 1080), 1.5, 1.5, VideoSize(width: 1280, height: 720)),
        (VideoSize(width: 1920, height: 1080), 2, 2, VideoSize(width: 960, height: 540)),
        // Clamped: 0 -> 1 and 20 -> 10 (1920 / 10 = 192, 1080 / 10 = 108).
        (VideoSize(width: 1920, height: 1080), 0, 1, VideoSize(width: 1920, height: 1080)),
        (VideoSize(width: 1920, height: 1080), 20, 10, VideoSize(width: 192, height: 108)),
        (VideoSize(width: 1920, height: 1080), -3, 1, VideoSize(width: 1920, height: 1080)),
        // Odd sides become even for 4:2:0: 801x481 -> 800x480.
        (VideoSize(width: 801, height: 481), 1, 1, VideoSize(width: 800, height: 480)),
    ])
    func scaleGivesTheEncodedSize(display: VideoSize, scale: Double?, effective: Double, encoded: VideoSize) throws {
        let mode = HeadUnitDisplay(size: display, scale: scale)
        #expect(mode.effectiveScale == effective)
        let stream = try #require(mode.chooseStreamResolution().stream)
        #expect(stream.scale == effective)
        #expect(stream.displaySize == display)
        #expect(stream.encodedSize == encoded)
    }

    @Test func nonFiniteScaleMeansOne() {
        #expect(HeadUnitDisplay(scale: .nan).effectiveScale == 1)
        #expect(HeadUnitDisplay(scale: .infinity).effectiveScale == 1)
    }

    @Test func touchesDivideAndHapticRectsMultiplyByScale() throws {
        let stream = try #require(Self.display(1200, 720, scale: 1.5).chooseStreamResolution().stream)
        #expect(stream.encodedSize == VideoSize(width: 800, height: 480))
        // The head unit's bottom-right corner is our frame's bottom-right corner.
        #expect(stream.encodedFramePoint(fromHeadUnit: SIMD2(1200, 720)) == SIMD2(800, 480))
        #expect(stream.encodedFramePoint(fromHeadUnit: SIMD2(300, 150)) == SIMD2(200, 100))
        #expect(stream.headUnitRect(fromEncodedFrame: ScreenRect(x: 10, y: 20, width: 30, height: 40))
                == ScreenRect(x: 15, y: 30, width: 45, height: 60))
    }

    @Test func acknowledgedSizeIsAuthoritative() throws {
        let stream = try #require(Self.display(1200, 720, scale: 1.5).chooseStreamResolution().stream)
        let acked = stream.acknowledged(width: 640, height: 384)
        #expect(acked.encodedSize == VideoSize(width: 640, height: 384))
        #expect(acked.displaySize == VideoSize(width: 960, height: 576))
        #expect(acked.scale == 1.5)
    }

    // MARK: Supported sizes

    @Test func disabledRangeRefusesItsOrientation() {
        #expect(SupportedSizeRange.disabled.isDisabled)
        #expect(!SupportedSizeRange().isDisabled)
        let sizes = SupportedSizes(landscape: .disabled, portrait: nil)
        let landscape = Self.display(800, 480)
        guard case .noMatch(let reason) = landscape.chooseStreamResolution(for: sizes) else {
            Issue.record("a disabled landscape range must refuse 800x480")
            return
        }
        #expect(reason.contains("candidate 0: landscape 800x480"))
        #expect(reason.contains("disabled"))
        // The portrait alternative still streams.
        let withPortrait = Self.display(800, 480, alternatives: [Self.display(480, 800)])
        #expect(withPortrait.chooseStreamResolution(for: sizes).stream?.displaySize == VideoSize(width: 480, height: 800))
    }

    @Test func orientationPicksTheRange() {
        let sizes = SupportedSizes(
            landscape: SupportedSizeRange(minimumSize: VideoSize(width: 640, height: 360)),
            portrait: SupportedSizeRange(maximumSize: VideoSize(width: 400, height: 700)))
        let table: [(HeadUnitDisplay, Bool)] = [
            (Self.display(800, 480), true),   // landscape, above 640x360
            (Self.display(600, 400), false),  // landscape, narrower than 640
            (Self.display(480, 800), false),  // portrait, taller than 700
            (Self.display(360, 640), true),   // portrait, within 400x700
            (Self.display(500, 500), false),  // square counts as landscape: below 640 wide
        ]
        for (display, matches) in table {
            #expect((display.chooseStreamResolution(for: sizes).stream != nil) == matches,
                    "\(display.size.map(String.init(describing:)) ?? "-")")
        }
    }

    @Test func resolutionLimitsApplyToTheScaledSize() {
        let sizes = SupportedSizes(landscape: SupportedSizeRange(minimumSize: VideoSize(width: 500, height: 300),
                                                                 maximumSize: VideoSize(width: 1024, height: 768)))
        // 1920x1080 is too big at scale 1, fits at 2 (960x540), is too small at 4 (480x270).
        #expect(Self.display(1920, 1080, scale: 1).chooseStreamResolution(for: sizes).stream == nil)
        #expect(Self.display(1920, 1080, scale: 2).chooseStreamResolution(for: sizes).stream?.encodedSize
                == VideoSize(width: 960, height: 540))
        guard case .noMatch(let reason) = Self.display(1920, 1080, scale: 4).chooseStreamResolution(for: sizes) else {
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
        #expect((Self.display(800, 480, diagonal: diagonal).chooseStreamResolution(for: sizes).stream != nil) == matches)
        // Without a minimum the diagonal does not matter, even when unknown.
        #expect(Self.display(800, 480, diagonal: diagonal).chooseStreamResolution(for: .any).stream != nil)
    }

    @Test(arguments: [
        // Normalized aspect (long / short) against 1.3...1.8.
        (VideoSize(width: 800, height: 480), true),    // 1.667
        (VideoSize(width: 480, height: 800), true),    // portrait, also 1.667
        (VideoSize(width: 1920, height: 720), false),  // 2.667
        (VideoSize(width: 640, height: 600), false),   // 1.067
        (VideoSize(width: 1280, height: 720), true),   // 1.778
    ])
    func aspectRatioLimits(display: VideoSize, matches: Bool) {
        let range = SupportedSizeRange(minimumAspectRatio: 1.3, maximumAspectRatio: 1.8)
        let sizes = SupportedSizes(landscape: range, portrait: range)
        let mode = HeadUnitDisplay(size: display)
        #expect((mode.chooseStreamResolution(for: sizes).stream != nil) == matches)
    }

    @Test func alternativesArePickedInOrder() throws {
        let root = HeadUnitDisplay(
            size: VideoSize(width: 1920, height: 1080), diagonalInches: 9, preferredFramesPerSecond: 30,
            maximumBitrate: 8_000_000,
            alternatives: [
                Self.display(1600, 900, alternatives: [Self.display(1024, 600), Self.display(900, 1600)]),
                Self.display(800, 480, scale: 1.0),
                Self.display(1280, 720, scale: 1.5),
            ])
        #expect(root.allModes.compactMap(\.size) == [
            VideoSize(width: 1920, height: 1080), VideoSize(width: 1600, height: 900),
            VideoSize(width: 1024, height: 600), VideoSize(width: 900, height: 1600),
            VideoSize(width: 800, height: 480), VideoSize(width: 1280, height: 720),
        ])
        let sizes = SupportedSizes(landscape: SupportedSizeRange(maximumSize: VideoSize(width: 1000, height: 700)),
                                   portrait: .disabled)
        let stream = try #require(root.chooseStreamResolution(for: sizes).stream)
        // 1920x1080 and 1600x900 are too big, 1024x600 too wide; 900x1600 is portrait (disabled);
        // 800x480 is the first that fits, ahead of 1280x720 at 1.5 (853x480).
        #expect(stream.displaySize == VideoSize(width: 800, height: 480))
        // The alternative inherits the stream-wide fields it leaves out.
        #expect(stream.display.maximumBitrate == 8_000_000)
        #expect(stream.display.preferredFramesPerSecond == 30)
        #expect(stream.display.diagonalInches == 9)
        #expect(stream.display.alternatives == nil)

        let matching = root.matchingModes(for: sizes).compactMap(\.size)
        #expect(matching == [VideoSize(width: 800, height: 480), VideoSize(width: 1280, height: 720)])
        #expect(root.matchingModes().count == 6)
    }

    @Test func noMatchListsEveryCandidate() {
        let root = Self.display(1920, 1080, alternatives: [Self.display(480, 800), HeadUnitDisplay()])
        let sizes = SupportedSizes(landscape: SupportedSizeRange(maximumSize: VideoSize(width: 1280, height: 720)),
                                   portrait: .disabled)
        guard case .noMatch(let reason) = root.chooseStreamResolution(for: sizes) else {
            Issue.record("nothing should fit")
            return
        }
        #expect(reason.contains("candidate 0: landscape 1920x1080 at scale 1.0: scaled size 1920x1080 is above the maximum 1280x720"))
        #expect(reason.contains("candidate 1: portrait 480x800 at scale 1.0: the orientation is disabled"))
        #expect(reason.contains("candidate 2: no display size"))
        #expect(root.matchingModes(for: sizes).isEmpty)
    }

    @Test func sizesBeyondH264AreRefused() {
        guard case .noMatch(let reason) = Self.display(8000, 4000).chooseStreamResolution() else {
            Issue.record("8000x4000 is beyond level 5.1")
            return
        }
        #expect(reason.contains("H.264 cannot carry"))
        #expect(Self.display(8000, 4000, scale: 2).chooseStreamResolution().stream?.encodedSize
                == VideoSize(width: 4000, height: 2000))
        #expect(Self.display(0, 480).chooseStreamResolution().stream == nil)
        #expect(Self.display(Int.max, Int.max).chooseStreamResolution().stream == nil)
    }

    // MARK: Encoder settings

    @Test(arguments: [
        // (head unit fps, head unit bit/s, app fps, app bit/s) -> (fps, bit/s)
        (nil as Int?, nil as Int?, nil as Double?, nil as Int?, 15.0, 600_000),
        (30, 20_000_000, nil, nil, 30, 20_000_000),
        (30, 20_000_000, 20, 1_000_000, 20, 1_000_000),        // app lower: app wins
        (30, 20_000_000, 60, 50_000_000, 30, 20_000_000),      // app higher: head unit wins
        (nil, nil, 10, 400_000, 10, 400_000),              // lower than the defaults
        (nil, nil, 30, 2_000_000, 15, 600_000),            // higher than the defaults
        (0, 0, -5, -1, 15, 600_000),                       // nonsense is ignored
        (1000, Int.max, nil, nil, 60, 200_000_000),        // capped at what the stream can serve
    ])
    func encoderSettingsMerge(headUnitFPS: Int?, headUnitBitrate: Int?, appFPS: Double?, appBitrate: Int?,
                              fps: Double, bitrate: Int) throws {
        let display = HeadUnitDisplay(size: VideoSize(width: 800, height: 480),
                                      preferredFramesPerSecond: headUnitFPS, maximumBitrate: headUnitBitrate)
        let stream = try #require(display.chooseStreamResolution().stream)
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
        let display = HeadUnitDisplay(size: VideoSize(width: 800, height: 480), preferredFramesPerSecond: headUnitFPS)
        let stream = try #require(display.chooseStreamResolution().stream)
        let settings = EncoderSettings(stream: stream)
        #expect(settings.framesPerSecond == 60)
        #expect(FramePacer.Configuration(framesPerSecond: Double(headUnitFPS)).framesPerSecond == 60)
        #expect(EncoderSettings(stream: stream, customFramesPerSecond: 1e9).framesPerSecond == 60)
    }

    /// The size a head unit acknowledges comes off the wire: no value may trap on its way into
    /// the display size.
    @Test(arguments: [Int.max, Int(Int32.max), 1 << 40, -5])
    func anAcknowledgedSizeOfAnyValueGivesADisplaySizeWithoutTrapping(side: Int) throws {
        let display = HeadUnitDisplay(size: VideoSize(width: 800, height: 480), scale: 10)
        let stream = try #require(display.chooseStreamResolution().stream)
        let acked = stream.acknowledged(width: side, height: 480)
        #expect(acked.encodedSize == VideoSize(width: side, height: 480))
        #expect((0...HeadUnitDisplay.maximumDisplaySide).contains(acked.displaySize.width))
        #expect(acked.displaySize.height == 4800)
    }

    // MARK: Resize

    @Test func resizeUpdateFillsMissingFields() throws {
        let current = HeadUnitDisplay(size: VideoSize(width: 800, height: 480), scale: 1, diagonalInches: 8,
                                      preferredFramesPerSecond: 30, maximumBitrate: 20_000_000,
                                      alternatives: [Self.display(480, 800)])
        let merged = HeadUnitDisplay(size: VideoSize(width: 1024, height: 600)).filling(from: current)
        #expect(merged.size == VideoSize(width: 1024, height: 600))
        #expect(merged.maximumBitrate == 20_000_000)
        #expect(merged.preferredFramesPerSecond == 30)
        #expect(merged.diagonalInches == 8)
        #expect(merged.scale == 1)
        #expect(merged.alternatives == [Self.display(480, 800)])
        #expect(merged.chooseStreamResolution().stream?.encodedSize == VideoSize(width: 1024, height: 600))

        // A scale-only update keeps the size and shrinks the stream.
        let scaled = HeadUnitDisplay(scale: 2).filling(from: current)
        #expect(scaled.size == VideoSize(width: 800, height: 480))
        #expect(scaled.chooseStreamResolution().stream?.encodedSize == VideoSize(width: 400, height: 240))

        // Fields the update does carry win, even zero.
        let unlimited = HeadUnitDisplay(maximumBitrate: 0).filling(from: current)
        #expect(unlimited.maximumBitrate == 0)
        #expect(HeadUnitDisplay().filling(from: current) == current)
    }
}

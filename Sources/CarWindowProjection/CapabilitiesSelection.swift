import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks
import CarWindowSystemSupport
/// The sizes an app can draw in one orientation (iOS `SDLVideoStreamingRange`).
///
/// Sizes are compared after the head unit's scale is applied, because that is the size the app
/// lays out and the encoder produces.
public struct SupportedSizeRange: Sendable, Equatable {
    /// The smallest acceptable width and height; nil for no lower bound.
    public var minimumResolution: ImageResolution?
    /// The largest acceptable width and height; nil for no upper bound.
    public var maximumResolution: ImageResolution?
    /// The smallest acceptable physical diagonal in inches; 0 accepts any screen, even one whose
    /// diagonal the head unit does not report.
    public var minimumDiagonal: Double
    /// The smallest acceptable long side over short side (at least 1), so one range serves
    /// landscape 16:9 and portrait 9:16 alike.
    public var minimumAspectRatio: Double
    /// The largest acceptable long side over short side.
    public var maximumAspectRatio: Double

    /// A range; the defaults accept every size, diagonal and aspect ratio.
    public init(minimumResolution: ImageResolution? = nil, maximumResolution: ImageResolution? = nil,
                minimumDiagonal: Double = 0, minimumAspectRatio: Double = 1, maximumAspectRatio: Double = 9999) {
        self.minimumResolution = minimumResolution
        self.maximumResolution = maximumResolution
        self.minimumDiagonal = minimumDiagonal
        self.minimumAspectRatio = minimumAspectRatio
        self.maximumAspectRatio = maximumAspectRatio
    }

    /// A range that accepts nothing: the reference libraries' way to refuse an orientation.
    public static let disabled = SupportedSizeRange(minimumResolution: ImageResolution(width: 0, height: 0),
                                                    maximumResolution: ImageResolution(width: 0, height: 0))

    /// Whether this is a 0x0 to 0x0 range, which refuses its orientation outright.
    public var isDisabled: Bool {
        let zero = ImageResolution(width: 0, height: 0)
        return minimumResolution == zero && maximumResolution == zero
    }

    /// Why `scaledSize` on a screen of `diagonal` inches does not fit, or nil when it does.
    func refusal(scaledSize: ImageResolution, diagonal: Double?) -> String? {
        if isDisabled { return "the orientation is disabled" }
        if let minimumResolution, scaledSize.width < minimumResolution.width || scaledSize.height < minimumResolution.height {
            return "scaled size \(scaledSize) is below the minimum \(minimumResolution)"
        }
        if let maximumResolution, scaledSize.width > maximumResolution.width || scaledSize.height > maximumResolution.height {
            return "scaled size \(scaledSize) is above the maximum \(maximumResolution)"
        }
        if minimumDiagonal > 0 {
            guard let diagonal, diagonal.isFinite else {
                return "the head unit gives no diagonal and the minimum is \(minimumDiagonal) in"
            }
            if diagonal < minimumDiagonal {
                return "diagonal \(diagonal) in is below the minimum \(minimumDiagonal) in"
            }
        }
        guard let aspect = scaledSize.normalizedAspectRatio else { return "scaled size \(scaledSize) is empty" }
        if aspect < minimumAspectRatio || aspect > maximumAspectRatio {
            return "aspect ratio \(aspect) is outside \(minimumAspectRatio)...\(maximumAspectRatio)"
        }
        return nil
    }
}

/// The sizes an app can draw, per orientation. A nil range places no limit on its orientation;
/// ``SupportedSizeRange/disabled`` refuses it.
public struct SupportedSizes: Sendable, Equatable {
    /// Limits for sizes at least as wide as they are tall.
    public var landscape: SupportedSizeRange?
    /// Limits for sizes taller than they are wide.
    public var portrait: SupportedSizeRange?

    /// Limits per orientation; nil leaves an orientation unlimited.
    public init(landscape: SupportedSizeRange? = nil, portrait: SupportedSizeRange? = nil) {
        self.landscape = landscape
        self.portrait = portrait
    }

    /// Accepts every size the encoder can produce.
    public static let any = SupportedSizes()
}

/// The stream chosen for a head unit: the size it shows and the size we encode.
public struct StreamResolution: Sendable, Equatable {
    /// The head unit's video area in its own pixels; touches arrive in this space.
    public var displaySize: ImageResolution
    /// What we render and encode: `displaySize / scale`, rounded, then made even for 4:2:0.
    public var encodedSize: ImageResolution
    /// ``encodedSize`` as the size sinks are told about.
    public var videoSize: VideoSize { VideoSize(width: encodedSize.width, height: encodedSize.height) }
    /// Display pixels per encoded pixel, already clamped to 1...10.
    public var scale: Double
    /// The capability this came from, nested fields inherited (see
    /// ``VideoStreamingCapability/allCapabilities``).
    public var capability: VideoStreamingCapability

    /// A stream as given; ``VideoStreamingCapability/chooseStreamResolution(for:)`` makes consistent ones.
    public init(displaySize: ImageResolution, encodedSize: ImageResolution, scale: Double, capability: VideoStreamingCapability) {
        self.displaySize = displaySize
        self.encodedSize = encodedSize
        self.scale = scale
        self.capability = capability
    }

    /// This stream at the size the head unit acknowledged in StartService ACK: the ACK's size is
    /// authoritative, and the display size follows as ACK size times scale, each side within
    /// 0...``VideoStreamingCapability/maximumDisplaySide`` whatever the ACK said.
    public func acknowledged(width: Int, height: Int) -> StreamResolution {
        var copy = self
        copy.encodedSize = ImageResolution(width: width, height: height)
        func displaySide(_ side: Int) -> Int {
            let scaled = (Double(side) * scale).rounded()
            let limit = VideoStreamingCapability.maximumDisplaySide
            // Compared as a Double first: converting a product beyond Int's range would trap.
            guard scaled.isFinite, scaled > 0 else { return 0 }
            return scaled >= Double(limit) ? limit : Int(scaled)
        }
        copy.displaySize = ImageResolution(width: displaySide(width), height: displaySide(height))
        return copy
    }

    /// A touch from the head unit (display pixels) in our encoded frame's pixels.
    public func encodedFramePoint(fromHeadUnit point: SIMD2<Double>) -> SIMD2<Double> {
        point / scale
    }

    /// One of our rectangles (encoded-frame pixels) in the head unit's pixels, as
    /// `SendHapticData` wants it.
    public func headUnitRect(fromEncodedFrame rect: ScreenRect) -> ScreenRect {
        ScreenRect(x: rect.x * scale, y: rect.y * scale, width: rect.width * scale, height: rect.height * scale)
    }
}

/// The outcome of choosing a stream for a head unit.
public enum StreamResolutionChoice: Sendable, Equatable {
    /// The first acceptable capability, in the head unit's order.
    case match(StreamResolution)
    /// Nothing fits: do not stream. The reason lists each candidate and why it was refused.
    case noMatch(reason: String)

    /// The stream when there is one.
    public var stream: StreamResolution? {
        if case .match(let stream) = self { return stream }
        return nil
    }
}

extension VideoStreamingCapability {
    /// The stream size for `capability` alone, or why it does not fit `sizes`.
    static func evaluate(_ capability: VideoStreamingCapability, against sizes: SupportedSizes) -> Result<StreamResolution, CandidateRefusal> {
        guard let display = capability.preferredResolution else {
            return .failure(CandidateRefusal("no preferredResolution"))
        }
        guard display.width > 0, display.height > 0,
              display.width <= maximumDisplaySide, display.height <= maximumDisplaySide else {
            return .failure(CandidateRefusal("preferredResolution \(display) is not a usable size"))
        }
        let scale = capability.effectiveScale
        let scaled = ImageResolution(width: Int((Double(display.width) / scale).rounded()),
                                     height: Int((Double(display.height) / scale).rounded()))
        let range = display.isLandscape ? sizes.landscape : sizes.portrait
        if let range, let why = range.refusal(scaledSize: scaled, diagonal: capability.diagonalScreenSize) {
            return .failure(CandidateRefusal("\(display.isLandscape ? "landscape" : "portrait") \(display) at scale \(scale): \(why)"))
        }
        // 4:2:0 halves chroma in both directions, so the encoder needs even sides.
        let encoded = ImageResolution(width: scaled.width & ~1, height: scaled.height & ~1)
        let settings = EncoderSettings(width: encoded.width, height: encoded.height)
        do {
            try settings.validate()
        } catch {
            return .failure(CandidateRefusal("\(display) at scale \(scale) encodes as \(encoded), which H.264 cannot carry: \(error)"))
        }
        return .success(StreamResolution(displaySize: display, encodedSize: encoded, scale: scale, capability: capability))
    }

    /// A side longer than any screen, so size arithmetic on hostile values cannot overflow.
    public static let maximumDisplaySide = 1 << 20

    /// Chooses the stream as the iOS library does: this capability, then its nested ones in
    /// order; the first whose scaled size fits `sizes` wins.
    public func chooseStreamResolution(for sizes: SupportedSizes = .any) -> StreamResolutionChoice {
        var refusals: [String] = []
        for (index, candidate) in allCapabilities.enumerated() {
            switch Self.evaluate(candidate, against: sizes) {
            case .success(let stream): return .match(stream)
            case .failure(let refusal): refusals.append("candidate \(index): \(refusal.reason)")
            }
        }
        if refusals.isEmpty { refusals.append("the head unit offers no capability") }
        return .noMatch(reason: refusals.joined(separator: "; "))
    }

    /// Every capability (nested ones included, flattened, in order) that fits `sizes`: what
    /// OnAppCapabilityUpdated reports back to the head unit.
    public func matchingCapabilities(for sizes: SupportedSizes = .any) -> [VideoStreamingCapability] {
        allCapabilities.filter {
            if case .success = Self.evaluate($0, against: sizes) { return true }
            return false
        }
    }
}

/// Why one candidate capability was refused.
struct CandidateRefusal: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

import CarWindowVideoCore
import CarWindowMap
import CarWindowH264

/// The sizes an app can draw in one orientation.
///
/// Sizes are compared after the head unit's scale is applied, because that is the size the app
/// lays out and the encoder produces.
public struct SupportedSizeRange: Sendable, Equatable {
    /// The smallest acceptable width and height; nil for no lower bound.
    public var minimumSize: VideoSize?
    /// The largest acceptable width and height; nil for no upper bound.
    public var maximumSize: VideoSize?
    /// The smallest acceptable physical diagonal in inches; 0 accepts any screen, even one whose
    /// diagonal the head unit does not report.
    public var minimumDiagonal: Double
    /// The smallest acceptable long side over short side (at least 1), so one range serves
    /// landscape 16:9 and portrait 9:16 alike.
    public var minimumAspectRatio: Double
    /// The largest acceptable long side over short side.
    public var maximumAspectRatio: Double

    /// A range; the defaults accept every size, diagonal and aspect ratio.
    public init(minimumSize: VideoSize? = nil, maximumSize: VideoSize? = nil,
                minimumDiagonal: Double = 0, minimumAspectRatio: Double = 1, maximumAspectRatio: Double = 9999) {
        self.minimumSize = minimumSize
        self.maximumSize = maximumSize
        self.minimumDiagonal = minimumDiagonal
        self.minimumAspectRatio = minimumAspectRatio
        self.maximumAspectRatio = maximumAspectRatio
    }

    /// A range that accepts nothing (0x0 to 0x0), which refuses its orientation.
    public static let disabled = SupportedSizeRange(minimumSize: VideoSize(width: 0, height: 0),
                                                    maximumSize: VideoSize(width: 0, height: 0))

    /// Whether this is a 0x0 to 0x0 range, which refuses its orientation outright.
    public var isDisabled: Bool {
        let zero = VideoSize(width: 0, height: 0)
        return minimumSize == zero && maximumSize == zero
    }

    /// Why `scaledSize` on a screen of `diagonal` inches does not fit, or nil when it does.
    func refusal(scaledSize: VideoSize, diagonal: Double?) -> String? {
        if isDisabled { return "the orientation is disabled" }
        if let minimumSize, scaledSize.width < minimumSize.width || scaledSize.height < minimumSize.height {
            return "scaled size \(scaledSize) is below the minimum \(minimumSize)"
        }
        if let maximumSize, scaledSize.width > maximumSize.width || scaledSize.height > maximumSize.height {
            return "scaled size \(scaledSize) is above the maximum \(maximumSize)"
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
    public var displaySize: VideoSize
    /// What we render and encode, and what sinks are told: `displaySize / scale`, rounded, then
    /// made even for 4:2:0.
    public var encodedSize: VideoSize
    /// Display pixels per encoded pixel, already clamped to ``HeadUnitDisplay/scaleRange``.
    public var scale: Double
    /// The display mode this came from, without alternatives and with the fields it inherits
    /// filled in (see ``HeadUnitDisplay/allModes``).
    public var display: HeadUnitDisplay

    /// A stream as given; ``HeadUnitDisplay/chooseStreamResolution(for:)`` makes consistent ones.
    public init(displaySize: VideoSize, encodedSize: VideoSize, scale: Double, display: HeadUnitDisplay) {
        self.displaySize = displaySize
        self.encodedSize = encodedSize
        self.scale = scale
        self.display = display
    }

    /// This stream at the size the head unit acknowledged when its video started (it may grant
    /// another size than the one asked): that size is authoritative, and the display size
    /// follows as that size times scale, each side within 0...``HeadUnitDisplay/maximumDisplaySide``
    /// whatever the head unit said.
    public func acknowledged(width: Int, height: Int) -> StreamResolution {
        var copy = self
        copy.encodedSize = VideoSize(width: width, height: height)
        func displaySide(_ side: Int) -> Int {
            let scaled = (Double(side) * scale).rounded()
            let limit = HeadUnitDisplay.maximumDisplaySide
            // Compared as a Double first: converting a product beyond Int's range would trap.
            guard scaled.isFinite, scaled > 0 else { return 0 }
            return scaled >= Double(limit) ? limit : Int(scaled)
        }
        copy.displaySize = VideoSize(width: displaySide(width), height: displaySide(height))
        return copy
    }

    /// A touch from the head unit (display pixels) in our encoded frame's pixels.
    public func encodedFramePoint(fromHeadUnit point: SIMD2<Double>) -> SIMD2<Double> {
        point / scale
    }

    /// One of our rectangles (encoded-frame pixels) in the head unit's pixels, as haptic
    /// regions are reported.
    public func headUnitRect(fromEncodedFrame rect: ScreenRect) -> ScreenRect {
        ScreenRect(x: rect.x * scale, y: rect.y * scale, width: rect.width * scale, height: rect.height * scale)
    }
}

/// The outcome of choosing a stream for a head unit.
public enum StreamResolutionChoice: Sendable, Equatable {
    /// The first acceptable display mode, in the head unit's order.
    case match(StreamResolution)
    /// Nothing fits: do not stream. The reason lists each candidate and why it was refused.
    case noMatch(reason: String)

    /// The stream when there is one.
    public var stream: StreamResolution? {
        if case .match(let stream) = self { return stream }
        return nil
    }
}

extension HeadUnitDisplay {
    /// The stream size for `mode` alone, or why it does not fit `sizes`.
    static func evaluate(_ mode: HeadUnitDisplay, against sizes: SupportedSizes) -> Result<StreamResolution, CandidateRefusal> {
        guard let display = mode.size else {
            return .failure(CandidateRefusal("no display size"))
        }
        guard display.width > 0, display.height > 0,
              display.width <= maximumDisplaySide, display.height <= maximumDisplaySide else {
            return .failure(CandidateRefusal("display size \(display) is not a usable size"))
        }
        let scale = mode.effectiveScale
        let scaled = VideoSize(width: Int((Double(display.width) / scale).rounded()),
                               height: Int((Double(display.height) / scale).rounded()))
        let range = display.isLandscape ? sizes.landscape : sizes.portrait
        if let range, let why = range.refusal(scaledSize: scaled, diagonal: mode.diagonalInches) {
            return .failure(CandidateRefusal("\(display.isLandscape ? "landscape" : "portrait") \(display) at scale \(scale): \(why)"))
        }
        // 4:2:0 halves chroma in both directions, so the encoder needs even sides.
        let encoded = VideoSize(width: scaled.width & ~1, height: scaled.height & ~1)
        let settings = EncoderSettings(width: encoded.width, height: encoded.height)
        do {
            try settings.validate()
        } catch {
            return .failure(CandidateRefusal("\(display) at scale \(scale) encodes as \(encoded), which H.264 cannot carry: \(error)"))
        }
        return .success(StreamResolution(displaySize: display, encodedSize: encoded, scale: scale, display: mode))
    }

    /// A side longer than any screen, so size arithmetic on hostile values cannot overflow.
    public static let maximumDisplaySide = 1 << 20

    /// Chooses the stream: this display, then its alternatives in order (``allModes``); the
    /// first whose scaled size fits `sizes` wins.
    public func chooseStreamResolution(for sizes: SupportedSizes = .any) -> StreamResolutionChoice {
        var refusals: [String] = []
        for (index, candidate) in allModes.enumerated() {
            switch Self.evaluate(candidate, against: sizes) {
            case .success(let stream): return .match(stream)
            case .failure(let refusal): refusals.append("candidate \(index): \(refusal.reason)")
            }
        }
        if refusals.isEmpty { refusals.append("the head unit offers no display mode") }
        return .noMatch(reason: refusals.joined(separator: "; "))
    }

    /// Every mode (``allModes``: alternatives included, flattened, in order) that fits `sizes`:
    /// what a head unit may be told this app can draw.
    public func matchingModes(for sizes: SupportedSizes = .any) -> [HeadUnitDisplay] {
        allModes.filter {
            if case .success = Self.evaluate($0, against: sizes) { return true }
            return false
        }
    }
}

/// Why one candidate display mode was refused.
struct CandidateRefusal: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}

extension VideoSize {
    /// Whether this is a landscape size; a square counts as landscape.
    var isLandscape: Bool { width >= height }

    /// The long side over the short side, so portrait and landscape compare alike; nil when a
    /// side is not positive.
    var normalizedAspectRatio: Double? {
        guard width > 0, height > 0 else { return nil }
        return Double(max(width, height)) / Double(min(width, height))
    }
}

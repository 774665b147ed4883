import Foundation

/// One report from a head unit's touch screen: fingers going down, moving, lifting, or taken
/// away.
///
/// Points are in the head unit's pixels (``HeadUnitDisplay/size``), origin top-left; divide them
/// by the display scale (``inRenderedPixels(scale:)``) before recognising gestures on a scaled
/// display. SmartDeviceLink's `OnTouchEvent` is one source of these events (the SDL connection
/// converts it).
public struct TouchEvent: Sendable, Equatable {
    /// The phase of the touches the event reports.
    public enum Kind: Sendable, Hashable, CustomStringConvertible {
        /// Fingers went down.
        case begin
        /// Fingers that are down moved.
        case move
        /// Fingers lifted.
        case end
        /// The head unit took the touches away (a system overlay, say); no gesture may finish.
        case cancel

        /// `begin`, `move`, `end` or `cancel`.
        public var description: String {
            switch self {
            case .begin: "begin"
            case .move: "move"
            case .end: "end"
            case .cancel: "cancel"
            }
        }
    }

    /// One finger in an event. A head unit may batch several samples of the same finger into one
    /// event; `timestamps[i]` belongs to `points[i]`.
    public struct Touch: Sendable, Equatable {
        /// Which finger, 0...9; stays the same from begin to end.
        public var id: Int
        /// Milliseconds on the head unit's clock, one per sample.
        public var timestamps: [Int]
        /// Where the finger was, one per sample: x from the left edge, y from the top.
        public var points: [SIMD2<Double>]

        /// A finger with its samples.
        public init(id: Int, timestamps: [Int], points: [SIMD2<Double>]) {
            self.id = id
            self.timestamps = timestamps
            self.points = points
        }

        /// A finger with one sample, which is what head units send in practice.
        public init(id: Int, timestamp: Int, x: Double, y: Double) {
            self.init(id: id, timestamps: [timestamp], points: [SIMD2(x, y)])
        }
    }

    /// The phase.
    public var type: Kind
    /// The fingers the event is about.
    public var touches: [Touch]

    /// An event of `type` about `touches`.
    public init(type: Kind, touches: [Touch]) {
        self.type = type
        self.touches = touches
    }

    /// The highest finger id.
    public static let maximumTouchID = 9
    /// The most samples one finger may carry in one event; more means a broken head unit, and
    /// refusing them keeps the work per event bounded.
    public static let maximumSamplesPerTouch = 64

    /// Checks what the recogniser relies on: finger ids 0...9 and each at most once, samples
    /// that pair up (at most ``maximumSamplesPerTouch``), timestamps not negative, finite points.
    ///
    /// A cancel may list no fingers, because it cancels everything anyway; every other event
    /// must name at least one.
    public func validate() throws(TouchEventRejection) {
        if touches.isEmpty && type != .cancel { throw .noTouches(type) }
        if touches.count > Self.maximumTouchID + 1 { throw .tooManyTouches(touches.count) }
        var seen = Set<Int>()
        for touch in touches {
            guard (0...Self.maximumTouchID).contains(touch.id) else { throw .touchIDOutOfRange(touch.id) }
            guard seen.insert(touch.id).inserted else { throw .duplicateTouchID(touch.id) }
            guard !touch.timestamps.isEmpty, !touch.points.isEmpty else { throw .noSamples(touchID: touch.id) }
            guard touch.timestamps.count == touch.points.count else {
                throw .sampleCountMismatch(touchID: touch.id, timestamps: touch.timestamps.count,
                                           points: touch.points.count)
            }
            guard touch.timestamps.count <= Self.maximumSamplesPerTouch else {
                throw .tooManySamples(touchID: touch.id, count: touch.timestamps.count)
            }
            if let negative = touch.timestamps.first(where: { $0 < 0 }) {
                throw .negativeTimestamp(touchID: touch.id, timestamp: negative)
            }
            if touch.points.contains(where: { !$0.x.isFinite || !$0.y.isFinite }) {
                throw .nonFinitePoint(touchID: touch.id)
            }
        }
    }

    /// The same event with its points divided by the head unit's display scale, so that touches
    /// land in the pixels the map was laid out in (the encoded video is `display / scale`).
    /// Scales outside ``HeadUnitDisplay/scaleRange`` are clamped into it; a non-finite scale
    /// counts as 1.
    public func inRenderedPixels(scale: Double) -> TouchEvent {
        let range = HeadUnitDisplay.scaleRange
        let scale = scale.isFinite ? min(max(scale, range.lowerBound), range.upperBound) : 1
        var copy = self
        for index in copy.touches.indices {
            copy.touches[index].points = copy.touches[index].points.map { $0 / scale }
        }
        return copy
    }

    /// The same event held to a screen of `width` x `height` pixels (origin top-left, in the
    /// pixels of the event's points).
    ///
    /// A finger cannot go down off the screen, so a begin with a point outside it is refused
    /// (``TouchEventRejection/outsideScreen(touchID:x:y:width:height:)``): a broken or hostile
    /// head unit's tap at x = 1e19 reaches no gesture, no map coordinate and no control. A finger
    /// that slides off the edge while down is held at the edge instead, so its drag still ends.
    /// Non-finite points are left for ``validate()`` to refuse.
    public func onScreen(width: Int, height: Int) throws(TouchEventRejection) -> TouchEvent {
        let right = Double(max(width, 0)), bottom = Double(max(height, 0))
        var copy = self
        for index in copy.touches.indices {
            let touch = copy.touches[index]
            if type == .begin, let outside = touch.points.first(where: {
                $0.x.isFinite && $0.y.isFinite && !((0...right).contains($0.x) && (0...bottom).contains($0.y))
            }) {
                throw .outsideScreen(touchID: touch.id, x: outside.x, y: outside.y, width: width, height: height)
            }
            copy.touches[index].points = touch.points.map { point in
                guard point.x.isFinite, point.y.isFinite else { return point }
                return SIMD2(min(max(point.x, 0), right), min(max(point.y, 0), bottom))
            }
        }
        return copy
    }
}

/// Why a touch event was ignored. The recogniser logs it, keeps it in
/// ``GestureRecognizer/lastRejection`` and carries on with its state unchanged.
public enum TouchEventRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The source could not read the event (a field missing or of the wrong type); the detail
    /// says what it expected.
    case malformed(String)
    /// A begin, move or end named no finger.
    case noTouches(TouchEvent.Kind)
    /// More fingers than the ten ids allow.
    case tooManyTouches(Int)
    /// A finger id outside 0...9.
    case touchIDOutOfRange(Int)
    /// The same finger twice in one event.
    case duplicateTouchID(Int)
    /// A finger without a timestamp or without a point.
    case noSamples(touchID: Int)
    /// Timestamps and points that cannot be paired.
    case sampleCountMismatch(touchID: Int, timestamps: Int, points: Int)
    /// More samples than ``TouchEvent/maximumSamplesPerTouch``.
    case tooManySamples(touchID: Int, count: Int)
    /// A timestamp before the head unit's epoch.
    case negativeTimestamp(touchID: Int, timestamp: Int)
    /// A point that is NaN or infinite.
    case nonFinitePoint(touchID: Int)
    /// A finger went down off the screen (``TouchEvent/onScreen(width:height:)``).
    case outsideScreen(touchID: Int, x: Double, y: Double, width: Int, height: Int)

    /// What was wrong, for the log: the rule broken and that the event was ignored.
    public var description: String {
        switch self {
        case .malformed(let detail):
            return "touch event could not be read: \(detail); the event is ignored"
        case .noTouches(let kind):
            return "\(kind) touch event names no finger; the event is ignored"
        case .tooManyTouches(let count):
            return "touch event names \(count) fingers but ids only go 0...\(TouchEvent.maximumTouchID); the event is ignored"
        case .touchIDOutOfRange(let id):
            return "touch id \(id) is outside 0...\(TouchEvent.maximumTouchID); the event is ignored"
        case .duplicateTouchID(let id):
            return "touch id \(id) appears twice in one event; the event is ignored"
        case .noSamples(let id):
            return "touch \(id) has no timestamp or no point; the event is ignored"
        case .sampleCountMismatch(let id, let timestamps, let points):
            return "touch \(id) has \(timestamps) timestamps but \(points) points; they must pair up"
        case .tooManySamples(let id, let count):
            return "touch \(id) carries \(count) samples, more than \(TouchEvent.maximumSamplesPerTouch); the event is ignored"
        case .negativeTimestamp(let id, let timestamp):
            return "touch \(id) has negative timestamp \(timestamp) ms; the event is ignored"
        case .nonFinitePoint(let id):
            return "touch \(id) has a NaN or infinite point; the event is ignored"
        case .outsideScreen(let id, let x, let y, let width, let height):
            return "touch \(id) went down at (\(x), \(y)), outside the \(width)x\(height) screen; the event is ignored"
        }
    }
}

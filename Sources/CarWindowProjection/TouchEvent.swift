import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks
import CarWindowSystemSupport

/// One SmartDeviceLink `OnTouchEvent` notification: what the head unit's touch screen reported.
///
/// The field names follow the RPC spec so that the notification's JSON parameters decode
/// directly: `{"type":"BEGIN","event":[{"id":0,"ts":[49],"c":[{"x":100,"y":200}]}]}`.
/// Coordinates arrive in the head unit's pixels; divide them by the display scale
/// (``inRenderedPixels(scale:)``) before recognising gestures on a scaled display.
public struct TouchEvent: Sendable, Equatable, Codable {
    /// The phase of the touches the event reports.
    public enum Kind: String, Sendable, Equatable, Codable {
        /// Fingers went down.
        case begin = "BEGIN"
        /// Fingers that are down moved.
        case move = "MOVE"
        /// Fingers lifted.
        case end = "END"
        /// The head unit took the touches away (a system overlay, say); no gesture may finish.
        case cancel = "CANCEL"
    }

    /// A point on the head unit's screen, in pixels, origin top-left.
    public struct Coordinate: Sendable, Equatable, Codable {
        /// Pixels from the left edge.
        public var x: Double
        /// Pixels from the top edge.
        public var y: Double

        /// A point at (`x`, `y`).
        public init(x: Double, y: Double) {
            self.x = x
            self.y = y
        }

        /// The point as a vector, which is how the recogniser does its arithmetic.
        public var point: SIMD2<Double> { SIMD2(x, y) }
    }

    /// One finger in an event. The head unit may batch several samples of the same finger into
    /// one event; `timestamps[i]` belongs to `coordinates[i]`.
    public struct Touch: Sendable, Equatable, Codable {
        /// Which finger, 0...9; stays the same from BEGIN to END.
        public var id: Int
        /// Milliseconds on the head unit's clock, one per sample.
        public var timestamps: [Int]
        /// Where the finger was, one per sample.
        public var coordinates: [Coordinate]

        /// A finger with its samples.
        public init(id: Int, timestamps: [Int], coordinates: [Coordinate]) {
            self.id = id
            self.timestamps = timestamps
            self.coordinates = coordinates
        }

        /// A finger with one sample, which is what head units send in practice.
        public init(id: Int, timestamp: Int, x: Double, y: Double) {
            self.init(id: id, timestamps: [timestamp], coordinates: [Coordinate(x: x, y: y)])
        }

        enum CodingKeys: String, CodingKey {
            case id
            case timestamps = "ts"
            case coordinates = "c"
        }
    }

    /// The phase; named `type` in the RPC.
    public var type: Kind
    /// The fingers the event is about; named `event` in the RPC.
    public var touches: [Touch]

    /// An event of `type` about `touches`.
    public init(type: Kind, touches: [Touch]) {
        self.type = type
        self.touches = touches
    }

    enum CodingKeys: String, CodingKey {
        case type
        case touches = "event"
    }

    /// The highest finger id the RPC allows.
    public static let maximumTouchID = 9
    /// The most samples one finger may carry in one event; more means a broken head unit, and
    /// refusing them keeps the work per event bounded.
    public static let maximumSamplesPerTouch = 64

    /// Decodes the JSON parameters of an `OnTouchEvent` notification and checks them.
    ///
    /// JSON cannot carry NaN or infinities, but some bridges write them as the strings "NaN",
    /// "Infinity" and "-Infinity"; those decode and are then refused by ``validate()``, so the
    /// caller learns the precise reason.
    public static func decode(json: Data) throws(TouchEventRejection) -> TouchEvent {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        let event: TouchEvent
        do {
            event = try decoder.decode(TouchEvent.self, from: json)
        } catch {
            throw .malformed(String(describing: error))
        }
        try event.validate()
        return event
    }

    /// Checks what the RPC spec promises and the recogniser relies on.
    ///
    /// A CANCEL may list no fingers, because it cancels everything anyway; every other event
    /// must name at least one.
    public func validate() throws(TouchEventRejection) {
        if touches.isEmpty && type != .cancel { throw .noTouches(type) }
        if touches.count > Self.maximumTouchID + 1 { throw .tooManyTouches(touches.count) }
        var seen = Set<Int>()
        for touch in touches {
            guard (0...Self.maximumTouchID).contains(touch.id) else { throw .touchIDOutOfRange(touch.id) }
            guard seen.insert(touch.id).inserted else { throw .duplicateTouchID(touch.id) }
            guard !touch.timestamps.isEmpty, !touch.coordinates.isEmpty else { throw .noSamples(touchID: touch.id) }
            guard touch.timestamps.count == touch.coordinates.count else {
                throw .sampleCountMismatch(touchID: touch.id, timestamps: touch.timestamps.count,
                                           coordinates: touch.coordinates.count)
            }
            guard touch.timestamps.count <= Self.maximumSamplesPerTouch else {
                throw .tooManySamples(touchID: touch.id, count: touch.timestamps.count)
            }
            if let negative = touch.timestamps.first(where: { $0 < 0 }) {
                throw .negativeTimestamp(touchID: touch.id, timestamp: negative)
            }
            if touch.coordinates.contains(where: { !$0.x.isFinite || !$0.y.isFinite }) {
                throw .nonFiniteCoordinate(touchID: touch.id)
            }
        }
    }

    /// The same event with its coordinates divided by the head unit's display scale, so that
    /// touches land in the pixels the map was laid out in (the encoded video is `display / scale`).
    /// Scales outside 1...10, the RPC's range, are clamped into it; a non-finite scale counts as 1.
    public func inRenderedPixels(scale: Double) -> TouchEvent {
        let scale = scale.isFinite ? min(max(scale, 1), 10) : 1
        var copy = self
        for index in copy.touches.indices {
            copy.touches[index].coordinates = copy.touches[index].coordinates.map {
                Coordinate(x: $0.x / scale, y: $0.y / scale)
            }
        }
        return copy
    }
}

/// Why a touch event was ignored. The recogniser logs it, keeps it in
/// ``GestureRecognizer/lastRejection`` and carries on with its state unchanged.
public enum TouchEventRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The JSON did not decode as an `OnTouchEvent` (a field missing or of the wrong type).
    case malformed(String)
    /// A BEGIN, MOVE or END named no finger.
    case noTouches(TouchEvent.Kind)
    /// More fingers than the RPC's ten ids allow.
    case tooManyTouches(Int)
    /// A finger id outside 0...9.
    case touchIDOutOfRange(Int)
    /// The same finger twice in one event.
    case duplicateTouchID(Int)
    /// A finger without a timestamp or without a coordinate.
    case noSamples(touchID: Int)
    /// Timestamps and coordinates that cannot be paired.
    case sampleCountMismatch(touchID: Int, timestamps: Int, coordinates: Int)
    /// More samples than ``TouchEvent/maximumSamplesPerTouch``.
    case tooManySamples(touchID: Int, count: Int)
    /// A timestamp before the head unit's epoch.
    case negativeTimestamp(touchID: Int, timestamp: Int)
    /// A coordinate that is NaN or infinite.
    case nonFiniteCoordinate(touchID: Int)

    /// What was wrong, for the log: the rule broken and that the event was ignored.
    public var description: String {
        switch self {
        case .malformed(let detail):
            return "touch event is not valid OnTouchEvent JSON (\(detail)); the head unit must send type, event[].id, ts and c"
        case .noTouches(let kind):
            return "\(kind.rawValue) touch event names no finger; the event is ignored"
        case .tooManyTouches(let count):
            return "touch event names \(count) fingers but ids only go 0...\(TouchEvent.maximumTouchID); the event is ignored"
        case .touchIDOutOfRange(let id):
            return "touch id \(id) is outside 0...\(TouchEvent.maximumTouchID); the event is ignored"
        case .duplicateTouchID(let id):
            return "touch id \(id) appears twice in one event; the event is ignored"
        case .noSamples(let id):
            return "touch \(id) has no timestamp or no coordinate; the event is ignored"
        case .sampleCountMismatch(let id, let timestamps, let coordinates):
            return "touch \(id) has \(timestamps) timestamps but \(coordinates) coordinates; they must pair up"
        case .tooManySamples(let id, let count):
            return "touch \(id) carries \(count) samples, more than \(TouchEvent.maximumSamplesPerTouch); the event is ignored"
        case .negativeTimestamp(let id, let timestamp):
            return "touch \(id) has negative timestamp \(timestamp) ms; the event is ignored"
        case .nonFiniteCoordinate(let id):
            return "touch \(id) has a NaN or infinite coordinate; the event is ignored"
        }
    }
}

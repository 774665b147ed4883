import Foundation

/// The parameters of one SmartDeviceLink `OnTouchEvent` notification, as they travel:
/// `{"type":"BEGIN","event":[{"id":0,"ts":[49],"c":[{"x":100,"y":200}]}]}`.
///
/// The session takes a `TouchEvent` (`touchEvent`, from CarWindowSDL); `decode(json:)` there reads and checks the
/// JSON in one step, as `SDLConnection` does. A head unit (`HeadUnitSimulator`) sends this.
public struct SDLTouchEvent: Sendable, Equatable, Codable {
    /// The RPC's `TouchType`.
    public enum TouchType: String, Sendable, Equatable, Codable {
        /// Fingers went down.
        case begin = "BEGIN"
        /// Fingers that are down moved.
        case move = "MOVE"
        /// Fingers lifted.
        case end = "END"
        /// The head unit took the touches away.
        case cancel = "CANCEL"
    }

    /// The RPC's `TouchCoord`: a point on the head unit's screen, in pixels, origin top-left.
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

        enum CodingKeys: String, CodingKey { case x, y }

        /// Whole pixels are written as JSON integers, as SDL Core sends them (its HMI interface
        /// types them Integer and refuses `12.0`); fractions stay numbers with a fraction.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            func write(_ value: Double, _ key: CodingKeys) throws {
                if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
                    try container.encode(Int(value), forKey: key)
                } else {
                    try container.encode(value, forKey: key)
                }
            }
            try write(x, .x)
            try write(y, .y)
        }
    }

    /// The RPC's `TouchEvent` struct: one finger; `timestamps[i]` belongs to `coordinates[i]`.
    public struct Touch: Sendable, Equatable, Codable {
        /// Which finger (`id`).
        public var id: Int
        /// Milliseconds on the head unit's clock, one per sample (`ts`).
        public var timestamps: [Int]
        /// Where the finger was, one per sample (`c`).
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

    /// The phase (`type`).
    public var type: TouchType
    /// The fingers the event is about (`event`).
    public var touches: [Touch]

    /// An event of `type` about `touches`.
    public init(type: TouchType, touches: [Touch]) {
        self.type = type
        self.touches = touches
    }

    enum CodingKeys: String, CodingKey {
        case type
        case touches = "event"
    }
}

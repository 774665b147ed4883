import Foundation
import CarWindowProjection
import CarWindowSDLProtocol

// Between the wire's touch event and the session's.
extension SDLTouchEvent {
    /// `event` as the head unit would send it.
    public init(_ event: TouchEvent) {
        let type: TouchType = switch event.type {
        case .begin: .begin
        case .move: .move
        case .end: .end
        case .cancel: .cancel
        }
        self.init(type: type, touches: event.touches.map {
            Touch(id: $0.id, timestamps: $0.timestamps, coordinates: $0.points.map { Coordinate(x: $0.x, y: $0.y) })
        })
    }

    /// This event as the session takes it; not yet checked (`TouchEvent.validate()`).
    public var touchEvent: TouchEvent {
        let kind: TouchEvent.Kind = switch type {
        case .begin: .begin
        case .move: .move
        case .end: .end
        case .cancel: .cancel
        }
        return TouchEvent(type: kind, touches: touches.map {
            TouchEvent.Touch(id: $0.id, timestamps: $0.timestamps, points: $0.coordinates.map { SIMD2($0.x, $0.y) })
        })
    }

    /// Decodes the JSON parameters of an `OnTouchEvent` notification and checks them
    /// (`TouchEvent.validate()`): JSON that does not decode is `TouchEventRejection.malformed(_:)`.
    ///
    /// JSON cannot carry NaN or infinities, but some bridges write them as the strings "NaN",
    /// "Infinity" and "-Infinity"; those decode and are then refused by the check, so the
    /// caller learns the precise reason.
    public static func decode(json: Data) throws(TouchEventRejection) -> TouchEvent {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        let event: TouchEvent
        do {
            event = try decoder.decode(SDLTouchEvent.self, from: json).touchEvent
        } catch let error as DecodingError {
            throw .malformed("not valid OnTouchEvent JSON (\(SDLRPCMessage.describe(error))); the head unit must send type, event[].id, ts and c")
        } catch {
            throw .malformed("not valid OnTouchEvent JSON; the head unit must send type, event[].id, ts and c")
        }
        try event.validate()
        return event
    }
}

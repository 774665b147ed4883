import Foundation
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

/// SmartDeviceLink's `OnTouchEvent` JSON: its field names, the conversion to and from the
/// session's ``TouchEvent``, and the checks on untrusted input. What the recogniser makes of the
/// events is in ``TouchGestureTests``.
@Suite struct SDLTouchEventTests {
    @Test("OnTouchEvent JSON decodes into the RPC's fields and encodes back with its names")
    func decodesSDLPayload() throws {
        let json = #"{"type":"BEGIN","event":[{"id":0,"ts":[49],"c":[{"x":100,"y":200}]}]}"#
        let event = try SDLTouchEvent.decode(json: Data(json.utf8))
        #expect(event == TouchEvent(type: .begin, touches: [TouchEvent.Touch(id: 0, timestamp: 49, x: 100, y: 200)]))
        let wire = SDLTouchEvent(event)
        #expect(wire == SDLTouchEvent(type: .begin, touches: [SDLTouchEvent.Touch(id: 0, timestamp: 49, x: 100, y: 200)]))
        #expect(wire.touchEvent == event)
        let encoded = String(decoding: try JSONEncoder().encode(wire), as: UTF8.self)
        #expect(encoded.contains(#""event""#) && encoded.contains(#""ts""#) && encoded.contains(#""c""#))
        #expect(event.inRenderedPixels(scale: 2).touches[0].points == [SIMD2(50, 100)])
    }

    @Test("Every phase converts both ways, batched samples stay paired",
          arguments: [("BEGIN", TouchEvent.Kind.begin), ("MOVE", .move), ("END", .end), ("CANCEL", .cancel)])
    func phasesConvert(name: String, kind: TouchEvent.Kind) throws {
        let json = #"{"type":"\#(name)","event":[{"id":3,"ts":[10,20],"c":[{"x":1,"y":2},{"x":3.5,"y":4}]}]}"#
        let event = try SDLTouchEvent.decode(json: Data(json.utf8))
        #expect(event == TouchEvent(type: kind, touches: [.init(id: 3, timestamps: [10, 20], points: [SIMD2(1, 2), SIMD2(3.5, 4)])]))
        #expect(SDLTouchEvent(event).type.rawValue == name)
        #expect(try SDLTouchEvent.decode(json: JSONEncoder().encode(SDLTouchEvent(event))) == event)
    }

    @Test("Decoding checks the event: the rule it breaks comes back typed",
          arguments: [
            (#"{"type":"BEGIN","event":[{"id":10,"ts":[0],"c":[{"x":1,"y":1}]}]}"#, TouchEventRejection.touchIDOutOfRange(10)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":"NaN","y":1}]}]}"#, .nonFinitePoint(touchID: 0)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":1,"y":"Infinity"}]}]}"#, .nonFinitePoint(touchID: 0)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[-5],"c":[{"x":1,"y":1}]}]}"#, .negativeTimestamp(touchID: 0, timestamp: -5)),
            (#"{"type":"MOVE","event":[]}"#, .noTouches(.move)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[1,2],"c":[{"x":1,"y":1}]}]}"#,
             .sampleCountMismatch(touchID: 0, timestamps: 2, points: 1)),
          ])
    func decodingValidates(payload: String, reason: TouchEventRejection) {
        #expect(throws: reason) { try SDLTouchEvent.decode(json: Data(payload.utf8)) }
    }

    @Test("JSON that is not an OnTouchEvent is malformed, with what was expected",
          arguments: ["not json", #"{"type":"WIGGLE","event":[]}"#, #"{"event":[]}"#,
                      #"{"type":"MOVE","event":[{"id":0,"c":[{"x":1,"y":1}]}]}"#,
                      #"{"type":"BEGIN","event":[{"id":0.5,"ts":[0],"c":[{"x":1,"y":1}]}]}"#])
    func malformed(payload: String) {
        do {
            _ = try SDLTouchEvent.decode(json: Data(payload.utf8))
            Issue.record("\(payload) decoded")
        } catch {
            guard case .malformed(let detail) = error else {
                Issue.record("expected malformed, got \(error)")
                return
            }
            #expect(detail.contains("OnTouchEvent"))
        }
    }

    @Test("A CANCEL without fingers is allowed: it cancels everything")
    func emptyCancel() throws {
        #expect(try SDLTouchEvent.decode(json: Data(#"{"type":"CANCEL","event":[]}"#.utf8)) == TouchEvent(type: .cancel, touches: []))
    }
}

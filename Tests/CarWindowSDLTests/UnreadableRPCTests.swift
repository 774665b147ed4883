import Foundation
import Testing
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL

/// A head unit's JSON that does not fit: one line that names the field, never the decoder's
/// whole context (954 lines of it in one run against a hostile head unit).
struct UnreadableRPCTests {
    static func message(_ json: String, _ function: SDLFunctionID = .onHMIStatus) -> SDLRPCMessage {
        SDLRPCMessage(type: .notification, functionID: function, correlationID: 0, json: Array(json.utf8))
    }

    @Test(arguments: [
        (#"{"hmiLevel": 5}"#, "field hmiLevel is not String"),
        (#"{"audioStreamingState": "AUDIBLE"}"#, "field hmiLevel is missing"),
        (#"{"hmiLevel": "FULL", "windowID": "one"}"#, "field windowID is not Int"),
        (#"{"hmiLevel": null}"#, "field hmiLevel is null"),
        ("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "the parameters are not JSON"),
    ])
    func aBadFieldIsOneLineThatNamesIt(_ json: String, _ expected: String) {
        #expect {
            _ = try Self.message(json).decodeParameters(SDLHMIStatus.self)
        } throws: { error in
            let text = "\(error)"
            return text.contains(expected) && !text.contains("\n") && text.count < 400 && !text.contains("codingPath")
        }
    }

    @Test func aBadTouchIsOneLineThatNamesIt() {
        #expect {
            _ = try SDLTouchEvent.decode(json: Data(#"{"type":"BEGIN","event":[{"id":"zero","ts":[1],"c":[{"x":1,"y":2}]}]}"#.utf8))
        } throws: { error in
            let text = "\(error)"
            return text.contains("field event[0].id is not Int") && !text.contains("\n") && !text.contains("codingPath")
        }
    }
}

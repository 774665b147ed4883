import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// An RPC service payload from the head unit, read the way `SDLConnection` reads it: the binary
/// header, then the parameters of the responses and notifications it acts on, and what the
/// session derives from a video capability (the stream size and encoder settings).
enum RPCTarget {
    static func run(_ bytes: [UInt8]) {
        guard let rpc = try? SDLRPCMessage(decoding: bytes) else { return }
        // Our own encoding of what we read must read back the same.
        guard let again = try? SDLRPCMessage(decoding: rpc.encoded()), again == rpc else {
            fatalError("RPC payload does not survive encoding and decoding: \(rpc.type) \(rpc.functionID)")
        }
        handle(rpc)
    }

    /// What the connection does with an RPC, whatever its function id claims: a hostile head unit
    /// chooses the id, so every reader sees every payload.
    static func handle(_ rpc: SDLRPCMessage) {
        if let status = try? rpc.decodeParameters(SDLResponseStatus.self) {
            _ = status.success
        }
        if let status = try? rpc.decodeParameters(SDLHMIStatus.self) {
            _ = status.allowsVideo
        }
        if let event = try? SDLTouchEvent.decode(json: Data(rpc.json)) {
            var recognizer = GestureRecognizer()
            _ = recognizer.handle(event.inRenderedPixels(scale: 2))
            _ = recognizer.frameTick(elapsedMilliseconds: 16)
        }
        if let capability = try? rpc.videoStreamingCapability() {
            useCapability(capability)
        }
        // The registration's buttons, touch, PCM format and languages; button presses, vehicle
        // data, driver distraction and language changes.
        if let facts = try? rpc.decodeParameters(SDLRegistrationFacts.self) {
            guard facts.buttons.count <= SDLRegistrationFacts.maximumButtons else {
                fatalError("\(facts.buttons.count) buttons kept from a registration")
            }
            if let format = facts.pcmFormat {
                _ = format.encode([0, 0.5, -0.5], rate: 16_000)
            }
        }
        _ = try? rpc.decodeParameters(SDLButtonPress.self)
        _ = (try? rpc.decodeParameters(SDLVehicleDataNotification.self))?.ambientLight?.isDark
        _ = try? rpc.decodeParameters(SDLDriverDistraction.self)
        _ = try? rpc.decodeParameters(SDLLanguages.self)
        if let capability = try? VideoStreamingCapability(json: Data(rpc.json)) {
            useCapability(capability)
        }
    }

    /// The link's and the session's use of a capability: the formats, the display the session
    /// takes, the stream it chooses and the encoder settings for it.
    static func useCapability(_ capability: VideoStreamingCapability) {
        let filled = capability.filling(from: VideoStreamingCapability(preferredResolution: ImageResolution(width: 800, height: 480)))
        _ = filled.streamableFormats
        _ = capability.allCapabilities.map(\.streamableFormats)
        // What the link reports back: each mode once, and it encodes.
        if let reported = VideoStreamingCapability.appCapability(listing: capability.allCapabilities) {
            _ = try? JSONEncoder().encode(reported)
        }
        useDisplay(capability.headUnitDisplay)
    }

    /// The session's use of a display: the stream it chooses and the encoder settings for it.
    static func useDisplay(_ display: HeadUnitDisplay) {
        _ = display.matchingModes()
        guard let stream = display.chooseStreamResolution().stream else { return }
        let settings = EncoderSettings(stream: stream)
        do {
            try settings.validate()
        } catch {
            fatalError("a chosen stream gives encoder settings that do not validate: \(error)")
        }
    }
}

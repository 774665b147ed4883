import Foundation
import Testing
@testable import CarWindow

/// The head unit is untrusted input: numbers off the wire are clamped before any arithmetic,
/// frame sizes are ours, and a head unit that floods the app cannot grow its memory.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SDLHostileHeadUnitTests {
    static let hugeMTU: BSONDocument = ["hashId": .int32(7), "mtu": .int64(1 << 62), "protocolVersion": .string("5.4.1")]

    @Test func wireNumbersAreClampedWhenRead() {
        #expect(SDLSessionInfo(ack: Self.hugeMTU, sessionID: 1).mtu == 131_084)
        #expect(SDLSessionInfo(ack: ["mtu": .int64(-5)], sessionID: 1).mtu == 64)
        #expect(SDLSessionInfo(ack: ["mtu": .int64(1500)], sessionID: 1).mtu == 1500)
        let asked = SDLVideoServiceParameters(resolution: ImageResolution(width: 800, height: 480), format: .h264Raw)
        let granted = asked.acknowledged(by: ["mtu": .int64(.max), "width": .int64(1 << 40), "height": .int32(480)])
        #expect(granted.mtu == 131_084)
        #expect(granted.resolution == asked.resolution, "a size outside 16...8192 is ignored; the asked one stands")
    }

    @Test func aFirstFrameNeverOverflowsWhateverTheLimits() throws {
        // The product of the announced frame count and the frame limit once trapped here.
        var assembler = SDLMessageAssembler(maximumMessageSize: 4 << 20, maximumFramePayload: 1 << 62)
        let first: [UInt8] = [0, 0, 0, 100, 0, 0, 0, 4]
        func frame(_ type: SDLFrameType, info: UInt8, _ payload: [UInt8]) -> SDLFrame {
            SDLFrame(header: SDLFrameHeader(version: 5, frameType: type, serviceType: .rpc, frameInfo: info, sessionID: 1,
                                            dataSize: UInt32(payload.count), messageID: 9), payload: payload)
        }
        #expect(try assembler.add(frame(.first, info: 0, first)) == nil)
        for counter in 1...3 { #expect(try assembler.add(frame(.consecutive, info: UInt8(counter), [UInt8](repeating: 1, count: 25))) == nil) }
        let message = try #require(try assembler.add(frame(.consecutive, info: 0, [UInt8](repeating: 1, count: 25))))
        #expect(message.payload.count == 100)
    }
}

import Testing
@testable import CarWindowSDLProtocol

/// Framing built in place: the bytes every message is written as.
struct SDLFramingTests {
    static let payloadSizes = [0, 1, 52, 53, 1_000, 3_000, 131_060, 131_061, 300_000]

    /// The in-place bytes are exactly the frames' bytes back to back, for every size around the
    /// frame size, both header versions, data and control messages.
    @Test(arguments: [UInt8(1), 5], [64, 1_500, 131_072])
    func inPlaceBytesAreTheFramesBackToBack(version: UInt8, mtu: Int) {
        let framePayload = SDLFraming.framePayload(forMTU: mtu)
        for size in Self.payloadSizes {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let data = SDLMessage(version: version, serviceType: .video, sessionID: 3, messageID: 0x0102_0304, payload: payload)
            let control = SDLMessage(version: version, serviceType: .rpc, sessionID: 3, messageID: 9, controlInfo: .startService,
                                     isProtected: true, payload: Array(payload.prefix(200)))
            for message in [data, control] {
                let expected = message.frames(maximumFramePayload: framePayload).flatMap { $0.header.encoded() + $0.payload }
                #expect(message.encoded(maximumFramePayload: framePayload) == expected, "\(size) bytes, v\(version), MTU \(mtu)")
            }
        }
    }

    @Test func messageIDsCountFromOneAndSkipZero() {
        var framing = SDLFraming(protocolVersion: 5, mtu: 1_500, incomingFramePayload: 1_500, maximumIncomingMessageSize: 1 << 16)
        #expect(framing.message(.rpc, payload: []).messageID == 1)
        #expect(framing.message(.rpc, payload: []).messageID == 2)
        // An answer keeps the id of what it answers and takes none.
        #expect(framing.message(.control, .heartbeatACK, messageID: 77, payload: []).messageID == 77)
        #expect(framing.takeMessageID() == 3)
        framing.protocolVersion = 1
        #expect(framing.message(.rpc, payload: []).messageID == 0)
    }

    @Test func anEncryptedFrameWithoutASessionIsRefusedAsNotProtected() throws {
        let header = SDLFrameHeader(version: 5, isEncrypted: true, frameType: .single, serviceType: .video, frameInfo: 0,
                                    sessionID: 1, dataSize: 3, messageID: 1)
        guard case .failure(let error) = SDLFraming.open(SDLFrame(header: header, payload: [1, 2, 3]), session: nil,
                                                          protectedServices: [.video]) else {
            Issue.record("an encrypted frame opened without a session")
            return
        }
        #expect(error.code == .serviceNotProtected)
    }
}

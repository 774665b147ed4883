@testable import CarWindowSDLSecurity
@testable import CarWindowSDLProtocol
import CarWindowTestSupport
import Testing

/// Messages of protected services through real TLS and DTLS sessions, frames, the parser and the
/// assembler, as SDL Core 8.2 frames them: single and consecutive frames encrypted one by one,
/// first frames in the clear.
@Suite("Protected framing")
struct ProtectedFramingTests {
    @Test(arguments: [OpenSSLHeadUnitSession.Transport.tls, .dtls], [0, 1, 5_000, 16_294, 16_295, 170_000, 600_000])
    func messagesSurviveEncryptionAndFraming(transport: OpenSSLHeadUnitSession.Transport, size: Int) throws {
        let fixtures = try TestCertificates.load()
        let app = try fixtures.library().makeSession(appID: "app")
        let headUnit = try fixtures.headUnit(transport)
        try connect(headUnit, app)
        let mtu = 131_072 - SDLFrameHeader.size
        let message = SDLMessage(version: 5, serviceType: .video, sessionID: 3, messageID: 77, payload: payload(size))
        let frames = try message.protectedFrames(maximumFramePayload: mtu, session: app)

        #expect(frames.allSatisfy { $0.payload.count <= mtu })
        if frames.count > 1 {
            #expect(frames[0].header.frameType == .first)
            #expect(!frames[0].header.isEncrypted, "a first frame goes in the clear, as SDL Core sends it")
            #expect(frames.dropFirst().allSatisfy { $0.header.isEncrypted && $0.header.frameType == .consecutive })
        } else {
            #expect(frames[0].header.isEncrypted && frames[0].header.frameType == .single)
        }
        // DTLS frames stay under what SDL Core's DTLS reader takes as one datagram.
        if transport == .dtls { #expect(frames.allSatisfy { $0.payload.count <= 16_000 }) }

        var parser = SDLFrameParser(maximumFramePayload: mtu)
        var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: mtu)
        // The frames made above: TLS records must be read in the order they were sealed.
        parser.append(frames.flatMap { $0.encoded() })
        var received: [SDLMessage] = []
        while let frame = try parser.nextFrame() {
            let opened = frame.needsDecryption ? try frame.decrypted(with: headUnit) : frame
            if let whole = try assembler.add(opened) { received.append(whole) }
        }
        #expect(received == [message])

        // The same message built in place (the path of every protected video frame) frames
        // alike: the same frame types, sizes within the MTU, and the message back.
        parser.append(try message.protectedEncoded(maximumFramePayload: mtu, session: app))
        var rebuilt: [SDLFrame] = []
        while let frame = try parser.nextFrame() { rebuilt.append(frame) }
        #expect(rebuilt.map(\.header.frameType) == frames.map(\.header.frameType))
        #expect(rebuilt.map(\.header.isEncrypted) == frames.map(\.header.isEncrypted))
        #expect(rebuilt.map(\.header.frameInfo) == frames.map(\.header.frameInfo))
        #expect(rebuilt.allSatisfy { $0.payload.count <= mtu && Int($0.header.dataSize) == $0.payload.count })
        received = []
        for frame in rebuilt {
            let opened = frame.needsDecryption ? try frame.decrypted(with: headUnit) : frame
            if let whole = try assembler.add(opened) { received.append(whole) }
        }
        #expect(received == [message])
    }

    /// An encrypted frame that reaches the assembler undecrypted is refused, not taken as data.
    @Test func anEncryptedDataFrameIsNeverTakenAsPlain() throws {
        let fixtures = try TestCertificates.load()
        let app = try fixtures.library().makeSession(appID: "app")
        try connect(try fixtures.headUnit(.tls), app)
        let message = SDLMessage(version: 5, serviceType: .rpc, sessionID: 1, messageID: 1, payload: payload(100))
        let frame = try #require(try message.protectedFrames(maximumFramePayload: 1_000, session: app).first)
        var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: 1_000)
        #expect(throws: SDLProtocolError.encryptedFrame) { try assembler.add(frame) }
    }

    /// A control frame's E bit marks a protected service and survives the round trip; its payload
    /// is never encrypted.
    @Test func controlMessagesCarryTheProtectionBit() throws {
        let start = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: 9, controlInfo: .startService,
                               isProtected: true, payload: [1, 2, 3])
        let frames = start.frames(maximumFramePayload: 1_000)
        #expect(frames.count == 1 && frames[0].header.isEncrypted && !frames[0].needsDecryption)
        var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: 1_000)
        #expect(try assembler.add(frames[0]) == start)
    }

    /// Records that grow past the frame are refused before a frame the peer must drop is sent.
    @Test func aLibraryThatOverfillsFramesIsCaught() throws {
        final class Generous: SDLSecuritySession {
            let inner: any SDLSecuritySession
            init(_ inner: any SDLSecuritySession) { self.inner = inner }
            func handshake(_ incoming: [UInt8]) throws(SDLSecurityError) -> [UInt8] { try inner.handshake(incoming) }
            var isHandshakeComplete: Bool { inner.isHandshakeComplete }
            func encrypt(_ plaintext: [UInt8]) throws(SDLSecurityError) -> [UInt8] { try inner.encrypt(plaintext) }
            func decrypt(_ ciphertext: [UInt8]) throws(SDLSecurityError) -> [UInt8] { try inner.decrypt(ciphertext) }
            func reset() { inner.reset() }
            func maximumPlaintextPerFrame(payloadLimit: Int) -> Int { payloadLimit }
        }
        let fixtures = try TestCertificates.load()
        let app = try fixtures.library().makeSession(appID: "app")
        try connect(try fixtures.headUnit(.tls), app)
        let message = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: 1, payload: payload(5_000))
        #expect(errorCode { try message.protectedFrames(maximumFramePayload: 1_000, session: Generous(app)) } == .encryptionFailed)
        // In place too, through the protocol's default (a library without the in-place method).
        #expect(errorCode { try message.protectedEncoded(maximumFramePayload: 1_000, session: Generous(app)) } == .encryptionFailed)
    }
}

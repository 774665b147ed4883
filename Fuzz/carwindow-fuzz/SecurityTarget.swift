import CarWindow
import CarWindowSDLProtocol
import CarWindowSDLSecurity
import CarWindowSDLTesting

/// SDL's security layer as the app runs it, on what a hostile head unit sends: security queries
/// (handshake records into a real OpenSSL TLS or DTLS server, errors, malformed headers) and
/// frames with the E bit, before and after a real handshake. Nothing traps, every refusal is a
/// typed error with the code the head unit is told, and a frame the head unit's own session
/// sealed opens to exactly what it sealed.
///
/// The first byte: bit 0 DTLS instead of TLS; bit 1 finish a real handshake (and protect video)
/// first. Then steps: an operation byte, a 16-bit length, that many bytes. Operation 0 is a
/// security query's bytes; 1 bytes to the frame parser (frames with the E bit are opened);
/// 2 a video frame the head unit's session seals from the bytes; 3 the same with one bit flipped
/// (never accepted as other plaintext); 4 protect or end the video service.
enum SecurityTarget {
    /// One library for the run, with the throw-away identity: making a certificate per input
    /// would be most of the work.
    static let library: OpenSSLSecurityLibrary = {
        do {
            return try OpenSSLSecurityLibrary(certificatePEM: ThrowAwayIdentity.certificatePEM,
                                              privateKeyPEM: ThrowAwayIdentity.privateKeyPEM)
        } catch {
            fatalError("the security target's certificate does not load: \(error)")
        }
    }()

    static func run(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        var stage = SDLAppSecurityStage(library: library, appID: "fuzz")
        do {
            try stage.prepare()
        } catch {
            fatalError("prepare failed with a working library: \(error)")
        }
        var headUnit: OpenSSLHeadUnitSession?
        if mode & 2 != 0 {
            headUnit = handshake(&stage, transport: mode & 1 != 0 ? .dtls : .tls)
            precondition(headUnit != nil && stage.isEstablished, "a real handshake with a working library did not finish")
            stage.granted(.video)
        }
        var parser = SDLFrameParser(maximumFramePayload: 131_072)
        var offset = 1, messageID: UInt32 = 1
        while offset + 3 <= bytes.count {
            let operation = bytes[offset] % 5
            let length = min(Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]), bytes.count - offset - 3)
            let chunk = Array(bytes[(offset + 3)..<(offset + 3 + length)])
            offset += 3 + length
            switch operation {
            case 0:
                do {
                    check(stage.receive(try SDLSecurityQuery(decoding: chunk)))
                } catch {
                    precondition(error.code == .invalidQuerySize || error.code == .invalidQueryID, "query refused with \(error.code)")
                    check(stage.refuse(error))
                }
            case 1:
                parser.append(chunk)
                while let frame = try? parser.nextFrame() {
                    guard frame.needsDecryption else { continue }
                    if case .failure(let refusal) = stage.open(frame) { check(refusal.actions) }
                }
            case 2, 3:
                guard let headUnit, headUnit.isHandshakeComplete else { continue }
                let message = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: messageID, payload: chunk)
                messageID &+= 1
                guard let frames = try? message.protectedFrames(maximumFramePayload: 4_096, session: headUnit) else { continue }
                var opened: [UInt8] = []
                var tampered = false
                for var frame in frames {
                    if operation == 3, frame.header.isEncrypted, !frame.payload.isEmpty, !tampered {
                        let position = Int(chunk.first ?? 0) % frame.payload.count
                        frame.payload[position] ^= 0x01
                        tampered = true
                    }
                    guard frame.needsDecryption else { continue }
                    switch stage.open(frame) {
                    case .success(let plain): opened += plain.payload
                    case .failure(let refusal): check(refusal.actions)
                    }
                }
                if operation == 2, stage.isEstablished, stage.protectedServices.contains(.video) {
                    precondition(opened == chunk, "a sealed frame did not open to what was sealed")
                }
            default:
                if chunk.first.map({ $0 & 1 == 0 }) ?? true { stage.granted(.video) } else { stage.ended(.video) }
            }
        }
    }

    /// A real handshake between the head unit's session and the stage; nil when it does not finish.
    static func handshake(_ stage: inout SDLAppSecurityStage, transport: OpenSSLHeadUnitSession.Transport) -> OpenSSLHeadUnitSession? {
        guard let client = try? OpenSSLHeadUnitSession(transport: transport), var records = try? client.start() else { return nil }
        for sequence in 1...8 {
            let actions = stage.receive(.handshake(records, kind: .request, sequenceNumber: UInt32(sequence)))
            check(actions)
            records = []
            for case .send(let query) in actions where query.subject == .handshakeData {
                precondition(query.sequenceNumber == UInt32(sequence), "the answer does not echo the sequence number")
                guard let reply = try? client.handshake(query.binary) else { return nil }
                records += reply
            }
            if client.isHandshakeComplete, stage.isEstablished, records.isEmpty { return client }
            if records.isEmpty { return client.isHandshakeComplete ? client : nil }
        }
        return nil
    }

    /// What the stage says to the head unit is itself well formed.
    static func check(_ actions: [SDLAppSecurityStage.Action]) {
        for case .send(let query) in actions {
            let bytes = query.encoded()
            guard let again = try? SDLSecurityQuery(decoding: bytes) else {
                preconditionFailure("the stage sent a query that does not decode")
            }
            precondition(again == query, "the stage's query does not round-trip")
            if query.subject == .internalError { precondition(query.errorCode != nil, "an error without its code") }
        }
    }
}

/// The frames of protected services (SDL-0317, as SDL Core 8.2 sends and reads them): each
/// single or consecutive frame's payload is encrypted on its own and carries the E bit; a first
/// frame goes in the clear with the plain total size.
extension SDLMessage {
    /// The frames that carry this data message on a protected service, each payload no larger
    /// than `maximumFramePayload`.
    ///
    /// The plaintext is cut into pieces of `session.maximumPlaintextPerFrame(payloadLimit:)`;
    /// a piece whose records outgrow the payload limit anyway is an
    /// ``SDLSecurityErrorCode/encryptionFailed`` rather than a frame the peer must refuse.
    package func protectedFrames(maximumFramePayload: Int,
                                 session: any SDLSecuritySession) throws(SDLSecurityError) -> [SDLFrame] {
        precondition(controlInfo == nil, "control messages are never encrypted; set isProtected instead")
        let limit = max(1, maximumFramePayload)
        let chunk = session.maximumPlaintextPerFrame(payloadLimit: limit)
        func sealed(_ type: SDLFrameType, info: UInt8, _ plaintext: ArraySlice<UInt8>) throws(SDLSecurityError) -> SDLFrame {
            let records = try session.encrypt(Array(plaintext))
            guard records.count <= limit else {
                throw SDLSecurityError(.encryptionFailed,
                                       "\(plaintext.count) bytes encrypted to \(records.count), more than a frame's \(limit); the security library's maximumPlaintextPerFrame is too generous")
            }
            return SDLFrame(header: SDLFrameHeader(version: version, isEncrypted: true, frameType: type, serviceType: serviceType,
                                                   frameInfo: info, sessionID: sessionID,
                                                   dataSize: UInt32(records.count), messageID: messageID),
                            payload: records)
        }
        if payload.count <= chunk {
            return [try sealed(.single, info: 0, payload[...])]
        }
        let count = (payload.count + chunk - 1) / chunk
        var frames = [SDLFrame(header: SDLFrameHeader(version: version, frameType: .first, serviceType: serviceType, frameInfo: 0,
                                                      sessionID: sessionID, dataSize: 8, messageID: messageID),
                               payload: Self.firstFramePayload(total: payload.count, frames: count))]
        frames.reserveCapacity(count + 1)
        var counter: UInt8 = 1
        for index in 0..<count {
            let start = index * chunk
            let end = min(start + chunk, payload.count)
            frames.append(try sealed(.consecutive, info: index == count - 1 ? 0 : counter, payload[start..<end]))
            counter = counter == 255 ? 1 : counter + 1
        }
        return frames
    }

    /// ``protectedFrames(maximumFramePayload:session:)``'s bytes back to back, for one write.
    package func protectedEncoded(maximumFramePayload: Int,
                                  session: any SDLSecuritySession) throws(SDLSecurityError) -> [UInt8] {
        var bytes: [UInt8] = []
        for frame in try protectedFrames(maximumFramePayload: maximumFramePayload, session: session) {
            bytes += frame.header.encoded()
            bytes += frame.payload
        }
        return bytes
    }
}

extension SDLFrame {
    /// Whether this frame's payload is TLS records to decrypt: a data frame with the E bit. A
    /// control frame's E bit only marks a protected service, and the control service itself
    /// (where the handshake travels) is never encrypted.
    package var needsDecryption: Bool {
        header.isEncrypted && header.frameType != .control && header.serviceType != .control
    }

    /// The frame with its payload decrypted and the E bit cleared, ready for the assembler.
    ///
    /// A first frame with the E bit (SDL Core never sends one, but decrypts one) carries its
    /// sizes encrypted.
    package func decrypted(with session: any SDLSecuritySession) throws(SDLSecurityError) -> SDLFrame {
        let plaintext = try session.decrypt(payload)
        var header = header
        header.isEncrypted = false
        header.dataSize = UInt32(truncatingIfNeeded: plaintext.count)
        return SDLFrame(header: header, payload: plaintext)
    }
}

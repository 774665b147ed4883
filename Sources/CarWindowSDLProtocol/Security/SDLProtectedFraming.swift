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

    /// ``protectedFrames(maximumFramePayload:session:)``'s bytes back to back, for one write,
    /// built in one buffer: each frame's header is reserved, the session appends its records
    /// behind it, and the header is written once their size is known. This is the path of every
    /// protected video frame; it allocates the buffer and nothing else of its own.
    package func protectedEncoded(maximumFramePayload: Int,
                                  session: any SDLSecuritySession) throws(SDLSecurityError) -> [UInt8] {
        guard version > 1 else {
            // Version 1 headers have no message id and are never negotiated for protected
            // services; framed frame by frame rather than in place.
            return try protectedFrames(maximumFramePayload: maximumFramePayload, session: session)
                .reduce(into: []) { bytes, frame in bytes += frame.header.encoded() + frame.payload }
        }
        precondition(controlInfo == nil, "control messages are never encrypted; set isProtected instead")
        let limit = max(1, maximumFramePayload)
        let chunk = session.maximumPlaintextPerFrame(payloadLimit: limit)
        let count = payload.count <= chunk ? 1 : (payload.count + chunk - 1) / chunk
        var bytes: [UInt8] = []
        // Records add their header, nonce and tag (at most 90 bytes per 16 KiB, DTLS's per-datagram
        // records a little more): one sixteenth beyond the payload covers both.
        bytes.reserveCapacity(payload.count + payload.count / 16 + (count + 1) * (SDLFrameHeader.size + 128) + 8)
        func appendSealed(_ type: SDLFrameType, info: UInt8, _ range: Range<Int>) throws(SDLSecurityError) {
            let start = bytes.count
            bytes.append(contentsOf: repeatElement(0, count: SDLFrameHeader.size))
            var failure: SDLSecurityError?
            payload.withUnsafeBytes { plaintext in
                do throws(SDLSecurityError) {
                    try session.encrypt(UnsafeRawBufferPointer(rebasing: plaintext[range]), appendingTo: &bytes)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            let size = bytes.count - start - SDLFrameHeader.size
            guard size <= limit else {
                throw SDLSecurityError(.encryptionFailed,
                                       "\(range.count) bytes encrypted to \(size), more than a frame's \(limit); the security library's maximumPlaintextPerFrame is too generous")
            }
            SDLFrameHeader(version: version, isEncrypted: true, frameType: type, serviceType: serviceType, frameInfo: info,
                           sessionID: sessionID, dataSize: UInt32(size), messageID: messageID).write(into: &bytes, at: start)
        }
        if count == 1 {
            try appendSealed(.single, info: 0, 0..<payload.count)
            return bytes
        }
        let first = SDLFrameHeader(version: version, frameType: .first, serviceType: serviceType, frameInfo: 0,
                                   sessionID: sessionID, dataSize: 8, messageID: messageID)
        bytes.append(contentsOf: repeatElement(0, count: SDLFrameHeader.size))
        first.write(into: &bytes, at: 0)
        Self.appendFirstFramePayload(total: payload.count, frames: count, to: &bytes)
        var counter: UInt8 = 1
        for index in 0..<count {
            let start = index * chunk
            try appendSealed(.consecutive, info: index == count - 1 ? 0 : counter, start..<min(start + chunk, payload.count))
            counter = counter == 255 ? 1 : counter + 1
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

/// One whole protocol message: a control message or a service's data, reassembled from frames.
package struct SDLMessage: Sendable, Equatable {
    /// Protocol version of its frames.
    package var version: UInt8
    /// The service it belongs to.
    package var serviceType: SDLServiceType
    /// The session id.
    package var sessionID: UInt8
    /// The message id shared by all its frames.
    package var messageID: UInt32
    /// The control message kind, nil for service data.
    package var controlInfo: SDLControlFrameInfo?
    /// The payload (BSON for control messages, RPC or video bytes otherwise).
    package var payload: [UInt8]
    /// The E bit of a control message: a StartService asking for a protected service, or an ACK
    /// granting one. Data messages of protected services are framed by ``protectedFrames(maximumFramePayload:session:)``.
    package var isProtected: Bool

    /// A message from its fields.
    package init(version: UInt8, serviceType: SDLServiceType, sessionID: UInt8, messageID: UInt32,
                controlInfo: SDLControlFrameInfo? = nil, isProtected: Bool = false, payload: [UInt8]) {
        self.version = version
        self.serviceType = serviceType
        self.sessionID = sessionID
        self.messageID = messageID
        self.controlInfo = controlInfo
        self.isProtected = isProtected
        self.payload = payload
    }

    /// The frames that carry this message when no frame payload may exceed `maximumFramePayload`.
    ///
    /// Control messages and messages that fit go in one frame; longer ones become a first frame
    /// (total size and frame count) and consecutive frames counting 1...255, rolling over to 1,
    /// the last one with frame info 0, every frame carrying the same message id.
    package func frames(maximumFramePayload: Int) -> [SDLFrame] {
        let chunk = max(1, maximumFramePayload)
        func header(_ type: SDLFrameType, info: UInt8, size: Int) -> SDLFrameHeader {
            SDLFrameHeader(version: version, frameType: type, serviceType: serviceType, frameInfo: info,
                           sessionID: sessionID, dataSize: UInt32(truncatingIfNeeded: size), messageID: messageID)
        }
        if let controlInfo {
            var control = header(.control, info: controlInfo.rawValue, size: payload.count)
            control.isEncrypted = isProtected
            return [SDLFrame(header: control, payload: payload)]
        }
        if payload.count <= chunk {
            return [SDLFrame(header: header(.single, info: 0, size: payload.count), payload: payload)]
        }
        let count = (payload.count + chunk - 1) / chunk
        var frames = [SDLFrame(header: header(.first, info: 0, size: 8), payload: Self.firstFramePayload(total: payload.count, frames: count))]
        frames.reserveCapacity(count + 1)
        var counter: UInt8 = 1
        for index in 0..<count {
            let start = index * chunk
            let end = min(start + chunk, payload.count)
            let isLast = index == count - 1
            frames.append(SDLFrame(header: header(.consecutive, info: isLast ? 0 : counter, size: end - start),
                                   payload: Array(payload[start..<end])))
            counter = counter == 255 ? 1 : counter + 1
        }
        return frames
    }

    /// A first frame's payload: the message's total size and its number of consecutive frames,
    /// big-endian.
    package static func firstFramePayload(total: Int, frames: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(8)
        appendFirstFramePayload(total: total, frames: frames, to: &bytes)
        return bytes
    }

    /// ``firstFramePayload(total:frames:)`` appended to `bytes`.
    package static func appendFirstFramePayload(total: Int, frames: Int, to bytes: inout [UInt8]) {
        func append(_ value: Int) {
            let word = UInt32(truncatingIfNeeded: value)
            bytes.append(UInt8(truncatingIfNeeded: word >> 24))
            bytes.append(UInt8(truncatingIfNeeded: word >> 16))
            bytes.append(UInt8(truncatingIfNeeded: word >> 8))
            bytes.append(UInt8(truncatingIfNeeded: word))
        }
        append(total)
        append(frames)
    }

    /// All frames' bytes back to back, ready for one transport write (so no other message's
    /// frames can come between them).
    ///
    /// The same bytes as ``frames(maximumFramePayload:)``'s, built in one buffer with no frame
    /// in between: this is the path of every video frame in the clear.
    package func encoded(maximumFramePayload: Int) -> [UInt8] {
        let chunk = max(1, maximumFramePayload)
        let headerSize = version == 1 ? SDLFrameHeader.version1Size : SDLFrameHeader.size
        func header(_ type: SDLFrameType, info: UInt8, size: Int, encrypted: Bool = false) -> SDLFrameHeader {
            SDLFrameHeader(version: version, isEncrypted: encrypted, frameType: type, serviceType: serviceType, frameInfo: info,
                           sessionID: sessionID, dataSize: UInt32(truncatingIfNeeded: size), messageID: messageID)
        }
        var bytes: [UInt8] = []
        if controlInfo != nil || payload.count <= chunk {
            bytes.reserveCapacity(headerSize + payload.count)
            if let controlInfo {
                header(.control, info: controlInfo.rawValue, size: payload.count, encrypted: isProtected).append(to: &bytes)
            } else {
                header(.single, info: 0, size: payload.count).append(to: &bytes)
            }
            bytes += payload
            return bytes
        }
        let count = (payload.count + chunk - 1) / chunk
        bytes.reserveCapacity(headerSize * (count + 1) + 8 + payload.count)
        header(.first, info: 0, size: 8).append(to: &bytes)
        Self.appendFirstFramePayload(total: payload.count, frames: count, to: &bytes)
        var counter: UInt8 = 1
        for index in 0..<count {
            let start = index * chunk
            let end = min(start + chunk, payload.count)
            header(.consecutive, info: index == count - 1 ? 0 : counter, size: end - start).append(to: &bytes)
            bytes += payload[start..<end]
            counter = counter == 255 ? 1 : counter + 1
        }
        return bytes
    }
}

/// Cuts a byte stream into frames, refusing any frame whose payload exceeds the limit before
/// buffering it, so a hostile size field cannot make it allocate.
package struct SDLFrameParser: Sendable {
    /// The largest frame payload accepted; raise it to the negotiated MTU once known.
    package var maximumFramePayload: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// A parser accepting frame payloads up to `maximumFramePayload` bytes.
    package init(maximumFramePayload: Int) {
        self.maximumFramePayload = maximumFramePayload
    }

    /// Bytes received but not yet returned as frames.
    package var bufferedByteCount: Int { buffer.count - readIndex }

    /// Adds bytes from the transport.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or nil when more bytes are needed.
    package mutating func nextFrame() throws(SDLProtocolError) -> SDLFrame? {
        let available = buffer[readIndex...]
        guard let header = try SDLFrameHeader.decode(available) else { return nil }
        let size = Int(header.dataSize)
        guard size <= maximumFramePayload else { throw .frameTooLarge(size: size, limit: maximumFramePayload) }
        let start = readIndex + header.encodedSize
        guard buffer.count - start >= size else { return nil }
        let payload = Array(buffer[start..<(start + size)])
        readIndex = start + size
        return SDLFrame(header: header, payload: payload)
    }
}

/// Reassembles frames into messages with bounded memory.
package struct SDLMessageAssembler: Sendable {
    /// The largest message a first frame may announce.
    package var maximumMessageSize: Int
    /// The largest payload of a consecutive frame (the negotiated MTU).
    package var maximumFramePayload: Int
    /// How many multi-frame messages may be in progress at once.
    package var maximumPendingMessages: Int

    private struct Key: Hashable {
        var sessionID: UInt8
        var serviceType: SDLServiceType
        var messageID: UInt32
    }

    private struct Pending {
        var version: UInt8
        var total: Int
        var frameCount: Int
        var received = 0
        var nextCounter: UInt8 = 1
        var payload: [UInt8]
    }

    private var pending: [Key: Pending] = [:]

    /// An assembler with the given bounds.
    package init(maximumMessageSize: Int, maximumFramePayload: Int, maximumPendingMessages: Int = 8) {
        self.maximumMessageSize = maximumMessageSize
        self.maximumFramePayload = maximumFramePayload
        self.maximumPendingMessages = maximumPendingMessages
    }

    /// Takes one frame; returns the message it completes, if any.
    package mutating func add(_ frame: SDLFrame) throws(SDLProtocolError) -> SDLMessage? {
        let header = frame.header
        // On a control frame the E bit says "protected service", not "encrypted payload"; a data
        // frame must have been decrypted (SDLProtectedFraming) before it gets here.
        guard !header.isEncrypted || header.frameType == .control else { throw .encryptedFrame }
        guard frame.payload.count <= maximumFramePayload else {
            throw .frameTooLarge(size: frame.payload.count, limit: maximumFramePayload)
        }
        let key = Key(sessionID: header.sessionID, serviceType: header.serviceType, messageID: header.messageID)
        switch header.frameType {
        case .control:
            return SDLMessage(version: header.version, serviceType: header.serviceType, sessionID: header.sessionID,
                              messageID: header.messageID, controlInfo: SDLControlFrameInfo(rawValue: header.frameInfo),
                              isProtected: header.isEncrypted, payload: frame.payload)
        case .single:
            return SDLMessage(version: header.version, serviceType: header.serviceType, sessionID: header.sessionID,
                              messageID: header.messageID, payload: frame.payload)
        case .first:
            let bytes = frame.payload
            guard bytes.count == 8 else { throw .malformedFirstFrame("payload is \(bytes.count) bytes, not 8") }
            let total = Int(UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3]))
            let count = Int(UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7]))
            guard total <= maximumMessageSize else { throw .messageTooLarge(size: total, limit: maximumMessageSize) }
            // Every consecutive frame carries at least one byte and at most one MTU. The limits
            // are settable, so the product is checked rather than trusted not to overflow.
            let (capacity, overflow) = count.multipliedReportingOverflow(by: max(maximumFramePayload, 1))
            guard count >= 1, total >= count, overflow || total <= capacity else {
                throw .inconsistentFrameCount(total: total, frames: count)
            }
            guard pending[key] == nil else { throw .malformedFirstFrame("message \(header.messageID) was already started") }
            guard pending.count < maximumPendingMessages else { throw .tooManyPendingMessages(limit: maximumPendingMessages) }
            var payload: [UInt8] = []
            // What arrives, not what is announced, decides how much memory a message takes.
            payload.reserveCapacity(min(total, maximumFramePayload))
            pending[key] = Pending(version: header.version, total: total, frameCount: count, payload: payload)
            return nil
        case .consecutive:
            // Taken out of the table while it grows, so appending never copies the bytes so far.
            guard var message = pending.removeValue(forKey: key) else {
                throw .unexpectedConsecutiveFrame("message \(header.messageID) on \(header.serviceType) has no first frame")
            }
            message.received += 1
            let isLast = header.frameInfo == 0
            if !isLast && header.frameInfo != message.nextCounter {
                throw .unexpectedConsecutiveFrame("counter \(header.frameInfo) where \(message.nextCounter) was due")
            }
            guard message.payload.count + frame.payload.count <= message.total else {
                throw .unexpectedConsecutiveFrame("frames carry more than the announced \(message.total) bytes")
            }
            message.payload += frame.payload
            if isLast {
                guard message.payload.count == message.total, message.received == message.frameCount else {
                    throw .unexpectedConsecutiveFrame("last frame after \(message.received) of \(message.frameCount) frames and \(message.payload.count) of \(message.total) bytes")
                }
                return SDLMessage(version: message.version, serviceType: header.serviceType, sessionID: header.sessionID,
                                  messageID: header.messageID, payload: message.payload)
            }
            guard message.received < message.frameCount else {
                throw .unexpectedConsecutiveFrame("more than the announced \(message.frameCount) frames")
            }
            message.nextCounter = message.nextCounter == 255 ? 1 : message.nextCounter + 1
            pending[key] = message
            return nil
        }
    }
}

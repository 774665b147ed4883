/// How a frame relates to the message it carries (protocol spec 5.4.1, section 3.1).
package enum SDLFrameType: UInt8, Sendable, Equatable, CaseIterable {
    /// A control frame: heartbeats, service start and end.
    case control = 0
    /// A whole message in one frame.
    case single = 1
    /// The first of a multi-frame message: its payload holds total size and frame count.
    case first = 2
    /// A continuation of a multi-frame message.
    case consecutive = 3
}

/// A service on the SDL link. A struct rather than an enum so that a head unit naming a
/// service we do not know still yields a readable error instead of a decoding failure.
public struct SDLServiceType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8

    /// A service from its wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Service 0x00: the link's own control messages.
    public static let control = SDLServiceType(rawValue: 0x00)
    /// Service 0x07: remote procedure calls (JSON).
    public static let rpc = SDLServiceType(rawValue: 0x07)
    /// Service 0x0A: audio streaming.
    public static let audio = SDLServiceType(rawValue: 0x0A)
    /// Service 0x0B: video streaming.
    public static let video = SDLServiceType(rawValue: 0x0B)
    /// Service 0x0F: bulk data (legacy).
    public static let bulk = SDLServiceType(rawValue: 0x0F)

    /// The service's name, or its hex byte.
    public var description: String {
        switch rawValue {
        case 0x00: "control"
        case 0x07: "RPC"
        case 0x0A: "audio"
        case 0x0B: "video"
        case 0x0F: "bulk"
        default: "service 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// The frame info byte of a control frame: what the control message is.
public struct SDLControlFrameInfo: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8

    /// A control frame info from its wire byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x00: "are you there" (required in v3, deprecated from v4, still answered).
    public static let heartbeat = SDLControlFrameInfo(rawValue: 0x00)
    /// 0x01: open a service.
    public static let startService = SDLControlFrameInfo(rawValue: 0x01)
    /// 0x02: the service is open.
    public static let startServiceACK = SDLControlFrameInfo(rawValue: 0x02)
    /// 0x03: the service was refused.
    public static let startServiceNAK = SDLControlFrameInfo(rawValue: 0x03)
    /// 0x04: close a service.
    public static let endService = SDLControlFrameInfo(rawValue: 0x04)
    /// 0x05: the service is closed.
    public static let endServiceACK = SDLControlFrameInfo(rawValue: 0x05)
    /// 0x06: the close was refused.
    public static let endServiceNAK = SDLControlFrameInfo(rawValue: 0x06)
    /// 0x07: open a secondary transport.
    public static let registerSecondaryTransport = SDLControlFrameInfo(rawValue: 0x07)
    /// 0x08: the secondary transport is registered.
    public static let registerSecondaryTransportACK = SDLControlFrameInfo(rawValue: 0x08)
    /// 0x09: the secondary transport was refused.
    public static let registerSecondaryTransportNAK = SDLControlFrameInfo(rawValue: 0x09)
    /// 0xFD: the head unit's secondary transports changed.
    public static let transportEventUpdate = SDLControlFrameInfo(rawValue: 0xFD)
    /// 0xFF: the answer to a heartbeat.
    public static let heartbeatACK = SDLControlFrameInfo(rawValue: 0xFF)

    /// The control message's name, or its hex byte.
    public var description: String {
        switch rawValue {
        case 0x00: "Heartbeat"
        case 0x01: "StartService"
        case 0x02: "StartServiceACK"
        case 0x03: "StartServiceNAK"
        case 0x04: "EndService"
        case 0x05: "EndServiceACK"
        case 0x06: "EndServiceNAK"
        case 0x07: "RegisterSecondaryTransport"
        case 0x08: "RegisterSecondaryTransportACK"
        case 0x09: "RegisterSecondaryTransportNAK"
        case 0xFD: "TransportEventUpdate"
        case 0xFF: "HeartbeatACK"
        default: "control 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// The header in front of every frame: 8 bytes in version 1, 12 bytes (with a message id) from
/// version 2 on.
package struct SDLFrameHeader: Sendable, Equatable {
    /// Protocol versions this library reads and writes.
    package static let supportedVersions: ClosedRange<UInt8> = 1...5
    /// Size of a version 1 header.
    package static let version1Size = 8
    /// Size of a version 2 and later header.
    package static let size = 12

    /// Protocol version, 1...5.
    package var version: UInt8
    /// The E bit: on a data frame, a payload of TLS records; on a control frame, a protected
    /// service asked for or granted.
    package var isEncrypted: Bool
    /// What the frame is.
    package var frameType: SDLFrameType
    /// Which service it belongs to.
    package var serviceType: SDLServiceType
    /// Control frame info, consecutive frame counter, or 0.
    package var frameInfo: UInt8
    /// The session the head unit assigned (0 before the RPC service starts).
    package var sessionID: UInt8
    /// Payload bytes following the header.
    package var dataSize: UInt32
    /// Message id (absent in version 1, read as 0).
    package var messageID: UInt32

    /// A header from its fields.
    package init(version: UInt8, isEncrypted: Bool = false, frameType: SDLFrameType, serviceType: SDLServiceType,
                frameInfo: UInt8, sessionID: UInt8, dataSize: UInt32, messageID: UInt32) {
        self.version = version
        self.isEncrypted = isEncrypted
        self.frameType = frameType
        self.serviceType = serviceType
        self.frameInfo = frameInfo
        self.sessionID = sessionID
        self.dataSize = dataSize
        self.messageID = messageID
    }

    /// The header's size on the wire for its version.
    package var encodedSize: Int { version == 1 ? Self.version1Size : Self.size }

    /// The header's bytes.
    /// Writes the header over `bytes[index...]`, which must hold ``encodedSize`` bytes: no
    /// allocation, for frames built in place.
    package func write(into bytes: inout [UInt8], at index: Int) {
        precondition(bytes.count >= index + encodedSize, "a header is written in place only over the bytes reserved for it")
        bytes[index] = (version << 4) | (isEncrypted ? 0x08 : 0) | frameType.rawValue
        bytes[index + 1] = serviceType.rawValue
        bytes[index + 2] = frameInfo
        bytes[index + 3] = sessionID
        func put(_ word: UInt32, at offset: Int) {
            bytes[index + offset] = UInt8(truncatingIfNeeded: word >> 24)
            bytes[index + offset + 1] = UInt8(truncatingIfNeeded: word >> 16)
            bytes[index + offset + 2] = UInt8(truncatingIfNeeded: word >> 8)
            bytes[index + offset + 3] = UInt8(truncatingIfNeeded: word)
        }
        put(dataSize, at: 4)
        if version > 1 { put(messageID, at: 8) }
    }

    package func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedSize)
        append(to: &bytes)
        return bytes
    }

    /// Appends the header's bytes (8 for version 1, else 12) to `bytes`.
    package func append(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: encodedSize))
        write(into: &bytes, at: start)
    }

    /// Decodes a header at the start of `bytes`; nil when more bytes are needed to tell.
    package static func decode(_ bytes: some Collection<UInt8>) throws(SDLProtocolError) -> SDLFrameHeader? {
        guard let first = bytes.first else { return nil }
        let version = first >> 4
        guard supportedVersions.contains(version) else { throw .unsupportedVersion(version) }
        let headerSize = version == 1 ? version1Size : size
        guard bytes.count >= headerSize else { return nil }
        let header = Array(bytes.prefix(headerSize))
        guard let frameType = SDLFrameType(rawValue: first & 0x07) else { throw .unknownFrameType(first & 0x07) }
        let dataSize = UInt32(header[4]) << 24 | UInt32(header[5]) << 16 | UInt32(header[6]) << 8 | UInt32(header[7])
        let messageID = version == 1 ? 0
            : UInt32(header[8]) << 24 | UInt32(header[9]) << 16 | UInt32(header[10]) << 8 | UInt32(header[11])
        return SDLFrameHeader(version: version, isEncrypted: first & 0x08 != 0, frameType: frameType,
                              serviceType: SDLServiceType(rawValue: header[1]), frameInfo: header[2],
                              sessionID: header[3], dataSize: dataSize, messageID: messageID)
    }
}

/// One frame: header and payload.
package struct SDLFrame: Sendable, Equatable {
    /// The header; its ``SDLFrameHeader/dataSize`` equals `payload.count` in frames made here.
    package var header: SDLFrameHeader
    /// The payload bytes.
    package var payload: [UInt8]

    /// A frame from its header and payload.
    package init(header: SDLFrameHeader, payload: [UInt8]) {
        self.header = header
        self.payload = payload
    }

    /// Header and payload bytes.
    package func encoded() -> [UInt8] { header.encoded() + payload }
}

/// Why bytes from the head unit are not a valid SDL frame stream. Each ends the connection:
/// after a framing error the byte stream cannot be resynchronised.
public enum SDLProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The version nibble is outside 1...5.
    case unsupportedVersion(UInt8)
    /// The frame type is not control, single, first or consecutive.
    case unknownFrameType(UInt8)
    /// The frame's payload is larger than the negotiated MTU allows.
    case frameTooLarge(size: Int, limit: Int)
    /// A first frame announces a message larger than this side accepts.
    case messageTooLarge(size: Int, limit: Int)
    /// A first frame's payload is not the 8 bytes of total size and frame count.
    case malformedFirstFrame(String)
    /// A consecutive frame arrived with no first frame, with the wrong counter, or overran the total.
    case unexpectedConsecutiveFrame(String)
    /// The frame count of a first frame does not match its total size.
    case inconsistentFrameCount(total: Int, frames: Int)
    /// Too many messages are being reassembled at once.
    case tooManyPendingMessages(limit: Int)
    /// The head unit sent an encrypted frame for a service that is not protected.
    case encryptedFrame
    /// A control payload that should be BSON is not.
    case badControlPayload(service: SDLServiceType, info: SDLControlFrameInfo, BSONError)

    /// What was wrong and what to do.
    public var description: String {
        switch self {
        case .unsupportedVersion(let version): "frame version \(version) is not 1...5; the peer does not speak SDL or the stream lost sync"
        case .unknownFrameType(let type): "frame type \(type) is not control, single, first or consecutive; the stream lost sync"
        case .frameTooLarge(let size, let limit): "frame payload of \(size) bytes exceeds the negotiated MTU (\(limit)); the peer ignored the MTU"
        case .messageTooLarge(let size, let limit): "message of \(size) bytes exceeds the \(limit) bytes accepted; refused to bound memory"
        case .malformedFirstFrame(let reason): "malformed first frame: \(reason)"
        case .unexpectedConsecutiveFrame(let reason): "unexpected consecutive frame: \(reason)"
        case .inconsistentFrameCount(let total, let frames): "first frame announces \(total) bytes in \(frames) frames, which cannot match"
        case .tooManyPendingMessages(let limit): "more than \(limit) multi-frame messages in progress at once"
        case .encryptedFrame: "the peer sent an encrypted frame for a service it did not protect"
        case .badControlPayload(let service, let info, let error): "\(info) on the \(service) service has a bad BSON payload: \(error)"
        }
    }
}

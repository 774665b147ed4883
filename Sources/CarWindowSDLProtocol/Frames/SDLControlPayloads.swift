/// What a StartServiceACK on the RPC service says about the session.
public struct SDLSessionInfo: Sendable, Equatable {
    /// The protocol version the head unit speaks (`protocolVersion`, e.g. "5.3.0").
    public var protocolVersion: String?
    /// The session's hash id, sent back in EndService.
    public var hashID: Int32?
    /// The largest frame (header included) for every service unless a service's ACK says
    /// otherwise; what the head unit sent, clamped into 64...131,084 bytes.
    public var mtu: Int?
    /// The session id from the ACK's header.
    public var sessionID: UInt8

    /// Session facts from their fields.
    public init(protocolVersion: String?, hashID: Int32?, mtu: Int?, sessionID: UInt8) {
        self.protocolVersion = protocolVersion
        self.hashID = hashID
        self.mtu = mtu
        self.sessionID = sessionID
    }

    /// Reads the ACK's BSON; fields of the wrong type are treated as absent.
    package init(ack document: BSONDocument, sessionID: UInt8) {
        protocolVersion = document["protocolVersion"]?.stringValue
        hashID = document["hashId"]?.integerValue.flatMap { Int32(exactly: $0) }
        mtu = document["mtu"]?.integerValue.map(SDLWireLimits.clampedMTU)
        self.sessionID = sessionID
    }
}

/// The parameters of a video service: what StartService asks and what the ACK grants.
public struct SDLVideoServiceParameters: Sendable, Equatable {
    /// The encoded size.
    public var resolution: ImageResolution
    /// Protocol and codec.
    public var format: VideoStreamingFormat
    /// The video service's MTU (the ACK's `mtu`), nil when the ACK leaves it to the session's.
    public var mtu: Int?
    /// The size the app asked for in the StartService this answers (nil where not known): the
    /// head unit's mode the app chose it from, even when the ACK grants another size.
    public var requestedResolution: ImageResolution?

    /// Parameters from their fields.
    public init(resolution: ImageResolution, format: VideoStreamingFormat, mtu: Int? = nil,
                requestedResolution: ImageResolution? = nil) {
        self.resolution = resolution
        self.format = format
        self.mtu = mtu
        self.requestedResolution = requestedResolution
    }

    /// The StartService BSON: height, width, videoProtocol, videoCodec, in SDL Core's order.
    package var startServiceDocument: BSONDocument {
        [
            "height": .int32(Int32(clamping: resolution.height)),
            "width": .int32(Int32(clamping: resolution.width)),
            "videoProtocol": .string(format.protocol.rawValue),
            "videoCodec": .string(format.codec.rawValue),
        ]
    }

    /// The ACK's values, each falling back to what was asked: the ACK's width and height are
    /// authoritative where present and within 16...8192 pixels; its MTU is clamped into
    /// 64...131,084 bytes.
    package func acknowledged(by document: BSONDocument) -> SDLVideoServiceParameters {
        var granted = self
        granted.requestedResolution = resolution
        if let width = document["width"]?.integerValue, let height = document["height"]?.integerValue,
           SDLWireLimits.videoDimension.contains(width), SDLWireLimits.videoDimension.contains(height) {
            granted.resolution = ImageResolution(width: width, height: height)
        }
        if let name = document["videoProtocol"]?.stringValue, let value = VideoStreamingProtocol(rawValue: name) {
            granted.format.protocol = value
        }
        if let name = document["videoCodec"]?.stringValue, let value = VideoStreamingCodec(rawValue: name) {
            granted.format.codec = value
        }
        granted.mtu = document["mtu"]?.integerValue.map(SDLWireLimits.clampedMTU)
        return granted
    }
}

/// A StartServiceNAK's reasons.
public struct SDLServiceRejection: Sendable, Equatable, CustomStringConvertible {
    /// The parameters the head unit refused (`rejectedParams`): "width", "height", "videoCodec"...
    public var rejectedParameters: [String]
    /// The head unit's explanation (`reason`).
    public var reason: String?

    /// A rejection from its fields.
    public init(rejectedParameters: [String], reason: String?) {
        self.rejectedParameters = rejectedParameters
        self.reason = reason
    }

    /// Reads a NAK's BSON; an empty or unreadable payload gives an empty rejection.
    public init(nak payload: [UInt8]) {
        let document = (try? BSONDocument(decoding: payload)) ?? BSONDocument()
        rejectedParameters = document["rejectedParams"]?.arrayValue?.compactMap(\.stringValue) ?? []
        reason = document["reason"]?.stringValue
    }

    /// The NAK as BSON (what the simulator sends).
    package var document: BSONDocument {
        var document: BSONDocument = ["rejectedParams": .array(rejectedParameters.map { .string($0) })]
        if let reason { document["reason"] = .string(reason) }
        return document
    }

    /// The rejected parameters and reason.
    public var description: String {
        "rejected [\(rejectedParameters.joined(separator: ", "))]" + (reason.map { ": \($0)" } ?? "")
    }

    /// Whether the head unit named the size (try another resolution).
    package var namesResolution: Bool { rejectedParameters.contains("width") || rejectedParameters.contains("height") }
    /// Whether the head unit named the protocol or codec (try another format).
    package var namesFormat: Bool { rejectedParameters.contains("videoProtocol") || rejectedParameters.contains("videoCodec") }
}

import Foundation
import Glibc
import SystemPackage

/// Sends access units as RTP over UDP to one receiver, which learns the stream from the SDP of
/// ``sdp(host:port:payloadType:)`` (`ffplay -protocol_whitelist file,udp,rtp stream.sdp`).
///
/// Meant for desktop testing and receivers on a LAN: UDP has no flow control, so the sink
/// sends as fast as it is called and a lost packet costs the rest of the picture.
public final class RTPUDPSink: VideoSink {
    /// Where packets go, as given (a name, an IPv4 or an IPv6 address).
    public let host: String
    /// The receiver's UDP port.
    public let port: Int
    /// The payload type of every packet; ``writeSDP(to:)`` announces the same.
    public var payloadType: UInt8 { packetizer.payloadType }
    private var packetizer: RTPPacketizer
    private var socket: FileDescriptor?
    private let destination: SocketAddress
    private var packets: [[UInt8]] = []

    /// Resolves `host` (a name, an IPv4 or an IPv6 address) and opens a UDP socket for its first
    /// address; `packetizer` sets payload type, MTU, SSRC and sequence numbers.
    public init(host: String, port: Int, packetizer: RTPPacketizer = RTPPacketizer()) throws(SinkError) {
        guard (1...65_535).contains(port) else { throw .invalidConfiguration("UDP port \(port) must be in 1...65535") }
        let addresses: [SocketAddress]
        do {
            addresses = try SocketAddress.resolve(host: host, port: port, socketType: Int32(SOCK_DGRAM.rawValue))
        } catch {
            throw .unresolvableHost(host: host, port: port, reason: error.message)
        }
        // Try each address in the resolver's order: a host may list IPv6 first on a machine without it.
        var lastError = Errno(rawValue: EAFNOSUPPORT)
        var opened: (FileDescriptor, SocketAddress)?
        for address in addresses {
            do {
                opened = (try FileDescriptor.socket(family: address.family, type: Int32(SOCK_DGRAM.rawValue), protocol: 0), address)
                break
            } catch {
                lastError = error
            }
        }
        guard let (socket, address) = opened else {
            throw .socketFailed(operation: "socket", destination: "\(host):\(port)", lastError)
        }
        self.host = host
        self.port = port
        self.packetizer = packetizer
        self.socket = socket
        self.destination = address
    }

    deinit { try? socket?.close() }

    /// Packetizes the access unit and sends every packet as one datagram.
    ///
    /// A receiver that is not listening yet is not an error: packets are sent without waiting
    /// for anyone (the socket is unconnected, so ICMP "port unreachable" never comes back as
    /// `ECONNREFUSED`), and a receiver starts decoding at the next IDR.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let socket else { throw .closed("RTP/UDP sink to \(host):\(port)") }
        try packetizer.packetize(unit, into: &packets)
        for packet in packets {
            do {
                try socket.sendDatagram(packet, to: destination)
            } catch {
                throw .socketFailed(operation: "send", destination: "\(host):\(port)", error)
            }
        }
    }

    /// Closes the socket.
    public func close() {
        try? socket?.close()
        socket = nil
    }

    /// The session description a receiver needs: where to listen and how to read the payload.
    ///
    /// `host` goes into the `c=` line (IPv6 when it contains a colon); the receiver listens on
    /// `port`, which must be even by RTP convention (RTCP would use the next odd port).
    public static func sdp(host: String, port: Int, payloadType: UInt8 = RTPPacketizer.defaultPayloadType) -> String {
        let addressType = host.contains(":") ? "IP6" : "IP4"
        return [
            "v=0",
            "o=- 0 0 IN \(addressType) \(host)",
            "s=CarWindow",
            "c=IN \(addressType) \(host)",
            "t=0 0",
            "m=video \(port) RTP/AVP \(payloadType)",
            "a=rtpmap:\(payloadType) H264/\(RTPPacketizer.clockRate)",
            "a=fmtp:\(payloadType) packetization-mode=1",
        ].joined(separator: "\r\n") + "\r\n"
    }

    /// Writes this sink's SDP to `url`; the folder must exist.
    public func writeSDP(to url: URL) throws(SinkError) {
        let text = Self.sdp(host: host, port: port, payloadType: payloadType)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.openForWriting(path: url.path, truncate: true)
        } catch {
            throw SinkError.opening(path: url.path, error)
        }
        defer { try? file.close() }
        do {
            try file.writeWhole(Array(text.utf8))
        } catch {
            throw .writeFailed(path: url.path, error)
        }
    }
}

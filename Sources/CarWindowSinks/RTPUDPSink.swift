import Foundation
import Glibc
import SystemPackage
import CarWindowVideoCore
import CarWindowH264
import CarWindowSystemSupport

/// Sends access units as RTP over UDP to one receiver, which learns the stream from the SDP of
/// ``sdp(host:port:payloadType:parameterSets:)`` (`ffplay -protocol_whitelist file,udp,rtp stream.sdp`).
///
/// A player may join at any time: the sink asks its session for an IDR (``needsKeyframe``)
/// every ``keyframeInterval`` and whenever the receiver reports a lost picture with RTCP (a PLI or
/// FIR, RFC 4585 and 5104, sent to ``rtcpPort``: the port after the one packets leave from, by
/// RTP's convention), and the SDP written by ``writeSDP(to:)`` is rewritten with
/// `profile-level-id` and `sprop-parameter-sets` once the first IDR shows them. SPS and PPS
/// travel in front of every IDR.
///
/// RTCP is untrusted: both sockets are bound to the local address that reaches the receiver
/// (127.0.0.1 for a receiver on this machine), reports from any other host than the
/// receiver's are read and dropped, and reports bring at most one IDR per
/// ``minimumKeyframeSpacing``, so that a flood of them cannot turn every picture into an IDR.
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
    /// How often the sink asks for an IDR so that a late receiver can start (nil: never), also
    /// while the map stands still.
    public let keyframeInterval: Duration?
    /// The least time from one IDR to the next that the receiver's picture-loss reports bring
    /// (a report that comes sooner is answered once it has passed); zero answers every report at
    /// the next picture.
    public let minimumKeyframeSpacing: Duration
    /// The local port packets leave from, and ``rtcpPort`` the one after it where the receiver's
    /// RTCP is read; nil when no even/odd pair could be bound (then RTCP is not read).
    public private(set) var sourcePort: Int?
    /// Where the sink reads the receiver's RTCP (``sourcePort`` + 1); nil when not listening.
    public var rtcpPort: Int? { rtcp == nil ? nil : sourcePort.map { $0 + 1 } }
    /// Picture-loss reports (PLI and FIR) read so far from the receiver's host, whether or not
    /// they brought an IDR at once.
    public private(set) var pictureLossReports = 0
    /// RTCP datagrams taken off the socket so far, whatever they held or whoever sent them.
    package private(set) var rtcpDatagramsRead = 0
    private var packetizer: RTPPacketizer
    private var socket: FileDescriptor?
    private var rtcp: FileDescriptor?
    private let destination: SocketAddress
    private var packets: [[UInt8]] = []
    private let now: @Sendable () -> Double
    private var lastKeyframe: Double?
    private var keyframeRequested = false
    private var rtcpBuffer = [UInt8](repeating: 0, count: 1500)
    /// The SDP file to keep current, and the SPS and PPS it announces.
    private var sdpURL: URL?
    private var announcedParameterSets: [[UInt8]] = []

    /// The default of ``keyframeInterval``: a player that joins shows the map within 2 s.
    public static let defaultKeyframeInterval = Duration.seconds(2)
    /// The default of ``minimumKeyframeSpacing``: a lost picture is repaired within half a
    /// second, and a flood of reports costs at most two IDRs a second.
    public static let defaultMinimumKeyframeSpacing = Duration.milliseconds(500)

    /// Resolves `host` (a name, an IPv4 or an IPv6 address) and opens a UDP socket for its first
    /// address, bound with an RTCP socket on the next port; `packetizer` sets payload type, MTU,
    /// SSRC and sequence numbers. `keyframeInterval` and `minimumKeyframeSpacing` set the IDR
    /// schedule and the least time between IDRs that picture-loss reports bring; `now` is their
    /// clock (seconds, monotonic).
    public init(host: String, port: Int, packetizer: RTPPacketizer = RTPPacketizer(),
                keyframeInterval: Duration? = RTPUDPSink.defaultKeyframeInterval,
                minimumKeyframeSpacing: Duration = RTPUDPSink.defaultMinimumKeyframeSpacing,
                now: @escaping @Sendable () -> Double = RTPUDPSink.monotonicSeconds) throws(SinkError) {
        guard (1...65_535).contains(port) else { throw .invalidConfiguration("UDP port \(port) must be in 1...65535") }
        if let keyframeInterval, keyframeInterval <= .zero {
            throw .invalidConfiguration("the IDR interval must be positive (or nil for none), not \(keyframeInterval)")
        }
        guard minimumKeyframeSpacing >= .zero else {
            throw .invalidConfiguration("the least spacing of requested IDRs must be zero or more, not \(minimumKeyframeSpacing)")
        }
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
        // An address this machine may never send to (a broadcast address without SO_BROADCAST:
        // EACCES) is refused now, with its reason, rather than at the first picture as a
        // recording that failed. No route to the receiver (yet): every address, as before;
        // sending reports the trouble.
        let local: SocketAddress?
        do {
            local = try SocketAddress.localAddress(toReach: address)
        } catch {
            try? socket.close()
            throw .socketFailed(operation: "connect", destination: "\(host):\(port)", error)
        }
        self.host = host
        self.port = port
        self.packetizer = packetizer
        self.socket = socket
        self.destination = address
        self.keyframeInterval = keyframeInterval
        self.minimumKeyframeSpacing = minimumKeyframeSpacing
        self.now = now
        (sourcePort, rtcp) = Self.bindPortPair(socket, on: local, family: address.family)
    }

    deinit {
        try? socket?.close()
        try? rtcp?.close()
    }

    /// Seconds on the monotonic clock.
    public static let monotonicSeconds: @Sendable () -> Double = {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Binds `socket` to an even port and a second socket to the odd port after it, for RTCP,
    /// both on `local` (every address of `family` when nil): a receiver on this machine is the
    /// only one that can reach a port bound to 127.0.0.1. A few tries among the dynamic ports,
    /// then without RTCP on any port.
    private static func bindPortPair(_ socket: FileDescriptor, on local: SocketAddress?, family: Int32) -> (Int?, FileDescriptor?) {
        func bind(_ descriptor: FileDescriptor, port: Int) -> Bool {
            if let local { return (try? descriptor.bind(to: local.withPort(port))) != nil }
            return (try? descriptor.bind(family: family, port: port)) != nil
        }
        for _ in 0..<32 {
            let even = Int.random(in: 24_576...32_767) * 2
            guard let control = try? FileDescriptor.socket(family: family, type: Int32(SOCK_DGRAM.rawValue), protocol: 0) else {
                break
            }
            if bind(control, port: even + 1) {
                if bind(socket, port: even) { return (even, control) }
                // The RTP socket could not take the even port; a bound socket cannot be rebound,
                // so it keeps its ephemeral port and RTCP is not read.
                try? control.close()
                return (nil, nil)
            }
            try? control.close()
        }
        return (nil, nil)
    }

    /// Whether the next picture must be an IDR: the interval since the last one passed, or the
    /// receiver reported a lost picture and ``minimumKeyframeSpacing`` has passed since the last
    /// IDR.
    public var needsKeyframe: Bool {
        readRTCP()
        guard let lastKeyframe else { return keyframeRequested }
        let since = now() - lastKeyframe
        if keyframeRequested, since >= minimumKeyframeSpacing.inSeconds { return true }
        guard let keyframeInterval else { return false }
        return since >= keyframeInterval.inSeconds
    }

    /// Reads the receiver's waiting RTCP packets, at most 64 a picture so that a flood cannot hold
    /// the stream up; a PLI or FIR from the receiver's host asks for an IDR. A multicast group
    /// has no one receiver to check for.
    private func readRTCP() {
        guard let rtcp else { return }
        for _ in 0..<64 {
            guard let (length, sender) = try? rtcp.receiveDatagramWithSenderIfAny(into: &rtcpBuffer) else { return }
            rtcpDatagramsRead += 1
            guard destination.isMulticast || sender.isSameHost(as: destination) else { continue }
            if Self.reportsPictureLoss(rtcpBuffer.prefix(length)) {
                pictureLossReports += 1
                keyframeRequested = true
            }
        }
    }

    /// Whether a compound RTCP packet holds a payload-specific feedback message for picture loss:
    /// PLI (packet type 206, format 1) or FIR (206, format 4). Lengths are checked before use.
    package static func reportsPictureLoss(_ packet: ArraySlice<UInt8>) -> Bool {
        var offset = packet.startIndex
        while packet.endIndex - offset >= 4 {
            let first = packet[offset], type = packet[offset + 1]
            let words = Int(packet[offset + 2]) << 8 | Int(packet[offset + 3])
            guard first >> 6 == 2 else { return false }
            if type == 206, first & 0x1F == 1 || first & 0x1F == 4 { return true }
            offset += (words + 1) * 4
        }
        return false
    }

    /// Packetizes the access unit and sends every packet as one datagram.
    ///
    /// A receiver that is not listening yet is not an error: packets are sent without waiting
    /// for anyone (the socket is unconnected, so ICMP "port unreachable" never comes back as
    /// `ECONNREFUSED`), and a receiver starts decoding at the next IDR.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let socket else { throw .closed("RTP/UDP sink to \(host):\(port)") }
        if unit.isKeyframe {
            lastKeyframe = now()
            keyframeRequested = false
            // The stream goes on without the update: every IDR carries SPS and PPS in band, so
            // a player that opened the older SDP still starts at the next one.
            try? announceParameterSets(of: unit)
        }
        try packetizer.packetize(unit, into: &packets)
        for packet in packets {
            do {
                try socket.sendDatagram(packet, to: destination)
            } catch {
                throw .socketFailed(operation: "send", destination: "\(host):\(port)", error)
            }
        }
    }

    /// Rewrites the SDP with the SPS and PPS of this IDR when they differ from those announced
    /// (the first IDR, and the first after a resize).
    private func announceParameterSets(of unit: AccessUnit) throws(SinkError) {
        guard let sdpURL else { return }
        let sets = NALUnit.ranges(in: unit.data).map { Array(unit.data[$0]) }
            .filter { !$0.isEmpty && ($0[0] & 0x1F == 7 || $0[0] & 0x1F == 8) }
        guard sets.count >= 2, sets != announcedParameterSets else { return }
        announcedParameterSets = sets
        try Self.write(Self.sdp(host: host, port: port, payloadType: payloadType, parameterSets: sets), to: sdpURL)
    }

    /// Closes the sockets.
    public func close() {
        try? socket?.close()
        socket = nil
        try? rtcp?.close()
        rtcp = nil
    }

    /// The session description a receiver needs: where to listen and how to read the payload.
    ///
    /// `host` goes into the `c=` line (IPv6 when it contains a colon); the receiver listens on
    /// `port`, which must be even by RTP convention (RTCP would use the next odd port). With the
    /// stream's SPS and PPS (NAL units without start codes), the format line also carries
    /// `profile-level-id` and `sprop-parameter-sets` (RFC 6184), which players need to set up
    /// their decoder before the first IDR arrives.
    public static func sdp(host: String, port: Int, payloadType: UInt8 = RTPPacketizer.defaultPayloadType,
                           parameterSets: [[UInt8]] = []) -> String {
        let addressType = host.contains(":") ? "IP6" : "IP4"
        var format = "packetization-mode=1"
        if let sps = parameterSets.first(where: { $0.first.map { $0 & 0x1F == 7 } == true }), sps.count >= 4 {
            format += ";profile-level-id=" + sps[1...3].map { String(format: "%02x", $0) }.joined()
        }
        if !parameterSets.isEmpty {
            format += ";sprop-parameter-sets=" + parameterSets.map { Data($0).base64EncodedString() }.joined(separator: ",")
        }
        return [
            "v=0",
            "o=- 0 0 IN \(addressType) \(host)",
            "s=CarWindow",
            "c=IN \(addressType) \(host)",
            "t=0 0",
            "m=video \(port) RTP/AVP \(payloadType)",
            "a=rtpmap:\(payloadType) H264/\(RTPPacketizer.clockRate)",
            "a=fmtp:\(payloadType) \(format)",
        ].joined(separator: "\r\n") + "\r\n"
    }

    /// Writes this sink's SDP to `url` (the folder must exist) and keeps it current: the first
    /// IDR's SPS and PPS are added to it.
    public func writeSDP(to url: URL) throws(SinkError) {
        try Self.write(Self.sdp(host: host, port: port, payloadType: payloadType, parameterSets: announcedParameterSets), to: url)
        sdpURL = url
    }

    /// Writes `text` to the file at `url`, refusing a file another writer holds locked.
    private static func write(_ text: String, to url: URL) throws(SinkError) {
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

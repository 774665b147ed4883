import Glibc
import SystemPackage
import CarWindowVideoCore
import CarWindowSystemSupport

/// Sends RTP packets over a byte stream with RFC 4571 framing: each packet preceded by its
/// length as two big-endian bytes.
///
/// This is what head units take when they ask for the "RTP" video protocol: the transport
/// (SmartDeviceLink over TCP, USB or Bluetooth) carries bytes, not datagrams, so the length
/// prefix is how the head unit finds packet boundaries again.
public final class RTPStreamSink: VideoSink {
    /// Receives the framed bytes of one whole access unit per call.
    public typealias Writer = ([UInt8]) throws -> Void

    private var packetizer: RTPPacketizer
    private var writer: Writer?
    private let onClose: (() -> Void)?
    private var packets: [[UInt8]] = []
    private var framed: [UInt8] = []

    /// A sink handing framed bytes to `write`, which may block (back pressure is welcome: the
    /// encoder then waits instead of queueing pictures).
    ///
    /// `write` gets every packet of one access unit in one call, so a transport that sends one
    /// message per call keeps pictures whole.
    public init(packetizer: RTPPacketizer = RTPPacketizer(), write: @escaping Writer) {
        self.packetizer = packetizer
        self.writer = write
        self.onClose = nil
    }

    /// A sink connected over TCP to `host:port` (a name, an IPv4 or IPv6 address).
    ///
    /// Over a stream the packetizer's MTU only bounds how much one packet holds; anything up to
    /// 65535 (the RFC 4571 length limit) is allowed.
    public convenience init(connectingTo host: String, port: Int, packetizer: RTPPacketizer = RTPPacketizer()) throws(SinkError) {
        let connection = try TCPConnection(host: host, port: port)
        self.init(packetizer: packetizer, write: { bytes in try connection.send(bytes) }, onClose: { connection.close() })
    }

    private init(packetizer: RTPPacketizer, write: @escaping Writer, onClose: @escaping () -> Void) {
        self.packetizer = packetizer
        self.writer = write
        self.onClose = onClose
    }

    deinit { if writer != nil { onClose?() } }

    /// Packetizes the access unit, frames every packet and hands the frames to the writer.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let writer else { throw .closed("RTP stream sink") }
        try packetizer.packetize(unit, into: &packets)
        RTPPacketizer.frameForStream(packets, into: &framed)
        do {
            try writer(framed)
        } catch let error as SinkError {
            throw error
        } catch {
            throw .transportFailed(underlying: error)
        }
    }

    /// Stops writing; a TCP connection made by this sink is closed.
    public func close() {
        guard writer != nil else { return }
        writer = nil
        onClose?()
    }
}

/// A connected TCP socket that reports failures as ``SinkError``.
private final class TCPConnection {
    private var socket: FileDescriptor?
    private let destination: String

    init(host: String, port: Int) throws(SinkError) {
        guard (1...65_535).contains(port) else { throw .invalidConfiguration("TCP port \(port) must be in 1...65535") }
        destination = "\(host):\(port)"
        let addresses: [SocketAddress]
        do {
            addresses = try SocketAddress.resolve(host: host, port: port, socketType: Int32(SOCK_STREAM.rawValue))
        } catch {
            throw .unresolvableHost(host: host, port: port, reason: error.message)
        }
        var lastFailure = SinkError.socketFailed(operation: "connect", destination: destination, Errno(rawValue: EAFNOSUPPORT))
        for address in addresses {
            let candidate: FileDescriptor
            do {
                candidate = try FileDescriptor.socket(family: address.family, type: Int32(SOCK_STREAM.rawValue), protocol: 0)
            } catch {
                lastFailure = .socketFailed(operation: "socket", destination: destination, error)
                continue
            }
            do {
                try candidate.connect(to: address)
                socket = candidate
                return
            } catch {
                try? candidate.close()
                lastFailure = .socketFailed(operation: "connect", destination: destination, error)
            }
        }
        throw lastFailure
    }

    deinit { try? socket?.close() }

    func send(_ bytes: [UInt8]) throws(SinkError) {
        guard let socket else { throw .closed("TCP connection to \(destination)") }
        do {
            try socket.sendAll(bytes)
        } catch {
            throw .socketFailed(operation: "send", destination: destination, error)
        }
    }

    func close() {
        try? socket?.close()
        socket = nil
    }
}

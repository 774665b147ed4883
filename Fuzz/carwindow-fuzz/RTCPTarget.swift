import CarWindow
import CarWindowSystemSupport
import Foundation
import Glibc

/// The receiver's RTCP, as `RTPUDPSink` reads it: the feedback parser on each packet, and the
/// packets really sent to a sink over loopback, from the receiver's host (127.0.0.1) or another
/// (127.0.0.2), between pictures at times the input chooses on the sink's own clock. However
/// many picture-loss reports arrive, and from wherever, no two IDRs may be closer than the
/// sink's least spacing (the sink has no IDR schedule of its own here).
///
/// Each step is an operation byte: 0 a packet (a length byte, then the bytes), 1 a picture
/// after 0...1000 ms, 2 a valid PLI, 3 time passing; bit 2 sends from 127.0.0.2.
enum RTCPTarget {
    /// One sink and its two senders for the whole run: a socket pair per input would make the
    /// target slower than what it checks.
    final class Rig {
        let clock = LockedState(1_000.0)
        let sink: RTPUDPSink
        let receiver: Int32
        let stranger: Int32?
        var lastKeyframe: Double?

        init() {
            // The receiver: a bound socket, so that the RTP packets go somewhere harmless.
            receiver = Self.udpSocket(on: "127.0.0.1")
            let other = Self.udpSocket(on: "127.0.0.2")
            stranger = other >= 0 ? other : nil
            let clock = clock
            do {
                sink = try RTPUDPSink(host: "127.0.0.1", port: Self.port(of: receiver), keyframeInterval: nil,
                                      now: { clock.withLock { $0 } })
            } catch {
                fatalError("the RTCP target's sink could not be set up: \(error)")
            }
        }

        static func udpSocket(on host: String) -> Int32 {
            let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr(host)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound != 0 {
                close(descriptor)
                return -1
            }
            return descriptor
        }

        static func port(of descriptor: Int32) -> Int {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            // An even port, as RTP wants it; nothing needs to listen there.
            return max(2, Int(UInt16(bigEndian: address.sin_port)) & ~1)
        }

        func send(_ packet: [UInt8], fromStranger: Bool) {
            guard let rtcpPort = sink.rtcpPort else { return }
            let from = fromStranger ? (stranger ?? receiver) : receiver
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(truncatingIfNeeded: rtcpPort).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = packet.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(from, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
    }

    nonisolated(unsafe) static var rig: Rig?

    static let pictureLoss: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78]
    static let keyframe = AccessUnit(data: [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F, 0xDA, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80, 0, 0, 0, 1, 0x65, 0x88],
                                     isKeyframe: true, presentationTime: .zero, frameNumber: 0)
    static let picture = AccessUnit(data: [0, 0, 0, 1, 0x41, 0x9A], isKeyframe: false, presentationTime: .zero, frameNumber: 1)

    static func run(_ bytes: [UInt8]) {
        // The parser alone, on the whole input as one compound packet.
        if RTPUDPSink.reportsPictureLoss(bytes[...]), bytes.count < 4 || bytes[0] >> 6 != 2 {
            fatalError("a picture loss read from a packet that is no RTCP")
        }
        let rig = rig ?? Rig()
        self.rig = rig
        var input = FuzzInput(bytes)
        var steps = 0
        while !input.isAtEnd, steps < 64 {
            steps += 1
            let operation = input.byte()
            let fromStranger = operation & 4 != 0
            switch operation & 3 {
            case 0:
                let packet = (0..<input.integer(in: 0...255)).map { _ in input.byte() }
                _ = RTPUDPSink.reportsPictureLoss(packet[...])
                rig.send(packet, fromStranger: fromStranger)
            case 1:
                rig.clock.withLock { $0 += Double(input.integer(in: 0...1000)) / 1000 }
                let now = rig.clock.withLock { $0 }
                let isKeyframe = rig.sink.needsKeyframe
                if isKeyframe, let last = rig.lastKeyframe, now - last < rig.sink.minimumKeyframeSpacing.inSeconds {
                    fatalError("an IDR \(now - last) s after the last one, under the least spacing")
                }
                if isKeyframe { rig.lastKeyframe = now }
                try? rig.sink.write(isKeyframe ? keyframe : picture)
            case 2:
                rig.send(pictureLoss, fromStranger: fromStranger)
            default:
                rig.clock.withLock { $0 += Double(input.integer(in: 0...5000)) / 1000 }
            }
        }
    }
}

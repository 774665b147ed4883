import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowSinks
@testable import CarWindowTestSupport
import SystemPackage

/// A receiver's RTCP feedback is untrusted: a flood of picture-loss reports must not turn every
/// picture into an IDR, and only the receiver's host may send them.
@Suite struct RTCPFeedbackTests {
    static let pictureLoss: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78]

    /// A UDP socket on `host` (an IPv4 address), bound to `port` (0: any); nil and the error
    /// number when the bind fails.
    static func udpSocket(on host: String, port: Int = 0) -> (Int32?, Int32) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { return (nil, errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let error = errno
            close(socket)
            return (nil, error)
        }
        return (socket, 0)
    }

    static func send(_ bytes: [UInt8], from socket: Int32, toPort port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// 1,000 PLIs spread over 30 pictures 66 ms apart (2 s on the sink's clock): each picture
    /// had a fresh report waiting, and each was an IDR (30 of 30), which tripled the bitrate.
    /// Reports are now honoured at most once per ``RTPUDPSink/minimumKeyframeSpacing`` (0.5 s):
    /// at most one IDR per half second after the first.
    @Test(.timeLimit(.minutes(2))) func aPictureLossFloodCostsAtMostTwoIDRsASecond() async throws {
        let clock = LockedState(100.0)
        let sink = try RTPUDPSink(host: "127.0.0.1", port: try SinkTests.FreePorts.udpPair(), keyframeInterval: nil,
                                  now: { clock.withLock { $0 } })
        defer { sink.close() }
        let rtcpPort = try #require(sink.rtcpPort)
        let (receiver, _) = Self.udpSocket(on: "127.0.0.1")
        let socket = try #require(receiver)
        defer { close(socket) }
        let pictures = 30, reports = 1_000
        var keyframes = 0
        for picture in 0..<pictures {
            let due = reports * (picture + 1) / pictures - reports * picture / pictures
            let before = sink.pictureLossReports
            for _ in 0..<due { Self.send(Self.pictureLoss, from: socket, toPort: rtcpPort) }
            // Every report of this picture read before it is chosen, however slow the machine:
            // the sink reads at most 64 a call, so ask until all arrived.
            let arrived = await eventually {
                _ = sink.needsKeyframe
                return sink.pictureLossReports >= before + due
            }
            try #require(arrived && sink.pictureLossReports == before + due, "picture \(picture): the reports did not all arrive")
            let isKeyframe = picture == 0 || sink.needsKeyframe
            if isKeyframe { keyframes += 1 }
            try sink.write(isKeyframe ? SinkTests.keyframe : SinkTests.picture)
            clock.withLock { $0 += 0.066 }
        }
        #expect(sink.pictureLossReports == reports)
        // 1.98 s: the first IDR and at most one per 0.5 s after it.
        #expect(keyframes <= 5, "\(keyframes) IDRs for \(pictures) pictures")
        #expect(keyframes >= 2, "picture-loss reports must still bring IDRs")
    }

    /// For a loopback receiver the RTCP port is bound on 127.0.0.1 alone, not on every
    /// interface, and a report from another address (127.0.0.2, a different local host as far
    /// as the sink can tell) is read and ignored.
    @Test(.timeLimit(.minutes(2))) func rtcpIsBoundToTheReceiversInterfaceAndReadOnlyFromIt() async throws {
        let sink = try RTPUDPSink(host: "127.0.0.1", port: try SinkTests.FreePorts.udpPair(), keyframeInterval: nil)
        defer { sink.close() }
        let rtcpPort = try #require(sink.rtcpPort)
        try sink.write(SinkTests.keyframe)
        // A wildcard bind of the sink would hold the port on 127.0.0.2 too.
        let (stranger, error) = Self.udpSocket(on: "127.0.0.2", port: rtcpPort)
        #expect(stranger != nil, "127.0.0.2:\(rtcpPort) could not be bound (errno \(error)): the RTCP socket listens on every address")
        let (other, _) = Self.udpSocket(on: "127.0.0.2")
        let foreign = try #require(stranger ?? other)
        defer {
            close(foreign)
            if let other, other != foreign { close(other) }
        }
        Self.send(Self.pictureLoss, from: foreign, toPort: rtcpPort)
        #expect(await eventually { sink.needsKeyframe || sink.rtcpDatagramsRead > 0 })
        #expect(sink.rtcpDatagramsRead == 1)
        #expect(!sink.needsKeyframe, "a PLI from 127.0.0.2 asked for an IDR")
        #expect(sink.pictureLossReports == 0)
        // The receiver's own host is heard.
        let (receiver, _) = Self.udpSocket(on: "127.0.0.1")
        let socket = try #require(receiver)
        defer { close(socket) }
        Self.send(Self.pictureLoss, from: socket, toPort: rtcpPort)
        #expect(await eventually { sink.needsKeyframe })
        #expect(sink.pictureLossReports == 1)
    }
}

import Foundation
import Glibc
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowTestSupport
import SystemPackage

/// The sinks: RFC 6184 packets checked field by field, RFC 4571 framing, the Annex-B file, typed
/// errors, and a real H.264 stream sent over loopback UDP to ffmpeg, which must decode every picture.
@Suite struct SinkTests {
    // MARK: Helpers

    /// The fields of one RTP packet, read back independently of the packetizer's code.
    struct ParsedPacket {
        var version: UInt8, marker: Bool, payloadType: UInt8
        var sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32
        var payload: [UInt8]

        init(_ bytes: [UInt8]) throws {
            try #require(bytes.count >= 12)
            version = bytes[0] >> 6
            marker = bytes[1] & 0x80 != 0
            payloadType = bytes[1] & 0x7F
            sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
            timestamp = bytes[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
            ssrc = bytes[8..<12].reduce(0) { $0 << 8 | UInt32($1) }
            payload = Array(bytes[12...])
        }
    }

    static func fixedPacketizer(mtu: Int = 1400, sequence: UInt16 = 1000) throws -> RTPPacketizer {
        try RTPPacketizer(payloadType: 96, mtu: mtu, ssrc: 0x1122_3344, initialSequenceNumber: sequence)
    }

    static func annexB(_ nalUnits: [[UInt8]]) -> [UInt8] {
        nalUnits.flatMap { [0, 0, 0, 1] + $0 }
    }

    /// A NAL unit of `count` bytes with `header` first and seeded random bytes after it (never a
    /// start code, because no byte is zero).
    static func nal(header: UInt8, count: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return [header] + (1..<count).map { _ in UInt8.random(in: 1...255, using: &generator) }
    }

    static func packets(of unit: AccessUnit, with packetizer: inout RTPPacketizer) throws -> [ParsedPacket] {
        var raw: [[UInt8]] = []
        try packetizer.packetize(unit, into: &raw)
        return try raw.map(ParsedPacket.init)
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    // MARK: Packetizer

    @Test func smallNALUnitTravelsInOnePacketWithTheHeaderFields() throws {
        var packetizer = try Self.fixedPacketizer()
        let unit = AccessUnit(data: Self.annexB([[0x65, 1, 2, 3]]), isKeyframe: true, presentationTime: .seconds(1.5), frameNumber: 0)
        let packets = try Self.packets(of: unit, with: &packetizer)
        try #require(packets.count == 1)
        let packet = packets[0]
        #expect(packet.version == 2)
        #expect(packet.marker)
        #expect(packet.payloadType == 96)
        #expect(packet.sequenceNumber == 1000)
        #expect(packet.timestamp == 135_000)  // 1.5 s x 90 kHz
        #expect(packet.ssrc == 0x1122_3344)
        #expect(packet.payload == [0x65, 1, 2, 3])  // start code stripped, NAL header kept
        #expect(packetizer.nextSequenceNumber == 1001)
    }

    @Test func largeNALUnitIsCutIntoFUAFragmentsThatReassemble() throws {
        // NRI 2 (0x40) and type 1: a non-IDR slice; the FU indicator must keep the NRI.
        for header: UInt8 in [0x65, 0x41] {
            var packetizer = try Self.fixedPacketizer(mtu: 1400)
            let nal = Self.nal(header: header, count: 5000)
            let unit = AccessUnit(data: Self.annexB([nal]), isKeyframe: header & 0x1F == 5, presentationTime: .zero, frameNumber: 0)
            var raw: [[UInt8]] = []
            try packetizer.packetize(unit, into: &raw)
            // 4999 bytes after the NAL header in fragments of 1400 - 12 - 2 = 1386 bytes.
            #expect(raw.count == 4)
            #expect(raw.allSatisfy { $0.count <= 1400 })
            let packets = try raw.map(ParsedPacket.init)
            var reassembled: [UInt8] = []
            for (index, packet) in packets.enumerated() {
                let indicator = packet.payload[0], fuHeader = packet.payload[1]
                #expect(indicator == (header & 0xE0) | 28)
                #expect(fuHeader & 0x1F == header & 0x1F)
                #expect((fuHeader & 0x80 != 0) == (index == 0), "S bit only on the first fragment")
                #expect((fuHeader & 0x40 != 0) == (index == packets.count - 1), "E bit only on the last fragment")
                #expect(fuHeader & 0x20 == 0, "reserved bit")
                if index == 0 { reassembled.append((indicator & 0xE0) | (fuHeader & 0x1F)) }
                reassembled += packet.payload[2...]
            }
            #expect(reassembled == nal)
        }
    }

    @Test func markerOnlyOnTheLastPacketAndOneTimestampPerAccessUnit() throws {
        var packetizer = try Self.fixedPacketizer()
        let nalUnits = [Self.nal(header: 0x67, count: 20), Self.nal(header: 0x68, count: 6, seed: 2),
                        Self.nal(header: 0x65, count: 5000, seed: 3)]
        let unit = AccessUnit(data: Self.annexB(nalUnits), isKeyframe: true, presentationTime: .seconds(2), frameNumber: 30)
        let packets = try Self.packets(of: unit, with: &packetizer)
        #expect(packets.count == 2 + 4)
        #expect(packets.map(\.marker) == [false, false, false, false, false, true])
        #expect(Set(packets.map(\.timestamp)) == [180_000])
        #expect(packets.map(\.sequenceNumber) == Array(1000...1005))
        #expect(packets[0].payload == nalUnits[0])
        #expect(packets[1].payload == nalUnits[1])
    }

    /// 50000 s x 90 kHz = 4.5e9 ticks, which wraps to 4.5e9 - 2^32 = 205032704; times before the
    /// stream's start wrap below 2^32.
    static let timestampCases: [(Double, UInt32)] = [(0, 0), (1.0 / 15, 6000), (1, 90_000), (100.5, 9_045_000),
                                                     (50_000, 205_032_704), (-1, 4_294_877_296), (-0.5, 4_294_922_296)]

    @Test(arguments: timestampCases)
    func timestampIs90kHzTimesPresentationTime(time: Double, expected: UInt32) throws {
        var packetizer = try Self.fixedPacketizer()
        let unit = AccessUnit(data: Self.annexB([[0x41, 9]]), isKeyframe: false, presentationTime: .seconds(time), frameNumber: 1)
        #expect(try Self.packets(of: unit, with: &packetizer).map(\.timestamp) == [expected])
        #expect(RTPPacketizer.timestamp(for: .seconds(time)) == expected)
    }

    @Test func sequenceNumbersIncrementAndWrapAt65535() throws {
        var packetizer = try Self.fixedPacketizer(sequence: 65_534)
        let first = AccessUnit(data: Self.annexB([[0x67, 1], [0x68, 2], [0x65, 3]]), isKeyframe: true,
                               presentationTime: .zero, frameNumber: 0)
        let second = AccessUnit(data: Self.annexB([[0x41, 4]]), isKeyframe: false, presentationTime: .seconds(1.0 / 15), frameNumber: 1)
        #expect(try Self.packets(of: first, with: &packetizer).map(\.sequenceNumber) == [65_534, 65_535, 0])
        #expect(try Self.packets(of: second, with: &packetizer).map(\.sequenceNumber) == [1])
    }

    @Test func startCodesOfBothLengthsAndTrailingZerosAreStripped() throws {
        var packetizer = try Self.fixedPacketizer()
        // Junk before the first start code, a three-byte start code, trailing zero bytes.
        let data: [UInt8] = [0xAA, 0, 0, 1, 0x67, 5, 6, 0, 0, 0, 1, 0x68, 7, 0, 0, 1, 0x65, 8, 9, 0, 0]
        let unit = AccessUnit(data: data, isKeyframe: true, presentationTime: .zero, frameNumber: 0)
        #expect(try Self.packets(of: unit, with: &packetizer).map(\.payload) == [[0x67, 5, 6], [0x68, 7], [0x65, 8, 9]])
    }

    @Test func seededPacketizersAgreeAndOutputBuffersAreReused() throws {
        var generatorA = SplitMix64(seed: 7), generatorB = SplitMix64(seed: 7)
        var a = try RTPPacketizer(using: &generatorA), b = try RTPPacketizer(using: &generatorB)
        #expect(a.ssrc == b.ssrc && a.nextSequenceNumber == b.nextSequenceNumber)
        let defaults = RTPPacketizer()
        #expect(defaults.payloadType == 96 && defaults.mtu == 1400)
        var packets: [[UInt8]] = []
        let big = AccessUnit(data: Self.annexB([Self.nal(header: 0x65, count: 5000)]), isKeyframe: true,
                             presentationTime: .zero, frameNumber: 0)
        try a.packetize(big, into: &packets)
        let firstBuffer = packets[0].withUnsafeBufferPointer { $0.baseAddress }
        let small = AccessUnit(data: Self.annexB([[0x41, 1, 2]]), isKeyframe: false, presentationTime: .seconds(0.1), frameNumber: 1)
        try a.packetize(small, into: &packets)
        #expect(packets.count == 1)
        #expect(packets[0].withUnsafeBufferPointer { $0.baseAddress } == firstBuffer, "first buffer refilled in place")
        var fresh: [[UInt8]] = []
        try b.packetize(big, into: &fresh)
        try b.packetize(small, into: &fresh)
        #expect(fresh == packets)
    }

    @Test func badInputAndSettingsThrowTypedErrors() throws {
        #expect(throws: SinkError.self) { try RTPPacketizer(payloadType: 96, mtu: 10, ssrc: 1, initialSequenceNumber: 1) }
        #expect(throws: SinkError.self) { try RTPPacketizer(payloadType: 200, mtu: 1400, ssrc: 1, initialSequenceNumber: 1) }
        var packetizer = try Self.fixedPacketizer()
        var packets: [[UInt8]] = []
        let noNAL = AccessUnit(data: [1, 2, 3, 4], isKeyframe: false, presentationTime: .zero, frameNumber: 5)
        #expect(throws: SinkError.invalidAccessUnit(frameNumber: 5, reason: "no NAL unit after an Annex-B start code")) {
            try packetizer.packetize(noNAL, into: &packets)
        }
        #expect(packetizer.nextSequenceNumber == 1000, "nothing sent, nothing counted")
    }

    // MARK: RFC 4571 stream

    @Test func streamSinkPrefixesEveryPacketWithItsBigEndianLength() throws {
        final class Collector { var chunks: [[UInt8]] = [] }
        let collector = Collector()
        let sink = RTPStreamSink(packetizer: try Self.fixedPacketizer()) { collector.chunks.append($0) }
        let unit = AccessUnit(data: Self.annexB([Self.nal(header: 0x67, count: 12), Self.nal(header: 0x65, count: 5000)]),
                              isKeyframe: true, presentationTime: .seconds(0.5), frameNumber: 0)
        try sink.write(unit)
        var expected: [[UInt8]] = []
        var reference = try Self.fixedPacketizer()
        try reference.packetize(unit, into: &expected)
        #expect(collector.chunks.count == 1, "one writer call per access unit")
        let stream = collector.chunks.joined().map { $0 }
        var offset = 0
        var framed: [[UInt8]] = []
        while offset + 2 <= stream.count {
            let length = Int(stream[offset]) << 8 | Int(stream[offset + 1])
            try #require(offset + 2 + length <= stream.count)
            framed.append(Array(stream[(offset + 2)..<(offset + 2 + length)]))
            offset += 2 + length
        }
        #expect(offset == stream.count)
        #expect(framed == expected)
        #expect(framed.map(\.count) == [24, 1400, 1400, 1400, 855])  // 12 + 12; 12 + 2 + 1386 x3; 12 + 2 + 841
        sink.close()
        #expect(throws: SinkError.closed("RTP stream sink")) { try sink.write(unit) }
    }

    @Test func streamSinkReportsTheWritersError() throws {
        struct Unplugged: Error, Equatable { var port: Int }
        func unpluggedSink() throws -> RTPStreamSink {
            RTPStreamSink(packetizer: try Self.fixedPacketizer()) { _ in throw Unplugged(port: 3) }
        }
        let unit = AccessUnit(data: Self.annexB([[0x41, 1]]), isKeyframe: false, presentationTime: .zero, frameNumber: 0)
        let sink = try unpluggedSink()
        #expect(throws: SinkError.transportFailed(underlying: Unplugged(port: 3))) { try sink.write(unit) }
        // The writer's own error comes back whole, with its type and values.
        let other = try unpluggedSink()
        #expect {
            try other.write(unit)
        } throws: { error in
            guard case SinkError.transportFailed(let underlying)? = error as? SinkError else { return false }
            return underlying as? Unplugged == Unplugged(port: 3)
        }
        #expect(SinkError.transportFailed(underlying: Unplugged(port: 3)) != .transportFailed(underlying: Unplugged(port: 4)))
    }

    @Test func tcpStreamSinkDeliversFramedPacketsOverLoopback() throws {
        // A listening socket on an ephemeral port; the kernel completes the connection from the
        // backlog and buffers the bytes, so one thread can write first and accept afterwards.
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, socketAddress, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))

        let sink = try RTPStreamSink(connectingTo: "127.0.0.1", port: port, packetizer: try Self.fixedPacketizer())
        let unit = AccessUnit(data: Self.annexB([Self.nal(header: 0x65, count: 3000)]), isKeyframe: true,
                              presentationTime: .zero, frameNumber: 0)
        try sink.write(unit)
        sink.close()
        let connection = accept(listener, nil, nil)
        try #require(connection >= 0)
        defer { close(connection) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        var packets: [[UInt8]] = []
        var reference = try Self.fixedPacketizer()
        try reference.packetize(unit, into: &packets)
        var expected: [UInt8] = []
        RTPPacketizer.frameForStream(packets, into: &expected)
        #expect(received == expected)
        #expect(received.prefix(2) == [0x05, 0x78])  // 1400 = 0x0578: the first FU-A packet's length
    }

    @Test func tcpStreamSinkReportsARefusedConnection() throws {
        // A port that was free a moment ago: nothing listens, so loopback refuses at once.
        let port = try FreePorts.udpPair()
        do {
            _ = try RTPStreamSink(connectingTo: "127.0.0.1", port: port, packetizer: try Self.fixedPacketizer())
            Issue.record("connected to a port nobody listens on")
        } catch let error as SinkError {
            #expect(error == .socketFailed(operation: "connect", destination: "127.0.0.1:\(port)", Errno(rawValue: ECONNREFUSED)))
            #expect(error.description.contains("ECONNREFUSED"))
        }
    }

    // MARK: Annex-B file

    @Test func fileSinkWritesTheConcatenationOfAccessUnits() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("out.h264")
        let units = (0..<5).map { (index: Int) -> AccessUnit in
            let nal = Self.nal(header: index == 0 ? 0x65 : 0x41, count: 100 + index * 700, seed: UInt64(index))
            return AccessUnit(data: Self.annexB([nal]), isKeyframe: index == 0,
                              presentationTime: .seconds(Double(index) / 15), frameNumber: index)
        }
        let sink = try AnnexBFileSink(url: url)
        for unit in units { try sink.write(unit) }
        sink.close()
        #expect(try [UInt8](Data(contentsOf: url)) == units.flatMap { $0.data })
        #expect(throws: SinkError.closed("Annex-B file sink for \(url.path)")) { try sink.write(units[0]) }
        // Opening again without appending starts an empty file.
        try AnnexBFileSink(url: url).close()
        #expect(try Data(contentsOf: url).isEmpty)
    }

    @Test func fileSinkNeverCreatesFolders() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("missing/out.h264")
        do {
            _ = try AnnexBFileSink(url: url)
            Issue.record("opened a file in a missing folder")
        } catch {
            #expect(error == .cannotOpenFile(path: url.path, Errno(rawValue: ENOENT)))
            #expect(error.description.contains("ENOENT"))
            #expect(error.description.contains("create the folder first"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("missing").path))
    }

    // MARK: UDP

    @Test func udpSinkRejectsAnUnresolvableHostAndWritesAfterClose() throws {
        // An empty label makes the name invalid, so the resolver fails without asking any server.
        #expect {
            try RTPUDPSink(host: "carwindow..invalid", port: 5004)
        } throws: { error in
            guard case .unresolvableHost(let host, 5004, _) = error as? SinkError else { return false }
            return host == "carwindow..invalid"
        }
        #expect(throws: SinkError.self) { try RTPUDPSink(host: "127.0.0.1", port: 0) }
        let sink = try RTPUDPSink(host: "127.0.0.1", port: try FreePorts.udpPair())
        sink.close()
        sink.close()
        let unit = AccessUnit(data: Self.annexB([[0x41, 1]]), isKeyframe: false, presentationTime: .zero, frameNumber: 0)
        #expect(throws: SinkError.self) { try sink.write(unit) }
    }

    @Test func sdpDescribesTheStream() throws {
        let expected = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=CarWindow\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            + "m=video 5004 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n"
        #expect(RTPUDPSink.sdp(host: "127.0.0.1", port: 5004) == expected)
        #expect(RTPUDPSink.sdp(host: "::1", port: 5006, payloadType: 97).contains("c=IN IP6 ::1\r\nt=0 0\r\nm=video 5006 RTP/AVP 97"))
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try RTPUDPSink(host: "127.0.0.1", port: 5004)
        defer { sink.close() }
        let url = directory.appendingPathComponent("stream.sdp")
        try sink.writeSDP(to: url)
        #expect(try String(contentsOf: url, encoding: .utf8) == expected)
        #expect(throws: SinkError.cannotOpenFile(path: directory.appendingPathComponent("no/stream.sdp").path, Errno(rawValue: ENOENT))) {
            try sink.writeSDP(to: directory.appendingPathComponent("no/stream.sdp"))
        }
    }

    // MARK: Late receivers

    /// An IDR with a baseline SPS (profile 66, constraint byte 0xc0, level 3.1) and a PPS.
    static let keyframe = AccessUnit(data: annexB([[0x67, 0x42, 0xC0, 0x1F, 0xDA, 0x01], [0x68, 0xCE, 0x3C, 0x80], [0x65, 0x88, 0x84]]),
                                     isKeyframe: true, presentationTime: .zero, frameNumber: 0)
    static let picture = AccessUnit(data: annexB([[0x41, 0x9A, 0x02]]), isKeyframe: false, presentationTime: .zero, frameNumber: 1)

    @Test func udpSinkAsksForAnIDROnItsScheduleEvenWhileNothingIsSent() throws {
        let clock = LockedState(100.0)
        let sink = try RTPUDPSink(host: "127.0.0.1", port: try FreePorts.udpPair(), keyframeInterval: .seconds(2),
                                  now: { clock.withLock { $0 } })
        defer { sink.close() }
        #expect(!sink.needsKeyframe, "the first picture of a stream is an IDR anyway")
        try sink.write(Self.keyframe)
        clock.withLock { $0 = 101.9 }
        try sink.write(Self.picture)
        #expect(!sink.needsKeyframe)
        // A still map sends nothing new; the schedule runs on regardless.
        clock.withLock { $0 = 102.0 }
        #expect(sink.needsKeyframe)
        try sink.write(Self.picture)
        #expect(sink.needsKeyframe, "a P picture does not satisfy the request")
        try sink.write(Self.keyframe)
        #expect(!sink.needsKeyframe)
        #expect(throws: SinkError.self) { try RTPUDPSink(host: "127.0.0.1", port: 5004, keyframeInterval: .zero) }
        let never = try RTPUDPSink(host: "127.0.0.1", port: 5004, keyframeInterval: nil, now: { clock.withLock { $0 } })
        defer { never.close() }
        try never.write(Self.keyframe)
        clock.withLock { $0 = 1000 }
        #expect(!never.needsKeyframe)
    }

    /// A receiver's RTCP picture-loss report (PLI, or FIR) on the port after the sink's source port
    /// asks for an IDR at once; receiver reports alone do not.
    @Test(.timeLimit(.minutes(1))) func udpSinkAsksForAnIDRWhenTheReceiverReportsPictureLoss() throws {
        let sink = try RTPUDPSink(host: "127.0.0.1", port: try FreePorts.udpPair(), keyframeInterval: nil)
        defer { sink.close() }
        let rtcpPort = try #require(sink.rtcpPort)
        #expect(rtcpPort == (try #require(sink.sourcePort)) + 1 && rtcpPort % 2 == 1)
        try sink.write(Self.keyframe)
        let receiver = try FileDescriptor.socket(family: AF_INET, type: Int32(SOCK_DGRAM.rawValue), protocol: 0)
        defer { try? receiver.close() }
        let address = try #require(try? SocketAddress.resolve(host: "127.0.0.1", port: rtcpPort, socketType: Int32(SOCK_DGRAM.rawValue)).first)
        // A receiver report (201) with no blocks, then one with a PLI (206, FMT 1) behind it.
        let receiverReport: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 1]
        let pictureLoss: [UInt8] = [0x81, 206, 0, 2, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78]
        try receiver.sendDatagram(receiverReport, to: address)
        try receiver.sendDatagram(receiverReport + pictureLoss, to: address)
        // Loopback delivers at once; the loop only guards against a slow scheduler.
        var waited = 0
        while !sink.needsKeyframe, waited < 500 {
            usleep(2_000)
            waited += 1
        }
        #expect(sink.needsKeyframe)
        #expect(sink.pictureLossReports == 1)
        try sink.write(Self.keyframe)
        #expect(!sink.needsKeyframe)
        // FIR (206, FMT 4) too.
        try receiver.sendDatagram([0x84, 206, 0, 4, 0, 0, 0, 1, 0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78, 1, 0, 0, 0], to: address)
        waited = 0
        while !sink.needsKeyframe, waited < 500 {
            usleep(2_000)
            waited += 1
        }
        #expect(sink.pictureLossReports == 2)
    }

    @Test func pictureLossIsReadOnlyFromWellFormedRTCP() {
        #expect(RTPUDPSink.reportsPictureLoss([0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2][...]))
        #expect(!RTPUDPSink.reportsPictureLoss([0x80, 201, 0, 1, 0, 0, 0, 1][...]), "a receiver report")
        #expect(!RTPUDPSink.reportsPictureLoss([0x81, 205, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2][...]), "a NACK (transport feedback)")
        #expect(!RTPUDPSink.reportsPictureLoss([0x41, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2][...]), "version 1")
        #expect(!RTPUDPSink.reportsPictureLoss([0x80, 201, 0xFF, 0xFF, 0x81, 206, 0, 2][...]), "a length beyond the packet ends the walk")
        #expect(!RTPUDPSink.reportsPictureLoss([0x81, 206][...]), "too short")
        #expect(!RTPUDPSink.reportsPictureLoss([][...]))
    }

    /// The SDP names the profile and carries SPS and PPS once the first IDR showed them, so a
    /// player can set up its decoder before an IDR arrives.
    @Test func sdpCarriesTheParameterSetsOfTheFirstIDR() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sink = try RTPUDPSink(host: "127.0.0.1", port: 5004)
        defer { sink.close() }
        let url = directory.appendingPathComponent("stream.sdp")
        try sink.writeSDP(to: url)
        #expect(try String(contentsOf: url, encoding: .utf8).hasSuffix("a=fmtp:96 packetization-mode=1\r\n"))
        try sink.write(Self.picture)
        try sink.write(Self.keyframe)
        let sps = Data([0x67, 0x42, 0xC0, 0x1F, 0xDA, 0x01]).base64EncodedString()
        let pps = Data([0x68, 0xCE, 0x3C, 0x80]).base64EncodedString()
        #expect(try String(contentsOf: url, encoding: .utf8).hasSuffix(
            "a=fmtp:96 packetization-mode=1;profile-level-id=42c01f;sprop-parameter-sets=\(sps),\(pps)\r\n"))
    }

    /// ffmpeg encodes a test pattern, the stream is cut into access units and sent through the
    /// UDP sink over loopback, and ffmpeg decodes it from the SDP; every picture must arrive and
    /// match what ffmpeg decodes from the file directly.
    @Test(.timeLimit(.minutes(2))) func ffmpegDecodesEveryX264PictureSentOverUDP() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source.h264")
        // Debian 12's ffmpeg has no libopenh264 encoder; x264 in baseline with one thread also
        // makes one slice per picture and no B frames, like the project's encoders.
        try ChildProcess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi",
                              "-i", "testsrc=size=320x240:rate=15", "-frames:v", "30", "-c:v", "libx264",
                              "-pix_fmt", "yuv420p", "-profile:v", "baseline", "-bf", "0", "-threads", "1", "-f", "h264", source.path])
        let units = try H264AccessUnits.split([UInt8](Data(contentsOf: source)), framesPerSecond: 15)
        #expect(units.count == 30)
        #expect(units.first?.isKeyframe == true)
        try Self.expectFFmpegDecodesOverUDP(units, width: 320, height: 240, in: directory)
    }

    /// The project's own encoder, access units as it makes them (IDRs with SPS and PPS at frames
    /// 0 and 15), straight into the UDP sink.
    @Test(.timeLimit(.minutes(2))) func ffmpegDecodesEveryOpenH264PictureSentOverUDP() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: 320, height: 240))
        var frame = NV12Frame(width: 320, height: 240)
        var units: [AccessUnit] = []
        for index in 0..<30 {
            // A diagonal ramp moving 3 pixels a frame: motion for P slices, detail for FU-A-sized IDRs.
            for row in 0..<frame.codedHeight {
                for column in 0..<frame.codedWidth {
                    frame.luma[row * frame.codedWidth + column] = UInt8(16 + (row + column + 3 * index) % 220)
                }
            }
            units.append(try encoder.encode(frame, presentationTime: .seconds(Double(index) / 15), forceIDR: index == 15))
        }
        #expect(units.filter(\.isKeyframe).map(\.frameNumber) == [0, 15])
        #expect(units.contains { $0.data.count > 1400 }, "some access unit needs FU-A")
        try Self.expectFFmpegDecodesOverUDP(units, width: 320, height: 240, in: directory)
    }

    /// Sends `units` through an ``RTPUDPSink`` to ffmpeg reading the sink's SDP and expects every
    /// picture decoded, identical to ffmpeg's decoding of the same units from a file.
    static func expectFFmpegDecodesOverUDP(_ units: [AccessUnit], width: Int, height: Int, in directory: URL) throws {
        let port = try FreePorts.udpPair()
        let sink = try RTPUDPSink(host: "127.0.0.1", port: port)
        defer { sink.close() }
        let sdp = directory.appendingPathComponent("stream.sdp")
        try sink.writeSDP(to: sdp)
        let received = directory.appendingPathComponent("received.yuv")
        // One decoding thread: frame threading would hold pictures back until more input came.
        let receiver = try ChildProcess.start([
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,udp,rtp",
            "-reorder_queue_size", "0", "-threads", "1", "-i", sdp.path, "-frames:v", String(units.count),
            "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", received.path,
        ], in: directory)
        defer { receiver.terminateIfRunning() }
        // ffmpeg is listening once the port can no longer be bound here.
        let deadline = Date().addingTimeInterval(10)
        while FreePorts.isUDPPortFree(port), Date() < deadline { usleep(20_000) }
        try #require(!FreePorts.isUDPPortFree(port), "ffmpeg did not open the RTP port")

        for unit in units {
            try sink.write(unit)
            usleep(5_000)  // a little pacing: ffmpeg reads the socket on another thread
        }
        // ffmpeg's H.264 parser hands a picture on only when the next access unit begins, which a
        // live stream always has; here an access unit delimiter (type 9, primary_pic_type 7) closes the last one.
        try sink.write(AccessUnit(data: [0, 0, 0, 1, 0x09, 0xF0], isKeyframe: false,
                                  presentationTime: .seconds(Double(units.count) / 15), frameNumber: units.count))
        let finished = receiver.wait(seconds: 20)
        #expect(finished, "ffmpeg did not stop after \(units.count) pictures: \(receiver.stderr())")
        let frameSize = width * height * 3 / 2
        let rtpFrames = [UInt8]((try? Data(contentsOf: received)) ?? Data())
        #expect(rtpFrames.count == units.count * frameSize,
                "\(rtpFrames.count / frameSize) of \(units.count) pictures decoded; \(receiver.stderr())")
        let source = directory.appendingPathComponent("sent.h264")
        try Data(units.flatMap { $0.data }).write(to: source)
        let direct = directory.appendingPathComponent("direct.yuv")
        try ChildProcess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "h264", "-i", source.path,
                              "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", direct.path])
        #expect(rtpFrames == [UInt8](try Data(contentsOf: direct)), "pictures through RTP differ from the file's")
    }
}

// MARK: - Test support

/// Kept inside the suite so their names cannot collide with other test files' helpers.
extension SinkTests {

    /// Splits an Annex-B stream into access units the way the project's encoders produce them.
    enum H264AccessUnits {
        /// An access unit ends with its slice: OpenH264 and single-threaded x264 code one slice per
        /// picture, so non-VCL NAL units (SPS, PPS, SEI) open the next one.
        static func split(_ stream: [UInt8], framesPerSecond: Double) throws -> [AccessUnit] {
            var units: [AccessUnit] = []
            var pending: [UInt8] = []
            var hasIDR = false
            for range in NALUnit.ranges(in: stream) {
                let type = stream[range.lowerBound] & 0x1F
                pending += [0, 0, 0, 1] + stream[range]
                if type == 5 { hasIDR = true }
                if type == 1 || type == 5 {
                    units.append(AccessUnit(data: pending, isKeyframe: hasIDR,
                                            presentationTime: .seconds(Double(units.count) / framesPerSecond), frameNumber: units.count))
                    pending = []
                    hasIDR = false
                }
            }
            try #require(pending.isEmpty, "NAL units after the last slice")
            return units
        }
    }

    /// Loopback ports for the tests, found by binding.
    enum FreePorts {
        /// An even port whose odd neighbour is free too: RTP on the even one, RTCP on the next.
        static func udpPair() throws -> Int {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<200 {
                let port = Int.random(in: 20_000..<30_000, using: &generator) * 2
                if isUDPPortFree(port), isUDPPortFree(port + 1) { return port }
            }
            throw ChildProcess.Failure(description: "no free UDP port pair on 127.0.0.1")
        }

        /// Whether a UDP socket can bind `port` on 127.0.0.1 right now.
        static func isUDPPortFree(_ port: Int) -> Bool {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard socket >= 0 else { return false }
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            return withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
    }

    /// Child processes (ffmpeg) with their output in files, so full pipes never stall them.
    final class ChildProcess {
        struct Failure: Error, CustomStringConvertible { var description: String }

        private let process = Process()
        private let errorFile: URL

        private init(_ arguments: [String], in directory: URL) throws {
            errorFile = directory.appendingPathComponent("stderr-\(UUID().uuidString).txt")
            _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            process.currentDirectoryURL = directory
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: errorFile)
            try process.run()
        }

        static func start(_ arguments: [String], in directory: URL) throws -> ChildProcess {
            try ChildProcess(arguments, in: directory)
        }

        /// Runs to the end and throws with its error output unless it exits 0.
        static func run(_ arguments: [String]) throws {
            let child = try ChildProcess(arguments, in: FileManager.default.temporaryDirectory)
            child.process.waitUntilExit()
            defer { try? FileManager.default.removeItem(at: child.errorFile) }
            guard child.process.terminationStatus == 0 else {
                throw Failure(description: "\(arguments.joined(separator: " ")) exited \(child.process.terminationStatus): \(child.stderr())")
            }
        }

        /// Waits up to `seconds` for the process to end; false if it still runs.
        func wait(seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning, Date() < deadline { usleep(20_000) }
            return !process.isRunning
        }

        func stderr() -> String {
            String(decoding: (try? Data(contentsOf: errorFile)) ?? Data(), as: UTF8.self).suffix(2000).description
        }

        func terminateIfRunning() {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }
}

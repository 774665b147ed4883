import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowTestSupport

/// The frames of a real session with SDL Core 8.2.0 (Fixtures/sdl/core-session-capture.hex).
enum SDLCapture {
    struct Line {
        var isFromHeadUnit: Bool
        var bytes: [UInt8]
    }

    static let url = TestPaths.fixtures.appendingPathComponent("sdl/core-session-capture.hex")

    static func lines() throws -> [Line] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { return nil }
            let hex = Array(parts[1].utf8)
            var bytes: [UInt8] = []
            var index = 0
            while index + 1 < hex.count {
                guard let byte = UInt8(String(decoding: hex[index..<(index + 2)], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(byte)
                index += 2
            }
            return Line(isFromHeadUnit: parts[0] == "RX", bytes: bytes)
        }
    }

    static func frames() throws -> [SDLFrame] {
        try lines().map { line in
            var parser = SDLFrameParser(maximumFramePayload: 131_072)
            parser.append(line.bytes)
            guard let frame = try parser.nextFrame() else { throw CaptureError.incomplete }
            #expect(parser.bufferedByteCount == 0)
            return frame
        }
    }

    enum CaptureError: Error { case incomplete }
}

@Suite struct SDLCodecTests {
    // MARK: Capture

    @Test func captureHasFortySevenWholeFrames() throws {
        let lines = try SDLCapture.lines()
        #expect(lines.count == 47)
        let frames = try SDLCapture.frames()
        for (line, frame) in zip(lines, frames) {
            #expect(frame.header.version == 5)
            #expect(Int(frame.header.dataSize) == frame.payload.count)
            #expect(frame.header.encodedSize + frame.payload.count == line.bytes.count)
            // Headers are canonical: re-encoding gives the captured bytes.
            #expect(frame.encoded() == line.bytes)
        }
        // Core's single frames start with 0x51 and control frames with 0x50 (capture README).
        for (line, frame) in zip(lines, frames) where line.isFromHeadUnit {
            #expect(line.bytes[0] == (frame.header.frameType == .control ? 0x50 : 0x51))
        }
    }

    @Test func rpcStartServiceACKCarriesSessionFacts() throws {
        let frames = try SDLCapture.frames()
        let request = frames[0]
        #expect(request.header.frameType == .control && request.header.serviceType == .rpc)
        #expect(SDLControlFrameInfo(rawValue: request.header.frameInfo) == .startService)
        let asked = try BSONDocument(decoding: request.payload)
        #expect(asked == ["protocolVersion": .string("5.3.0")])
        #expect(try asked.encoded() == request.payload)

        let ack = frames[1]
        #expect(SDLControlFrameInfo(rawValue: ack.header.frameInfo) == .startServiceACK)
        #expect(ack.header.sessionID == 1)
        let document = try BSONDocument(decoding: ack.payload)
        #expect(document["hashId"] == .int32(65537))
        #expect(document["mtu"] == .int64(131_072))
        #expect(document["protocolVersion"] == .string("5.3.0"))
        #expect(document["secondaryTransports"] == .array([]))
        #expect(document["videoServiceTransports"] == .array([.int32(1)]))
        #expect(document.keys == ["videoServiceTransports", "hashId", "mtu", "secondaryTransports",
                                  "audioServiceTransports", "protocolVersion"])
        #expect(try document.encoded() == ack.payload)
        let info = SDLSessionInfo(ack: document, sessionID: ack.header.sessionID)
        #expect(info == SDLSessionInfo(protocolVersion: "5.3.0", hashID: 65537, mtu: 131_072, sessionID: 1))
    }

    @Test func rpcMessagesDecode() throws {
        let frames = try SDLCapture.frames()
        let register = try SDLRPCMessage(decoding: frames[2].payload)
        #expect(register.type == .request && register.functionID == .registerAppInterface && register.correlationID == 1)
        let request = try register.decodeParameters(SDLRegisterAppInterfaceRequest.self)
        #expect(request.appName == "NaviProbe" && request.appHMIType == ["NAVIGATION"] && request.appID == "navi_test_1")
        #expect(register.encoded() == frames[2].payload)

        let response = try SDLRPCMessage(decoding: frames[3].payload)
        #expect(response.type == .response && response.functionID == .registerAppInterface && response.correlationID == 1)
        #expect(try response.decodeParameters(SDLResponseStatus.self).success)
        #expect(response.bulkData.isEmpty)

        var statuses: [SDLHMIStatus] = []
        for frame in frames[4...8] {
            let message = try SDLRPCMessage(decoding: frame.payload)
            #expect(message.type == .notification && message.correlationID == 0xFFFF_FFFF)
            if message.functionID == .onHMIStatus { statuses.append(try message.decodeParameters(SDLHMIStatus.self)) }
        }
        #expect(statuses.map(\.hmiLevel) == [.none, .full])
        #expect(statuses.map(\.allowsVideo) == [false, true])

        let haptic = try SDLRPCMessage(decoding: frames[41].payload)
        #expect(haptic.functionID == .sendHapticData && haptic.correlationID == 2)
        #expect(try haptic.decodeParameters(SDLSendHapticDataRequest.self).regions
                == [HapticRegion(id: 1, rect: ScreenRect(x: 0, y: 0, width: 100, height: 50))])
        let hapticResponse = try SDLRPCMessage(decoding: frames[42].payload)
        #expect(hapticResponse.type == .response && hapticResponse.correlationID == 2)
    }

    @Test func touchEventsDecodeIntoTouchEvent() throws {
        let frames = try SDLCapture.frames()
        let events = try [frames[43], frames[45]].map { frame in
            let message = try SDLRPCMessage(decoding: frame.payload)
            #expect(message.functionID == .onTouchEvent)
            return try SDLTouchEvent.decode(json: Data(message.json))
        }
        #expect(events == [TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 1000, x: 120, y: 80)]),
                           TouchEvent(type: .end, touches: [.init(id: 0, timestamp: 1050, x: 120, y: 80)])])
    }

    @Test func videoServiceStartAndEnd() throws {
        let frames = try SDLCapture.frames()
        let start = frames[9]
        #expect(start.header.serviceType == .video && start.header.frameType == .control)
        let asked = try BSONDocument(decoding: start.payload)
        let parameters = SDLVideoServiceParameters(resolution: ImageResolution(width: 800, height: 480), format: .h264Raw)
        #expect(asked == parameters.startServiceDocument)
        #expect(try parameters.startServiceDocument.encoded() == start.payload)

        let ack = try BSONDocument(decoding: frames[10].payload)
        #expect(parameters.acknowledged(by: ack) == SDLVideoServiceParameters(
            resolution: ImageResolution(width: 800, height: 480), format: .h264Raw, mtu: 131_072,
            requestedResolution: ImageResolution(width: 800, height: 480)))
        #expect(try ack.encoded() == frames[10].payload)

        // 30 video frames, single frames on service 0x0B, the first with SPS.
        let video = frames[11...40]
        #expect(video.count == 30)
        #expect(video.allSatisfy { $0.header.serviceType == .video && $0.header.frameType == .single })
        #expect(NALUnit.types(in: video.first?.payload ?? []).first == 7)

        let end = frames[44]
        #expect(SDLControlFrameInfo(rawValue: end.header.frameInfo) == .endService)
        #expect(try BSONDocument(decoding: end.payload) == BSONDocument())
        #expect(SDLControlFrameInfo(rawValue: frames[46].header.frameInfo) == .endServiceACK)
        #expect(frames[46].payload.isEmpty)
    }

    // MARK: BSON

    @Test func bsonRoundTripsEveryType() throws {
        let document: BSONDocument = [
            "d": .double(-2.5), "s": .string("näv"), "doc": .document(["x": .int32(-7)]),
            "a": .array([.int64(1 << 40), .bool(true), .null]), "f": .bool(false),
        ]
        let bytes = try document.encoded()
        #expect(try BSONDocument(decoding: bytes) == document)
        #expect(try BSONDocument().encoded() == [5, 0, 0, 0, 0])
    }

    @Test func bsonRefusesMalformedInput() throws {
        let good = try (["k": .string("v")] as BSONDocument).encoded()
        #expect(throws: BSONError.truncated(offset: 0)) { try BSONDocument(decoding: good.prefix(3)) }
        #expect(throws: BSONError.badLength(offset: 0, declared: good.count)) { try BSONDocument(decoding: good.dropLast()) }
        var unknown = good
        unknown[4] = 0x07
        #expect(throws: BSONError.unknownType(0x07, offset: 4)) { try BSONDocument(decoding: unknown) }
        var unterminated = good
        unterminated[unterminated.count - 1] = 1
        #expect(throws: BSONError.self) { try BSONDocument(decoding: unterminated) }
        #expect(throws: BSONError.trailingBytes(count: 1)) { try BSONDocument(decoding: good + [0]) }
        #expect(throws: BSONError.documentTooLarge(size: good.count, limit: 8)) {
            try BSONDocument(decoding: good, limits: BSONLimits(maximumDocumentSize: 8))
        }
        var nested: BSONDocument = [:]
        for _ in 0..<20 { nested = ["n": .document(nested)] }
        #expect(throws: BSONError.nestingTooDeep(limit: 16)) { try BSONDocument(decoding: nested.encoded()) }
        #expect(throws: BSONError.keyContainsNUL("a\u{0}b")) { try (["a\u{0}b": .null] as BSONDocument).encoded() }
    }

    // MARK: Frames

    @Test func headerVersionsOneAndFive() throws {
        let v1 = SDLFrameHeader(version: 1, frameType: .control, serviceType: .rpc, frameInfo: 1, sessionID: 0,
                                dataSize: 0x20, messageID: 0)
        #expect(v1.encoded() == [0x10, 0x07, 0x01, 0x00, 0, 0, 0, 0x20])
        #expect(try SDLFrameHeader.decode(v1.encoded()) == v1)
        let v5 = SDLFrameHeader(version: 5, frameType: .consecutive, serviceType: .video, frameInfo: 9, sessionID: 3,
                                dataSize: 0x0102_0304, messageID: 0xA0B0_C0D0)
        #expect(v5.encoded() == [0x53, 0x0B, 9, 3, 1, 2, 3, 4, 0xA0, 0xB0, 0xC0, 0xD0])
        #expect(try SDLFrameHeader.decode(v5.encoded()) == v5)
        #expect(try SDLFrameHeader.decode(v5.encoded().prefix(11)) == nil)
        #expect(throws: SDLProtocolError.unsupportedVersion(0)) { try SDLFrameHeader.decode([0x01]) }
        #expect(throws: SDLProtocolError.unknownFrameType(4)) { try SDLFrameHeader.decode([0x54] + [UInt8](repeating: 0, count: 11)) }
    }

    @Test func longMessagesSplitAndReassemble() throws {
        var random = SplitMix64(seed: 5)
        let payload = (0..<(300 * 100 + 17)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let message = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: 77, payload: payload)
        let frames = message.frames(maximumFramePayload: 100)
        #expect(frames.count == 1 + 301)
        #expect(frames[0].header.frameType == .first && frames[0].payload == [0, 0, 0x75, 0x41, 0, 0, 1, 0x2D])
        let counters = frames.dropFirst().map(\.header.frameInfo)
        #expect(Array(counters.prefix(3)) == [1, 2, 3])
        #expect(counters[254] == 255 && counters[255] == 1, "counters roll over from 255 to 1")
        #expect(counters.last == 0)
        #expect(frames.allSatisfy { $0.header.messageID == 77 && $0.payload.count <= 100 })

        var parser = SDLFrameParser(maximumFramePayload: 100)
        parser.append(message.encoded(maximumFramePayload: 100))
        var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: 100)
        var completed: [SDLMessage] = []
        while let frame = try parser.nextFrame() {
            if let done = try assembler.add(frame) { completed.append(done) }
        }
        #expect(completed == [message])

        let small = SDLMessage(version: 5, serviceType: .rpc, sessionID: 1, messageID: 1, payload: [1, 2, 3])
        #expect(small.frames(maximumFramePayload: 100).map(\.header.frameType) == [.single])
    }

    @Test func assemblerRefusesOversizedAndOutOfOrderFrames() throws {
        func frame(_ type: SDLFrameType, info: UInt8 = 0, _ payload: [UInt8]) -> SDLFrame {
            SDLFrame(header: SDLFrameHeader(version: 5, frameType: type, serviceType: .rpc, frameInfo: info, sessionID: 1,
                                            dataSize: UInt32(payload.count), messageID: 9), payload: payload)
        }
        var assembler = SDLMessageAssembler(maximumMessageSize: 1000, maximumFramePayload: 100)
        #expect(throws: SDLProtocolError.messageTooLarge(size: 0xFFFF_FFFF, limit: 1000)) {
            try assembler.add(frame(.first, [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1]))
        }
        #expect(throws: SDLProtocolError.frameTooLarge(size: 101, limit: 100)) {
            try assembler.add(frame(.consecutive, [UInt8](repeating: 0, count: 101)))
        }
        #expect(throws: SDLProtocolError.self) { try assembler.add(frame(.consecutive, info: 1, [1])) }
        _ = try assembler.add(frame(.first, [0, 0, 0, 3, 0, 0, 0, 2]))
        #expect(throws: SDLProtocolError.self) { try assembler.add(frame(.consecutive, info: 2, [1])) }
        var parser = SDLFrameParser(maximumFramePayload: 100)
        parser.append([0x51, 0x07, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1])
        #expect(throws: SDLProtocolError.frameTooLarge(size: 0x7FFF_FFFF, limit: 100)) { try parser.nextFrame() }
    }

    @Test func rpcHeaderRoundTripAndErrors() throws {
        let message = SDLRPCMessage(type: .notification, functionID: .onAppCapabilityUpdated,
                                    correlationID: SDLRPCMessage.notificationCorrelationID, json: Array("{}".utf8), bulkData: [9])
        let bytes = message.encoded()
        #expect(Array(bytes.prefix(12)) == [0x20, 0x00, 0x80, 0x17, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 2])
        #expect(try SDLRPCMessage(decoding: bytes) == message)
        #expect(throws: SDLRPCError.truncated(size: 11)) { try SDLRPCMessage(decoding: Array(bytes.prefix(11))) }
        #expect(throws: SDLRPCError.unknownType(3)) { try SDLRPCMessage(decoding: [0x30] + bytes.dropFirst()) }
        var oversize = bytes
        oversize[11] = 4
        #expect(throws: SDLRPCError.jsonSizeBeyondPayload(jsonSize: 4, available: 3)) { try SDLRPCMessage(decoding: oversize) }
    }

    // MARK: Fuzz

    /// Mutates every captured frame 100 times (flipped bytes, truncations, insertions) and runs
    /// the whole decoding chain: every outcome is a value or a typed error, never a crash.
    @Test func fuzzedCaptureFramesGiveTypedErrors() throws {
        let lines = try SDLCapture.lines()
        var random = SplitMix64(seed: 0x5D1)
        var outcomes = [String: Int]()
        for round in 0..<100 {
            for line in lines {
                let mutated = Self.mutate(line.bytes, using: &random)
                var parser = SDLFrameParser(maximumFramePayload: 200_000)
                var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: 200_000)
                parser.append(mutated)
                do {
                    while let frame = try parser.nextFrame() {
                        guard let message = try assembler.add(frame) else { continue }
                        if message.controlInfo != nil {
                            _ = try BSONDocument(decoding: message.payload)
                        } else if message.serviceType == .rpc {
                            let rpc = try SDLRPCMessage(decoding: message.payload)
                            if rpc.functionID == .onTouchEvent { _ = try? SDLTouchEvent.decode(json: Data(rpc.json)) }
                            if rpc.functionID == .onHMIStatus { _ = try? rpc.decodeParameters(SDLHMIStatus.self) }
                        }
                    }
                    outcomes["ok", default: 0] += 1
                } catch let error as SDLProtocolError {
                    outcomes["protocol", default: 0] += 1
                    _ = error.description
                } catch let error as BSONError {
                    outcomes["bson", default: 0] += 1
                    _ = error.description
                } catch let error as SDLRPCError {
                    outcomes["rpc", default: 0] += 1
                    _ = error.description
                }
                _ = round
            }
        }
        #expect(outcomes.values.reduce(0, +) == 4700)
        #expect((outcomes["protocol"] ?? 0) > 100 && (outcomes["bson"] ?? 0) > 10, "\(outcomes)")
    }

    /// Mutates the BSON payloads of the capture's control frames 2000 times each way.
    @Test func fuzzedBSONGivesTypedErrors() throws {
        let frames = try SDLCapture.frames().filter { $0.header.frameType == .control && !$0.payload.isEmpty }
        var random = SplitMix64(seed: 0xB50)
        var failures = 0
        for index in 0..<4000 {
            let payload = frames[index % frames.count].payload
            let mutated = Self.mutate(payload, using: &random)
            do {
                let document = try BSONDocument(decoding: mutated)
                // Whatever decodes must encode again.
                _ = try document.encoded()
            } catch {
                failures += 1
            }
        }
        #expect(failures > 1000)
    }

    static func mutate(_ bytes: [UInt8], using random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        switch random.next() % 5 {
        case 0 where !bytes.isEmpty:
            for _ in 0..<(1 + Int(random.next() % 4)) {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
        case 1 where !bytes.isEmpty:
            bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
        case 2:
            let at = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
            bytes.insert(contentsOf: (0..<(1 + Int(random.next() % 8))).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
        case 3 where bytes.count > 12:
            // Length fields are where hostile input hurts: hit the header and BSON sizes.
            let at = Int(random.next() % 16) % bytes.count
            bytes[at] = [0x00, 0x7F, 0x80, 0xFF][Int(random.next() % 4)]
        default:
            if !bytes.isEmpty { bytes[Int(random.next() % UInt64(bytes.count))] ^= 0x01 }
        }
        return bytes
    }
}

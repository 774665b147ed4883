import Foundation
import Glibc
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

/// A head unit that answers only the RPC StartService, with whatever ACK the test gives, and
/// then does what the test says: the other end of the cable as an attacker would be.
struct ScriptedHeadUnit {
    let listener: SDLTCPListener
    let script: Task<Void, any Error>

    /// Listens on a free port; `receiveBufferSize` makes a head unit that does not read push
    /// back soon.
    init(ack: BSONDocument, receiveBufferSize: Int? = nil,
         then body: @escaping @Sendable (SDLTCPTransport) async throws -> Void) throws {
        let listener = try SDLTCPListener(receiveBufferSize: receiveBufferSize)
        self.listener = listener
        script = Task {
            let connection = try await listener.accept(timeout: hangGuard)
            defer { connection.close() }
            var parser = SDLFrameParser(maximumFramePayload: 131_072)
            var startService: SDLFrame?
            while startService == nil {
                parser.append(try await connection.read(maximumCount: 4096))
                startService = try parser.nextFrame()
            }
            let reply = SDLMessage(version: 5, serviceType: .rpc, sessionID: 1, messageID: startService?.header.messageID ?? 0,
                                   controlInfo: .startServiceACK, payload: try ack.encoded())
            try await connection.write(reply.encoded(maximumFramePayload: 1024))
            try await body(connection)
        }
    }

    var port: Int { listener.port }

    func close() {
        script.cancel()
        listener.close()
    }

    /// A connection to this head unit that never reconnects, over TCP with its writes counted.
    func connection(requestTimeout: Duration = hangGuard, sendBufferSize: Int? = nil,
                    writes: WriteGauge = WriteGauge()) -> SDLConnection {
        let port = self.port
        return SDLConnection(
            configuration: .init(appName: "x", appID: "x", videoCandidates: [], reconnect: .never, requestTimeout: requestTimeout),
            transport: { GaugedTransport(SDLTCPTransport(host: "127.0.0.1", port: port, sendBufferSize: sendBufferSize), writes) })
    }
}

/// How many writes a transport has started and not finished, and the most at once.
final class WriteGauge: Sendable {
    private let state = LockedState((inFlight: 0, peak: 0))
    func begin() { state.withLock { $0.inFlight += 1; $0.peak = max($0.peak, $0.inFlight) } }
    func end() { state.withLock { $0.inFlight -= 1 } }
    var peak: Int { state.withLock { $0.peak } }
}

/// The real TCP transport with every write counted on a gauge.
final class GaugedTransport: SDLTransport {
    let base: SDLTCPTransport
    let gauge: WriteGauge
    init(_ base: SDLTCPTransport, _ gauge: WriteGauge) {
        self.base = base
        self.gauge = gauge
    }
    func connect() async throws(SDLTransportError) { try await base.connect() }
    func read(maximumCount: Int) async throws(SDLTransportError) -> [UInt8] { try await base.read(maximumCount: maximumCount) }
    func write(_ bytes: [UInt8]) async throws(SDLTransportError) {
        gauge.begin()
        defer { gauge.end() }
        try await base.write(bytes)
    }
    func close() { base.close() }
}

/// Bytes of one frame with the given header fields and payload.
func frameBytes(_ type: SDLFrameType, service: SDLServiceType = .rpc, info: UInt8 = 0, messageID: UInt32,
                dataSize: UInt32? = nil, payload: [UInt8]) -> [UInt8] {
    SDLFrameHeader(version: 5, frameType: type, serviceType: service, frameInfo: info, sessionID: 1,
                   dataSize: dataSize ?? UInt32(payload.count), messageID: messageID).encoded() + payload
}

/// The process's resident memory in bytes (/proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The head unit is untrusted input: numbers off the wire are clamped before any arithmetic,
/// frame sizes are ours, and a head unit that floods the app cannot grow its memory.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SDLHostileHeadUnitTests {
    static let hugeMTU: BSONDocument = ["hashId": .int32(7), "mtu": .int64(1 << 62), "protocolVersion": .string("5.4.1")]

    @Test func wireNumbersAreClampedWhenRead() {
        #expect(SDLSessionInfo(ack: Self.hugeMTU, sessionID: 1).mtu == 131_084)
        #expect(SDLSessionInfo(ack: ["mtu": .int64(-5)], sessionID: 1).mtu == 64)
        #expect(SDLSessionInfo(ack: ["mtu": .int64(1500)], sessionID: 1).mtu == 1500)
        let asked = SDLVideoServiceParameters(resolution: ImageResolution(width: 800, height: 480), format: .h264Raw)
        let granted = asked.acknowledged(by: ["mtu": .int64(.max), "width": .int64(1 << 40), "height": .int32(480)])
        #expect(granted.mtu == 131_084)
        #expect(granted.resolution == asked.resolution, "a size outside 16...8192 is ignored; the asked one stands")
    }

    @Test func aFirstFrameNeverOverflowsWhateverTheLimits() throws {
        // The product of the announced frame count and the frame limit once trapped here.
        var assembler = SDLMessageAssembler(maximumMessageSize: 4 << 20, maximumFramePayload: 1 << 62)
        let first: [UInt8] = [0, 0, 0, 100, 0, 0, 0, 4]
        func frame(_ type: SDLFrameType, info: UInt8, _ payload: [UInt8]) -> SDLFrame {
            SDLFrame(header: SDLFrameHeader(version: 5, frameType: type, serviceType: .rpc, frameInfo: info, sessionID: 1,
                                            dataSize: UInt32(payload.count), messageID: 9), payload: payload)
        }
        #expect(try assembler.add(frame(.first, info: 0, first)) == nil)
        for counter in 1...3 { #expect(try assembler.add(frame(.consecutive, info: UInt8(counter), [UInt8](repeating: 1, count: 25))) == nil) }
        let message = try #require(try assembler.add(frame(.consecutive, info: 0, [UInt8](repeating: 1, count: 25))))
        #expect(message.payload.count == 100)
    }

    @Test func aHugeMTUNeitherTrapsNorLetsTheHeadUnitSizeOurBuffers() async throws {
        let written = WrittenBytes()
        let headUnit = try ScriptedHeadUnit(ack: Self.hugeMTU) { connection in
            // A multi-frame message whose frame count times the claimed MTU overflows 64 bits...
            try await connection.write(frameBytes(.first, messageID: 2, payload: [0, 0, 0, 100, 0, 0, 0, 4]))
            // ...then a frame announcing 4 GiB, followed by as much as the app will take.
            try await connection.write(frameBytes(.single, messageID: 3, dataSize: 0xFFFF_FFF0, payload: []))
            let chunk = [UInt8](repeating: 0x55, count: 1 << 20)
            for _ in 0..<200 {
                do {
                    try await connection.write(chunk)
                } catch {
                    return
                }
                written.add(chunk.count)
            }
        }
        defer { headUnit.close() }
        let connection = headUnit.connection()
        // The limit is the v3 default or the clamped MTU, depending on whether the bytes came
        // before or after the ACK was applied; either way ours, never the 2^62 claimed.
        let error = await #expect(throws: SDLConnectionError.self) { try await connection.start() }
        guard case .protocolViolation(.frameTooLarge(size: 0xFFFF_FFF0, let limit)) = error else {
            Issue.record("expected the 4 GiB frame to be refused, got \(String(describing: error))")
            return
        }
        #expect(limit <= 131_084)
        _ = await headUnit.script.result
        // The app closed the connection at the header: only what the sockets buffer got through.
        #expect(written.count < 32 << 20, "\(written.count) bytes were taken from a head unit announcing 4 GiB")
        await connection.stop()
    }

    @Test func aHeartbeatFloodFromAHeadUnitThatDoesNotReadIsAnsweredInBoundedMemory() async throws {
        let heartbeats = 100_000
        let flooded = WrittenBytes()
        let headUnit = try ScriptedHeadUnit(ack: ["mtu": .int64(131_084), "protocolVersion": .string("5.4.1")],
                                            receiveBufferSize: 4096) { connection in
            var bytes: [UInt8] = []
            for index in 0..<heartbeats {
                bytes += frameBytes(.control, service: .control, info: SDLControlFrameInfo.heartbeat.rawValue,
                                    messageID: UInt32(index + 10), payload: [])
            }
            // The head unit reads nothing from here on: every answer the app writes stays queued.
            try await connection.write(bytes)
            flooded.add(bytes.count)
            try await Task.sleep(for: .seconds(30))
        }
        defer { headUnit.close() }
        let writes = WriteGauge()
        let connection = headUnit.connection(requestTimeout: hangGuard, sendBufferSize: 4096, writes: writes)
        let residentBefore = residentBytes()
        let starting = Task { try await connection.start() }
        // The flood is on the app's side of the socket once the head unit's write returned;
        // every heartbeat is handled once each has been answered or coalesced into an answer.
        #expect(await eventually { flooded.count > 0 })
        let handledAll = await eventually {
            let statistics = await connection.outgoingQueueStatistics
            return statistics.queuedMessages + statistics.coalescedHeartbeatACKs >= heartbeats
        }
        let growth = residentBytes() - residentBefore
        let statistics = await connection.outgoingQueueStatistics
        print("heartbeat flood: \(heartbeats) heartbeats, RSS growth \(growth / 1024) KiB, "
              + "writes in flight at most \(writes.peak), \(statistics)")
        #expect(handledAll, "every heartbeat was handled: \(statistics)")
        #expect(statistics.peakMessages <= 3, "at most one answer waits besides the registration request")
        // One writer per transport: what the head unit does not read waits in the bounded
        // queue, not in a write per heartbeat (each holding a task, a closure and its bytes).
        #expect(writes.peak <= 2, "\(writes.peak) writes were in flight at once")
        starting.cancel()
        await connection.stop()
        _ = await starting.result
    }
}

extension SDLHostileHeadUnitTests {
    /// Request timers and the old transport's reader and writer end with `stop()`, so a stopped
    /// connection is freed at once instead of living on until its last timeout.
    @Test func aStoppedConnectionIsReleasedAtOnce() async throws {
        let simulator = HeadUnitSimulator(configuration: SDLLinkTests.simulatorConfiguration())
        let port = try await simulator.start()
        var connection: SDLConnection? = SDLConnection(
            configuration: .init(appName: "x", appID: "x", videoCandidates: [], reconnect: .never, requestTimeout: hangGuard),
            transport: { SDLTCPTransport(host: "127.0.0.1", port: port) })
        weak let released = connection
        try await connection?.start()
        await connection?.stop()
        connection = nil
        #expect(released == nil, "something of the stopped connection still holds it")
        await simulator.stop()
    }

    /// The simulator's side faces an app it cannot trust either.
    @Test func aFragmentedNALUnitThatNeverEndsIsDroppedAtItsBound() {
        func framed(_ payload: [UInt8]) -> [UInt8] {
            let packet: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1] + payload
            return [UInt8(packet.count >> 8), UInt8(packet.count & 0xFF)] + packet
        }
        var depacketizer = RTPStreamDepacketizer()
        let middle = framed([0x7C, 0x05] + [UInt8](repeating: 0xAB, count: 1400))
        var output = depacketizer.append(framed([0x7C, 0x85] + [UInt8](repeating: 0xAB, count: 1400)))
        let fragments = RTPStreamDepacketizer.maximumFragmentedUnitSize / 1400 + 2
        for _ in 0..<fragments { output += depacketizer.append(middle) }
        output += depacketizer.append(framed([0x7C, 0x45, 1, 2, 3]))
        #expect(output.count == 0, "nothing of the overlong unit comes out")
        #expect(depacketizer.malformedPackets >= 1)
        // The stream goes on: the next single NAL unit passes.
        #expect(depacketizer.append(framed([0x65, 1, 2, 3])) == [0, 0, 0, 1, 0x65, 1, 2, 3])
    }
}

/// A byte count shared between a test and its head unit's task.
final class WrittenBytes: Sendable {
    private let total = LockedState(0)
    func add(_ count: Int) { total.withLock { $0 += count } }
    var count: Int { total.withLock { $0 } }
}

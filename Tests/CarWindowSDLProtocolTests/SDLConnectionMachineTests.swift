import Foundation
import Testing
@testable import CarWindowSDLProtocol

/// The connection's protocol machine on its own: bytes, timer firings and commands in, actions
/// out, with no socket, task or clock.
struct SDLConnectionMachineTests {
    typealias Machine = SDLConnectionMachine

    /// A machine whose RPC service is open at `mtu`, session 7, protocol 5.
    static func opened(mtu: Int64 = 1_500) throws -> Machine {
        var machine = Machine(maximumIncomingMessageSize: 1 << 20)
        let (exchange, _) = machine.startControl(.startService, on: .rpc, payload: [], timeout: .seconds(5))
        let ack = try headUnit(.control, .startServiceACK, on: .rpc,
                               (["mtu": .int64(mtu), "hashId": .int32(9), "protocolVersion": .string("5.4.0")] as BSONDocument).encoded())
        let actions = machine.receive(ack)
        guard case .answered(exchange, .control(let reply)) = try #require(actions.last) else {
            Issue.record("the RPC StartServiceACK did not answer its exchange: \(actions)")
            return machine
        }
        _ = try machine.rpcServiceStarted(ack: reply)
        return machine
    }

    /// A message from the head unit on session 7, as bytes.
    static func headUnit(_ service: SDLServiceType, _ info: SDLControlFrameInfo? = nil, on serviceType: SDLServiceType? = nil,
                         _ payload: [UInt8] = [], messageID: UInt32 = 1) throws -> [UInt8] {
        SDLMessage(version: 5, serviceType: serviceType ?? service, sessionID: 7, messageID: messageID, controlInfo: info,
                   payload: payload).encoded(maximumFramePayload: 1_488)
    }

    static func notification(_ function: SDLFunctionID, _ json: String) throws -> [UInt8] {
        try headUnit(.rpc, _: nil, SDLRPCMessage(type: .notification, functionID: function, correlationID: 0xFFFF_FFFF,
                                                  json: Array(json.utf8)).encoded())
    }

    static func writes(_ actions: [Machine.Action]) -> [SDLMessage] {
        actions.compactMap {
            guard case .write(let bytes, _, _) = $0 else { return nil }
            var parser = SDLFrameParser(maximumFramePayload: 1 << 20)
            var assembler = SDLMessageAssembler(maximumMessageSize: 1 << 20, maximumFramePayload: 1 << 20)
            parser.append(bytes)
            return (try? parser.nextFrame()).flatMap { $0 }.flatMap { try? assembler.add($0) }
        }
    }

    @Test func theRPCServiceACKSetsVersionSessionAndClampedMTU() throws {
        let machine = try Self.opened(mtu: 1 << 40)
        #expect(machine.protocolVersion == 5)
        #expect(machine.sessionID == 7)
        #expect(machine.sessionMTU == SDLWireLimits.clampedMTU(Int.max))
        // A head unit cannot raise the frame limit past what this side accepts.
        #expect(machine.incomingFramePayloadLimits.parser <= SDLWireLimits.clampedMTU(Int.max))
        #expect(machine.incomingFramePayloadLimits.assembler == machine.incomingFramePayloadLimits.parser)
    }

    @Test func aHeartbeatIsAnsweredOnItsOwnLane() throws {
        var machine = try Self.opened()
        let actions = machine.receive(try Self.headUnit(.control, .heartbeat, messageID: 42))
        guard case .write(_, .queued(isHeartbeatACK: true), for: nil) = try #require(actions.first) else {
            Issue.record("expected a heartbeat ACK write, got \(actions)")
            return
        }
        let ack = try #require(Self.writes(actions).first)
        #expect(ack.controlInfo == .heartbeatACK)
        #expect(ack.messageID == 42)
    }

    @Test func anAnswerStopsItsTimerAndALateFiringDoesNothing() throws {
        var machine = try Self.opened()
        let (exchange, started) = machine.startControl(.startService, on: .video, payload: [], timeout: .seconds(3))
        guard case .armTimer(exchange, .seconds(3)) = try #require(started.first) else {
            Issue.record("expected the exchange's timer first, got \(started)")
            return
        }
        let actions = machine.receive(try Self.headUnit(.control, .startServiceNAK, on: .video))
        #expect(actions.count == 2)
        guard case .cancelTimer(exchange) = actions[0], case .answered(exchange, .control(let nak)) = actions[1] else {
            Issue.record("expected the timer cancelled and the NAK answered, got \(actions)")
            return
        }
        #expect(nak.controlInfo == .startServiceNAK)
        #expect(machine.timerFired(exchange).isEmpty)
    }

    @Test func anUnansweredExchangeTimesOutOnce() throws {
        var machine = try Self.opened()
        let (exchange, _) = try machine.startRequest(.registerAppInterface, parameters: ["appName": "x"], encrypted: false,
                                                     timeout: .seconds(1))
        let fired = machine.timerFired(exchange)
        guard case .timedOut(exchange, let what) = try #require(fired.first) else {
            Issue.record("expected a timeout, got \(fired)")
            return
        }
        #expect(what.contains("request 1"))
        #expect(machine.timerFired(exchange).isEmpty)
        // Its answer, coming late, answers nobody.
        let late = try Self.headUnit(.rpc, nil, SDLRPCMessage(type: .response, functionID: .registerAppInterface, correlationID: 1,
                                                              json: Array(#"{"success":true}"#.utf8)).encoded())
        #expect(machine.receive(late).allSatisfy { if case .answered = $0 { false } else { true } })
    }

    @Test func aNewStartSupersedesTheOneWaitingOnTheSameService() throws {
        var machine = try Self.opened()
        let (first, _) = machine.startControl(.startService, on: .video, payload: [], timeout: .seconds(5))
        let (second, actions) = machine.startControl(.startService, on: .video, payload: [], timeout: .seconds(5))
        #expect(actions.contains { if case .timedOut(first, let what) = $0 { what.contains("superseded") } else { false } })
        let answer = machine.receive(try Self.headUnit(.control, .startServiceACK, on: .video))
        #expect(answer.contains { if case .answered(second, _) = $0 { true } else { false } })
        // An EndService exchange on the same service is a different exchange: not superseded.
        let (_, end) = machine.startControl(.endService, on: .video, payload: [], timeout: .seconds(5))
        #expect(!end.contains { if case .timedOut = $0 { true } else { false } })
    }

    @Test func theHeadUnitEndingTheRPCServiceLosesTheConnectionAndNothingFollows() throws {
        var machine = try Self.opened()
        var bytes = try Self.headUnit(.control, .endService, on: .rpc)
        bytes += try Self.headUnit(.control, .heartbeat)
        let actions = machine.receive(bytes)
        #expect(actions.count == 1)
        guard case .lost(.closedByHeadUnit) = try #require(actions.first) else {
            Issue.record("expected the loss, got \(actions)")
            return
        }
        #expect(machine.receive(try Self.headUnit(.control, .heartbeat)).isEmpty)
        machine.reset(maximumIncomingMessageSize: 1 << 20)
        #expect(!machine.receive(try Self.headUnit(.control, .heartbeat)).isEmpty)
    }

    @Test func brokenFramingIsAViolation() throws {
        var machine = try Self.opened()
        let actions = machine.receive([0x50, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xFF, count: 12))
        guard case .lost(.protocolViolation) = try #require(actions.last) else {
            Issue.record("expected a violation, got \(actions)")
            return
        }
    }

    @Test func theHeadUnitEndingVideoIsAcknowledged() throws {
        var machine = try Self.opened()
        let actions = machine.receive(try Self.headUnit(.control, .endService, on: .video, messageID: 5))
        guard case .serviceEndedByHeadUnit(.video) = try #require(actions.first) else {
            Issue.record("expected the service ended, got \(actions)")
            return
        }
        let ack = try #require(Self.writes(actions).first)
        #expect(ack.controlInfo == .endServiceACK)
        #expect(ack.serviceType == .video)
        #expect(ack.messageID == 5)
    }

    @Test func nothingThatMustBeEncryptedLeavesInTheClear() throws {
        var machine = try Self.opened()
        do {
            _ = try machine.startRequest(.sendHapticData, parameters: ["hapticRectData": [Int]()], encrypted: true, timeout: .seconds(1))
            Issue.record("an encrypted request went out on an unprotected RPC service")
        } catch {
            #expect(error == .notProtected(.rpc))
        }
        do {
            _ = try machine.notification(.onAppCapabilityUpdated, parameters: ["x": 1], encrypted: true)
            Issue.record("an encrypted notification went out on an unprotected RPC service")
        } catch {
            #expect(error == .notProtected(.rpc))
        }
        let video = try machine.dataMessage(.video, payload: [1, 2, 3])
        #expect(!video.isSealed)
    }

    @Test func anEncryptedFrameOnAnUnprotectedServiceIsRefusedAndReported() throws {
        var machine = try Self.opened()
        let header = SDLFrameHeader(version: 5, isEncrypted: true, frameType: .single, serviceType: .rpc, frameInfo: 0,
                                    sessionID: 7, dataSize: 4, messageID: 3)
        let actions = machine.receive(header.encoded() + [1, 2, 3, 4])
        #expect(actions.contains { if case .log(.warning, let text) = $0 { text.contains("not protected") } else { false } })
        let told = try #require(Self.writes(actions).first)
        #expect(told.serviceType == .control)
        #expect(try SDLSecurityQuery(decoding: told.payload).errorCode == .serviceNotProtected)
        // The same again is reported at debug level only.
        let again = machine.receive(header.encoded() + [1, 2, 3, 4])
        #expect(again.contains { if case .log(.debug, _) = $0 { true } else { false } })
    }

    @Test func notificationsAreReadIntoWhatTheySay() throws {
        var machine = try Self.opened()
        let main = machine.receive(try Self.notification(.onHMIStatus, #"{"hmiLevel":"FULL","videoStreamingState":"STREAMABLE"}"#))
        guard case .notice(.hmiStatus(let status)) = try #require(main.first) else {
            Issue.record("expected an HMI status, got \(main)")
            return
        }
        #expect(status.hmiLevel == .full)
        // Another window's status is not the app's.
        #expect(machine.receive(try Self.notification(.onHMIStatus, #"{"hmiLevel":"NONE","windowID":1}"#)).isEmpty)
        let distraction = machine.receive(try Self.notification(.onDriverDistraction, #"{"state":"DD_ON"}"#))
        guard case .notice(.driverDistraction(true)) = try #require(distraction.first) else {
            Issue.record("expected driver distraction, got \(distraction)")
            return
        }
        let unreadable = machine.receive(try Self.notification(.onHMIStatus, #"{"hmiLevel":7}"#))
        #expect(unreadable.count == 1)
        guard case .log(.warning, _) = try #require(unreadable.first) else {
            Issue.record("expected a warning, got \(unreadable)")
            return
        }
    }
}

/// One piece of state the head unit holds: wanted, held, refused.
struct SDLHeldStateTests {
    @Test func aWantedValueIsSentUntilHeld() throws {
        var state = SDLHeldState<Int>()
        #expect(!state.needsSending)
        state.want(3)
        let ticket = try #require(state.ticket())
        #expect(ticket.value == 3)
        let taken = state.settle(ticket, accepted: true)
        #expect(taken)
        #expect(state.held == 3)
        #expect(!state.needsSending)
        state.want(4)
        #expect(state.needsSending)
    }

    @Test func anAnswerToASendBeforeAForgetIsNotTaken() throws {
        var state = SDLHeldState<Int>()
        state.want(3)
        let ticket = try #require(state.ticket())
        state.forget()
        let taken = state.settle(ticket, accepted: true)
        #expect(!taken)
        #expect(state.held == nil)
        #expect(state.needsSending)
    }

    @Test func aRefusalHoldsUntilForgivenOrAnotherValueIsWanted() throws {
        var state = SDLHeldState<Int>()
        state.want(3)
        state.settle(try #require(state.ticket()), accepted: false)
        #expect(state.isRefused)
        #expect(state.ticket() == nil)
        state.forgiveRefusal()
        #expect(state.needsSending)
        state.settle(try #require(state.ticket()), accepted: false)
        state.want(5)
        #expect(state.needsSending)
        // A refusal of a value no longer wanted does not refuse the new one.
        let old = state.ticket(sending: 3)
        state.settle(old, accepted: false)
        #expect(state.needsSending)
    }
}

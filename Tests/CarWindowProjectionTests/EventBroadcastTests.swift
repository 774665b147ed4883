import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowTestSupport

/// Events handed to several consumers, each with its own bounded buffer.
struct EventBroadcastTests {
    static func drain(_ stream: AsyncStream<Int>) async -> [Int] {
        var all: [Int] = []
        for await value in stream { all.append(value) }
        return all
    }

    @Test func everyConsumerGetsEveryEventFromItsSubscriptionOn() async {
        let broadcast = EventBroadcast<Int>(bufferLimit: 100)
        broadcast.yield(0)
        let first = broadcast.subscribe(), second = broadcast.subscribe()
        for value in 1...10 { broadcast.yield(value) }
        let third = broadcast.subscribe()
        broadcast.yield(11)
        broadcast.finish()
        #expect(await Self.drain(first) == Array(1...11))
        #expect(await Self.drain(second) == Array(1...11))
        #expect(await Self.drain(third) == [11])
    }

    @Test func aConsumerThatDoesNotReadKeepsOnlyTheNewestEvents() async {
        let broadcast = EventBroadcast<Int>(bufferLimit: 4)
        let slow = broadcast.subscribe()
        for value in 1...10 { broadcast.yield(value) }
        broadcast.finish()
        #expect(await Self.drain(slow) == [7, 8, 9, 10])
    }

    @Test func aStreamMadeAfterFinishEndsAtOnceAndDroppedStreamsAreForgotten() async {
        let broadcast = EventBroadcast<Int>(bufferLimit: 4)
        do {
            let dropped = broadcast.subscribe()
            #expect(broadcast.consumerCount == 1)
            _ = dropped
        }
        #expect(broadcast.consumerCount == 0, "a stream nobody holds is no consumer")
        let kept = broadcast.subscribe()
        broadcast.finish()
        #expect(broadcast.consumerCount == 0)
        broadcast.yield(1)
        #expect(await Self.drain(kept).isEmpty)
        #expect(await Self.drain(broadcast.subscribe()).isEmpty)
    }
}

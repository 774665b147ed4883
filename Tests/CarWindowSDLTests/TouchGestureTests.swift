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

extension GestureRecognizer {
    /// Reads an `OnTouchEvent`'s JSON parameters as ``SDLConnection`` does and handles the event;
    /// JSON that does not decode is refused like any other invalid event.
    fileprivate mutating func handle(json: Data) -> [Gesture] {
        do {
            return handle(try SDLTouchEvent.decode(json: json))
        } catch {
            reject(error)
            return []
        }
    }
}

/// Feeds a recorded sequence (a JSON array of `OnTouchEvent` parameter objects, as a head unit
/// sends them) one payload at a time and returns what each payload produced.
private func replay(_ recording: String, into recognizer: inout GestureRecognizer) -> [[Gesture]] {
    guard let payloads = try? JSONSerialization.jsonObject(with: Data(recording.utf8)) as? [Any] else {
        Issue.record("the recording is not a JSON array")
        return []
    }
    return payloads.map { payload in
        guard let data = try? JSONSerialization.data(withJSONObject: payload) else {
            Issue.record("payload \(payload) does not serialise")
            return []
        }
        return recognizer.handle(json: data)
    }
}

/// Every expected number below follows from the recorded coordinates by hand: distances are
/// Euclidean, a pinch scale is the distance between the fingers over the previous distance, and
/// a double tap's point is the midpoint of the two lift points.
@Suite("Touch gestures")
struct TouchGestureTests {
    @Test("A single tap waits for the double-tap window, then comes at its lift point")
    func singleTap() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[1000],"c":[{"x":100,"y":200}]}]},
             {"type":"END","event":[{"id":0,"ts":[1120],"c":[{"x":102,"y":201}]}]}]
            """, into: &recognizer)
        #expect(output.joined().isEmpty)
        #expect(recognizer.hasPendingTap)
        // 1120 + 300 = 1420: still inside the 400 ms window.
        #expect(recognizer.frameTick(elapsedMilliseconds: 300) == [])
        // 1120 + 401: the window has passed.
        #expect(recognizer.frameTick(elapsedMilliseconds: 101) == [.tap(at: SIMD2(102, 201))])
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("With double taps off, a tap comes on its END")
    func immediateTap() {
        var recognizer = GestureRecognizer(configuration: .init(isDoubleTapEnabled: false))
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":3,"ts":[0],"c":[{"x":10,"y":20}]}]},
             {"type":"END","event":[{"id":3,"ts":[90],"c":[{"x":10,"y":20}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.tap(at: SIMD2(10, 20))]])
    }

    @Test("A long press is not a tap")
    func longPress() {
        var recognizer = GestureRecognizer()
        _ = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":10,"y":20}]}]},
             {"type":"END","event":[{"id":0,"ts":[401],"c":[{"x":10,"y":20}]}]}]
            """, into: &recognizer)
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("Two quick taps close together are one double tap at their midpoint")
    func doubleTap() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":200}]}]},
             {"type":"END","event":[{"id":0,"ts":[100],"c":[{"x":100,"y":200}]}]},
             {"type":"BEGIN","event":[{"id":0,"ts":[350],"c":[{"x":110,"y":210}]}]},
             {"type":"END","event":[{"id":0,"ts":[500],"c":[{"x":110,"y":210}]}]}]
            """, into: &recognizer)
        #expect(output.flatMap { $0 } == [.doubleTap(at: SIMD2(105, 205))])
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("A second tap that ends 401 ms after the first makes two single taps")
    func slowSecondTap() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":200}]}]},
             {"type":"END","event":[{"id":0,"ts":[100],"c":[{"x":100,"y":200}]}]},
             {"type":"BEGIN","event":[{"id":0,"ts":[450],"c":[{"x":100,"y":200}]}]},
             {"type":"END","event":[{"id":0,"ts":[501],"c":[{"x":101,"y":200}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [], [], [.tap(at: SIMD2(100, 200))]])
        #expect(recognizer.frameTick(elapsedMilliseconds: 401) == [.tap(at: SIMD2(101, 200))])
    }

    @Test("A second tap more than 50 px away makes two single taps")
    func farSecondTap() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":200}]}]},
             {"type":"END","event":[{"id":0,"ts":[100],"c":[{"x":100,"y":200}]}]},
             {"type":"BEGIN","event":[{"id":1,"ts":[200],"c":[{"x":140,"y":231}]}]},
             {"type":"END","event":[{"id":1,"ts":[250],"c":[{"x":140,"y":231}]}]}]
            """, into: &recognizer)
        // Distance sqrt(40² + 31²) = 50.6 > 50.
        #expect(output.flatMap { $0 } == [.tap(at: SIMD2(100, 200))])
        #expect(recognizer.frameTick(elapsedMilliseconds: 500) == [.tap(at: SIMD2(140, 231))])
    }

    @Test("The pan threshold is 8 px: 7.9 px stays a tap, 8.1 px is a pan")
    func panThreshold() {
        var below = GestureRecognizer()
        let stayed = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[30],"c":[{"x":107.9,"y":100}]}]},
             {"type":"END","event":[{"id":0,"ts":[60],"c":[{"x":107.9,"y":100}]}]}]
            """, into: &below)
        #expect(stayed.joined().isEmpty)
        #expect(below.frameTick(elapsedMilliseconds: 500) == [.tap(at: SIMD2(107.9, 100))])

        var above = GestureRecognizer()
        let panned = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[30],"c":[{"x":100,"y":108.1}]}]}]
            """, into: &above)
        #expect(panned == [[], [.panBegan(at: SIMD2(100, 100), translation: SIMD2(0, 108.1 - 100))]])
    }

    @Test("A quick tap that moves 20 px is a pan and never a tap")
    func tapBecomesPan() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[40],"c":[{"x":120,"y":100}]}]},
             {"type":"END","event":[{"id":0,"ts":[80],"c":[{"x":120,"y":100}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.panBegan(at: SIMD2(100, 100), translation: SIMD2(20, 0))],
                           [.panEnded(translation: .zero)]])
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("Five MOVEs between frame ticks make one panChanged with their summed translation")
    func panCoalescing() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[16],"c":[{"x":110,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[20],"c":[{"x":112,"y":101}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[24],"c":[{"x":115,"y":103}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[28],"c":[{"x":120,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[32],"c":[{"x":121,"y":98}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[36],"c":[{"x":130,"y":95}]}]}]
            """, into: &recognizer)
        #expect(output[1] == [.panBegan(at: SIMD2(100, 100), translation: SIMD2(10, 0))])
        #expect(output.dropFirst(2).joined().isEmpty)
        // From (110, 100) to (130, 95).
        #expect(recognizer.frameTick() == [.panChanged(translation: SIMD2(20, -5))])
        #expect(recognizer.frameTick() == [])
        let end = replay(#"[{"type":"END","event":[{"id":0,"ts":[40],"c":[{"x":131,"y":95}]}]}]"#, into: &recognizer)
        // The finger still moves when it lifts: (100,100) at 0 ms to (131,95) at 40 ms is a fling.
        #expect(end == [[.panEnded(translation: SIMD2(1, 0)), .fling(velocity: SIMD2(775, -125))]])
    }

    @Test("Without coalescing every MOVE reports its own panChanged")
    func panWithoutCoalescing() {
        var recognizer = GestureRecognizer(configuration: .init(coalescesUpdates: false))
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[16],"c":[{"x":10,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[32],"c":[{"x":13,"y":4}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.panBegan(at: .zero, translation: SIMD2(10, 0))],
                           [.panChanged(translation: SIMD2(3, 4))]])
    }

    @Test("A pinch scales by distance over previous distance around the fingers' midpoint")
    func pinch() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":100,"y":100}]}]},
             {"type":"BEGIN","event":[{"id":1,"ts":[10],"c":[{"x":200,"y":100}]}]},
             {"type":"MOVE","event":[{"id":1,"ts":[30],"c":[{"x":300,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[40],"c":[{"x":50,"y":100}]},{"id":1,"ts":[40],"c":[{"x":300,"y":100}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.pinchBegan(center: SIMD2(150, 100))], [], []])
        // 100 -> 200 -> 250 px apart: 2 x 1.25; the midpoint of (50,100) and (300,100).
        #expect(recognizer.frameTick() == [.pinchChanged(scale: 2.5, center: SIMD2(175, 100))])
        let rest = replay("""
            [{"type":"MOVE","event":[{"id":1,"ts":[50],"c":[{"x":175,"y":100}]}]},
             {"type":"END","event":[{"id":1,"ts":[60],"c":[{"x":175,"y":100}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[70],"c":[{"x":20,"y":100}]}]},
             {"type":"END","event":[{"id":0,"ts":[80],"c":[{"x":20,"y":100}]}]}]
            """, into: &recognizer)
        // 250 -> 125 px apart, not yet reported, so the ending carries it; the lone finger is inert.
        #expect(rest == [[], [.pinchEnded(scale: 0.5, center: SIMD2(112.5, 100))], [], []])
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("A second finger during a pan ends the pan and begins a pinch")
    func panThenPinch() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[10],"c":[{"x":20,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[20],"c":[{"x":30,"y":0}]}]},
             {"type":"BEGIN","event":[{"id":1,"ts":[30],"c":[{"x":30,"y":40}]}]}]
            """, into: &recognizer)
        #expect(output.flatMap { $0 } == [.panBegan(at: .zero, translation: SIMD2(20, 0)),
                                          .panEnded(translation: SIMD2(10, 0)),
                                          .pinchBegan(center: SIMD2(30, 20))])
    }

    @Test("CANCEL ends a pan and drops what was not reported")
    func cancelDuringPan() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[10],"c":[{"x":20,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[20],"c":[{"x":30,"y":0}]}]},
             {"type":"CANCEL","event":[{"id":0,"ts":[30],"c":[{"x":30,"y":0}]}]},
             {"type":"END","event":[{"id":0,"ts":[40],"c":[{"x":30,"y":0}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.panBegan(at: .zero, translation: SIMD2(20, 0))], [], [.panCancelled], []])
        #expect(recognizer.frameTick() == [])
    }

    @Test("CANCEL ends a pinch")
    func cancelDuringPinch() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]},{"id":1,"ts":[0],"c":[{"x":100,"y":0}]}]},
             {"type":"MOVE","event":[{"id":1,"ts":[10],"c":[{"x":150,"y":0}]}]},
             {"type":"CANCEL","event":[]}]
            """, into: &recognizer)
        #expect(output == [[.pinchBegan(center: SIMD2(50, 0))], [], [.pinchCancelled]])
        #expect(recognizer.frameTick() == [])
    }

    @Test("CANCEL discards a tap waiting for the double-tap window")
    func cancelDiscardsPendingTap() {
        var recognizer = GestureRecognizer()
        _ = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":5,"y":5}]}]},
             {"type":"END","event":[{"id":0,"ts":[50],"c":[{"x":5,"y":5}]}]},
             {"type":"CANCEL","event":[{"id":0,"ts":[100],"c":[{"x":5,"y":5}]}]}]
            """, into: &recognizer)
        #expect(!recognizer.hasPendingTap)
        #expect(recognizer.frameTick(elapsedMilliseconds: 1000) == [])
    }

    @Test("A third finger is ignored and does not disturb the pinch")
    func threeFingers() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"BEGIN","event":[{"id":1,"ts":[5],"c":[{"x":100,"y":0}]}]},
             {"type":"BEGIN","event":[{"id":2,"ts":[10],"c":[{"x":500,"y":500}]}]},
             {"type":"MOVE","event":[{"id":2,"ts":[20],"c":[{"x":900,"y":900}]}]},
             {"type":"MOVE","event":[{"id":1,"ts":[30],"c":[{"x":200,"y":0}]}]},
             {"type":"END","event":[{"id":2,"ts":[40],"c":[{"x":900,"y":900}]}]}]
            """, into: &recognizer)
        #expect(output == [[], [.pinchBegan(center: SIMD2(50, 0))], [], [], [], []])
        #expect(recognizer.frameTick() == [.pinchChanged(scale: 2, center: SIMD2(100, 0))])
        #expect(recognizer.rejectedEventCount == 0)
    }

    @Test("Bad events are refused with a typed reason and the next gesture is still recognised",
          arguments: [
            (#"{"type":"BEGIN","event":[{"id":10,"ts":[0],"c":[{"x":1,"y":1}]}]}"#, TouchEventRejection.touchIDOutOfRange(10)),
            (#"{"type":"BEGIN","event":[{"id":-1,"ts":[0],"c":[{"x":1,"y":1}]}]}"#, .touchIDOutOfRange(-1)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":"NaN","y":1}]}]}"#, .nonFinitePoint(touchID: 0)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":1,"y":"-Infinity"}]}]}"#, .nonFinitePoint(touchID: 0)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[-5],"c":[{"x":1,"y":1}]}]}"#, .negativeTimestamp(touchID: 0, timestamp: -5)),
            (#"{"type":"BEGIN","event":[]}"#, .noTouches(.begin)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[],"c":[]}]}"#, .noSamples(touchID: 0)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[1,2],"c":[{"x":1,"y":1}]}]}"#,
             .sampleCountMismatch(touchID: 0, timestamps: 2, points: 1)),
            (#"{"type":"BEGIN","event":[{"id":0,"ts":[1],"c":[{"x":1,"y":1}]},{"id":0,"ts":[1],"c":[{"x":1,"y":1}]}]}"#,
             .duplicateTouchID(0)),
          ])
    func badInput(payload: String, reason: TouchEventRejection) {
        var recognizer = GestureRecognizer(configuration: .init(isDoubleTapEnabled: false))
        #expect(recognizer.handle(json: Data(payload.utf8)) == [])
        #expect(recognizer.lastRejection == reason)
        #expect(recognizer.rejectedEventCount == 1)
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[100],"c":[{"x":10,"y":10}]}]},
             {"type":"END","event":[{"id":0,"ts":[150],"c":[{"x":10,"y":10}]}]}]
            """, into: &recognizer)
        #expect(output.flatMap { $0 } == [.tap(at: SIMD2(10, 10))])
    }

    @Test("Missing fields and unknown types are malformed, and a tap around them still counts")
    func malformedBetweenTouches() {
        var recognizer = GestureRecognizer(configuration: .init(isDoubleTapEnabled: false))
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":10,"y":10}]}]},
             {"type":"MOVE","event":[{"id":0,"c":[{"x":300,"y":10}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[10],"c":[{"x":"NaN","y":10}]}]},
             {"type":"WIGGLE","event":[{"id":0,"ts":[20],"c":[{"x":10,"y":10}]}]},
             {"event":[{"id":0,"ts":[20],"c":[{"x":10,"y":10}]}]},
             {"type":"END","event":[{"id":0,"ts":[50],"c":[{"x":11,"y":10}]}]}]
            """, into: &recognizer)
        #expect(output.flatMap { $0 } == [.tap(at: SIMD2(11, 10))])
        #expect(recognizer.rejectedEventCount == 4)
        if case .malformed = recognizer.lastRejection {} else {
            Issue.record("expected a malformed rejection, got \(String(describing: recognizer.lastRejection))")
        }
        #expect(recognizer.handle(json: Data("not json".utf8)) == [])
    }

    @Test("Sums of a pan's increments equal the finger's whole movement")
    func panIncrementsSum() {
        var recognizer = GestureRecognizer()
        var gestures = replay("""
            [{"type":"BEGIN","event":[{"id":4,"ts":[0],"c":[{"x":200,"y":100}]}]},
             {"type":"MOVE","event":[{"id":4,"ts":[10,15,20],"c":[{"x":203,"y":100},{"x":210,"y":97},{"x":230,"y":90}]}]}]
            """, into: &recognizer).flatMap { $0 }
        gestures += recognizer.frameTick()
        gestures += replay(#"[{"type":"END","event":[{"id":4,"ts":[30],"c":[{"x":250,"y":60}]}]}]"#,
                           into: &recognizer).flatMap { $0 }
        var total = SIMD2<Double>.zero
        for gesture in gestures {
            switch gesture {
            case .panBegan(_, let t), .panChanged(let t), .panEnded(let t): total += t
            case .fling: break  // The glide after the lift is not the finger's movement.
            default: Issue.record("unexpected \(gesture)")
            }
        }
        #expect(total == SIMD2(50, -40))
    }

    @Test("A pan released at speed flings at the speed of its last 100 ms")
    func fling() {
        var recognizer = GestureRecognizer()
        let output = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[20,40],"c":[{"x":10,"y":0},{"x":30,"y":10}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[60,80],"c":[{"x":60,"y":20},{"x":100,"y":30}]}]},
             {"type":"END","event":[{"id":0,"ts":[120],"c":[{"x":160,"y":50}]}]}]
            """, into: &recognizer)
        // From (10,0) at 20 ms, the newest sample 100 ms or more before the lift, to (160,50)
        // at 120 ms: 150 px and 50 px in 0.1 s.
        #expect(output.last == [.panEnded(translation: SIMD2(150, 50)), .fling(velocity: SIMD2(1500, 500))])
    }

    @Test("A finger that stopped before lifting, or moved slowly, does not fling")
    func noFling() {
        var stopped = GestureRecognizer()
        let held = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[20,40],"c":[{"x":50,"y":0},{"x":100,"y":0}]}]},
             {"type":"END","event":[{"id":0,"ts":[300],"c":[{"x":100,"y":0}]}]}]
            """, into: &stopped)
        #expect(held.last == [.panEnded(translation: SIMD2(50, 0))])
        var slow = GestureRecognizer()
        // 20 px in 100 ms: 200 px/s, under the 300 px/s a fling needs.
        let crawled = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[50,100],"c":[{"x":10,"y":0},{"x":20,"y":0}]}]},
             {"type":"END","event":[{"id":0,"ts":[150],"c":[{"x":30,"y":0}]}]}]
            """, into: &slow)
        #expect(crawled.last == [.panEnded(translation: SIMD2(20, 0))])
        var off = GestureRecognizer(configuration: .init(flingMinimumSpeed: .infinity))
        let fast = replay("""
            [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]}]},
             {"type":"MOVE","event":[{"id":0,"ts":[10],"c":[{"x":50,"y":0}]}]},
             {"type":"END","event":[{"id":0,"ts":[20],"c":[{"x":100,"y":0}]}]}]
            """, into: &off)
        #expect(fast.last == [.panEnded(translation: SIMD2(50, 0))], "flings turned off")
    }

    @Test("A pan of 10,000 MOVEs whose timestamps stand still reports no fling")
    func frozenTimestamps() {
        var recognizer = GestureRecognizer()
        _ = recognizer.handle(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 7, x: 0, y: 0)]))
        for step in 1...10_000 {
            _ = recognizer.handle(TouchEvent(type: .move, touches: [.init(id: 0, timestamp: 7, x: Double(step % 500), y: 0)]))
        }
        let end = recognizer.handle(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: 7, x: 600, y: 0)]))
        // No time passed between the samples: no speed, so no fling.
        #expect(end.count == 1, "\(end)")
        #expect(end.first.map { if case .panEnded = $0 { true } else { false } } == true)
    }

    @Test("Two fingers turning past the threshold rotate, the first report catching up")
    func rotation() {
        var recognizer = GestureRecognizer()
        // Fingers 200 px apart around (100,100); finger 1 on the right, then turned clockwise
        // (down on a screen whose y runs down) by 6, 45 and then 30 degrees.
        func fingers(_ type: String, _ degrees: Double, _ ts: Int) -> String {
            let a = degrees * .pi / 180
            return """
                {"type":"\(type)","event":[{"id":0,"ts":[\(ts)],"c":[{"x":\(100 - 100 * cos(a)),"y":\(100 - 100 * sin(a))}]},
                                           {"id":1,"ts":[\(ts)],"c":[{"x":\(100 + 100 * cos(a)),"y":\(100 + 100 * sin(a))}]}]}
                """
        }
        _ = replay("[\(fingers("BEGIN", 0, 0)),\(fingers("MOVE", 6, 10))]", into: &recognizer)
        #expect(recognizer.frameTick().allSatisfy { if case .rotationChanged = $0 { false } else { true } },
                "6 degrees is under the 10 degree threshold")
        _ = replay("[\(fingers("MOVE", 45, 20))]", into: &recognizer)
        let turned = recognizer.frameTick().compactMap { if case .rotationChanged(let d, let c) = $0 { (d, c) } else { nil } }
        #expect(turned.count == 1 && abs(turned[0].0 - 45) < 1e-9, "\(turned)")
        #expect(turned.first.map { abs($0.1.x - 100) < 1e-9 && abs($0.1.y - 100) < 1e-9 } == true)
        let ended = replay("[\(fingers("MOVE", 30, 30)),\(fingers("END", 30, 40))]", into: &recognizer)
        let last = ended.joined().compactMap { if case .rotationChanged(let d, _) = $0 { d } else { nil } }
        #expect(last.count == 1 && abs(last[0] - -15) < 1e-9, "the ending carries the turn back: \(last)")
        #expect(ended.joined().last.map { if case .pinchEnded = $0 { true } else { false } } == true)
    }

    @Test("Rotation turned off, and a cancelled pinch drops its unreported turn")
    func rotationOffAndCancelled() {
        func events(_ degrees: Double) -> String {
            let a = degrees * .pi / 180
            return """
                [{"type":"BEGIN","event":[{"id":0,"ts":[0],"c":[{"x":0,"y":0}]},{"id":1,"ts":[0],"c":[{"x":100,"y":0}]}]},
                 {"type":"MOVE","event":[{"id":1,"ts":[10],"c":[{"x":\(100 * cos(a)),"y":\(100 * sin(a))}]}]}]
                """
        }
        var off = GestureRecognizer(configuration: .init(rotationThreshold: .infinity))
        _ = replay(events(90), into: &off)
        #expect(!off.hasUnreportedMotion && off.frameTick().isEmpty)
        var cancelled = GestureRecognizer()
        let output = replay(events(-90), into: &cancelled)
        #expect(cancelled.hasUnreportedMotion)
        _ = replay("[{\"type\":\"CANCEL\",\"event\":[]}]", into: &cancelled)
        #expect(cancelled.frameTick().isEmpty)
        #expect(output.joined().count == 1, "only the pinch began: \(output)")
    }
}

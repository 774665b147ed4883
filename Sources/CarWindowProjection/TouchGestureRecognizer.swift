import Foundation
import Logging
import CarWindowVideoCore

/// What a sequence of touch events meant. Positions are in the pixels of the events the
/// recogniser was given (rendered pixels once ``TouchEvent/inRenderedPixels(scale:)`` was applied).
///
/// Pans and pinches report *increments*: the sum of the translations of one pan's began, changed
/// and ended cases is the finger's whole movement from BEGIN to END, the product of one
/// pinch's scales is its final distance over its first distance, and the sum of its rotations is
/// the fingers' whole turn (once it passed the threshold). A map can therefore apply each
/// case as it comes without remembering where the gesture started.
public enum Gesture: Sendable, Equatable {
    /// One finger touched and lifted without moving; reported where it lifted.
    case tap(at: SIMD2<Double>)
    /// Two taps close in time and place; reported at the midpoint of the two lift points.
    case doubleTap(at: SIMD2<Double>)
    /// One finger moved past the pan threshold; `translation` is its movement from where it
    /// went down, so the map catches up with the finger at once.
    case panBegan(at: SIMD2<Double>, translation: SIMD2<Double>)
    /// Movement since the previous pan report.
    case panChanged(translation: SIMD2<Double>)
    /// The finger lifted; `translation` is movement not yet reported (often zero).
    case panEnded(translation: SIMD2<Double>)
    /// The head unit cancelled the touches; movement not yet reported is dropped.
    case panCancelled
    /// A second finger went down; `center` is the midpoint of the two.
    case pinchBegan(center: SIMD2<Double>)
    /// The distance between the fingers changed by the factor `scale` since the previous pinch
    /// report; `center` is the fingers' current midpoint.
    case pinchChanged(scale: Double, center: SIMD2<Double>)
    /// A finger lifted; `scale` is the factor not yet reported (1 when none).
    case pinchEnded(scale: Double, center: SIMD2<Double>)
    /// The head unit cancelled the touches; any scale not yet reported is dropped.
    case pinchCancelled
    /// The finger of a pan lifted while still moving: its speed at release, in pixels a second.
    /// Reported right after the pan's `panEnded`, and only when faster than
    /// ``GestureRecognizer/Configuration/flingMinimumSpeed``.
    case fling(velocity: SIMD2<Double>)
    /// The two fingers of a pinch turned by `degrees` (clockwise on screen) since the previous
    /// report, around `center`, their current midpoint. Nothing is reported until the turn since
    /// the pinch began passes ``GestureRecognizer/Configuration/rotationThreshold``; the first
    /// report then carries the whole turn, so the map catches up with the fingers.
    case rotationChanged(degrees: Double, center: SIMD2<Double>)
}

/// Turns a head unit's touch events into taps, double taps, pans, flings, pinches and rotations.
///
/// It is a value with no clock of its own: every time it compares comes from the events'
/// timestamps (the head unit's milliseconds) or from the elapsed time handed to
/// ``frameTick(elapsedMilliseconds:)``, so the same events always give the same gestures.
///
/// **Single taps wait for the double-tap window.** With double taps enabled, a tap is held back
/// until it is clear that no second tap follows: until an event or a frame tick shows that more
/// than ``Configuration/doubleTapMaximumInterval`` passed since its END, or until the next touch
/// turns into something else (a pan, a pinch, a long press, or a tap too far away). A tap that
/// the map acts on a few hundred milliseconds late is better than a map that zooms in after
/// first acting on the first half of a double tap. With double taps disabled, a tap is reported
/// on its END at once.
///
/// **Pan and pinch updates coalesce** (``Configuration/coalescesUpdates``, on by default): MOVEs
/// only accumulate, and ``frameTick(elapsedMilliseconds:)`` reports one `panChanged` with their
/// summed translation and one `pinchChanged` with their scale product, so a head unit sending
/// touches faster than the frame rate costs one map update per frame. Beginnings and endings
/// are reported from ``handle(_:)`` at once, and an ending carries what was not yet reported.
///
/// At most two fingers count; further fingers are ignored (with a warning) until they lift.
/// When one finger of a pinch lifts, the other one does nothing until it lifts too, so that the
/// map does not jump into a pan. Events that ``TouchEvent/validate()`` refuses are ignored with a warning
/// and a typed reason in ``lastRejection``; the recogniser's state is left as it was.
public struct GestureRecognizer: Sendable {
    /// Thresholds; the defaults are SmartDeviceLink's iOS library's.
    public struct Configuration: Sendable, Equatable {
        /// Longest time from BEGIN to END of a tap.
        public var tapMaximumDuration: Duration
        /// Farthest a tap's END may be from its BEGIN, in pixels.
        public var tapMaximumDistance: Double
        /// Longest time between the ENDs of the two taps of a double tap.
        public var doubleTapMaximumInterval: Duration
        /// Farthest apart the ENDs of the two taps of a double tap may be, in pixels.
        public var doubleTapMaximumDistance: Double
        /// A finger that moves more than this many pixels from its BEGIN starts a pan and is no
        /// longer a tap.
        public var panThreshold: Double
        /// Whether double taps are recognised; without them taps are reported without delay.
        public var isDoubleTapEnabled: Bool
        /// Whether pan and pinch changes wait for ``GestureRecognizer/frameTick(elapsedMilliseconds:)``.
        public var coalescesUpdates: Bool
        /// A pan whose finger lifts faster than this many pixels a second is a fling; infinity
        /// turns flings off.
        public var flingMinimumSpeed: Double
        /// Degrees the fingers of a pinch must turn before the map turns with them; infinity
        /// turns rotation off. Without a threshold every pinch would tilt the map's bearing a little.
        public var rotationThreshold: Double

        /// The iOS library's thresholds: 400 ms and 50 px for taps and double taps, 8 px for pans;
        /// flings from 300 px/s and rotation after 10 degrees.
        public init(tapMaximumDuration: Duration = .milliseconds(400), tapMaximumDistance: Double = 50,
                    doubleTapMaximumInterval: Duration = .milliseconds(400), doubleTapMaximumDistance: Double = 50,
                    panThreshold: Double = 8, isDoubleTapEnabled: Bool = true, coalescesUpdates: Bool = true,
                    flingMinimumSpeed: Double = 300, rotationThreshold: Double = 10) {
            self.tapMaximumDuration = tapMaximumDuration
            self.tapMaximumDistance = tapMaximumDistance
            self.doubleTapMaximumInterval = doubleTapMaximumInterval
            self.doubleTapMaximumDistance = doubleTapMaximumDistance
            self.panThreshold = panThreshold
            self.isDoubleTapEnabled = isDoubleTapEnabled
            self.coalescesUpdates = coalescesUpdates
            self.flingMinimumSpeed = flingMinimumSpeed
            self.rotationThreshold = rotationThreshold
        }
    }

    /// The fingers that count; a pinch needs two and the iOS library stops there too.
    public static let maximumTouches = 2
    /// Below this finger distance a pinch's scale is meaningless (and could divide by zero).
    static let minimumPinchDistance = 1.0

    private static let logger = Logger(label: "carwindow.touch")

    /// The thresholds in use.
    public var configuration: Configuration
    /// Why the most recent ignored event was ignored, nil if none was.
    public private(set) var lastRejection: TouchEventRejection?
    /// How many events were ignored as invalid since the recogniser was made.
    public private(set) var rejectedEventCount = 0

    private struct TrackedTouch: Sendable {
        var start: SIMD2<Double>
        var startTime: Double
        var position: SIMD2<Double>
        var time: Double
    }

    private struct PendingTap: Sendable {
        var point: SIMD2<Double>
        var time: Double
    }

    private enum Phase: Sendable, Equatable {
        /// No finger down.
        case idle
        /// One finger down that has not moved past the pan threshold; `tapPossible` turns false
        /// when it wanders farther than a tap may.
        case oneFinger(tapPossible: Bool)
        case panning
        case pinching(previousDistance: Double, previousAngle: Double)
        /// One finger left over from a pinch; inert until it lifts.
        case settling
    }

    private var touches: [Int: TrackedTouch] = [:]
    private var ignoredTouchIDs = Set<Int>()
    private var phase = Phase.idle
    private var pendingTap: PendingTap?
    /// The latest time known, in head-unit milliseconds.
    private var now = -Double.infinity
    private var unreportedTranslation = SIMD2<Double>.zero
    private var unreportedScale = 1.0
    private var hasUnreportedPinch = false
    private var pinchCenter = SIMD2<Double>.zero
    /// The pinch's turn while still under the rotation threshold, in degrees.
    private var turnBeforeRotating = 0.0
    private var isRotating = false
    private var unreportedRotation = 0.0
    private var panSamples = ReleaseVelocity()

    /// A recogniser with no fingers down.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Whether a tap is being held back for the double-tap window.
    public var hasPendingTap: Bool { pendingTap != nil }

    /// Whether pan or pinch movement is waiting for the next ``frameTick(elapsedMilliseconds:)``:
    /// a session that is idle draws a frame for it.
    public var hasUnreportedMotion: Bool {
        unreportedTranslation != .zero || hasUnreportedPinch || unreportedRotation != 0
    }

    /// Feeds one event and returns the gestures it completed or began, oldest first.
    public mutating func handle(_ event: TouchEvent) -> [Gesture] {
        do {
            try event.validate()
        } catch {
            reject(error)
            return []
        }
        var gestures: [Gesture] = []
        if let earliest = event.touches.compactMap({ $0.timestamps.min() }).min() {
            expirePendingTap(at: Double(earliest), into: &gestures)
        }
        if let latest = event.touches.compactMap({ $0.timestamps.max() }).max() {
            now = max(now, Double(latest))
        }
        switch event.type {
        case .begin: begin(event.touches, into: &gestures)
        case .move: move(event.touches, into: &gestures)
        case .end: end(event.touches, into: &gestures)
        case .cancel: cancel(into: &gestures)
        }
        if !configuration.coalescesUpdates { flushUpdates(into: &gestures) }
        return gestures
    }

    /// Called once per rendered frame: reports the pan and pinch changes accumulated since the
    /// previous tick, and a held-back tap whose double-tap window has passed.
    ///
    /// - Parameter elapsedMilliseconds: time since the previous tick, which moves the
    ///   recogniser's clock on while no events arrive; with 0 a held-back tap is only released by
    ///   the next event.
    public mutating func frameTick(elapsedMilliseconds: Double = 0) -> [Gesture] {
        if elapsedMilliseconds.isFinite, elapsedMilliseconds > 0, now.isFinite { now += elapsedMilliseconds }
        var gestures: [Gesture] = []
        flushUpdates(into: &gestures)
        expirePendingTap(at: now, into: &gestures)
        return gestures
    }

    // MARK: Phases

    private mutating func begin(_ newTouches: [TouchEvent.Touch], into gestures: inout [Gesture]) {
        for touch in newTouches {
            guard let first = touch.points.first, let firstTime = touch.timestamps.first,
                  let last = touch.points.last, let lastTime = touch.timestamps.last else { continue }
            if touches[touch.id] == nil {
                guard touches.count < Self.maximumTouches else {
                    if ignoredTouchIDs.insert(touch.id).inserted {
                        Self.logger.warning("touch \(touch.id) ignored: only \(Self.maximumTouches) fingers are recognised")
                    }
                    continue
                }
            } else {
                // Its END was lost (or refused): start it afresh rather than track a ghost.
                Self.logger.warning("touch \(touch.id) began again without ending; restarting it")
            }
            ignoredTouchIDs.remove(touch.id)
            touches[touch.id] = TrackedTouch(start: first, startTime: Double(firstTime),
                                             position: last, time: Double(lastTime))
        }
        switch (touches.count, phase) {
        case (1, .idle), (1, .oneFinger):
            phase = .oneFinger(tapPossible: true)
        case (2, .pinching):
            break
        case (2, _):
            if phase == .panning {
                gestures.append(.panEnded(translation: unreportedTranslation))
                unreportedTranslation = .zero
            }
            // A tap completed before this pinch is a tap after all; the finger that was down
            // when the second one came is not.
            releasePendingTap(into: &gestures)
            let (distance, center, angle) = pinchGeometry()
            phase = .pinching(previousDistance: distance, previousAngle: angle)
            pinchCenter = center
            unreportedScale = 1
            hasUnreportedPinch = false
            turnBeforeRotating = 0
            isRotating = false
            unreportedRotation = 0
            gestures.append(.pinchBegan(center: center))
        default:
            break
        }
    }

    private mutating func move(_ moved: [TouchEvent.Touch], into gestures: inout [Gesture]) {
        for touch in moved {
            guard var tracked = touches[touch.id] else { continue }
            for (sample, time) in zip(touch.points, touch.timestamps) {
                let previous = tracked.position
                tracked.position = sample
                tracked.time = Double(time)
                switch phase {
                case .oneFinger(let tapPossible):
                    let distance = Self.distance(tracked.position, tracked.start)
                    if distance > configuration.panThreshold {
                        releasePendingTap(into: &gestures)
                        phase = .panning
                        unreportedTranslation = .zero
                        panSamples.reset()
                        panSamples.add(tracked.start, at: tracked.startTime)
                        panSamples.add(tracked.position, at: tracked.time)
                        gestures.append(.panBegan(at: tracked.start, translation: tracked.position - tracked.start))
                    } else {
                        phase = .oneFinger(tapPossible: tapPossible && distance <= configuration.tapMaximumDistance)
                    }
                case .panning:
                    unreportedTranslation += tracked.position - previous
                    panSamples.add(tracked.position, at: tracked.time)
                default:
                    break
                }
            }
            touches[touch.id] = tracked
        }
        updatePinch()
    }

    private mutating func end(_ ended: [TouchEvent.Touch], into gestures: inout [Gesture]) {
        // Lift positions first, so that a pinch's last scale and a pan's last step count.
        var endedIDs: [Int] = []
        for touch in ended {
            if ignoredTouchIDs.remove(touch.id) != nil { continue }
            guard var tracked = touches[touch.id], let last = touch.points.last,
                  let lastTime = touch.timestamps.last else { continue }
            if phase == .panning {
                unreportedTranslation += last - tracked.position
                panSamples.add(last, at: Double(lastTime))
            }
            tracked.position = last
            tracked.time = Double(lastTime)
            touches[touch.id] = tracked
            endedIDs.append(touch.id)
        }
        guard !endedIDs.isEmpty else { return }
        updatePinch()

        switch phase {
        case .oneFinger(let tapPossible):
            if let id = endedIDs.first, let tracked = touches[id] {
                let isTap = tapPossible
                    && tracked.time - tracked.startTime <= configuration.tapMaximumDuration.inMilliseconds
                    && Self.distance(tracked.position, tracked.start) <= configuration.tapMaximumDistance
                if isTap {
                    completeTap(at: tracked.position, time: tracked.time, into: &gestures)
                } else {
                    // A long press or a wander: whatever tap waited is not half of a double tap.
                    releasePendingTap(into: &gestures)
                }
            }
        case .panning:
            gestures.append(.panEnded(translation: unreportedTranslation))
            unreportedTranslation = .zero
            let velocity = panSamples.velocity()
            if velocity.x.isFinite, velocity.y.isFinite, Self.length(velocity) > configuration.flingMinimumSpeed {
                gestures.append(.fling(velocity: velocity))
            }
        case .pinching:
            if unreportedRotation != 0 {
                gestures.append(.rotationChanged(degrees: unreportedRotation, center: pinchCenter))
                unreportedRotation = 0
            }
            gestures.append(.pinchEnded(scale: unreportedScale, center: pinchCenter))
            unreportedScale = 1
            hasUnreportedPinch = false
        case .idle, .settling:
            break
        }
        for id in endedIDs { touches[id] = nil }
        phase = touches.isEmpty ? .idle : .settling
    }

    private mutating func cancel(into gestures: inout [Gesture]) {
        switch phase {
        case .panning: gestures.append(.panCancelled)
        case .pinching: gestures.append(.pinchCancelled)
        default: break
        }
        touches.removeAll()
        ignoredTouchIDs.removeAll()
        pendingTap = nil
        phase = .idle
        unreportedTranslation = .zero
        unreportedScale = 1
        hasUnreportedPinch = false
        unreportedRotation = 0
    }

    // MARK: Taps

    private mutating func completeTap(at point: SIMD2<Double>, time: Double, into gestures: inout [Gesture]) {
        guard configuration.isDoubleTapEnabled else {
            gestures.append(.tap(at: point))
            return
        }
        if let first = pendingTap,
           time - first.time <= configuration.doubleTapMaximumInterval.inMilliseconds,
           Self.distance(point, first.point) <= configuration.doubleTapMaximumDistance {
            pendingTap = nil
            gestures.append(.doubleTap(at: (first.point + point) / 2))
            return
        }
        releasePendingTap(into: &gestures)
        pendingTap = PendingTap(point: point, time: time)
    }

    private mutating func releasePendingTap(into gestures: inout [Gesture]) {
        if let tap = pendingTap {
            gestures.append(.tap(at: tap.point))
            pendingTap = nil
        }
    }

    private mutating func expirePendingTap(at time: Double, into gestures: inout [Gesture]) {
        if let tap = pendingTap, time - tap.time > configuration.doubleTapMaximumInterval.inMilliseconds {
            releasePendingTap(into: &gestures)
        }
    }

    // MARK: Pan and pinch updates

    private mutating func updatePinch() {
        guard case .pinching(let previousDistance, let previousAngle) = phase, touches.count == 2 else { return }
        let (distance, center, angle) = pinchGeometry()
        pinchCenter = center
        if previousDistance >= Self.minimumPinchDistance, distance >= Self.minimumPinchDistance {
            let factor = distance / previousDistance
            if factor != 1 {
                unreportedScale *= factor
                hasUnreportedPinch = true
            }
            // Fingers closer than a pixel have no meaningful direction either.
            var turn = (angle - previousAngle).truncatingRemainder(dividingBy: 360)
            if turn > 180 { turn -= 360 } else if turn <= -180 { turn += 360 }
            if isRotating {
                unreportedRotation += turn
            } else {
                turnBeforeRotating += turn
                if abs(turnBeforeRotating) > configuration.rotationThreshold {
                    isRotating = true
                    unreportedRotation += turnBeforeRotating
                }
            }
        }
        phase = .pinching(previousDistance: distance, previousAngle: angle)
    }

    private mutating func flushUpdates(into gestures: inout [Gesture]) {
        if phase == .panning, unreportedTranslation != .zero {
            gestures.append(.panChanged(translation: unreportedTranslation))
            unreportedTranslation = .zero
        }
        guard case .pinching = phase else { return }
        if hasUnreportedPinch {
            gestures.append(.pinchChanged(scale: unreportedScale, center: pinchCenter))
            unreportedScale = 1
            hasUnreportedPinch = false
        }
        if unreportedRotation != 0 {
            gestures.append(.rotationChanged(degrees: unreportedRotation, center: pinchCenter))
            unreportedRotation = 0
        }
    }

    /// The fingers' distance, midpoint and direction (degrees clockwise on screen from the
    /// lower id's finger to the other's; ordered by id so the direction does not flip).
    private func pinchGeometry() -> (distance: Double, center: SIMD2<Double>, angle: Double) {
        guard touches.count == 2, let low = touches.keys.min(), let high = touches.keys.max(),
              let a = touches[low]?.position, let b = touches[high]?.position else {
            return (0, touches.values.first?.position ?? .zero, 0)
        }
        let d = b - a
        return (Self.distance(a, b), (a + b) / 2, atan2(d.y, d.x) * 180 / .pi)
    }

    /// Counts and logs an event that was refused before it reached ``handle(_:)``: one its
    /// source could not read, say.
    package mutating func reject(_ reason: TouchEventRejection) {
        lastRejection = reason
        rejectedEventCount += 1
        Self.logger.warning("\(reason.description)")
    }

    private static func distance(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double { length(a - b) }

    private static func length(_ d: SIMD2<Double>) -> Double { (d * d).sum().squareRoot() }
}

/// A panning finger's last tenth of a second, for its speed when it lifts.
///
/// The speed is the movement from the newest position at least ``window`` before the lift
/// (or the pan's first) to the lift point, over the time between them: a finger that stopped
/// before lifting has none, and one jittery sample does not make a fling.
private struct ReleaseVelocity: Sendable {
    /// Milliseconds of movement that count.
    static let window = 100.0
    /// The most samples kept: a tenth of a second of a 200 Hz head unit. A head unit whose
    /// timestamps stand still (or run backwards) would otherwise grow the list for as long as
    /// the pan lasts.
    static let capacity = 32
    /// Reserved once, so a pan does not allocate per event.
    private var samples: [(point: SIMD2<Double>, time: Double)] = []

    init() { samples.reserveCapacity(Self.capacity) }

    mutating func reset() { samples.removeAll(keepingCapacity: true) }

    mutating func add(_ point: SIMD2<Double>, at time: Double) {
        if samples.count == Self.capacity { samples.removeFirst() }
        samples.append((point, time))
        // Keep one sample from before the window as the anchor; drop what is older.
        if let anchor = samples.lastIndex(where: { $0.time <= time - Self.window }), anchor > 0 {
            samples.removeFirst(anchor)
        }
    }

    /// Pixels a second; zero without two samples apart in time.
    func velocity() -> SIMD2<Double> {
        guard let last = samples.last else { return .zero }
        let anchor = samples.last(where: { $0.time <= last.time - Self.window }) ?? samples[0]
        let elapsed = last.time - anchor.time
        guard elapsed > 0 else { return .zero }
        return (last.point - anchor.point) / (elapsed / 1000)
    }
}

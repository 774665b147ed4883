import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport

/// A sequence of touch events for the gesture recogniser, decoded from the input rather than
/// from JSON (the RPC target covers the JSON), so that mutations change fingers, phases, times
/// and positions instead of breaking the syntax. The gestures move a camera as the session
/// moves it; the camera must stay valid whatever the head unit sends.
///
/// The first byte chooses the display scale and configuration; then each event is a header
/// byte (phase, whether a frame follows, finger count) and per finger an id, a sample count and the samples.
enum TouchTarget {
    static let width = 800, height = 480
    static let regions = HapticRegionSet(declaredRegions: [
        HapticRegion(id: 1, rect: ScreenRect(x: 10, y: 10, width: 100, height: 60)),
        HapticRegion(id: 2, rect: ScreenRect(x: 700, y: 400, width: 90, height: 70)),
    ])
    static let kinds: [TouchEvent.Kind] = [.begin, .move, .end, .cancel]

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let setup = input.byte()
        let scale = [1, 1.5, 2, 0, -3, .nan, .infinity, 1e300][Int(setup & 7)]
        var configuration = GestureRecognizer.Configuration()
        configuration.isDoubleTapEnabled = setup & 8 == 0
        configuration.coalescesUpdates = setup & 16 == 0
        var recognizer = GestureRecognizer(configuration: configuration)
        var camera = Camera(center: GeoCoordinate(latitude: 60.17, longitude: 24.94), zoom: 14)
        var time = 1_000
        var events = 0
        while !input.isAtEnd, events < 256 {
            events += 1
            var (event, ticks) = nextEvent(&input, time: &time)
            // As the session takes them: held to the head unit's screen first (unless the setup
            // byte feeds the recogniser raw events), so no tap may land off it.
            let heldToScreen = setup & 32 == 0
            if heldToScreen {
                guard let held = try? event.onScreen(width: width, height: height) else { continue }
                event = held
            }
            var gestures = recognizer.handle(event.inRenderedPixels(scale: scale))
            if ticks {
                gestures += recognizer.frameTick(elapsedMilliseconds: Double(input.integer(in: 0...600)))
                if recognizer.hasUnreportedMotion {
                    fatalError("movement is still unreported after a frame tick")
                }
            }
            for action in MapAction.actions(for: gestures, regions: regions) {
                if heldToScreen, case .mapTapped(let point) = action,
                   !(point.x >= 0 && point.x <= Double(width) && point.y >= 0 && point.y <= Double(height)) {
                    fatalError("a tap at \(point) came from events held to the \(width)x\(height) screen")
                }
                camera = apply(action, to: camera)
            }
        }
    }

    /// An event, and whether a frame is drawn after it.
    static func nextEvent(_ input: inout FuzzInput, time: inout Int) -> (TouchEvent, ticks: Bool) {
        let header = input.byte()
        let kind = kinds[Int(header & 3)]
        let ticks = header & 4 != 0
        let fingerCount = Int(header >> 4) % 12
        var touches: [TouchEvent.Touch] = []
        for _ in 0..<fingerCount {
            let id = Int(Int8(bitPattern: input.byte())) % 12
            let samplesByte = input.byte()
            let sampleCount = samplesByte == 0xFF ? 65 : Int(samplesByte & 3)
            let extraCoordinate = samplesByte & 0x80 != 0 && samplesByte != 0xFF ? 1 : 0
            var timestamps: [Int] = []
            var points: [SIMD2<Double>] = []
            for _ in 0..<sampleCount {
                let step = Int(Int16(bitPattern: input.integer(UInt16.self)))
                time = step == Int(Int16.min) ? -1 : time &+ abs(step)
                timestamps.append(time)
                points.append(SIMD2(coordinate(&input), coordinate(&input)))
            }
            for _ in 0..<extraCoordinate {
                points.append(SIMD2(coordinate(&input), coordinate(&input)))
            }
            touches.append(TouchEvent.Touch(id: id, timestamps: timestamps, points: points))
        }
        return (TouchEvent(type: kind, touches: touches), ticks)
    }

    /// Mostly screen positions in quarter pixels; 0x7FFF takes any double that follows.
    static func coordinate(_ input: inout FuzzInput) -> Double {
        let raw = Int16(bitPattern: input.integer(UInt16.self))
        return raw == Int16.max ? input.anyDouble() : Double(raw) / 4
    }

    static func apply(_ action: MapAction, to camera: Camera) -> Camera {
        var moved = camera
        switch action {
        case .move(let offset):
            guard offset.x.isFinite, offset.y.isFinite else { fatalError("a pan of \(offset) reached the map") }
            moved = camera.panned(by: offset, width: width, height: height) ?? camera
        case .zoom(let levels, let anchor):
            // An anchor off any screen (two fingers near Double.greatestFiniteMagnitude) may
            // reach the map; the camera below must come out of it valid.
            guard levels.isFinite else { fatalError("a zoom by \(levels) reached the map") }
            moved = camera.zoomed(by: levels, around: anchor, width: width, height: height) ?? camera
        case .rotate(let degrees, let anchor):
            guard degrees.isFinite else { fatalError("a rotation by \(degrees) reached the map") }
            moved = camera.rotated(by: degrees, around: anchor, width: width, height: height) ?? camera
        case .glide(let velocity):
            guard velocity.x.isFinite, velocity.y.isFinite else { fatalError("a glide at \(velocity) reached the map") }
            var glide = KineticPan(velocity: velocity, start: 0)
            for time in [0.0, 0.016, 0.5, 3, 60] {
                let step = glide.step(to: time)
                guard step.x.isFinite, step.y.isFinite else { fatalError("a glide at \(velocity) stepped by \(step)") }
                moved = moved.panned(by: step, width: width, height: height) ?? moved
            }
            guard glide.isFinished(at: 60) else { fatalError("a glide at \(velocity) still moves after a minute") }
        case .regionTapped, .mapTapped:
            break
        }
        let valid = moved.center.latitude.isFinite && moved.center.longitude.isFinite && moved.zoom.isFinite
            && moved.bearing.isFinite && moved.pitch.isFinite && moved == moved.clamped
        guard valid else { fatalError("\(action) took the camera from \(camera) to \(moved)") }
        return moved
    }
}

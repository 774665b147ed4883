import Foundation
import CarWindowSystemSupport
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowProjection

/// A sink that keeps every access unit with the time it arrived (on `clock`, the session's),
/// for the tests to inspect.
final class RecordingSink: VideoSink, Sendable {
    struct Received: Sendable {
        var time: Double
        var unit: AccessUnit
    }
    private struct State {
        var received: [Received] = []
        var starts: [VideoSize] = []
        var stops = 0
        var closed = false
    }
    private let state = LockedState(State())
    private let clock: SessionClock

    init(clock: SessionClock = .monotonic) {
        self.clock = clock
    }

    func write(_ unit: AccessUnit) throws(SinkError) {
        let now = clock.now
        let closed = state.withLock { state in
            if !state.closed { state.received.append(Received(time: now, unit: unit)) }
            return state.closed
        }
        if closed { throw .closed("recording sink") }
    }

    func close() { state.withLock { $0.closed = true } }
    func streamWillStart(_ size: VideoSize) throws(SinkError) { state.withLock { $0.starts.append(size) } }
    func streamDidStop() { state.withLock { $0.stops += 1 } }

    var received: [Received] { state.withLock { $0.received } }
    var starts: [VideoSize] { state.withLock { $0.starts } }
    var stops: Int { state.withLock { $0.stops } }
    var bytes: [UInt8] { received.flatMap(\.unit.data) }
    func received(after time: Double) -> [Received] { received.filter { $0.time > time } }
}

/// Collects a session's events as they come.
final class EventLog: Sendable {
    private let events = LockedState<[ProjectionSessionEvent]>([])
    private let task: LockedState<Task<Void, Never>?> = LockedState(nil)

    init(_ session: ProjectionSession) {
        let stream = session.events
        let started = Task { [weak self] in
            for await event in stream { self?.append(event) }
        }
        task.withLock { $0 = started }
    }

    private func append(_ event: ProjectionSessionEvent) { events.withLock { $0.append(event) } }

    var all: [ProjectionSessionEvent] { events.withLock { $0 } }
    var warnings: [ProjectionSessionWarning] { all.compactMap { if case .warning(let warning) = $0 { warning } else { nil } } }
    var states: [ProjectionSessionState] { all.compactMap { if case .stateChanged(_, let to) = $0 { to } else { nil } } }
    var hapticSets: [[HapticRegion]] { all.compactMap { if case .hapticRegions(let set) = $0 { set } else { nil } } }
}

/// Sessions over the bundled data with OpenH264, shared by the session, SDL and simulation tests.
enum SessionFixtures {
    static let display = HeadUnitDisplay(size: VideoSize(width: 640, height: 384), scale: 2,
                                         preferredFramesPerSecond: 15, maximumBitrate: 400_000)

    ///
    /// `light` takes the bundled styles cut to a few layers (Tests/Fixtures/styles), for tests
    /// whose verdicts do not depend on the map: their tiles lay out in a fraction of the time,
    /// which keeps a loaded machine under a sanitizer far from the hang guard.
    static func configuration(name: String = "map", style: String = "day", light: Bool = false,
                              tiles: (any TileSource)? = nil,
                              sink: RecordingSink, keepAlive: Duration = .milliseconds(500),
                              clock: SessionClock = .monotonic) throws -> ProjectionSessionConfiguration {
        func styleFile(_ name: String) -> URL {
            light ? TestPaths.fixtures.appendingPathComponent("styles/light-\(name).json") : TestPaths.style(name)
        }
        var configuration = ProjectionSessionConfiguration(
            tiles: try tiles ?? openTileSource(at: TestPaths.tiles), dayStyle: try Style(contentsOf: styleFile(style)),
            fonts: try FontLibrary(directory: TestPaths.fonts), camera: Camera(center: helsinki, zoom: 15.5),
            makeSink: { _ in sink })
        configuration.name = name
        configuration.nightStyle = try Style(contentsOf: styleFile("night"))
        configuration.encoder = .forced(.openh264)
        configuration.keepAliveInterval = keepAlive
        configuration.clock = clock
        return configuration
    }

    /// Moves the camera a little every 10 ms until `condition` holds, and says whether it did
    /// before the hang guard ran out. Tests wait for what they count this way: a loaded machine
    /// takes longer to get there, never gets a different verdict.
    static func drive(_ session: ProjectionSession, until condition: () async -> Bool) async -> Bool {
        let end = SessionClock.monotonicNow + hangGuard.inSeconds
        var camera = await session.camera
        while SessionClock.monotonicNow < end {
            if await condition() { return true }
            camera.center.longitude += 0.00002
            camera.bearing += 0.3
            await session.setCamera(camera)
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await condition()
    }

    /// Moves the camera a little every `step` seconds for `seconds`.
    static func drive(_ session: ProjectionSession, seconds: Double, step: Double = 0.01) async {
        let end = SessionClock.monotonicNow + seconds
        var camera = await session.camera
        while SessionClock.monotonicNow < end {
            camera.center.longitude += 0.00002
            camera.bearing += 0.3
            await session.setCamera(camera)
            try? await Task.sleep(for: .milliseconds(Int(step * 1000)))
        }
    }

    static func frameSizes(of bytes: [UInt8]) throws -> [String] {
        try FFmpegTool.withStreamFile(bytes) { path in
            let result = try FFmpegTool.run("ffprobe", ["-v", "error", "-f", "h264", "-i", path, "-show_entries",
                                                        "frame=width,height", "-of", "csv=p=0"])
            return String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}

/// The longest a test waits for something that must happen. It ends hangs and nothing else:
/// on a working build every wait is over long before it, however loaded the machine is (the
/// suite runs in parallel, sanitizers slow it tenfold), so no verdict depends on the machine's
/// speed. A test that must see that something does *not* happen says so with its own, short wait.
/// At 60 s it was not enough: with two busy loops beside the parallel suite, a protected stream's
/// connection, handshake and first 15 pictures took longer.
let hangGuard: Duration = .seconds(120)

/// Waits until `condition` holds or `limit` passes; whether it held.
func eventually(_ limit: Duration = hangGuard, _ condition: () async -> Bool) async -> Bool {
    let end = SessionClock.monotonicNow + limit.inSeconds
    while SessionClock.monotonicNow < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

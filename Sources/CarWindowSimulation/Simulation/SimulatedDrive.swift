import Foundation
import CarWindowGeo
import CarWindowVideoCore
import CarWindowMap
import CarWindowProjection

/// A navigation engine and its driver, simulated: moves a vehicle along a ``DrivePlan``, keeps a
/// heading-up camera behind it, shows the route still ahead and taps the map's controls now and
/// then, all through a ``ProjectionSession``'s package API. `carwindow drive` and the benchmarks
/// use it; it is also a worked example of an engine driving a session.
///
/// While the car waits at a light nothing it sets changes, so the session draws nothing and only
/// keeps the head unit's picture alive.
///
/// - Important: Thread-safe: it is an actor.
package actor SimulatedDrive {
    /// How the drive runs.
    package struct Options: Sendable {
        /// Simulated seconds per second of the session's clock (1 = real time).
        package var speedup: Double
        /// Engine ticks per second of the session's clock: how often it updates vehicle and camera.
        package var tickRate: Double
        /// Zoom when driving slowly; it eases out as speed rises.
        package var zoom: Double
        /// Camera tilt in degrees.
        package var pitch: Double
        /// Simulated taps, as (fraction of the drive's duration, control).
        package var taps: [(at: Double, control: MapControl.Kind)]
        /// Seconds of the session's clock after which the drive ends even if the car has not arrived.
        package var maximumSeconds: Double?
        /// Whether the engine hands the session one position fix a second and lets its follow
        /// camera move vehicle and camera between fixes, instead of setting both every tick.
        package var followsWithFixes: Bool
        /// Called once per turn when the car is ``announcementDistance`` metres before it (or
        /// nearer, for a turn right at the start), with the turn's distance along the route: where
        /// a guidance engine would speak. Not waited for: the drive goes on while it plays.
        package var announceTurn: (@Sendable (Double) async -> Void)?
        /// How far before a turn ``announceTurn`` is called, in metres.
        package var announcementDistance = 200.0

        /// A drive at twice real time, 30 ticks a second, zoom 17 and pitch 45 degrees, with a
        /// zoom in, a zoom out and a recenter along the way.
        package init(speedup: Double = 2, tickRate: Double = 30, zoom: Double = 17, pitch: Double = 45,
                    taps: [(at: Double, control: MapControl.Kind)] = [(0.3, .zoomIn), (0.45, .zoomOut), (0.6, .recenter)],
                    maximumSeconds: Double? = nil, followsWithFixes: Bool = false) {
            self.speedup = speedup.isFinite && speedup > 0 ? min(speedup, 1000) : 1
            self.tickRate = tickRate.isFinite && tickRate > 0 ? min(tickRate, 240) : 30
            self.zoom = zoom.isFinite ? zoom : 17
            self.pitch = pitch.isFinite ? min(max(pitch, 0), Camera.maximumPitch) : 45
            self.taps = taps.filter { $0.at.isFinite }.sorted { $0.at < $1.at }
            self.maximumSeconds = maximumSeconds
            self.followsWithFixes = followsWithFixes
        }
    }

    /// Where the drive is, for a progress line.
    package struct Progress: Sendable {
        /// Simulated seconds since the start, and the drive's total.
        package var simulatedSeconds: Double
        package var totalSeconds: Double
        /// Metres driven, and the route's length.
        package var distance: Double
        package var length: Double
        /// Metres per second now.
        package var speed: Double
        package var isStopped: Bool
        /// The session's counters at this moment.
        package var statistics: ProjectionSessionStatistics
    }

    /// The timeline the car follows.
    package nonisolated let plan: DrivePlan
    /// How the drive runs.
    package nonisolated let options: Options
    private let session: ProjectionSession
    private var zoomOffset = 0.0
    private var targetZoomOffset = 0.0

    /// A drive of `plan` shown by `session` (which should be streaming, or about to).
    package init(plan: DrivePlan, session: ProjectionSession, options: Options = Options()) {
        self.plan = plan
        self.session = session
        self.options = options
    }

    /// The engine's answer to the session's control events: zoom buttons change its zoom, so
    /// that its camera updates do not undo them; recenter drops the offset.
    package func controlTapped(_ control: MapControl.Kind) {
        switch control {
        case .zoomIn: targetZoomOffset = min(targetZoomOffset + 1, 3)
        case .zoomOut: targetZoomOffset = max(targetZoomOffset - 1, -3)
        case .recenter: targetZoomOffset = 0
        }
    }

    /// Drives until the car arrives (or the time limit); `progress` is called about twice a
    /// second. Returns the simulated seconds driven.
    ///
    /// The drive keeps the time of the session's ``ProjectionSessionConfiguration/clock``, so a
    /// session on a manual clock drives only as fast as its test advances that clock.
    @discardableResult
    package func run(progress: (@Sendable (Progress) -> Void)? = nil) async -> Double {
        let clock = session.configuration.clock
        let ticker = WakeSignal(clock: clock, label: "carwindow.drive")
        ticker.attach()
        defer { ticker.detach() }
        let start = clock.now
        let interval = 1 / options.tickRate
        var nextTap = 0
        var lastReport = -Double.infinity
        var routeShown = false
        var nextFix = 0.0
        // The turns a guidance engine announces, the one shown now, and the destination.
        let turns = options.followsWithFixes || options.announceTurn != nil ? plan.turns() : []
        var shownTurn: Double?
        var nextAnnouncement = 0
        if options.followsWithFixes { await session.setDestination(plan.points.last) }
        if options.followsWithFixes {
            var follow = FollowCameraConfiguration()
            follow.slowZoom = options.zoom
            follow.fastZoom = options.zoom - 1.5
            follow.slowPitch = options.pitch
            follow.fastPitch = min(options.pitch + 10, Camera.maximumPitch)
            await session.followVehicle(follow)
        }
        while !Task.isCancelled {
            let wall = clock.now - start
            let time = wall * options.speedup
            let state = plan.state(at: time)
            // Ease zoom-button changes in over about 0.3 s, as a map app would.
            zoomOffset += (targetZoomOffset - zoomOffset) * min(1, interval / 0.3 * 3)
            if abs(targetZoomOffset - zoomOffset) < 0.01 { zoomOffset = targetZoomOffset }
            if options.followsWithFixes {
                // A GNSS receiver's once-a-second fix; speed in metres per second of the session's clock.
                if wall >= nextFix {
                    await session.updateVehicle(VehicleFix(coordinate: state.coordinate, heading: state.heading,
                                                           speed: state.isStopped ? 0 : state.speed * options.speedup))
                    nextFix = wall + 1
                }
            } else {
                await session.setVehicle(VehicleMarker(coordinate: state.coordinate, heading: state.heading))
                await session.setCamera(camera(following: state, view: await session.stream?.encodedSize))
            }
            // The whole route once; then only how far along it the car is (no new geometry).
            if !routeShown {
                await session.setRoute(plan.points)
                routeShown = true
            }
            if state.isFinished {
                await session.setRoute([])
            } else {
                await session.setRouteProgress(state.distance)
            }
            if options.followsWithFixes {
                // The arrow from 150 m before a turn until the car has made it.
                let turn = turns.first { $0 > state.distance - 10 && $0 - state.distance < 150 }
                if turn != shownTurn {
                    shownTurn = turn
                    await session.setManeuver(atMetres: turn)
                }
            }
            if let announce = options.announceTurn {
                while nextAnnouncement < turns.count, turns[nextAnnouncement] - state.distance <= options.announcementDistance {
                    // A turn already behind the car is not announced.
                    if turns[nextAnnouncement] > state.distance {
                        let turn = turns[nextAnnouncement]
                        Task { await announce(turn) }
                    }
                    nextAnnouncement += 1
                }
            }
            while nextTap < options.taps.count, time >= options.taps[nextTap].at * plan.duration {
                // Head units stamp touches in milliseconds of their own clock.
                await tap(options.taps[nextTap].control, timestamp: Int(clock.now * 1000))
                nextTap += 1
            }
            if let progress, wall - lastReport >= 0.5 {
                lastReport = wall
                progress(Progress(simulatedSeconds: min(time, plan.duration), totalSeconds: plan.duration,
                                  distance: state.distance, length: plan.length, speed: state.speed,
                                  isStopped: state.isStopped, statistics: await session.statistics))
            }
            if state.isFinished { break }
            if let limit = options.maximumSeconds, wall >= limit { break }
            let wakeAt = clock.now + interval
            await withTaskCancellationHandler {
                await ticker.wait(until: wakeAt)
            } onCancel: {
                ticker.signal()
            }
        }
        return min((clock.now - start) * options.speedup, plan.duration)
    }

    /// Heading up, the car in the lower part of the screen (more road ahead than behind),
    /// zooming out a little with speed.
    func camera(following state: VehicleState, view: VideoSize?) -> Camera {
        let speedZoom = -min(state.speed / 25, 1)
        var camera = Camera(center: state.coordinate, zoom: options.zoom + speedZoom + zoomOffset,
                            bearing: state.heading, pitch: options.pitch)
        if let view, view.width > 0, view.height > 0 {
            // Centre on the ground point that lies 20% of the height above the car: the car then
            // sits at about 70% of the height.
            let transform = MapTransform(camera: camera, width: view.width, height: view.height)
            if let ahead = transform.coordinate(at: SIMD2(Double(view.width) / 2, Double(view.height) * 0.3)) {
                camera.center = ahead
            }
        }
        return camera
    }

    /// A finger on the control's centre for 80 ms, in head-unit pixels, like a real touch screen.
    func tap(_ control: MapControl.Kind, timestamp: Int) async {
        let id = HapticRegionSet.regionID(for: control)
        guard let region = await session.hapticRegions.first(where: { $0.id == id }) else { return }
        let scale = await session.stream?.scale ?? 1
        let point = region.rect.center * scale
        await session.handleTouch(TouchEvent(type: .begin, touches: [.init(id: 0, timestamp: timestamp, x: point.x, y: point.y)]))
        await session.handleTouch(TouchEvent(type: .end, touches: [.init(id: 0, timestamp: timestamp + 80, x: point.x, y: point.y)]))
    }
}

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
@testable import CarWindowTestSupport

/// The follow camera between 1 Hz fixes: smooth, never back, the vehicle on its anchor, zoom by
/// speed; and a session that follows, stops for the user's pan and recenters.
@Suite struct FollowCameraTests {
    static let width = 800, height = 480

    /// The point `metres` east of Helsinki's centre.
    static func east(_ metres: Double) -> GeoCoordinate {
        let perDegree = 111_320 * cos(helsinki.latitude * .pi / 180)
        return GeoCoordinate(latitude: helsinki.latitude, longitude: helsinki.longitude + metres / perDegree)
    }

    static func metresEast(of coordinate: GeoCoordinate) -> Double {
        (coordinate.longitude - helsinki.longitude) * 111_320 * cos(helsinki.latitude * .pi / 180)
    }

    /// Driving east at 10 m/s with fixes once a second that are 4 m ahead or behind the truth in
    /// turn (GNSS noise): at 30 frames a second the vehicle never steps back, no step is more
    /// than twice an even step, and it stays within 5 m of the truth.
    @Test func betweenNoisyFixesTheVehicleMovesSmoothlyAndNeverBack() throws {
        var follow = FollowCamera(configuration: FollowCameraConfiguration())
        let speed = 10.0, fps = 30.0
        var shown: [Double] = []
        for frame in 0..<Int(12 * fps) {
            let time = Double(frame) / fps
            if frame % Int(fps) == 0 {
                let noise = (frame / Int(fps)) % 2 == 0 ? 4.0 : -4.0
                follow.update(VehicleFix(coordinate: Self.east(speed * time + noise), heading: 90, speed: speed), at: time)
            }
            let next = follow.state(at: time, width: Self.width, height: Self.height)
            let state = try #require(next)
            shown.append(Self.metresEast(of: state.vehicle.coordinate))
        }
        let steps = zip(shown.dropFirst(), shown).map { $0 - $1 }
        let even = speed / fps
        #expect(steps.allSatisfy { $0 >= -1e-6 }, "a step back: \(steps.min() ?? 0)")
        #expect(steps.dropFirst(Int(fps)).allSatisfy { $0 <= 2 * even }, "largest step \(steps.max() ?? 0) m")
        let errors = shown.enumerated().dropFirst(Int(fps)).map { abs($0.element - speed * Double($0.offset) / fps) }
        #expect(errors.allSatisfy { $0 <= 5 }, "largest error \(errors.max() ?? 0) m")
    }

    /// Crawling at 2 m/s, a fix lands 10 m behind the prediction: the vehicle waits for the
    /// track to catch up instead of reversing on the screen.
    @Test func aFixBehindThePredictionNeverMovesTheVehicleBack() throws {
        var follow = FollowCamera(configuration: FollowCameraConfiguration())
        follow.update(VehicleFix(coordinate: Self.east(0), heading: 90, speed: 2), at: 0)
        var shown: [Double] = []
        for frame in 0..<90 {
            let time = Double(frame) / 30
            if frame == 30 { follow.update(VehicleFix(coordinate: Self.east(2 - 10), heading: 90, speed: 2), at: time) }
            let next = follow.state(at: time, width: Self.width, height: Self.height)
            shown.append(Self.metresEast(of: try #require(next).vehicle.coordinate))
        }
        let steps = zip(shown.dropFirst(), shown).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 >= -1e-6 }, "a step back: \(steps.min() ?? 0) m")
        // It did slow down: it stood still for a while.
        #expect(steps.filter { abs($0) < 1e-6 }.count >= 10)
    }

    @Test func theVehicleSitsOnTheAnchorCourseUpOrNorthUp() throws {
        for orientation in [FollowCameraConfiguration.Orientation.courseUp, .northUp] {
            var configuration = FollowCameraConfiguration()
            configuration.orientation = orientation
            var follow = FollowCamera(configuration: configuration)
            follow.update(VehicleFix(coordinate: helsinki, heading: 30, speed: 0), at: 0)
            let first = follow.state(at: 0, width: Self.width, height: Self.height)
            let state = try #require(first)
            #expect(state.camera.bearing == (orientation == .courseUp ? 30 : 0))
            let transform = MapTransform(camera: state.camera, width: Self.width, height: Self.height)
            let point = try #require(transform.screenPoint(for: state.vehicle.coordinate))
            #expect(abs(point.x - 400) < 1 && abs(point.y - 360) < 1, "vehicle at \(point)")
        }
    }

    @Test func zoomAndTiltFollowTheSpeedAndPredictionStops() throws {
        var follow = FollowCamera(configuration: FollowCameraConfiguration())
        follow.update(VehicleFix(coordinate: helsinki, heading: 0, speed: 0), at: 0)
        let first = follow.state(at: 0, width: Self.width, height: Self.height)
        let slow = try #require(first)
        #expect(abs(slow.camera.zoom - 17.5) < 1e-9 && abs(slow.camera.pitch - 40) < 1e-9)
        follow.update(VehicleFix(coordinate: helsinki, heading: 0, speed: 30), at: 1)
        var fast = slow
        for frame in 1...300 {
            let next = follow.state(at: 1 + Double(frame) / 30, width: Self.width, height: Self.height)
            fast = try #require(next)
        }
        // Ten seconds later: eased all but a hair to the motorway values.
        #expect(abs(fast.camera.zoom - 15.5) < 0.02 && abs(fast.camera.pitch - 55) < 0.2, "\(fast.camera)")
        // Prediction ends 3 s after the fix: the vehicle stands 90 m on.
        let north = (fast.vehicle.coordinate.latitude - helsinki.latitude) * 111_320
        #expect(abs(north - 90) < 0.5, "\(north) m")
        #expect(!follow.isMoving(at: 20))
    }

    @Test func anOverviewShowsEveryPointWithinThePadding() throws {
        let points = [Self.east(-2000), Self.east(3000), GeoCoordinate(latitude: 60.19, longitude: 24.95)]
        let camera = try #require(Camera.fitting(points, width: Self.width, height: Self.height, padding: 40))
        let transform = MapTransform(camera: camera, width: Self.width, height: Self.height)
        for point in points {
            let screen = try #require(transform.screenPoint(for: point))
            #expect(screen.x >= 39 && screen.x <= 761 && screen.y >= 39 && screen.y <= 441, "\(screen)")
        }
        #expect(Camera.fitting([], width: 800, height: 480, padding: 40) == nil)
    }

    /// A maneuver card over the left 300 pixels and an ETA bar over the bottom 80: the vehicle's
    /// anchor (half across, three quarters down) is taken in the 500 x 400 that stay visible.
    @Test func theVehicleSitsOnTheAnchorOfWhatThePanelsLeaveVisible() throws {
        var follow = FollowCamera(configuration: FollowCameraConfiguration())
        follow.update(VehicleFix(coordinate: helsinki, heading: 30, speed: 0), at: 0)
        let covered = ScreenInsets(left: 300, bottom: 80)
        let first = follow.state(at: 0, width: Self.width, height: Self.height, covered: covered)
        let state = try #require(first)
        let transform = MapTransform(camera: state.camera, width: Self.width, height: Self.height)
        let point = try #require(transform.screenPoint(for: state.vehicle.coordinate))
        #expect(abs(point.x - (300 + 500 * 0.5)) < 1 && abs(point.y - 400 * 0.75) < 1, "vehicle at \(point)")
    }

    @Test func anOverviewFitsBesideThePanels() throws {
        let points = [Self.east(-2000), Self.east(3000), GeoCoordinate(latitude: 60.19, longitude: 24.95)]
        let covered = ScreenInsets(top: 60, right: 320)
        let camera = try #require(Camera.fitting(points, width: Self.width, height: Self.height, padding: 40, covered: covered))
        let transform = MapTransform(camera: camera, width: Self.width, height: Self.height)
        let screens = try points.map { try #require(transform.screenPoint(for: $0)) }
        for screen in screens {
            #expect(screen.x >= 39 && screen.x <= 800 - 320 - 39 && screen.y >= 60 + 39 && screen.y <= 441, "\(screen)")
        }
        // Fitted, not merely inside: the widest span fills the room between the paddings.
        let spanX = (screens.map(\.x).max() ?? 0) - (screens.map(\.x).min() ?? 0)
        let spanY = (screens.map(\.y).max() ?? 0) - (screens.map(\.y).min() ?? 0)
        #expect(abs(spanX - 400) < 2 || abs(spanY - 300) < 2, "spans \(spanX) x \(spanY)")
    }

    /// Insets a panel's layout might get wrong still leave the map room: not finite or negative
    /// counts as 0, and together they cover at most four fifths of a side.
    @Test func wrongInsetsLeaveTheMapRoom() {
        let nonsense = ScreenInsets(top: .nan, left: -50, bottom: .infinity, right: 10)
        #expect(nonsense.visibleRect(width: 800, height: 480) == ScreenRect(x: 0, y: 0, width: 790, height: 480))
        let huge = ScreenInsets(top: 400, left: 600, bottom: 400, right: 600)
        let visible = huge.visibleRect(width: 800, height: 480)
        #expect(abs(visible.width - 160) < 1e-9 && abs(visible.height - 96) < 1e-9 && abs(visible.x - 320) < 1e-9, "\(visible)")
    }

    /// A session told of a panel on the right: the buttons (and their haptic regions) move out
    /// from under it, and the followed vehicle sits in the middle of what is left.
    @Test func aSessionKeepsTheCarAndTheButtonsOutOfThePanels() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        let size = try #require(await session.stream?.encodedSize)
        let width = Double(size.width), height = Double(size.height), panel = (width * 0.375).rounded()
        await time.advance(by: 0.2)
        let before = await session.hapticRegions.map(\.rect)
        #expect(before.count == 3 && before.allSatisfy { $0.x + $0.width > width - panel / 2 }, "\(before) in \(size)")
        await session.setCoveredInsets(ScreenInsets(right: panel))
        #expect(await session.coveredInsets == ScreenInsets(right: panel))
        await session.followVehicle(FollowCameraConfiguration())
        await session.updateVehicle(VehicleFix(coordinate: helsinki, heading: 0, speed: 0))
        await time.advance(by: 0.5)
        let after = await session.hapticRegions.map(\.rect)
        #expect(after.count == 3 && after.allSatisfy { $0.x + $0.width <= width - panel && $0.x > width - 2 * panel },
                "\(after) in \(size) beside a panel of \(panel)")
        let camera = await session.camera
        let transform = MapTransform(camera: camera, width: size.width, height: size.height)
        let point = try #require(transform.screenPoint(for: helsinki))
        #expect(abs(point.x - (width - panel) / 2) < 1 && abs(point.y - height * 0.75) < 1, "vehicle at \(point) in \(size)")
        await session.stop()
        await session.close()
        await context.shutdown()
    }

    /// A session following a vehicle: frames keep coming while it drives with one fix a second,
    /// the camera keeps it on the anchor, a pan stops following, recenter resumes it.
    /// The driven part of the route ends where the car is drawn, between fixes too; a route
    /// that passes a place twice is split on the pass near the engine's progress; off the route
    /// the engine's progress stands.
    @Test func theRouteSplitsWhereTheFollowedCarIsDrawn() async throws {
        let north = { (metres: Double) in
            GeoCoordinate(latitude: Self.east(0).latitude + metres / GeoCoordinate.metresPerDegree, longitude: Self.east(0).longitude)
        }
        // East 200 m, north 100 m, back west 200 m, south 100 m, and east again over the start.
        let loop = [Self.east(0), Self.east(200), Self.east(200).offsetNorth(100), north(100), Self.east(0), Self.east(300)]
        var walked = 0.0
        let metres = loop.indices.map { index -> Double in
            if index > 0 { walked += loop[index - 1].metres(to: loop[index]) }
            return walked
        }
        let onFirstPass = ProjectionSession.distanceAlong(loop, metres: metres, to: Self.east(50), near: 40)
        let onSecondPass = ProjectionSession.distanceAlong(loop, metres: metres, to: Self.east(50), near: 600)
        #expect(onFirstPass.map { abs($0 - 50) < 0.5 } == true, "\(String(describing: onFirstPass))")
        #expect(onSecondPass.map { abs($0 - 650) < 0.5 } == true, "\(String(describing: onSecondPass))")
        #expect(ProjectionSession.distanceAlong(loop, metres: metres, to: Self.east(50).offsetNorth(50), near: 40) == nil)

        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await session.setRoute([Self.east(0), Self.east(1000)])
        await session.followVehicle(FollowCameraConfiguration())
        await session.updateVehicle(VehicleFix(coordinate: Self.east(100), heading: 90, speed: 10))
        await session.setRouteProgress(100)
        await time.advance(by: 0.5)
        let vehicle = try #require(await session.view.overlays.vehicle)
        let split = await session.view.overlays.routeProgress
        #expect(Self.metresEast(of: vehicle.coordinate) > 102, "the car is predicted ahead of its fix")
        #expect(abs(split - Self.metresEast(of: vehicle.coordinate)) < 0.5, "split \(split), car \(Self.metresEast(of: vehicle.coordinate))")
        await session.stop()
        await session.close()
        await context.shutdown()
    }

    /// A transaction's changes reach the picture together: the camera, the route and its
    /// progress set in one are all in the next picture.
    @Test func aTransactionShowsItsChangesInOnePicture() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        let before = sink.received.count
        let moved = await session.transaction { session -> Camera in
            var camera = session.camera
            camera.center = Self.east(50)
            session.setCamera(camera)
            session.setRoute([Self.east(0), Self.east(200)])
            session.setRouteProgress(50)
            return camera
        }
        await time.advance(by: 0.2)
        #expect(sink.received.count > before)
        #expect(await session.camera.center == moved.center)
        let overlays = await session.view.overlays
        #expect(overlays.routeProgress == 50 && overlays.route.count == 2)
        await session.stop()
        await session.close()
        await context.shutdown()
    }

    /// A head unit's navigation keys: zoom, tilt and heading keep following (they change the
    /// follow camera), a pan leaves it until recenter; without following they move the camera.
    @Test func mapCommandsMoveTheCameraAsTheKeysSay() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await session.followVehicle(FollowCameraConfiguration())
        await session.updateVehicle(VehicleFix(coordinate: Self.east(0), heading: 90, speed: 0))
        await time.advance(by: 3)
        let following = await session.camera
        #expect(following.bearing == 90 && following.pitch > 30)

        await session.perform(.zoomIn)
        await session.perform(.tiltToggle)
        await session.perform(.headingToggle)
        await time.advance(by: 12)
        let changed = await session.camera
        #expect(await session.followsVehicle)
        #expect(changed.zoom > following.zoom + 0.9, "\(following.zoom) -> \(changed.zoom)")
        #expect(changed.pitch < 1, "flat: \(changed.pitch)")
        #expect(abs(changed.bearing) < 1 || abs(changed.bearing - 360) < 1, "north up: \(changed.bearing)")

        // Looking to the right (the map is north up now): the centre moves east, following stops.
        await session.perform(.pan(SIMD2(1, 0)))
        await time.advance(by: 1)
        #expect(await !session.followsVehicle)
        let panned = await session.camera
        #expect(panned.center.longitude > changed.center.longitude)
        // A quarter of the picture's width.
        let quarter = Double(try #require(await session.stream).encodedSize.width) * MapCommand.panShare
        let metresPerPixel = 40_075_016.7 * cos(panned.center.latitude * .pi / 180) / (512 * pow(2, panned.zoom))
        let metres = (panned.center.longitude - changed.center.longitude) / 360 * 40_075_016.7 * cos(panned.center.latitude * .pi / 180)
        #expect(abs(metres / metresPerPixel - quarter) < 3, "moved \(metres / metresPerPixel) px of \(quarter)")

        // Free camera: rotate, tilt and zoom move it directly; recenter follows again.
        await session.perform(.rotate(clockwise: true))
        await session.perform(.tiltToggle)
        await session.perform(.zoomOut)
        await time.advance(by: 1)
        let free = await session.camera
        #expect(abs(free.bearing - (360 - MapCommand.rotationStep)) < 0.5 || abs(free.bearing + MapCommand.rotationStep) < 0.5,
                "bearing \(free.bearing)")
        #expect(abs(free.pitch - MapCommand.tiltedPitch) < 0.5 && abs(free.zoom - (panned.zoom - 1)) < 0.01)
        await session.perform(.recenter)
        #expect(await session.followsVehicle)
        let expected: [MapCommand] = [.zoomIn, .tiltToggle, .headingToggle, .pan(SIMD2(1, 0)), .rotate(clockwise: true),
                                      .tiltToggle, .zoomOut, .recenter]
        #expect(await eventually {
            log.all.compactMap { if case .commandPerformed(let command) = $0 { command } else { nil } } == expected
        })
        await session.stop()
        await session.close()
        await context.shutdown()
    }

    @Test func aSessionFollowsStopsForAPanAndRecenters() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await session.followVehicle(FollowCameraConfiguration())
        let before = sink.received.count
        for second in 0..<2 {
            await session.updateVehicle(VehicleFix(coordinate: Self.east(10 * Double(second)), heading: 90, speed: 10))
            await time.advance(by: 1)
        }
        // 15 pictures a second while the vehicle moves, with fixes only once a second.
        #expect(sink.received.count - before >= 28, "\(sink.received.count - before) pictures in 2 s")
        #expect(await session.followsVehicle)
        let camera = await session.camera
        #expect(camera.bearing == 90)

        await session.apply([.panBegan(at: SIMD2(400, 240), translation: SIMD2(30, 0)), .panEnded(translation: SIMD2(30, 0))])
        #expect(await session.followsVehicle == false)
        await session.controlTapped(.recenter)
        #expect(await session.followsVehicle)
        await session.stop()
        await session.close()
        await context.shutdown()
    }
}

extension GeoCoordinate {
    func offsetNorth(_ metres: Double) -> GeoCoordinate {
        GeoCoordinate(latitude: latitude + metres / GeoCoordinate.metresPerDegree, longitude: longitude)
    }
}

/// An engine's own style at runtime, and its GeoJSON through the session.
@Suite struct SessionStyleTests {
    static let magenta = """
    {"version": 8, "sources": {"openmaptiles": {"type": "vector", "url": "x"}, "pins": {"type": "geojson"}},
     "layers": [{"id": "bg", "type": "background", "paint": {"background-color": "#ff00ff"}},
                {"id": "pins", "type": "circle", "source": "pins", "paint": {"circle-color": "#00ff00", "circle-radius": 30}}]}
    """

    @Test func anEngineStyleAndItsGeoJSONShowInTheNextPicture() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await session.setStyles(day: try Style(data: Data(Self.magenta.utf8)))
        await time.advance(by: 0.2)
        let styled = try #require(await session.snapshot())
        let corner = styled.pixel(x: 10, y: 10)
        #expect(corner.x > 240 && corner.y < 20 && corner.z > 240, "\(corner)")

        let centre = await session.camera.center
        try await session.setGeoJSON(GeoJSONData(features: [GeoJSONFeature(geometry: .point(centre))]), forSource: "pins")
        await time.advance(by: 0.2)
        let pinned = try #require(await session.snapshot())
        let middle = pinned.pixel(x: pinned.width / 2, y: pinned.height / 2)
        #expect(middle.y > 240 && middle.x < 20, "\(middle)")
        await #expect(throws: ProjectionSessionError.self) {
            try await session.setGeoJSON(.empty, forSource: "nope")
        }
        await session.stop()
        await session.close()
        await context.shutdown()
    }
}

extension SessionStyleTests {
    /// An engine adds a GeoJSON source and a layer to the bundled day style at runtime, fills
    /// the source, and sees it in the next picture; a failing edit changes nothing.
    @Test func anEngineAddsASourceAndALayerAtRuntime() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        try await session.editStyles { style in
            try style.addSource(id: "results", json: Data(#"{"type": "geojson"}"#.utf8))
            try style.addLayer(json: Data(#"""
                {"id": "results", "type": "circle", "source": "results",
                 "paint": {"circle-color": "#00ff00", "circle-radius": 30}}
                """#.utf8))
        }
        let centre = await session.camera.center
        try await session.setGeoJSON(GeoJSONData(features: [GeoJSONFeature(geometry: .point(centre))]), forSource: "results")
        await time.advance(by: 0.2)
        let shown = try #require(await session.snapshot())
        let middle = shown.pixel(x: shown.width / 2, y: shown.height / 2)
        #expect(middle.y > 240 && middle.x < 20 && middle.z < 20, "\(middle)")

        // A layer on a source the style lacks: an error, and the layer added above stays.
        await #expect(throws: StyleError.self) {
            try await session.editStyles { style in
                try style.addLayer(json: Data(#"{"id": "x", "type": "line", "source": "missing"}"#.utf8))
            }
        }
        try await session.editStyles { style in
            style.removeLayer(id: "results")
            try style.removeSource(id: "results")
        }
        await time.advance(by: 0.2)
        let removed = try #require(await session.snapshot())
        let after = removed.pixel(x: removed.width / 2, y: removed.height / 2)
        #expect(!(after.y > 240 && after.x < 20 && after.z < 20), "\(after)")
        await session.stop()
        await session.close()
        await context.shutdown()
    }
}

/// The session's own GeoJSON: maneuver arrow, destination and alternatives drawn by the style.
@Suite struct NavigationOverlayTests {
    @Test func aRouteSliceStartsAndEndsWhereAsked() throws {
        let route = [FollowCameraTests.east(0), FollowCameraTests.east(100), FollowCameraTests.east(300)]
        let slice = try #require(ProjectionSession.slice(of: route, from: 60, to: 125))
        #expect(slice.count == 3)
        #expect(abs(FollowCameraTests.metresEast(of: slice[0]) - 60) < 0.1)
        #expect(abs(FollowCameraTests.metresEast(of: slice[1]) - 100) < 0.1)
        #expect(abs(FollowCameraTests.metresEast(of: slice[2]) - 125) < 0.1)
        #expect(ProjectionSession.slice(of: route, from: 400, to: 500) == nil)
        #expect(ProjectionSession.slice(of: route, from: 50, to: 40) == nil)
    }

    /// A maneuver at the centre of the view draws the white arrow there; the destination pin
    /// draws its red; alternatives draw under the route. All from the day style's layers.
    @Test func maneuverDestinationAndAlternativesAreDrawn() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, _) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        let centre = await session.camera.center
        await session.setCamera(Camera(center: centre, zoom: 17))
        let perDegree = 111_320 * cos(centre.latitude * .pi / 180)
        func east(_ metres: Double) -> GeoCoordinate {
            GeoCoordinate(latitude: centre.latitude, longitude: centre.longitude + metres / perDegree)
        }
        await session.setRoute([east(-300), east(300)])
        await time.advance(by: 0.2)
        let before = try #require(await session.snapshot())
        await session.setManeuver(atMetres: 300)
        // The picture is 320x192 here, about 0.3 m a pixel: all of it within sight.
        await session.setDestination(east(-30))
        await session.setAlternatives([[GeoCoordinate(latitude: centre.latitude + 0.00012, longitude: centre.longitude - 0.003),
                                        GeoCoordinate(latitude: centre.latitude + 0.00012, longitude: centre.longitude + 0.003)]])
        await time.advance(by: 0.2)
        let after = try #require(await session.snapshot())
        func count(_ image: RGBAImage, _ test: (SIMD4<UInt8>) -> Bool) -> Int {
            var count = 0
            for y in 0..<image.height { for x in 0..<image.width where test(image.pixel(x: x, y: y)) { count += 1 } }
            return count
        }
        let white: (SIMD4<UInt8>) -> Bool = { $0.x > 250 && $0.y > 250 && $0.z > 250 }
        let pinRed: (SIMD4<UInt8>) -> Bool = { abs(Int($0.x) - 204) < 20 && $0.y < 60 && $0.z < 70 }
        let alternative: (SIMD4<UInt8>) -> Bool = { abs(Int($0.x) - 0xb7) < 12 && abs(Int($0.y) - 0xc6) < 12 && abs(Int($0.z) - 0xda) < 12 }
        #expect(count(after, white) > count(before, white) + 100)
        #expect(count(after, pinRed) > 100 && count(before, pinRed) == 0)
        #expect(count(after, alternative) > count(before, alternative) + 100)
        // A tap on the alternative's line (45 px above the centre) picks it; one beside it does not.
        let log = EventLog(session)
        let size = after.width, middle = Double(after.height) / 2
        let alternativeY = middle - 0.00012 * 111_320 / 0.3
        await session.apply([.tap(at: SIMD2(Double(size) / 4, alternativeY))])
        await session.apply([.tap(at: SIMD2(Double(size) / 4, alternativeY + 40))])
        #expect(await eventually { log.all.contains { if case .alternativeTapped(index: 0) = $0 { true } else { false } } })
        #expect(await eventually { log.all.contains { if case .mapTapped = $0 { true } else { false } } })
        #expect(log.all.filter { if case .alternativeTapped = $0 { true } else { false } }.count == 1)
        // The head unit's haptic layer selects the alternative's region: the same event.
        let region = HapticRegionSet.regionID(forAlternative: 0)
        #expect(await session.hapticRegions.contains { $0.id == region })
        await session.selectHapticRegion(id: region)
        #expect(await eventually { log.all.filter { if case .alternativeTapped(index: 0) = $0 { true } else { false } }.count == 2 })
        await session.setManeuver(atMetres: nil)
        await session.setDestination(nil)
        await time.advance(by: 0.2)
        let cleared = try #require(await session.snapshot())
        #expect(count(cleared, pinRed) == 0)
        await session.stop()
        await session.close()
        await context.shutdown()
    }
}

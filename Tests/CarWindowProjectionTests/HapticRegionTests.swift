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

@Suite("Haptic regions")
struct HapticRegionTests {
    private func rect(_ x: Double, _ y: Double, _ width: Double, _ height: Double) -> ScreenRect {
        ScreenRect(x: x, y: y, width: width, height: height)
    }

    @Test("The same set twice is sent once")
    func dedupe() {
        var set = HapticRegionSet(declaredRegions: [HapticRegion(id: 7, rect: rect(10, 20, 30, 40))])
        #expect(set.update(controls: [], transform: nil) == [HapticRegion(id: 7, rect: rect(10, 20, 30, 40))])
        #expect(set.update(controls: [], transform: nil) == nil)
        // Order of declaration does not matter, only the set.
        set.declaredRegions.append(HapticRegion(id: 3, rect: rect(0, 0, 5, 5)))
        #expect(set.update(controls: [], transform: nil)?.map(\.id) == [3, 7])
        set.declaredRegions.reverse()
        #expect(set.update(controls: [], transform: nil) == nil)
        set.resend()
        #expect(set.update(controls: [], transform: nil)?.count == 2)
    }

    @Test("A display scale of 2 doubles every rect; hit tests stay in rendered pixels")
    func scale() {
        var set = HapticRegionSet(declaredRegions: [HapticRegion(id: 1, rect: rect(10, 20, 30, 40))])
        #expect(set.update(controls: [], transform: nil, scale: 2) == [HapticRegion(id: 1, rect: rect(20, 40, 60, 80))])
        #expect(set.region(at: SIMD2(15, 25))?.id == 1)
        #expect(set.region(at: SIMD2(45, 65)) == nil)
        // A new scale alone is a change.
        #expect(set.update(controls: [], transform: nil, scale: 1)?.first?.rect == rect(10, 20, 30, 40))
        // Out of SDL's 1...10 range: clamped.
        #expect(set.update(controls: [], transform: nil, scale: 50)?.first?.rect == rect(100, 200, 300, 400))
    }

    @Test("Removing every region sends one empty set")
    func clear() {
        var set = HapticRegionSet(declaredRegions: [HapticRegion(id: 1, rect: rect(0, 0, 10, 10))])
        #expect(set.update(controls: [], transform: nil)?.count == 1)
        set.declaredRegions = []
        #expect(set.update(controls: [], transform: nil) == [])
        #expect(set.update(controls: [], transform: nil) == nil)
        #expect(set.region(at: SIMD2(5, 5)) == nil)
    }

    @Test("1001 regions are cut to the RPC's 1000")
    func cap() {
        let declared = (0...1000).map { HapticRegion(id: $0, rect: rect(Double($0 % 40) * 10, 0, 10, 10)) }
        var set = HapticRegionSet(declaredRegions: declared)
        let sent = set.update(controls: [], transform: nil)
        #expect(sent?.count == 1000)
        #expect(sent?.last?.id == 999)
        #expect(set.regions.count == 1000)
    }

    @Test("Invalid, reserved and duplicate ids and empty or non-finite rects are dropped")
    func invalidRegionsDropped() {
        var set = HapticRegionSet(declaredRegions: [
            HapticRegion(id: -1, rect: rect(0, 0, 10, 10)),
            HapticRegion(id: 2_000_000_001, rect: rect(0, 0, 10, 10)),
            HapticRegion(id: HapticRegionSet.regionID(for: .recenter), rect: rect(0, 0, 10, 10)),
            HapticRegion(id: 4, rect: rect(.nan, 0, 10, 10)),
            HapticRegion(id: 5, rect: rect(0, 0, 0, 10)),
            HapticRegion(id: 6, rect: rect(0, 0, 10, 10)),
            HapticRegion(id: 6, rect: rect(50, 50, 10, 10)),
        ])
        #expect(set.update(controls: [], transform: nil) == [HapticRegion(id: 6, rect: rect(0, 0, 10, 10))])
    }

    @Test("Overlaps: the smallest containing region wins, equal sizes go to the lowest id")
    func hitTests() {
        var set = HapticRegionSet(declaredRegions: [
            HapticRegion(id: 5, rect: rect(0, 0, 100, 100)),
            HapticRegion(id: 7, rect: rect(10, 10, 20, 20)),
            HapticRegion(id: 12, rect: rect(60, 60, 30, 30)),
            HapticRegion(id: 11, rect: rect(70, 70, 30, 30)),
        ])
        _ = set.update(controls: [], transform: nil)
        #expect(set.region(at: SIMD2(15, 15))?.id == 7)
        #expect(set.region(at: SIMD2(50, 50))?.id == 5)
        #expect(set.region(at: SIMD2(80, 80))?.id == 11)
        #expect(set.region(at: SIMD2(65, 65))?.id == 12)
        #expect(set.region(at: SIMD2(150, 150)) == nil)
        #expect(set.region(at: SIMD2(100, 100))?.id == 11) // edges count as inside
        #expect(set.selectionPoint(for: 7) == SIMD2(20, 20))
        #expect(set.selectionPoint(for: 99) == nil)
    }

    @Test("The renderer's controls become regions whose ids survive a resize")
    func controls() throws {
        var set = HapticRegionSet(declaredRegions: [HapticRegion(id: 1, rect: rect(0, 0, 50, 50))])
        let small = ScreenOverlays.controlLayout(width: 400, height: 240)
        let large = ScreenOverlays.controlLayout(width: 800, height: 480)
        let first = set.update(controls: small, transform: nil)
        let second = set.update(controls: large, transform: nil)
        let expectedIDs = [1] + MapControl.Kind.allCases.map { HapticRegionSet.regionID(for: $0) }
        #expect(first?.map(\.id) == expectedIDs)
        #expect(second?.map(\.id) == expectedIDs)
        #expect(first != nil && second != nil && first != second)
        let zoomIn = try #require(large.first { $0.kind == .zoomIn })
        #expect(set.region(at: zoomIn.rect.center)?.id == HapticRegionSet.regionID(for: .zoomIn))
        #expect(set.selectionPoint(for: HapticRegionSet.regionID(for: .zoomIn)) == zoomIn.rect.center)
    }

    /// With pitch and bearing 0, screen x is linear in longitude: a camera moved east by
    /// `50 * 360 / (512 * 2^16)` degrees at zoom 16 moves every point 50 px to the left
    /// (the world is 512 * 2^zoom px wide, Web Mercator x = (lon + 180) / 360).
    @Test("A feature region follows the map when the camera moves, and leaves with it")
    func featureFollowsMap() throws {
        let anchor = GeoCoordinate(latitude: 60.1699, longitude: 24.9415)
        var set = HapticRegionSet(mapFeatures: [.init(id: 42, anchor: anchor, size: SIMD2(40, 40))])
        var camera = Camera(center: anchor, zoom: 16)
        let centred = set.update(controls: [], transform: MapTransform(camera: camera, width: 400, height: 240))
        #expect(centred == [HapticRegion(id: 42, rect: rect(180, 100, 40, 40))])

        camera.center.longitude += 50 * 360 / (512 * pow(2, 16))
        let moved = set.update(controls: [], transform: MapTransform(camera: camera, width: 400, height: 240))
        #expect(moved == [HapticRegion(id: 42, rect: rect(130, 100, 40, 40))])
        let hit = try #require(set.selectionPoint(for: 42))
        #expect(abs(hit.x - 150) < 1e-6 && abs(hit.y - 120) < 1e-6)

        // Panned so the anchor sits 10 px left of the screen edge: the box is clipped to 10 px.
        camera.center.longitude = anchor.longitude + 210 * 360 / (512 * pow(2, 16))
        let clipped = set.update(controls: [], transform: MapTransform(camera: camera, width: 400, height: 240))
        #expect(clipped == [HapticRegion(id: 42, rect: rect(0, 100, 10, 40))])

        // Off screen: gone, which clears the head unit's regions.
        camera.center.longitude = anchor.longitude + 0.01
        #expect(set.update(controls: [], transform: MapTransform(camera: camera, width: 400, height: 240)) == [])
    }

    @Test("An alternative route gets a region half way along its part on the screen")
    func alternativeRouteRegions() throws {
        let centre = GeoCoordinate(latitude: 60.1699, longitude: 24.9415)
        let degreesPerPixel = 360 / (512 * Double(1 << 16))
        func at(_ pixelsEast: Double) -> GeoCoordinate {
            GeoCoordinate(latitude: centre.latitude, longitude: centre.longitude + pixelsEast * degreesPerPixel)
        }
        var set = HapticRegionSet()
        set.alternativeRoutes = [[at(-1000), at(1000)], [at(0), at(500), at(5000)], [at(3000), at(4000)]]
        let transform = MapTransform(camera: Camera(center: centre, zoom: 16), width: 400, height: 240)
        let update = set.update(controls: [], transform: transform)
        let regions = try #require(update)
        let first = HapticRegionSet.regionID(forAlternative: 0), second = HapticRegionSet.regionID(forAlternative: 1)
        // Across the whole screen: the middle. From the centre rightwards: half way to the edge.
        // Wholly off screen: none.
        #expect(regions.map(\.id) == [first, second])
        #expect(abs(regions[0].rect.x - 176) < 1e-6 && abs(regions[0].rect.y - 96) < 1e-6 && regions[0].rect.width == 48)
        #expect(abs(regions[1].rect.x - 276) < 1e-6)
        #expect(HapticRegionSet.alternativeIndex(ofRegion: second) == 1)
        #expect(HapticRegionSet.alternativeIndex(ofRegion: HapticRegionSet.regionID(for: .zoomIn)) == nil)
        #expect(HapticRegionSet.alternativeIndex(ofRegion: 7) == nil)
        // The engine may not declare ids of the block.
        set.declaredRegions = [HapticRegion(id: first, rect: rect(0, 0, 10, 10))]
        #expect(set.update(controls: [], transform: transform)?.count ?? 2 == 2)
    }

    @Test("Gestures become map actions; taps on regions are region events")
    func mapActions() {
        var set = HapticRegionSet(declaredRegions: [HapticRegion(id: 9, rect: rect(0, 0, 40, 40))])
        _ = set.update(controls: [], transform: nil)
        let gestures: [Gesture] = [
            .tap(at: SIMD2(10, 10)),
            .tap(at: SIMD2(100, 100)),
            .doubleTap(at: SIMD2(200, 100)),
            .doubleTap(at: SIMD2(20, 20)),
            .panBegan(at: SIMD2(50, 50), translation: SIMD2(9, 0)),
            .panChanged(translation: SIMD2(3, -4)),
            .panEnded(translation: .zero),
            .pinchBegan(center: SIMD2(60, 60)),
            .pinchChanged(scale: 2, center: SIMD2(60, 60)),
            .pinchEnded(scale: 0.5, center: SIMD2(61, 60)),
            .pinchCancelled,
        ]
        #expect(MapAction.actions(for: gestures, regions: set) == [
            .regionTapped(id: 9),
            .mapTapped(at: SIMD2(100, 100)),
            .zoom(by: 1, around: SIMD2(200, 100)),
            .regionTapped(id: 9), .regionTapped(id: 9),
            .move(by: SIMD2(9, 0)),
            .move(by: SIMD2(3, -4)),
            .zoom(by: 1, around: SIMD2(60, 60)),
            .zoom(by: -1, around: SIMD2(61, 60)),
        ])
        #expect(MapAction.actions(for: gestures, regions: set, mapGesturesEnabled: false) == [
            .regionTapped(id: 9),
            .mapTapped(at: SIMD2(100, 100)),
            .regionTapped(id: 9), .regionTapped(id: 9),
        ])
    }
}

/// The app's own focus, for head units with neither touch nor haptic data.
@Suite struct AppFocusTests {
    @Test func theFocusMovesOverTheControlsIsDrawnAndSelects() async throws {
        let context = try await RenderContext()
        let time = ManualTime()
        let sink = RecordingSink(clock: time.clock)
        let (session, log) = try await ProjectionSessionTests.streaming(sink, context: context, time: time)
        await time.advance(by: 0.2)
        let zoomIn = HapticRegionSet.regionID(for: .zoomIn), zoomOut = HapticRegionSet.regionID(for: .zoomOut)
        let recenter = HapticRegionSet.regionID(for: .recenter)
        #expect(await session.focusedRegionID == nil)

        await session.setFocusEnabled(true)
        // Reading order: the column of buttons from the top.
        #expect(await session.focusedRegionID == zoomIn)
        await session.moveFocus(.down)
        #expect(await session.focusedRegionID == zoomOut)
        await session.moveFocus(.down)
        #expect(await session.focusedRegionID == recenter)
        await session.moveFocus(.down)
        #expect(await session.focusedRegionID == recenter, "nothing below: the focus stays")
        await session.moveFocus(.left)
        #expect(await session.focusedRegionID == recenter, "nothing to the left")
        await session.moveFocus(.next)
        #expect(await session.focusedRegionID == zoomIn, "next wraps round")
        await session.moveFocus(.previous)
        #expect(await session.focusedRegionID == recenter)
        await session.moveFocus(.up)
        #expect(await session.focusedRegionID == zoomOut)

        // The ring is in the picture, around the focused button: blue by day.
        await time.advance(by: 0.2)
        let region = try #require(await session.hapticRegions.first { $0.id == zoomOut })
        let image = try #require(await session.snapshot())
        let ringX = Int((region.rect.x - ScreenOverlays.focusRingGap).rounded())
        let ringY = Int(region.rect.center.y.rounded())
        let ring = image.pixel(x: ringX, y: ringY)
        #expect(ring.z > 200 && ring.x < 80, "focus ring pixel \(ring)")
        let above = image.pixel(x: ringX, y: Int((region.rect.y - 20).rounded()))
        #expect(above != ring, "the ring is around the button only")

        // Selecting acts as a tap on the button.
        let zoom = await session.camera.zoom
        await session.activateFocus()
        #expect(await eventually { log.all.contains(.controlTapped(.zoomOut)) })
        await time.advance(by: 1)
        #expect(await session.camera.zoom < zoom - 0.99)
        #expect(log.all.contains(.focusChanged(regionID: zoomIn)))

        // Off: no ring, no focus.
        await session.setFocusEnabled(false)
        await time.advance(by: 0.2)
        #expect(await session.focusedRegionID == nil)
        let plain = try #require(await session.snapshot())
        #expect(plain.pixel(x: ringX, y: ringY) != ring, "the ring is gone")
        await session.stop()
        await session.close()
        await context.shutdown()
    }

    @Test func theNearestRegionInADirectionWins() {
        func region(_ id: Int, _ x: Double, _ y: Double) -> HapticRegion {
            HapticRegion(id: id, rect: ScreenRect(x: x, y: y, width: 20, height: 20))
        }
        let from = ScreenRect(x: 100, y: 100, width: 20, height: 20)
        let regions = [region(1, 200, 100), region(2, 140, 160), region(3, 100, 300), region(4, 40, 100)]
        #expect(ProjectionSession.nearest(from: from, toward: .right, among: regions)?.id == 1)
        // Straight down beats closer but diagonal.
        #expect(ProjectionSession.nearest(from: from, toward: .down, among: [region(2, 200, 160), region(3, 100, 300)])?.id == 3)
        #expect(ProjectionSession.nearest(from: from, toward: .left, among: regions)?.id == 4)
        #expect(ProjectionSession.nearest(from: from, toward: .up, among: regions) == nil)
    }
}

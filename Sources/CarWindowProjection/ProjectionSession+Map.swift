import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowMap

/// What the navigation engine changes. Each change is drawn at the next frame slot; values that
/// cannot be drawn (not finite, say) are ignored with a warning event and nothing else changes.
extension ProjectionSession {
    /// The camera of the last frame, or of the next one when nothing was drawn yet.
    public var camera: Camera { view.camera }

    /// Points the map at `camera`, at once or animated from the camera on screen.
    public func setCamera(_ camera: Camera, transition: CameraTransition = .immediate) {
        // Checked one by one: an engine calls this every tick, and an array of the values
        // was an allocation per call.
        guard camera.center.latitude.isFinite, camera.center.longitude.isFinite, camera.zoom.isFinite,
              camera.bearing.isFinite, camera.pitch.isFinite else {
            emit(.warning(.cameraIgnored(camera)))
            return
        }
        switch transition {
        case .immediate:
            // An engine that sets the camera on every tick of its own costs nothing while still.
            if view.animation == nil, view.glide == nil, camera.clamped == view.camera { return }
            view.stopCameraMotion()
            view.camera = camera.clamped
        case .animated(let duration):
            guard duration > .zero else {
                view.stopCameraMotion()
                view.camera = camera.clamped
                break
            }
            view.glide = nil
            view.animation = CameraAnimation(from: view.camera, to: camera.clamped, start: clock.now,
                                        duration: min(duration, CameraTransition.longestAnimation).inSeconds)
        }
        changed()
    }

    /// Shows the vehicle at a position and heading (degrees clockwise from north), or hides it.
    public func setVehicle(_ vehicle: VehicleMarker?) {
        if let vehicle {
            guard vehicle.coordinate.latitude.isFinite, vehicle.coordinate.longitude.isFinite, vehicle.heading.isFinite else {
                emit(.warning(.vehicleIgnored(vehicle)))
                return
            }
        }
        guard view.overlays.vehicle != vehicle else { return }
        view.overlays.vehicle = vehicle
        changed()
    }

    /// Makes several changes as one: camera, vehicle, route and progress set in `changes` all
    /// show in the same picture, never some of them without the others. The session is an
    /// actor and its frame loop runs on it, so no picture is drawn while `changes` runs.
    ///
    /// ```swift
    /// await session.transaction { session in
    ///     session.setRoute(remaining)
    ///     session.setRouteProgress(0)
    ///     session.setCamera(camera)
    /// }
    /// ```
    public func transaction<Result: Sendable>(_ changes: @Sendable (isolated ProjectionSession) throws -> Result) rethrows -> Result {
        try changes(self)
    }

    /// Takes a position fix of the vehicle (GNSS or map-matched, typically once a second).
    /// Between fixes the vehicle is predicted along its heading at its speed and drawn moving
    /// at the stream's frame rate; a fix that disagrees is blended in, never jumping back. While
    /// following (``followVehicle(_:)``) the camera moves with it. A fix with a coordinate, heading
    /// or speed that is not finite, or a negative speed, is ignored with a warning.
    public func updateVehicle(_ fix: VehicleFix) {
        guard fix.isUsable else {
            emit(.warning(.vehicleIgnored(VehicleMarker(coordinate: fix.coordinate, heading: fix.heading))))
            return
        }
        if view.follow == nil { view.follow = FollowCamera(configuration: FollowCameraConfiguration()) }
        view.follow?.update(fix, at: clock.now)
        changed()
    }

    /// Makes the camera follow the vehicle given by ``updateVehicle(_:)`` as `configuration`
    /// says (course-up or north-up, where on the screen, zoom and tilt by speed); nil stops
    /// following and leaves the camera where it is. The camera, the vehicle and the picture
    /// come from one computation per frame, so they never show out of step.
    public func followVehicle(_ configuration: FollowCameraConfiguration?) {
        guard let configuration else {
            view.isFollowing = false
            return
        }
        if view.follow == nil { view.follow = FollowCamera(configuration: configuration) }
        view.follow?.configuration = configuration
        view.isFollowing = true
        view.stopCameraMotion()
        changed()
    }

    /// Whether the camera follows the vehicle now. A pan or pinch by the user stops it (and
    /// emits ``ProjectionSessionEvent/cameraMovedByUser(_:)``); the recenter button and
    /// ``resumeFollowing()`` start it again.
    public var followsVehicle: Bool { view.isFollowing }

    /// Follows the vehicle again after an overview or the user's own moves, when
    /// ``followVehicle(_:)`` set a configuration.
    public func resumeFollowing() {
        guard view.follow != nil, !view.isFollowing else { return }
        view.isFollowing = true
        view.stopCameraMotion()
        changed()
    }

    /// Shows `coordinates` whole (the remaining route, say), north up and flat, with `padding`
    /// rendered pixels free on each side of what ``coveredInsets`` leaves visible, animated over
    /// `duration`; following stops until ``resumeFollowing()``. Coordinates that are not finite
    /// are left out; none left, or no stream to size the view by, changes nothing.
    public func showOverview(of coordinates: [GeoCoordinate], padding: Double = 40,
                             duration: Duration = .milliseconds(800)) {
        guard let size = stream?.encodedSize,
              let camera = Camera.fitting(coordinates, width: size.width, height: size.height,
                                          padding: padding.isFinite ? max(padding, 0) : 40,
                                          covered: view.overlays.coveredInsets) else { return }
        view.isFollowing = false
        setCamera(camera, transition: .animated(duration: duration))
    }

    /// The edges of the picture the engine's own panels cover (a maneuver card, an ETA bar), in
    /// rendered pixels: the followed vehicle's anchor, ``showOverview(of:padding:duration:)``,
    /// the zoom and recenter buttons and the credit line all keep to the rest. Zero by default.
    public var coveredInsets: ScreenInsets { view.overlays.coveredInsets }

    /// Tells the map which edges of the picture the engine's own panels cover, in rendered
    /// pixels (the stream's size, as ``ProjectionSessionEvent/streamStarted(_:_:)`` gives it);
    /// call it again whenever a panel comes, goes or resizes, or the stream's size changes. The
    /// car then stays in sight above a maneuver card, an overview fits beside it, and the buttons
    /// and the credit line move out from under it. Values that are not finite or are negative
    /// count as 0, and however large, the insets leave at least a fifth of each side of the
    /// picture to the map.
    public func setCoveredInsets(_ insets: ScreenInsets) {
        func clean(_ value: Double) -> Double { value.isFinite ? max(value, 0) : 0 }
        let cleaned = ScreenInsets(top: clean(insets.top), left: clean(insets.left), bottom: clean(insets.bottom),
                                   right: clean(insets.right))
        guard cleaned != view.overlays.coveredInsets else { return }
        view.overlays.coveredInsets = cleaned
        changed()
    }

    /// Puts the followed vehicle (and, while following, the camera) where they are at `now`;
    /// keeps frames coming while the vehicle moves.
    func followVehicle(at now: Double, width: Int, height: Int) {
        guard var model = view.follow, model.hasFix,
              let state = model.state(at: now, width: width, height: height, covered: view.overlays.coveredInsets) else { return }
        let moving = model.isMoving(at: now)
        view.follow = model
        view.overlays.vehicle = state.vehicle
        if let along = Self.distanceAlong(view.overlays.route, metres: view.routeMetres, to: state.vehicle.coordinate,
                                          near: view.engineRouteProgress) {
            view.overlays.routeProgress = along
        }
        if view.isFollowing {
            view.stopCameraMotion()
            view.camera = state.camera
        }
        if moving { pacer.markChanged() }
    }

    /// Shows the route (first point first); empty hides it. Points that are not finite or lie
    /// outside the globe are dropped with a warning. A new route starts with nothing driven:
    /// move ``setRouteProgress(_:)`` along it as the car drives, instead of sending the
    /// remaining route again, which costs the renderer a new mesh each time.
    public func setRoute(_ route: [GeoCoordinate]) {
        // Engines send the route often; a valid one is taken as it is, without a copy.
        let valid = route.allSatisfy(Self.isDrawable) ? route : route.filter(Self.isDrawable)
        if valid.count != route.count {
            emit(.warning(.routePointsDropped(dropped: route.count - valid.count, of: route.count)))
        }
        let drawn = valid.count >= 2 ? valid : []
        if drawn.isEmpty, !valid.isEmpty {
            emit(.warning(.routeHidden(validPoints: valid.count)))
        }
        guard view.overlays.route != drawn else { return }
        view.overlays.route = drawn
        // The traffic of the old route does not fit the new one.
        view.overlays.routeCongestion = []
        view.overlays.routeProgress = 0
        view.engineRouteProgress = 0
        var walked = 0.0
        view.routeMetres = drawn.indices.map { index in
            if index > 0 { walked += drawn[index - 1].metres(to: drawn[index]) }
            return walked
        }
        changed()
    }

    /// Hides the first `metres` of the route, measured along it from its first point: the part
    /// already driven. The route is trimmed as it is drawn, so this costs no geometry work;
    /// past the route's end hides all of it. Metres that are negative or not finite are ignored
    /// with a warning. While a vehicle from ``updateVehicle(_:)`` is shown on the route, the
    /// split is drawn where the vehicle is drawn, between fixes too, so the car never sits on
    /// the remaining route or ahead of it; `metres` says near which part of the route to look
    /// (a route that passes a place twice).
    public func setRouteProgress(_ metres: Double) {
        guard metres.isFinite, metres >= 0 else {
            emit(.warning(.routeProgressIgnored(metres: metres)))
            return
        }
        view.engineRouteProgress = metres
        guard view.overlays.routeProgress != metres else { return }
        view.overlays.routeProgress = metres
        changed()
    }

    /// Shows the traffic along the route: stretches by metres from its first point, each with
    /// its `CongestionLevel`, as an engine's routing gives them (a Directions API's per-segment
    /// congestion, measured along the route). The style's route layers colour each stretch by
    /// the `congestion` property (`moderate`, `heavy`...; the bundled styles in orange, red and
    /// dark red); the rest of the route is `unknown`. Empty clears it, and so does a new route.
    /// Stretches with ends that are not finite or not in order are left out with a warning;
    /// overlapping ones go to the one that starts first. Costs no geometry work: the colours are
    /// chosen as the route is drawn.
    public func setRouteCongestion(_ stretches: [RouteCongestion]) {
        let (kept, dropped) = RouteCongestion.normalized(stretches)
        if dropped > 0 { emit(.warning(.routeCongestionDropped(dropped: dropped, of: stretches.count))) }
        guard view.overlays.routeCongestion != kept else { return }
        view.overlays.routeCongestion = kept
        changed()
    }

    /// Shows or hides the zoom and recenter buttons (and their haptic regions).
    public func setControlsVisible(_ visible: Bool) {
        guard view.overlays.showsControls != visible else { return }
        view.overlays.showsControls = visible
        changed()
    }

    /// Switches between the day and night styles while streaming. The new style's tiles are
    /// laid out before it is shown, so the head unit never sees a half-drawn map. Calls take
    /// effect in the order they were made, so the last one wins; one that a later call overtook
    /// while it waited its turn is skipped.
    public func setAppearance(_ appearance: MapAppearance) async {
        appearanceCalls += 1
        let call = appearanceCalls
        await oneAtATime {
            guard call == appearanceCalls, appearance != self.appearance else { return }
            self.appearance = appearance
            if let renderer {
                await renderer.switchStyle(to: drawnStyle(for: appearance))
            }
            changed()
        }
    }

    /// Shows the map's labels in `language` where the data names places in it (`name:sv`,
    /// `name:ja`... in OpenMapTiles tiles), falling back name by name to what the style shows;
    /// nil shows the style's own names again. An engine passes its user's language; an
    /// `SDLProjectionLink` passes the head unit's display language unless told not to. The new
    /// labels are laid out before they are shown, as for a day/night switch, and stay across
    /// switches, ``setStyles(day:night:)`` and ``editStyles(_:)``. Calls take effect in order;
    /// one that a later call overtook while it waited is skipped.
    public func setLabelLanguage(_ language: LabelLanguage?) async {
        languageCalls += 1
        let call = languageCalls
        await oneAtATime {
            guard call == languageCalls, language != labelLanguage else { return }
            labelLanguage = language
            if let renderer {
                await renderer.switchStyle(to: drawnStyle(for: appearance))
            }
            changed()
        }
    }

    /// Replaces the features of the style's GeoJSON source `id`: the engine's search results,
    /// traffic, alternatives or anything else its style draws from a `geojson` source. The next
    /// picture shows them; they stay across day and night switches and restarts of the stream.
    ///
    /// - Throws: ``ProjectionSessionError/renderer(_:)`` with
    ///   `MapRenderError.unknownGeoJSONSource` when the style has no GeoJSON source `id`.
    public func setGeoJSON(_ data: GeoJSONData, forSource id: String) async throws(ProjectionSessionError) {
        let style = style(for: appearance)
        guard style.sources[id]?.type == .geojson else {
            throw .renderer(.unknownGeoJSONSource(id: id, known: style.sources.filter { $0.value.type == .geojson }
                .keys.sorted()))
        }
        geojson[id] = data
        if let renderer {
            do {
                try await renderer.setGeoJSON(data, forSource: id)
            } catch {
                throw .renderer(error)
            }
        }
        changed()
    }

    /// Adds the engine's own GL drawing to the map as a layer (a 3D vehicle model, a
    /// lane-guidance overlay), below the style layer `layerID` or, when nil, above every style
    /// layer and under the route overlay, labels, vehicle marker and controls. A layer of the
    /// same id is replaced. It stays across day and night switches, style changes (above the
    /// style's layers when a new style lacks `layerID`) and restarts of the stream; the next
    /// picture shows it, and ``invalidate()`` redraws it when its own content changes.
    ///
    /// - Throws: ``ProjectionSessionError/renderer(_:)`` with `MapRenderError.unknownLayer`
    ///   when the style has no layer `layerID`;
    ///   ``ProjectionSessionError/engineContent(_:)`` when the session shows no map.
    public func addCustomLayer(_ layer: CustomLayer, below layerID: String? = nil) async throws(ProjectionSessionError) {
        guard case .map = configuration.content else {
            let shown = if case .engine(let content) = configuration.content { content.name } else { "the map" }
            throw .engineContent(.wrongContent(operation: "add a custom layer to the map", content: shown))
        }
        let style = style(for: appearance)
        if let layerID, !style.layers.contains(where: { $0.id == layerID }) {
            throw .renderer(.unknownLayer(id: layerID, known: style.layers.map(\.id)))
        }
        customLayers.removeAll { $0.layer.id == layer.id }
        customLayers.append((layer, layerID))
        if let renderer {
            // Its style may be a moment behind the session's (a switch under way): then above.
            do {
                try await renderer.addCustomLayer(layer, below: layerID)
            } catch {
                try? await renderer.addCustomLayer(layer, below: nil)
            }
        }
        changed()
    }

    /// Removes the custom layer `id`, if there is one.
    public func removeCustomLayer(id: String) async {
        let before = customLayers.count
        customLayers.removeAll { $0.layer.id == id }
        guard customLayers.count != before else { return }
        await renderer?.removeCustomLayer(id: id)
        changed()
    }

    /// Replaces the styles the map is drawn with: any MapLibre style (read with
    /// `Style(contentsOf:)` from a path, with its sprite and GeoJSON files beside it), by day and,
    /// optionally, a different one by night; ``setAppearance(_:)`` still picks between them. The
    /// new style's tiles are laid out before it is shown, as for a day/night switch, and the
    /// engine's GeoJSON stays for sources of the same id. Calls take effect in order; one that a
    /// later call overtook while it waited is skipped.
    public func setStyles(day: Style, night: Style? = nil) async {
        styleCalls += 1
        let call = styleCalls
        await oneAtATime {
            guard call == styleCalls else { return }
            engineStyles = (day, night)
            if let renderer {
                await renderer.switchStyle(to: drawnStyle(for: appearance))
            }
            changed()
        }
    }

    /// Changes the day and the night style alike with `edit`: the engine adds its own sources
    /// and layers to styles it did not write (search results as a GeoJSON source with a circle
    /// layer, say), or removes them. The next picture shows the change, laid out before it is
    /// shown as for a day/night switch; the engine's GeoJSON stays for sources of the same id,
    /// and ``setGeoJSON(_:forSource:)`` fills a source added here.
    ///
    /// ```swift
    /// try await session.editStyles { style in
    ///     try style.addSource(id: "results", json: Data(#"{"type": "geojson"}"#.utf8))
    ///     try style.addLayer(json: Data(#"{"id": "results", "type": "circle", "source": "results"}"#.utf8))
    /// }
    /// ```
    ///
    /// Edits apply in order with ``setStyles(day:night:)`` calls, to the styles the earlier calls
    /// left; a later ``setStyles(day:night:)`` replaces the edited styles.
    ///
    /// - Throws: what `edit` throws first, for either style (the `Style` methods throw
    ///   `StyleError`); then neither style changes.
    public func editStyles(_ edit: @Sendable (inout Style) throws -> Void) async throws {
        try await oneAtATime { () async throws in
            var (day, night) = engineStyles ?? (configuration.dayStyle, configuration.nightStyle)
            try edit(&day)
            if var edited = night {
                try edit(&edited)
                night = edited
            }
            engineStyles = (day, night)
            if let renderer {
                await renderer.switchStyle(to: drawnStyle(for: appearance))
            }
            changed()
        }
    }

    /// Shows up to two alternative routes, drawn by the style's layers on the
    /// `carwindow-alternatives` GeoJSON source (each line has an `index` property, 0 and 1);
    /// empty hides them. A tap on one, or a haptic select of its region
    /// (``HapticRegionSet/regionID(forAlternative:)``, half way along its part on the screen), is
    /// reported as ``ProjectionSessionEvent/alternativeTapped(index:)``. Points that are not
    /// finite are dropped; a line of fewer than two is left out.
    public func setAlternatives(_ routes: [[GeoCoordinate]]) async {
        let kept = routes.prefix(2).map { $0.filter(Self.isDrawable) }
        alternativeRoutes = kept
        haptics.alternativeRoutes = kept
        let features = kept.enumerated().compactMap { index, points -> GeoJSONFeature? in
            guard points.count >= 2 else { return nil }
            return GeoJSONFeature(geometry: .lineString(points), properties: ["index": .double(Double(index))])
        }
        await setBuiltInGeoJSON(GeoJSONData(features: features), source: Self.alternativesSource)
    }

    /// Shows the destination and the waypoints before it, drawn by the style's layers on the
    /// `carwindow-markers` GeoJSON source (points with `kind` "destination" or "waypoint", and
    /// `order`, from 0); nil and no waypoints hide them.
    public func setDestination(_ destination: GeoCoordinate?, waypoints: [GeoCoordinate] = []) async {
        var features = waypoints.filter(Self.isDrawable).enumerated().map { index, point in
            GeoJSONFeature(geometry: .point(point), properties: ["kind": .string("waypoint"), "order": .double(Double(index))])
        }
        if let destination, Self.isDrawable(destination) {
            features.append(GeoJSONFeature(geometry: .point(destination), properties: ["kind": .string("destination")]))
        }
        await setBuiltInGeoJSON(GeoJSONData(features: features), source: Self.markersSource)
    }

    /// Shows the maneuver arrow for the turn `metres` along the route (from its first point): the
    /// route from 40 m before the turn to 25 m after it as a line, and its end as a point with a
    /// `bearing` (degrees clockwise from north), drawn by the style's layers on the
    /// `carwindow-maneuver` source. Nil, a distance that is not finite, or no route hides it.
    public func setManeuver(atMetres metres: Double?) async {
        var features: [GeoJSONFeature] = []
        if let metres, metres.isFinite, let slice = Self.slice(of: view.overlays.route, from: metres - 40, to: metres + 25),
           slice.count >= 2, let last = slice.last {
            let before = slice[slice.count - 2]
            let east = before.offset(to: last)
            let bearing = atan2(east.x, east.y) * 180 / .pi
            features = [GeoJSONFeature(geometry: .lineString(slice), properties: ["part": .string("shaft")]),
                        GeoJSONFeature(geometry: .point(last), properties: ["part": .string("head"), "bearing": .double(bearing)])]
        }
        await setBuiltInGeoJSON(GeoJSONData(features: features), source: Self.maneuverSource)
    }

    static let alternativesSource = "carwindow-alternatives"
    static let markersSource = "carwindow-markers"
    static let maneuverSource = "carwindow-maneuver"

    /// Whether a point lies on the globe with finite coordinates: routes, alternatives and
    /// markers drop the others.
    static func isDrawable(_ point: GeoCoordinate) -> Bool {
        point.latitude.isFinite && point.longitude.isFinite && abs(point.latitude) <= 90 && abs(point.longitude) <= 180
    }

    /// How far before and after the engine's progress the vehicle is looked for on the route:
    /// a fix lags the car by up to a second or two, and a route may pass one place twice.
    static let routeSearchWindow = -150.0...400.0
    /// A vehicle farther than this from the route is off it (a detour): the engine's progress
    /// stands.
    static let onRouteDistance = 40.0

    /// Metres along `route` (with `metres` from its first point to each point) to the point
    /// nearest `position`, looked for within ``routeSearchWindow`` of `near`; nil when the
    /// route is empty or the position is not within ``onRouteDistance`` of it. Allocates
    /// nothing: it runs every frame while following.
    static func distanceAlong(_ route: [GeoCoordinate], metres: [Double], to position: GeoCoordinate,
                              near: Double) -> Double? {
        guard route.count >= 2, metres.count == route.count else { return nil }
        let from = near + routeSearchWindow.lowerBound, to = near + routeSearchWindow.upperBound
        // The first segment that ends at or after `from`.
        var low = 0, high = route.count - 2
        while low < high {
            let middle = (low + high) / 2
            if metres[middle + 1] < from { low = middle + 1 } else { high = middle }
        }
        var best: (distance: Double, along: Double)?
        var index = low
        while index < route.count - 1, metres[index] <= to {
            let a = route[index]
            let segment = a.offset(to: route[index + 1]), toPosition = a.offset(to: position)
            let lengthSquared = (segment * segment).sum()
            let t = lengthSquared > 0 ? min(max((toPosition * segment).sum() / lengthSquared, 0), 1) : 0
            let miss = toPosition - segment * t
            let distance = (miss * miss).sum().squareRoot()
            if distance < (best?.distance ?? .infinity) {
                best = (distance, metres[index] + (metres[index + 1] - metres[index]) * t)
            }
            index += 1
        }
        guard let best, best.distance <= onRouteDistance else { return nil }
        return best.along
    }

    /// The part of `route` between two distances along it (metres from its first point), ends
    /// interpolated; nil when they do not overlap it.
    static func slice(of route: [GeoCoordinate], from start: Double, to end: Double) -> [GeoCoordinate]? {
        guard route.count >= 2, end > start else { return nil }
        var result: [GeoCoordinate] = []
        var walked = 0.0
        for index in route.indices.dropFirst() {
            let a = route[index - 1], b = route[index]
            let length = a.metres(to: b)
            defer { walked += length }
            guard length > 0, walked + length >= start, walked <= end else { continue }
            func point(at distance: Double) -> GeoCoordinate {
                let t = min(max((distance - walked) / length, 0), 1)
                return GeoCoordinate(latitude: a.latitude + (b.latitude - a.latitude) * t,
                                     longitude: a.longitude + (b.longitude - a.longitude) * t)
            }
            if result.isEmpty { result.append(point(at: max(start, walked))) }
            result.append(point(at: min(end, walked + length)))
        }
        return result.count >= 2 ? result : nil
    }

    /// Sets one of the session's own GeoJSON sources; a style without it simply does not show
    /// it (the features are kept for a style that has it).
    private func setBuiltInGeoJSON(_ data: GeoJSONData, source: String) async {
        geojson[source] = data
        guard style(for: appearance).sources[source]?.type == .geojson else { return }
        try? await renderer?.setGeoJSON(data, forSource: source)
        changed()
    }

    /// Declares the engine's own haptic regions (rendered pixels), replacing earlier ones.
    /// Ids must be in 0...2,000,000,000 outside the block reserved for the renderer's controls.
    public func setHapticRegions(_ regions: [HapticRegion]) {
        haptics.declaredRegions = regions
        changed()
    }

    /// Declares map features whose haptic regions move with the map (a POI marker, say).
    public func setHapticMapFeatures(_ features: [HapticRegionSet.MapFeature]) {
        haptics.mapFeatures = features
        changed()
    }

    /// The regions of the last frame, in rendered pixels, for hit tests.
    public var hapticRegions: [HapticRegion] { haptics.regions }

    /// The last picture drawn, as RGBA (for screenshots and tests); nil before the first one.
    public func snapshot() async -> RGBAImage? {
        guard let canvas, hasPicture else { return nil }
        switch canvas {
        case .map(let renderer): return await renderer.readPixels()
        case .engine(let engineCanvas): return await engineCanvas.readPixels()
        }
    }
}

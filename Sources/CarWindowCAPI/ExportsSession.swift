import Foundation
import Glibc
import CCarWindow
import CarWindow
import CarWindowSystemSupport

// The session functions of carwindow.h; each is documented there.

/// The open session behind `handle`.
private func session(_ handle: OpaquePointer?, _ function: String) throws(APIFailure) -> SessionEntry {
    try SessionEntry.table.entry(handle, in: function)
}

/// Limits that keep a bad count from a C caller from asking for unbounded memory.
private enum Limits {
    static let routePoints = 1_000_000
    static let alternatives = 2
    static let regions = 1000
    static let geoJSONBytes = 64 << 20
}

/// `count` elements at `pointer`, copied; NULL is allowed only for none. A C `size_t` arrives as
/// an `Int`, so a count above `Int.max` (a negative number passed as size_t) is negative here.
private func elements<T>(_ pointer: UnsafePointer<T>?, _ count: Int, limit: Int, _ what: String) throws(APIFailure) -> [T] {
    guard count >= 0, count <= limit else {
        throw .invalidArgument("\(what): the count \(UInt(bitPattern: count)) is more than the \(limit) allowed")
    }
    guard count > 0 else { return [] }
    guard let pointer else { throw .invalidArgument("\(what): the array is NULL but its count is \(count)") }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
}

/// `carwindow_session_config_init` (see carwindow.h).
@_cdecl("carwindow_session_config_init")
public func capiSessionConfigInit(_ config: UnsafeMutablePointer<carwindow_session_config>?) {
    guard let config else { return }
    var defaults = carwindow_session_config()
    defaults.struct_size = MemoryLayout<carwindow_session_config>.size
    defaults.camera = carwindow_camera(center: carwindow_coordinate(latitude: 0, longitude: 0), zoom: 2, bearing: 0, pitch: 0)
    defaults.width = 800
    defaults.height = 480
    defaults.scale = 1
    defaults.encoder = CARWINDOW_ENCODER_AUTOMATIC
    defaults.appearance = CARWINDOW_APPEARANCE_DAY
    defaults.show_controls = 1
    config.pointee = defaults
}

/// `carwindow_session_create` (see carwindow.h).
@_cdecl("carwindow_session_create")
public func capiSessionCreate(_ contextHandle: OpaquePointer?, _ config: UnsafePointer<carwindow_session_config>?,
                              _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let context = try ContextEntry.table.entry(contextHandle, in: "carwindow_session_create")
        guard let out else { throw .invalidArgument("carwindow_session_create: out_session is NULL; pass the address of a carwindow_session *") }
        out.pointee = nil
        let entry = try SessionEntry.create(context: context, config: config)
        out.pointee = HandleTable<SessionEntry>.handle(for: entry.token)
    }
}

/// `carwindow_session_start` (see carwindow.h).
@_cdecl("carwindow_session_start")
public func capiSessionStart(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in try session(handle, "carwindow_session_start").start() }
}

/// `carwindow_session_stop` (see carwindow.h).
@_cdecl("carwindow_session_stop")
public func capiSessionStop(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in try session(handle, "carwindow_session_stop").stop() }
}

/// `carwindow_session_close` (see carwindow.h).
@_cdecl("carwindow_session_close")
public func capiSessionClose(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_close")
        guard SessionEntry.table.remove(entry.token) else {
            throw APIFailure(CARWINDOW_ERROR_INVALID_HANDLE, "carwindow_session_close: the session was closed by another call")
        }
        entry.close()
    }
}

/// `carwindow_session_set_camera` (see carwindow.h).
@_cdecl("carwindow_session_set_camera")
public func capiSessionSetCamera(_ handle: OpaquePointer?, _ camera: UnsafePointer<carwindow_camera>?, _ seconds: Double) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_camera")
        guard let camera else { throw .invalidArgument("carwindow_session_set_camera: camera is NULL") }
        let checked = try SessionSetup.checkCamera(camera.pointee, "carwindow_session_set_camera")
        guard seconds.isFinite, seconds >= 0 else {
            throw .invalidArgument("carwindow_session_set_camera: animation_seconds must be finite and 0 or more (got \(seconds))")
        }
        let transition: CameraTransition = seconds > 0 ? .animated(duration: .milliseconds(min(seconds, 30) * 1000)) : .immediate
        let projection = entry.session
        waitFor { await projection.setCamera(checked, transition: transition) }
    }
}

/// `carwindow_session_get_camera` (see carwindow.h).
@_cdecl("carwindow_session_get_camera")
public func capiSessionGetCamera(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<carwindow_camera>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_get_camera")
        guard let out else { throw .invalidArgument("carwindow_session_get_camera: out_camera is NULL") }
        let projection = entry.session
        out.pointee = CCamera.make(waitFor { await projection.camera })
    }
}

/// `carwindow_session_set_vehicle` (see carwindow.h).
@_cdecl("carwindow_session_set_vehicle")
public func capiSessionSetVehicle(_ handle: OpaquePointer?, _ vehicle: UnsafePointer<carwindow_vehicle>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_vehicle")
        let projection = entry.session
        guard let vehicle = vehicle?.pointee else {
            waitFor { await projection.setVehicle(nil) }
            return
        }
        let position = vehicle.position
        guard [position.latitude, position.longitude, vehicle.heading, vehicle.speed].allSatisfy(\.isFinite),
              abs(position.latitude) <= 90, abs(position.longitude) <= 180, vehicle.speed >= 0 else {
            throw .invalidArgument("carwindow_session_set_vehicle: the position must lie on the globe and heading and speed be finite, "
                + "speed 0 or more (got \(position.latitude), \(position.longitude), heading \(vehicle.heading), speed \(vehicle.speed))")
        }
        let coordinate = GeoCoordinate(latitude: position.latitude, longitude: position.longitude)
        if entry.followRequested.withLock({ $0 }) {
            let fix = VehicleFix(coordinate: coordinate, heading: vehicle.heading, speed: vehicle.speed)
            waitFor { await projection.updateVehicle(fix) }
        } else {
            let marker = VehicleMarker(coordinate: coordinate, heading: vehicle.heading)
            waitFor { await projection.setVehicle(marker) }
        }
    }
}

/// `carwindow_session_follow_vehicle` (see carwindow.h).
@_cdecl("carwindow_session_follow_vehicle")
public func capiSessionFollowVehicle(_ handle: OpaquePointer?, _ follow: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_follow_vehicle")
        guard follow == 0 || follow == 1 else { throw .invalidArgument("carwindow_session_follow_vehicle: follow must be 0 or 1 (got \(follow))") }
        entry.followRequested.withLock { $0 = follow == 1 }
        let projection = entry.session
        waitFor { await projection.followVehicle(follow == 1 ? FollowCameraConfiguration() : nil) }
    }
}

/// `carwindow_session_set_covered_insets` (see carwindow.h).
@_cdecl("carwindow_session_set_covered_insets")
public func capiSessionSetCoveredInsets(_ handle: OpaquePointer?, _ top: Double, _ left: Double, _ bottom: Double,
                                        _ right: Double) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_covered_insets")
        guard [top, left, bottom, right].allSatisfy({ $0.isFinite && $0 >= 0 }) else {
            throw .invalidArgument("carwindow_session_set_covered_insets: insets must be finite and 0 or more "
                + "(got top \(top), left \(left), bottom \(bottom), right \(right))")
        }
        let projection = entry.session
        let insets = ScreenInsets(top: top, left: left, bottom: bottom, right: right)
        waitFor { await projection.setCoveredInsets(insets) }
    }
}

/// `carwindow_session_set_label_language` (see carwindow.h).
@_cdecl("carwindow_session_set_label_language")
public func capiSessionSetLabelLanguage(_ handle: OpaquePointer?, _ code: UnsafePointer<CChar>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_label_language")
        var language: LabelLanguage?
        if let code {
            // BCP 47's longest tags stay under 36 bytes; a longer string is not read further.
            let longest = 35
            guard strnlen(code, longest + 1) <= longest, let parsed = LabelLanguage(String(cString: code)) else {
                throw .invalidArgument("carwindow_session_set_label_language: not a language code such as \"sv\", "
                    + "\"SV-SE\" or \"zh-TW\" (two or three letters, then optionally a region or script)")
            }
            language = parsed
        }
        let projection = entry.session, chosen = language
        waitFor { await projection.setLabelLanguage(chosen) }
    }
}

/// `carwindow_session_set_route` (see carwindow.h).
@_cdecl("carwindow_session_set_route")
public func capiSessionSetRoute(_ handle: OpaquePointer?, _ points: UnsafePointer<carwindow_coordinate>?, _ count: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_route")
        let route = try elements(points, count, limit: Limits.routePoints, "carwindow_session_set_route")
            .map { GeoCoordinate(latitude: $0.latitude, longitude: $0.longitude) }
        let projection = entry.session
        waitFor { await projection.setRoute(route) }
    }
}

/// `carwindow_session_set_route_congestion` (see carwindow.h).
@_cdecl("carwindow_session_set_route_congestion")
public func capiSessionSetRouteCongestion(_ handle: OpaquePointer?, _ stretches: UnsafePointer<carwindow_congestion>?,
                                          _ count: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_route_congestion")
        let given = try elements(stretches, count, limit: RouteCongestion.maximumCount, "carwindow_session_set_route_congestion")
        var congestion: [RouteCongestion] = []
        congestion.reserveCapacity(given.count)
        for (index, stretch) in given.enumerated() {
            guard let level = CongestionLevel(rawValue: Int(stretch.level)) else {
                throw .invalidArgument("carwindow_session_set_route_congestion: stretch \(index) has level \(stretch.level); "
                    + "use a CARWINDOW_CONGESTION_* value, 0 to 4")
            }
            congestion.append(RouteCongestion(startMetres: stretch.start_metres, endMetres: stretch.end_metres, level: level))
        }
        let projection = entry.session, chosen = congestion
        waitFor { await projection.setRouteCongestion(chosen) }
    }
}

/// `carwindow_session_set_route_progress` (see carwindow.h).
@_cdecl("carwindow_session_set_route_progress")
public func capiSessionSetRouteProgress(_ handle: OpaquePointer?, _ metres: Double) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_route_progress")
        guard metres.isFinite, metres >= 0 else {
            throw .invalidArgument("carwindow_session_set_route_progress: metres must be finite and 0 or more (got \(metres))")
        }
        let projection = entry.session
        waitFor { await projection.setRouteProgress(metres) }
    }
}

/// `carwindow_session_set_maneuver` (see carwindow.h).
@_cdecl("carwindow_session_set_maneuver")
public func capiSessionSetManeuver(_ handle: OpaquePointer?, _ metres: Double) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_maneuver")
        guard metres.isFinite else { throw .invalidArgument("carwindow_session_set_maneuver: metres must be finite (negative clears)") }
        let projection = entry.session
        waitFor { await projection.setManeuver(atMetres: metres < 0 ? nil : metres) }
    }
}

/// `carwindow_session_set_appearance` (see carwindow.h).
@_cdecl("carwindow_session_set_appearance")
public func capiSessionSetAppearance(_ handle: OpaquePointer?, _ appearance: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_appearance")
        let chosen: MapAppearance
        switch appearance {
        case CARWINDOW_APPEARANCE_DAY: chosen = .day
        case CARWINDOW_APPEARANCE_NIGHT: chosen = .night
        default: throw .invalidArgument("carwindow_session_set_appearance: \(appearance) is neither CARWINDOW_APPEARANCE_DAY nor _NIGHT")
        }
        let projection = entry.session
        waitFor { await projection.setAppearance(chosen) }
    }
}

/// `carwindow_session_set_style` (see carwindow.h).
@_cdecl("carwindow_session_set_style")
public func capiSessionSetStyle(_ handle: OpaquePointer?, _ day: UnsafePointer<CChar>?, _ night: UnsafePointer<CChar>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_style")
        guard let day else { throw .invalidArgument("carwindow_session_set_style: day_style is NULL") }
        let dayStyle = try SessionSetup.style(String(cString: day), "carwindow_session_set_style: day_style")
        let nightStyle = try night.map { (text) throws(APIFailure) in
            try SessionSetup.style(String(cString: text), "carwindow_session_set_style: night_style")
        }
        let projection = entry.session
        waitFor { await projection.setStyles(day: dayStyle, night: nightStyle) }
    }
}

/// `carwindow_session_set_geojson` (see carwindow.h).
@_cdecl("carwindow_session_set_geojson")
public func capiSessionSetGeoJSON(_ handle: OpaquePointer?, _ sourceID: UnsafePointer<CChar>?, _ text: UnsafePointer<CChar>?,
                                  _ length: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_geojson")
        guard let sourceID, let text else { throw .invalidArgument("carwindow_session_set_geojson: source_id and geojson may not be NULL") }
        guard (0...Limits.geoJSONBytes).contains(length) else {
            throw .invalidArgument("carwindow_session_set_geojson: length \(length) is outside 0...\(Limits.geoJSONBytes) bytes")
        }
        let id = String(cString: sourceID)
        let data: GeoJSONData
        do {
            data = try GeoJSONData(data: Data(bytes: text, count: length))
        } catch {
            throw .input("carwindow_session_set_geojson: the GeoJSON for source \"\(id)\" is malformed: \(error)")
        }
        let projection = entry.session
        try waitForThrowing(doing: "carwindow_session_set_geojson") { try await projection.setGeoJSON(data, forSource: id) }
    }
}

/// `carwindow_session_set_alternatives` (see carwindow.h).
@_cdecl("carwindow_session_set_alternatives")
public func capiSessionSetAlternatives(_ handle: OpaquePointer?, _ points: UnsafePointer<carwindow_coordinate>?,
                                       _ pointCounts: UnsafePointer<Int>?, _ routeCount: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_alternatives")
        let counts = try elements(pointCounts, routeCount, limit: Limits.alternatives, "carwindow_session_set_alternatives: routes")
        var total = 0
        for count in counts {
            guard count >= 0, count <= Limits.routePoints - total else {
                throw .invalidArgument("carwindow_session_set_alternatives: more than \(Limits.routePoints) points in all")
            }
            total += count
        }
        let all = try elements(points, total, limit: Limits.routePoints, "carwindow_session_set_alternatives: points")
        var routes: [[GeoCoordinate]] = []
        var start = 0
        for count in counts {
            routes.append(all[start..<start + count].map { GeoCoordinate(latitude: $0.latitude, longitude: $0.longitude) })
            start += count
        }
        let projection = entry.session, alternatives = routes
        waitFor { await projection.setAlternatives(alternatives) }
    }
}

/// `carwindow_session_request_idr` (see carwindow.h).
@_cdecl("carwindow_session_request_idr")
public func capiSessionRequestIDR(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let projection = try session(handle, "carwindow_session_request_idr").session
        waitFor { await projection.requestIDR() }
    }
}

/// `carwindow_session_touch` (see carwindow.h).
@_cdecl("carwindow_session_touch")
public func capiSessionTouch(_ handle: OpaquePointer?, _ event: UnsafePointer<carwindow_touch_event>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_touch")
        guard let event = event?.pointee else { throw .invalidArgument("carwindow_session_touch: event is NULL") }
        let kind: TouchEvent.Kind
        switch event.type {
        case CARWINDOW_TOUCH_BEGIN: kind = .begin
        case CARWINDOW_TOUCH_MOVE: kind = .move
        case CARWINDOW_TOUCH_END: kind = .end
        case CARWINDOW_TOUCH_CANCEL: kind = .cancel
        default: throw .invalidArgument("carwindow_session_touch: type \(event.type) is none of CARWINDOW_TOUCH_BEGIN...CANCEL")
        }
        let points = try elements(event.points, event.count, limit: TouchEvent.maximumTouchID + 1, "carwindow_session_touch: points")
        var touches: [TouchEvent.Touch] = []
        for point in points {
            guard let timestamp = Int(exactly: point.timestamp_ms) else {
                throw .invalidArgument("carwindow_session_touch: timestamp \(point.timestamp_ms) is out of range")
            }
            touches.append(TouchEvent.Touch(id: Int(point.finger), timestamp: timestamp, x: point.x, y: point.y))
        }
        let touch = TouchEvent(type: kind, touches: touches)
        do {
            try touch.validate()
        } catch {
            throw .invalidArgument("carwindow_session_touch: the event was refused: \(error)")
        }
        let projection = entry.session
        waitFor { await projection.handleTouch(touch) }
    }
}

/// `carwindow_session_touch_json` (see carwindow.h).
@_cdecl("carwindow_session_touch_json")
public func capiSessionTouchJSON(_ handle: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_touch_json")
        guard let json else { throw .invalidArgument("carwindow_session_touch_json: on_touch_event_json is NULL") }
        let touch: TouchEvent
        do {
            touch = try SDLTouchEvent.decode(json: Data(String(cString: json).utf8))
        } catch {
            throw .input("carwindow_session_touch_json: the OnTouchEvent parameters were refused: \(error)")
        }
        let projection = entry.session
        waitFor { await projection.handleTouch(touch) }
    }
}

/// `carwindow_session_set_haptic_regions` (see carwindow.h).
@_cdecl("carwindow_session_set_haptic_regions")
public func capiSessionSetHapticRegions(_ handle: OpaquePointer?, _ regions: UnsafePointer<carwindow_haptic_region>?,
                                        _ count: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_haptic_regions")
        let given = try elements(regions, count, limit: Limits.regions, "carwindow_session_set_haptic_regions")
        var declared: [HapticRegion] = []
        for region in given {
            let id = Int(region.id)
            guard HapticRegion.idRange.contains(id), !HapticRegionSet.reservedControlIDs.contains(id) else {
                throw .invalidArgument("carwindow_session_set_haptic_regions: id \(id) must be 0...\(HapticRegionSet.reservedControlIDs.lowerBound - 1) "
                    + "(\(HapticRegionSet.reservedControlIDs.lowerBound)... is the map's own)")
            }
            guard [region.x, region.y, region.width, region.height].allSatisfy(\.isFinite), region.width >= 0, region.height >= 0 else {
                throw .invalidArgument("carwindow_session_set_haptic_regions: region \(id)'s rectangle must be finite with a size of 0 or more "
                    + "(got \(region.x), \(region.y), \(region.width)x\(region.height))")
            }
            declared.append(HapticRegion(id: id, rect: ScreenRect(x: region.x, y: region.y, width: region.width, height: region.height)))
        }
        let projection = entry.session, regions = declared
        waitFor { await projection.setHapticRegions(regions) }
    }
}

/// `carwindow_session_get_haptic_regions` (see carwindow.h).
@_cdecl("carwindow_session_get_haptic_regions")
public func capiSessionGetHapticRegions(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<carwindow_haptic_region>?>?,
                                        _ outCount: UnsafeMutablePointer<Int>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_get_haptic_regions")
        guard let out, let outCount else { throw .invalidArgument("carwindow_session_get_haptic_regions: out_regions and out_count may not be NULL") }
        out.pointee = nil
        outCount.pointee = 0
        let projection = entry.session
        let regions = waitFor { await projection.hapticRegions }.map(CRegion.make)
        guard !regions.isEmpty else { return }
        guard let memory = malloc(MemoryLayout<carwindow_haptic_region>.stride * regions.count) else {
            throw APIFailure(CARWINDOW_ERROR_INTERNAL, "carwindow_session_get_haptic_regions: out of memory for \(regions.count) regions")
        }
        let array = memory.bindMemory(to: carwindow_haptic_region.self, capacity: regions.count)
        array.initialize(from: regions, count: regions.count)
        out.pointee = array
        outCount.pointee = regions.count
    }
}

/// `carwindow_session_select_region` (see carwindow.h).
@_cdecl("carwindow_session_select_region")
public func capiSessionSelectRegion(_ handle: OpaquePointer?, _ id: Int64) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_select_region")
        guard let id = Int(exactly: id), HapticRegion.idRange.contains(id) else {
            throw .invalidArgument("carwindow_session_select_region: id \(id) is outside \(HapticRegion.idRange)")
        }
        let projection = entry.session
        waitFor { await projection.selectHapticRegion(id: id) }
    }
}

/// `carwindow_session_set_controls_visible` (see carwindow.h).
@_cdecl("carwindow_session_set_controls_visible")
public func capiSessionSetControlsVisible(_ handle: OpaquePointer?, _ visible: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_set_controls_visible")
        guard visible == 0 || visible == 1 else { throw .invalidArgument("carwindow_session_set_controls_visible: visible must be 0 or 1 (got \(visible))") }
        let projection = entry.session
        waitFor { await projection.setControlsVisible(visible == 1) }
    }
}

/// `carwindow_session_perform` (see carwindow.h).
@_cdecl("carwindow_session_perform")
public func capiSessionPerform(_ handle: OpaquePointer?, _ code: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_perform")
        guard let command = MapCommands.command(for: code) else {
            throw .invalidArgument("carwindow_session_perform: \(code) is none of the CARWINDOW_COMMAND_* values")
        }
        let projection = entry.session
        waitFor { await projection.perform(command) }
    }
}

/// `carwindow_session_get_statistics` (see carwindow.h).
@_cdecl("carwindow_session_get_statistics")
public func capiSessionGetStatistics(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<carwindow_statistics>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let entry = try session(handle, "carwindow_session_get_statistics")
        guard let out else { throw .invalidArgument("carwindow_session_get_statistics: out_statistics is NULL") }
        let projection = entry.session
        let (state, stream, settings, counts) = waitFor {
            (await projection.state, await projection.stream, await projection.encoderSettings, await projection.statistics)
        }
        var result = carwindow_statistics()
        result.state = CState.make(state)
        result.width = UInt32(clamping: stream?.encodedSize.width ?? 0)
        result.height = UInt32(clamping: stream?.encodedSize.height ?? 0)
        result.frames_per_second = settings?.framesPerSecond ?? 0
        result.bitrate = Int64(settings?.bitrate ?? 0)
        result.frames_rendered = Int64(counts.framesRendered)
        result.refinement_frames = Int64(counts.refinementFrames)
        result.keep_alives = Int64(counts.keepAlives)
        result.idr_frames = Int64(counts.idrFrames)
        result.bytes_sent = Int64(counts.bytesSent)
        result.output_errors = Int64(counts.sinkErrors)
        result.streaming_seconds = Double(counts.streamingTime.components.seconds)
            + Double(counts.streamingTime.components.attoseconds) / 1e18
        out.pointee = result
    }
}

/// `carwindow_session_invalidate` (see carwindow.h).
@_cdecl("carwindow_session_invalidate")
public func capiSessionInvalidate(_ handle: OpaquePointer?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let projection = try session(handle, "carwindow_session_invalidate").session
        waitFor { await projection.invalidate() }
    }
}

/// `carwindow_session_set_continuous` (see carwindow.h).
@_cdecl("carwindow_session_set_continuous")
public func capiSessionSetContinuous(_ handle: OpaquePointer?, _ continuous: Int32) -> Int32 {
    apiCall { () throws(APIFailure) in
        let projection = try session(handle, "carwindow_session_set_continuous").session
        guard continuous == 0 || continuous == 1 else {
            throw .invalidArgument("carwindow_session_set_continuous: continuous must be 0 or 1 (got \(continuous))")
        }
        waitFor { await projection.setContinuousFrames(continuous == 1) }
    }
}

/// `carwindow_session_push_pixels` (see carwindow.h).
@_cdecl("carwindow_session_push_pixels")
public func capiSessionPushPixels(_ handle: OpaquePointer?, _ format: Int32, _ width: UInt32, _ height: UInt32,
                                  _ bytesPerRow: Int, _ pixels: UnsafeRawPointer?, _ size: Int) -> Int32 {
    apiCall { () throws(APIFailure) in
        let what = "carwindow_session_push_pixels"
        let projection = try session(handle, what).session
        guard let pixels else { throw .invalidArgument("\(what): pixels is NULL") }
        let pixelFormat: EnginePixels.Format
        switch format {
        case CARWINDOW_PIXELS_RGBA: pixelFormat = .rgba
        case CARWINDOW_PIXELS_BGRA: pixelFormat = .bgra
        case CARWINDOW_PIXELS_NV12: pixelFormat = .nv12
        case CARWINDOW_PIXELS_I420: pixelFormat = .i420
        default: throw .invalidArgument("\(what): format \(format) is none of the CARWINDOW_PIXELS_* values")
        }
        // A size_t above Int.max arrives negative: no buffer is that large.
        guard size >= 0, bytesPerRow >= 0 else {
            throw .invalidArgument("\(what): size \(UInt(bitPattern: size)) or bytes_per_row \(UInt(bitPattern: bytesPerRow)) is larger than any buffer")
        }
        // The caller waits here, so its buffer stays valid while the session copies from it.
        nonisolated(unsafe) let source = UnsafeRawBufferPointer(start: pixels, count: size)
        try waitForThrowing(doing: what) {
            // The packed layout EnginePixels takes when only the first plane's rows are given.
            let packed = EnginePixels(format: pixelFormat, width: Int(width), height: Int(height), bytesPerRow: bytesPerRow,
                                      bytes: []).layout
            try await projection.pushPixels(copying: source, layout: packed)
        }
    }
}

/// `carwindow_session_push_dmabuf` (see carwindow.h).
@_cdecl("carwindow_session_push_dmabuf")
public func capiSessionPushDmaBuf(_ handle: OpaquePointer?, _ described: UnsafePointer<carwindow_dmabuf>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let what = "carwindow_session_push_dmabuf"
        let projection = try session(handle, what).session
        guard let described else { throw .invalidArgument("\(what): buffer is NULL") }
        let given = described.pointee
        guard let format = EngineDmaBuf.Format(drmFourCC: given.fourcc) else {
            throw .invalidArgument("\(what): \(EngineContentError.dmaBufFormatUnsupported(fourCC: given.fourcc))")
        }
        guard given.plane_count == Int32(format.planeCount) else {
            throw .invalidArgument("\(what): plane_count \(given.plane_count) does not fit \(format.rawValue), which has \(format.planeCount)")
        }
        let first = EngineDmaBuf.Plane(fileDescriptor: given.fds.0, offset: Int(given.offsets.0), bytesPerRow: Int(given.strides.0))
        let second = EngineDmaBuf.Plane(fileDescriptor: given.fds.1, offset: Int(given.offsets.1), bytesPerRow: Int(given.strides.1))
        let buffer = EngineDmaBuf(format: format, width: Int(given.width), height: Int(given.height), plane: first,
                                  chromaPlane: format.planeCount == 2 ? second : nil, modifier: given.modifier,
                                  firstRow: given.bottom_first != 0 ? .bottom : .top)
        try waitForThrowing(doing: what) { try await projection.pushDmaBuf(buffer) }
    }
}

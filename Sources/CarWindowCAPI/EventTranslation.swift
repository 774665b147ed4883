import CCarWindow
import CarWindow

/// The C forms of the session's values.
enum CRegion {
    static func make(_ region: HapticRegion) -> carwindow_haptic_region {
        carwindow_haptic_region(id: Int32(clamping: region.id), x: region.rect.x, y: region.rect.y,
                                width: region.rect.width, height: region.rect.height)
    }
}

enum CState {
    static func make(_ state: ProjectionSessionState) -> carwindow_state {
        switch state {
        case .disconnected: CARWINDOW_STATE_DISCONNECTED
        case .ready: CARWINDOW_STATE_READY
        case .streaming: CARWINDOW_STATE_STREAMING
        case .suspended: CARWINDOW_STATE_SUSPENDED
        case .stopping: CARWINDOW_STATE_STOPPING
        }
    }
}

enum CCamera {
    static func make(_ camera: Camera) -> carwindow_camera {
        carwindow_camera(center: carwindow_coordinate(latitude: camera.center.latitude, longitude: camera.center.longitude),
                         zoom: camera.zoom, bearing: camera.bearing, pitch: camera.pitch)
    }
}

/// Session events as C events.
enum EventTranslation {
    /// Fills `event` for `sessionEvent` (all but the regions' pointer) and returns its message.
    static func fill(_ event: inout carwindow_event, from sessionEvent: ProjectionSessionEvent) -> String {
        event.region_id = -1
        switch sessionEvent {
        case .stateChanged(let from, let to):
            event.type = CARWINDOW_EVENT_STATE_CHANGED
            event.state_from = CState.make(from)
            event.state_to = CState.make(to)
            return "state: \(from.rawValue) -> \(to.rawValue)"
        case .streamStarted(let stream, let settings):
            event.type = CARWINDOW_EVENT_STREAM_STARTED
            fillSizes(&event, stream)
            event.frames_per_second = settings.framesPerSecond
            event.bitrate = Int64(settings.bitrate)
            return "stream started: \(stream.encodedSize) (screen \(stream.displaySize), scale \(stream.scale)), "
                + "\(settings.framesPerSecond) fps, \(settings.bitrate) bit/s"
        case .resized(let stream):
            event.type = CARWINDOW_EVENT_RESIZED
            fillSizes(&event, stream)
            return "resized: \(stream.encodedSize) (screen \(stream.displaySize))"
        case .qualityChanged(let quality):
            event.type = CARWINDOW_EVENT_QUALITY_CHANGED
            event.frames_per_second = quality.framesPerSecond
            event.x = quality.resolutionScale
            return "quality for the bitrate: \(quality)"
        case .hapticRegions(let regions):
            event.type = CARWINDOW_EVENT_HAPTIC_REGIONS
            return "haptic regions: \(regions.count)"
        case .controlTapped(let kind):
            event.type = CARWINDOW_EVENT_CONTROL_TAPPED
            event.control = carwindow_control(kind.rawValue)
            return "control tapped: \(kind)"
        case .regionTapped(let id):
            event.type = CARWINDOW_EVENT_REGION_TAPPED
            event.region_id = Int64(id)
            return "region tapped: \(id)"
        case .mapTapped(let point, let coordinate):
            event.type = CARWINDOW_EVENT_MAP_TAPPED
            event.x = point.x
            event.y = point.y
            if let coordinate {
                event.has_coordinate = 1
                event.latitude = coordinate.latitude
                event.longitude = coordinate.longitude
            }
            return "map tapped at (\(point.x), \(point.y))" + (coordinate.map { " = \($0)" } ?? "")
        case .alternativeTapped(let index):
            event.type = CARWINDOW_EVENT_ALTERNATIVE_TAPPED
            event.index = Int64(index)
            return "alternative route \(index) tapped"
        case .cameraMovedByUser(let camera):
            event.type = CARWINDOW_EVENT_CAMERA_MOVED_BY_USER
            event.camera = CCamera.make(camera)
            return "camera moved by the user: \(camera)"
        case .commandPerformed(let command):
            event.type = CARWINDOW_EVENT_COMMAND_PERFORMED
            event.command = MapCommands.code(for: command)
            return "command performed: \(command)"
        case .focusChanged(let id):
            event.type = CARWINDOW_EVENT_FOCUS_CHANGED
            event.region_id = id.map(Int64.init) ?? -1
            return "focus: " + (id.map { "region \($0)" } ?? "none")
        case .warning(let warning):
            event.type = CARWINDOW_EVENT_WARNING
            return "warning: \(warning)"
        case .error(let error):
            event.type = CARWINDOW_EVENT_ERROR
            event.status = APIFailure(error, doing: "streaming").status
            return "error: \(error)"
        }
    }

    private static func fillSizes(_ event: inout carwindow_event, _ stream: StreamResolution) {
        event.width = UInt32(clamping: stream.encodedSize.width)
        event.height = UInt32(clamping: stream.encodedSize.height)
        event.display_width = UInt32(clamping: stream.displaySize.width)
        event.display_height = UInt32(clamping: stream.displaySize.height)
    }

    /// A line for the head-unit link's news that an engine cares about; nil for the rest
    /// (touches and keys, which the session already acts on).
    static func headUnitMessage(_ event: SDLConnectionEvent) -> String? {
        switch event {
        case .registered(let info): "registered with the head unit (protocol \(info.protocolVersion ?? "?"))"
        case .hmiStatusChanged(let status):
            "HMI level \(status.hmiLevel)" + (status.videoStreamingState.map { ", video \($0)" } ?? "")
        case .videoAllowedChanged(let allowed): allowed ? "video allowed" : "video not allowed"
        case .capabilityChanged(let capability): "video capability: \(capability.headUnitDisplay.size.map { "\($0)" } ?? "no size")"
        case .videoStarted(let parameters): "video service started: \(parameters.resolution.width)x\(parameters.resolution.height)"
        case .videoStopped: "video service stopped"
        case .videoFailed(let error): "video refused: \(error)"
        case .disconnected(let error): "disconnected: \(error)"
        case .reconnecting(let attempt, let delay): "reconnecting (attempt \(attempt)) in \(delay)"
        case .reconnected: "reconnected"
        case .stopped: "head-unit link stopped"
        case .driverDistractionChanged(let on): "driver distraction \(on ? "on" : "off")"
        case .serviceProtected(let service): "\(service) service protected"
        case .securityFailed(let error): "security layer failed: \(error)"
        case .audioAllowedChanged, .buttonPressed, .ambientLightChanged, .languageChanged, .touch, .keyframeNeeded: nil
        }
    }
}

/// Camera commands by their C codes.
enum MapCommands {
    static func command(for code: carwindow_map_command) -> MapCommand? {
        switch code {
        case CARWINDOW_COMMAND_RECENTER: .recenter
        case CARWINDOW_COMMAND_ZOOM_IN: .zoomIn
        case CARWINDOW_COMMAND_ZOOM_OUT: .zoomOut
        case CARWINDOW_COMMAND_PAN_UP: .pan(SIMD2(0, -1))
        case CARWINDOW_COMMAND_PAN_DOWN: .pan(SIMD2(0, 1))
        case CARWINDOW_COMMAND_PAN_LEFT: .pan(SIMD2(-1, 0))
        case CARWINDOW_COMMAND_PAN_RIGHT: .pan(SIMD2(1, 0))
        case CARWINDOW_COMMAND_TILT_TOGGLE: .tiltToggle
        case CARWINDOW_COMMAND_ROTATE_CLOCKWISE: .rotate(clockwise: true)
        case CARWINDOW_COMMAND_ROTATE_COUNTERCLOCKWISE: .rotate(clockwise: false)
        case CARWINDOW_COMMAND_HEADING_TOGGLE: .headingToggle
        default: nil
        }
    }

    /// The code of `command`; a diagonal pan is reported as its vertical part.
    static func code(for command: MapCommand) -> carwindow_map_command {
        switch command {
        case .recenter: CARWINDOW_COMMAND_RECENTER
        case .zoomIn: CARWINDOW_COMMAND_ZOOM_IN
        case .zoomOut: CARWINDOW_COMMAND_ZOOM_OUT
        case .pan(let direction):
            direction.y < 0 ? CARWINDOW_COMMAND_PAN_UP : direction.y > 0 ? CARWINDOW_COMMAND_PAN_DOWN
                : direction.x < 0 ? CARWINDOW_COMMAND_PAN_LEFT : CARWINDOW_COMMAND_PAN_RIGHT
        case .tiltToggle: CARWINDOW_COMMAND_TILT_TOGGLE
        case .rotate(let clockwise): clockwise ? CARWINDOW_COMMAND_ROTATE_CLOCKWISE : CARWINDOW_COMMAND_ROTATE_COUNTERCLOCKWISE
        case .headingToggle: CARWINDOW_COMMAND_HEADING_TOGGLE
        }
    }
}

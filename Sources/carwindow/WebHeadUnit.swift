import CarWindow
import CarWindowSDLTesting
import CarWindowSystemSupport
import Foundation
import Glibc

/// The browser head unit of `carwindow headunit --web PORT` and `carwindow drive --web PORT`:
/// ``WebHeadUnitPage`` served by the library's ``WebHeadUnitServer`` on the loopback interface.
final class WebHeadUnit: Sendable {
    let server: WebHeadUnitServer
    var port: Int { server.port }
    /// The page's controls, in the order they came.
    var requests: AsyncStream<WebControl> { server.requests }

    /// Listens on 127.0.0.1:`port` (0: a free port).
    init(port: Int) throws {
        do {
            server = try WebHeadUnitServer(port: port, page: WebHeadUnitPage.html, log: { Console.warning("--web: \($0)") })
        } catch {
            throw CommandFailure(description: "--web: \(error.description)", exitStatus: ExitStatus.cannotCreate)
        }
    }

    /// Hands a video unit to every page.
    func publish(videoUnit unit: [UInt8], isKeyframe: Bool) {
        server.publish(videoUnit: unit, isKeyframe: isKeyframe)
    }

    /// Hands the head unit's state (JSON) to every page.
    func publish(state json: String) {
        server.publish(state: json)
    }
}

/// The page's view of a drive without a head unit (`carwindow drive --web`): the session's
/// pictures as they leave it.
final class WebPageSink: VideoSink {
    private let page: WebHeadUnit

    init(page: WebHeadUnit) {
        self.page = page
    }

    func write(_ unit: AccessUnit) throws(SinkError) {
        page.publish(videoUnit: unit.data, isKeyframe: unit.isKeyframe)
    }

    func close() {}
}

/// The page's controls and state for a drive without a head unit: the page stands in for one.
enum WebDrive {
    static func apply(_ control: WebControl, to session: ProjectionSession, level: LockedState<SDLHMILevel>) async {
        switch control {
        case .level(let chosen):
            level.withLock { $0 = chosen }
            say("web: HMI \(chosen.rawValue)")
            if chosen == .full || chosen == .limited {
                try? await session.resume()
            } else {
                await session.suspend()
            }
        case .resize(let width, let height):
            say("web: resizing the screen to \(width)x\(height)")
            do {
                try await session.updateDisplay(HeadUnitDisplay(size: VideoSize(width: width, height: height)))
            } catch {
                say("web: resize refused: \(error)")
            }
        case .refuse:
            say("web: there is no head unit here to refuse a size; use carwindow headunit --web with carwindow drive --sdl")
        case .ambientLight(let night):
            say("web: \(night ? "night" : "day")")
            await session.setAppearance(night ? .night : .day)
        case .button(let name):
            guard let command = command(for: name) else {
                say("web: \(name.rawValue) does nothing without a head unit")
                return
            }
            await session.perform(command)
        case .touch(let event):
            await session.handleTouch(event.touchEvent)
        }
    }

    /// The camera command of a head unit's navigation key.
    static func command(for button: SDLButtonName) -> MapCommand? {
        switch button.rawValue {
        case "NAV_ZOOM_IN": .zoomIn
        case "NAV_ZOOM_OUT": .zoomOut
        case "NAV_PAN_UP": .pan(SIMD2(0, -1))
        case "NAV_PAN_DOWN": .pan(SIMD2(0, 1))
        case "NAV_PAN_LEFT": .pan(SIMD2(-1, 0))
        case "NAV_PAN_RIGHT": .pan(SIMD2(1, 0))
        case "NAV_CENTER_LOCATION": .recenter
        case "NAV_HEADING_TOGGLE": .headingToggle
        case "NAV_TILT_TOGGLE": .tiltToggle
        default: nil
        }
    }

    /// The drive's state as the page reads a head unit's: level, stream size and the haptic
    /// rectangles in head-unit pixels.
    static func stateJSON(_ session: ProjectionSession, level: SDLHMILevel) async -> String {
        let stream = await session.stream
        let scale = stream?.scale ?? 1
        var state: [String: Any] = [
            "connected": true,
            "app": "carwindow drive",
            "level": level.rawValue,
            "regions": await session.hapticRegions.map {
                ["id": $0.id, "x": $0.rect.x * scale, "y": $0.rect.y * scale, "width": $0.rect.width * scale,
                 "height": $0.rect.height * scale]
            },
        ]
        if let stream {
            state["display"] = ["width": stream.displaySize.width, "height": stream.displaySize.height]
            state["video"] = ["width": stream.encodedSize.width, "height": stream.encodedSize.height]
        }
        guard let data = try? JSONSerialization.data(withJSONObject: state), let text = String(data: data, encoding: .utf8) else {
            return "{}"
        }
        return text
    }
}

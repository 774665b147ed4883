import CarWindow
import CarWindowSDLTesting
import CarWindowSystemSupport
import Foundation
import Glibc

/// What the browser page asks of the head unit (`POST /control`, JSON).
enum WebControl: Sendable {
    case level(SDLHMILevel)
    case resize(width: Int, height: Int)
    case refuse(width: Int, height: Int)
    case ambientLight(night: Bool)
    case button(SDLButtonName)
    case touch(SDLTouchEvent)

    /// Reads one request body; nil for anything malformed or out of range (the page is the only
    /// writer, but any local program can post).
    static func parse(_ body: [UInt8]) -> WebControl? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let action = object["action"] as? String else { return nil }
        func size() -> (Int, Int)? {
            guard let width = object["width"] as? Int, let height = object["height"] as? Int,
                  (16...8192).contains(width), (16...8192).contains(height) else { return nil }
            return (width, height)
        }
        switch action {
        case "level":
            return (object["level"] as? String).flatMap(SDLHMILevel.init(rawValue:)).map { .level($0) }
        case "resize": return size().map { .resize(width: $0.0, height: $0.1) }
        case "refuse": return size().map { .refuse(width: $0.0, height: $0.1) }
        case "light": return (object["night"] as? Bool).map { .ambientLight(night: $0) }
        case "button":
            guard let name = object["name"] as? String, name.count <= 64,
                  name.allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber }) else { return nil }
            return .button(SDLButtonName(rawValue: name))
        case "touch":
            guard let type = (object["type"] as? String).flatMap(SDLTouchEvent.TouchType.init(rawValue:)),
                  let touches = object["touches"] as? [[String: Any]], touches.count <= 10 else { return nil }
            var fingers: [SDLTouchEvent.Touch] = []
            for touch in touches {
                guard let id = touch["id"] as? Int, (0...9).contains(id), let time = touch["ts"] as? Int, time >= 0,
                      let x = (touch["x"] as? NSNumber)?.doubleValue, let y = (touch["y"] as? NSNumber)?.doubleValue,
                      x.isFinite, y.isFinite else { return nil }
                // Whole pixels, as head units send them.
                fingers.append(SDLTouchEvent.Touch(id: id, timestamp: time, x: x.rounded(), y: y.rounded()))
            }
            return .touch(SDLTouchEvent(type: type, touches: fingers))
        default: return nil
        }
    }
}

/// The browser head unit of `carwindow headunit --web PORT`: a small HTTP server on the loopback
/// interface that serves one page (``WebHeadUnitPage``), streams the video the head unit
/// receives and its state to it as server-sent events, and takes the page's controls.
///
/// Plain sockets and a thread per connection: a page or two on the same machine, no more. Each
/// event stream has a bounded queue of its own, so a slow browser drops pictures (until the next
/// IDR) instead of holding up the head unit.
final class WebHeadUnit: Sendable {
    let port: Int
    private let listener: Int32
    /// The pages' event streams, and the pictures since the last IDR: a page that opens in the
    /// middle of a stream gets them first, so it can decode at once (a head unit's app sends an
    /// IDR only when a stream starts or a picture was lost).
    private struct Hub {
        var streams: [Int: EventStream] = [:]
        var next = 0
        var sinceKeyframe: [String] = []
        var sinceKeyframeBytes = 0
        /// Whether `sinceKeyframe` starts with an IDR and holds every picture after it.
        var complete = false
    }
    private let hub = LockedState(Hub())
    /// The most the pictures since the last IDR may take; beyond, a new page waits for an IDR.
    private static let replayLimit = (units: 2_000, bytes: 24 << 20)
    private let controls: AsyncStream<WebControl>.Continuation
    /// The page's controls, in the order they came.
    let requests: AsyncStream<WebControl>
    private let sequence = LockedState(0)

    /// Listens on 127.0.0.1:`port` (0: a free port).
    init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw CommandFailure(description: "--web: socket failed: \(String(cString: strerror(errno)))", exitStatus: ExitStatus.cannotCreate)
        }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw CommandFailure(description: "--web: cannot listen on 127.0.0.1:\(port): \(reason); choose another port",
                                 exitStatus: ExitStatus.cannotCreate)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        listener = descriptor
        (requests, controls) = AsyncStream.makeStream(of: WebControl.self, bufferingPolicy: .bufferingNewest(256))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "carwindow-web"
        thread.start()
    }

    /// Hands a video unit to every page (Annex-B; base64 in a JSON event).
    func publish(videoUnit unit: [UInt8], isKeyframe: Bool) {
        let number = sequence.withLock { value in
            value += 1
            return value
        }
        let event = "event: video\ndata: {\"seq\":\(number),\"key\":\(isKeyframe),\"data\":\"\(Data(unit).base64EncodedString())\"}\n\n"
        let streams = hub.withLock { hub in
            if isKeyframe {
                hub.sinceKeyframe = [event]
                hub.sinceKeyframeBytes = event.utf8.count
                hub.complete = true
            } else if hub.complete {
                hub.sinceKeyframe.append(event)
                hub.sinceKeyframeBytes += event.utf8.count
                if hub.sinceKeyframe.count > Self.replayLimit.units || hub.sinceKeyframeBytes > Self.replayLimit.bytes {
                    hub.sinceKeyframe = []
                    hub.sinceKeyframeBytes = 0
                    hub.complete = false
                }
            }
            return Array(hub.streams.values)
        }
        for stream in streams { stream.send(event, isVideo: true, isKeyframe: isKeyframe) }
    }

    /// Hands the head unit's state (JSON) to every page.
    func publish(state json: String) {
        let event = "event: state\ndata: \(json)\n\n"
        for stream in hub.withLock({ Array($0.streams.values) }) { stream.send(event, isVideo: false, isKeyframe: false) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            // Child processes (encoders, ffmpeg) must not inherit the connection.
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let thread = Thread { [self] in serve(client) }
            thread.name = "carwindow-web-client"
            thread.start()
        }
    }

    /// One request: the page, the event stream (kept open), or a control.
    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = Self.readRequest(client) else {
            close(client)
            return
        }
        switch (request.method, request.path) {
        case ("GET", "/"), ("GET", "/index.html"):
            Self.respond(client, status: "200 OK", type: "text/html; charset=utf-8", body: Array(WebHeadUnitPage.html.utf8))
            close(client)
        case ("GET", "/events"):
            let header = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n\r\n"
            guard Self.write(client, Array(header.utf8)) else {
                close(client)
                return
            }
            let stream = EventStream(descriptor: client)
            // Registered and given the pictures since the last IDR in one step, so that none is
            // missed or sent twice.
            let id = hub.withLock { hub in
                hub.next += 1
                hub.streams[hub.next] = stream
                if hub.complete {
                    for (index, event) in hub.sinceKeyframe.enumerated() { stream.send(event, isVideo: true, isKeyframe: index == 0) }
                }
                return hub.next
            }
            stream.run()
            hub.withLock { $0.streams[id] = nil }
            close(client)
        case ("POST", "/control"):
            if let control = WebControl.parse(request.body) {
                controls.yield(control)
                Self.respond(client, status: "204 No Content", type: nil, body: [])
            } else {
                Self.respond(client, status: "400 Bad Request", type: "text/plain", body: Array("malformed control\n".utf8))
            }
            close(client)
        default:
            Self.respond(client, status: "404 Not Found", type: "text/plain", body: Array("not found\n".utf8))
            close(client)
        }
    }

    private struct Request {
        var method: String
        var path: String
        var body: [UInt8]
    }

    /// Reads a request line, headers (at most 16 KiB) and a body of Content-Length (at most 64 KiB).
    private static func readRequest(_ client: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            data += buffer[0..<count]
            if let range = data.firstRange(of: [13, 10, 13, 10]) { headerEnd = range.upperBound }
            if data.count > 16 << 10, headerEnd == nil { return nil }
        }
        guard let end = headerEnd, let head = String(bytes: data[0..<end], encoding: .utf8) else { return nil }
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return nil }
        var length = 0
        for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? -1
        }
        guard (0...(64 << 10)).contains(length) else { return nil }
        var body = Array(data[end...])
        while body.count < length {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            body += buffer[0..<count]
        }
        return Request(method: String(parts[0]), path: String(parts[1].split(separator: "?").first ?? ""), body: Array(body.prefix(length)))
    }

    private static func respond(_ client: Int32, status: String, type: String?, body: [UInt8]) {
        var header = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\nConnection: close\r\n"
        if let type { header += "Content-Type: \(type)\r\n" }
        _ = write(client, Array((header + "\r\n").utf8) + body)
    }

    /// Writes everything; false when the peer is gone.
    static func write(_ client: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(client, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }
}

/// One page's event stream: a bounded queue and the connection's thread writing it out.
final class EventStream: Sendable {
    private struct Queue {
        var events: [String] = []
        var waitingForKeyframe = false
        var closed = false
    }
    private let descriptor: Int32
    private let queue = LockedState(Queue())
    private let available = DispatchSemaphore(value: 0)
    /// A page more than this many events behind loses its queued pictures and waits for an IDR
    /// (room for the pictures since the last IDR that a new page gets first).
    private static let limit = 2_500

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func send(_ event: String, isVideo: Bool, isKeyframe: Bool) {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.closed else { return false }
            if isVideo {
                if queue.waitingForKeyframe, !isKeyframe { return false }
                queue.waitingForKeyframe = false
            }
            if queue.events.count >= Self.limit {
                queue.events.removeAll()
                queue.waitingForKeyframe = !isKeyframe
                if isVideo, !isKeyframe { return false }
            }
            queue.events.append(event)
            return true
        }
        if queued { available.signal() }
    }

    /// Writes events until the page goes away.
    func run() {
        while true {
            if available.wait(timeout: .now() + 15) == .timedOut {
                // A comment line keeps proxies and the browser from closing an idle stream.
                guard WebHeadUnit.write(descriptor, Array(": idle\n\n".utf8)) else { break }
                continue
            }
            let events = queue.withLock { queue in
                defer { queue.events.removeAll(keepingCapacity: true) }
                return queue.events
            }
            guard events.allSatisfy({ WebHeadUnit.write(descriptor, Array($0.utf8)) }) else { break }
        }
        queue.withLock { $0.closed = true }
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

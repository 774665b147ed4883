import Foundation
import Glibc
import CarWindowSDL
import CarWindowSystemSupport
import CarWindowVideoCore

/// The HTTP side of the browser head unit (`carwindow headunit --web PORT`, `carwindow drive
/// --web PORT`): a small server on the loopback interface that serves one page, streams video
/// units and state to it as server-sent events, and hands the page's controls on in order.
///
/// Plain sockets and a thread per connection: a page or two on the same machine, no more. Each
/// event stream has a bounded queue of its own, so a slow browser drops pictures (until the next
/// IDR) instead of holding up the head unit.
package final class WebHeadUnitServer: Sendable {
    /// What one server takes at most.
    package struct Limits: Sendable {
        /// Connections open at once, event streams included.
        package var connections = 64
        /// Event streams open at once (pages), within ``connections``.
        package var eventStreams = 16
        /// How long a client has to send a request head and body.
        package var requestTimeout: Duration = .seconds(5)
        /// The longest request head (request line and headers).
        package var headBytes = 16 << 10
        /// The longest request body.
        package var bodyBytes = 64 << 10
        /// The first pause after a failed accept, doubled on each failure in a row up to
        /// ``longestPause``.
        package var shortestPause: Duration = .milliseconds(5)
        package var longestPause: Duration = .seconds(1)

        package init() {}
    }

    /// Why the server could not start.
    package struct StartFailure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Takes one connection off the listening socket: the new descriptor, or -1 and the error
    /// number.
    package typealias AcceptFunction = @Sendable (_ listener: Int32) -> (descriptor: Int32, error: Int32)

    /// `accept`, and close-on-exec on the connection: child processes (encoders, ffmpeg) must
    /// not inherit it. (Glibc's module leaves out `accept4`.)
    package static let systemAccept: AcceptFunction = { listener in
        let descriptor = accept(listener, nil, nil)
        guard descriptor >= 0 else { return (-1, errno) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        return (descriptor, 0)
    }

    /// The port listened on.
    package let port: Int
    /// The page's secret: the page is served with it in place of ``tokenPlaceholder``.
    package let token: String
    /// Where the page wants ``token``.
    package static let tokenPlaceholder = "__CARWINDOW_PAGE_TOKEN__"
    /// The page's controls, in the order they came.
    package let requests: AsyncStream<WebControl>
    private let controls: AsyncStream<WebControl>.Continuation
    private let page: [UInt8]
    private let limits: Limits
    private let listener: Int32
    private let log: @Sendable (String) -> Void
    private let acceptConnection: AcceptFunction
    private let pause: @Sendable (Duration) -> Void

    /// The open connections by number, so that ``stop()`` can end them.
    private struct Connections {
        var open: [Int: Int32] = [:]
        var next = 0
        var stopped = false
        /// The kinds of trouble already logged: each is logged once.
        var logged: Set<String> = []
    }
    private let connections = LockedState(Connections())

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
    private let sequence = LockedState(0)
    private let screen = LockedState((width: 8192, height: 8192))

    /// Listens on 127.0.0.1:`port` (0: a free port) and serves `page` at `/`. `log` takes what
    /// went wrong (once per kind); `accept` and `pause` stand in for the system's in tests.
    package init(port: Int, page: String, limits: Limits = Limits(), log: @escaping @Sendable (String) -> Void,
                 accept: @escaping AcceptFunction = WebHeadUnitServer.systemAccept,
                 pause: @escaping @Sendable (Duration) -> Void = { Thread.sleep(forTimeInterval: $0.inSeconds) }) throws(StartFailure) {
        guard (0...65_535).contains(port) else { throw StartFailure(description: "the port must be in 0...65535, not \(port)") }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw StartFailure(description: "socket failed: \(String(cString: strerror(errno)))")
        }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw StartFailure(description: "cannot listen on 127.0.0.1:\(port): \(reason); choose another port")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        var generator = SystemRandomNumberGenerator()
        token = (0..<4).map { _ in String(generator.next() as UInt32, radix: 16) }.joined(separator: "-")
        listener = descriptor
        self.page = Array(page.utf8)
        self.limits = limits
        self.log = log
        acceptConnection = accept
        self.pause = pause
        (requests, controls) = AsyncStream.makeStream(of: WebControl.self, bufferingPolicy: .bufferingNewest(256))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "carwindow-web"
        thread.start()
    }

    /// Connections open now, event streams included.
    package var connectionCount: Int { connections.withLock { $0.open.count } }

    /// Event streams (pages) open now.
    package var eventStreamCount: Int { hub.withLock { $0.streams.count } }

    /// The head unit's screen in pixels: touches are clamped to it.
    package func setScreen(width: Int, height: Int) {
        screen.withLock { $0 = (max(1, width), max(1, height)) }
    }

    /// Stops listening and ends every connection.
    package func stop() {
        let open = connections.withLock { state in
            state.stopped = true
            return Array(state.open.values)
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for descriptor in open { shutdown(descriptor, Int32(SHUT_RDWR)) }
        for stream in hub.withLock({ Array($0.streams.values) }) { stream.close() }
        controls.finish()
    }

    /// Hands a video unit to every page (Annex-B; base64 in a JSON event).
    package func publish(videoUnit unit: [UInt8], isKeyframe: Bool) {
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
    package func publish(state json: String) {
        let event = "event: state\ndata: \(json)\n\n"
        for stream in hub.withLock({ Array($0.streams.values) }) { stream.send(event, isVideo: false, isKeyframe: false) }
    }

    /// Logs `message` the first time trouble of `kind` happens.
    private func logOnce(_ kind: String, _ message: @autoclosure () -> String) {
        if connections.withLock({ $0.logged.insert(kind).inserted }) { log(message()) }
    }

    private func acceptLoop() {
        while true {
            let (client, error) = acceptConnection(listener)
            if client < 0 {
                if error == EINTR || error == ECONNABORTED { continue }
                break
            }
            let id: Int? = connections.withLock { state in
                guard !state.stopped else { return nil }
                state.next += 1
                state.open[state.next] = client
                return state.next
            }
            guard let id else {
                close(client)
                break
            }
            let thread = Thread { [self] in
                serve(client)
                connections.withLock { _ = $0.open.removeValue(forKey: id) }
                close(client)
            }
            thread.name = "carwindow-web-client"
            thread.start()
        }
        close(listener)
    }

    /// One request: the page, the event stream (kept open), or a control.
    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = readRequest(client) else { return }
        switch (request.method, request.path) {
        case ("GET", "/"), ("GET", "/index.html"):
            Self.respond(client, status: "200 OK", type: "text/html; charset=utf-8", body: page)
        case ("GET", "/events"):
            let header = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n\r\n"
            guard Self.write(client, Array(header.utf8)) else { return }
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
            hub.withLock { _ = $0.streams.removeValue(forKey: id) }
        case ("POST", "/control"):
            if let control = WebControl.parse(request.body, screen: screen.withLock { $0 }) {
                controls.yield(control)
                Self.respond(client, status: "204 No Content", type: nil, body: [])
            } else {
                Self.respond(client, status: "400 Bad Request", type: "text/plain", body: Array("malformed control\n".utf8))
            }
        default:
            Self.respond(client, status: "404 Not Found", type: "text/plain", body: Array("not found\n".utf8))
        }
    }

    /// Reads a request line, headers (at most 16 KiB) and a body of Content-Length (at most 64 KiB).
    private func readRequest(_ client: Int32) -> WebRequest? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            data += buffer[0..<count]
            if let range = data.firstRange(of: [13, 10, 13, 10]) { headerEnd = range.upperBound }
            if data.count > limits.headBytes, headerEnd == nil { return nil }
        }
        guard let end = headerEnd, var request = WebRequest.parse(head: data[0..<end]),
              request.contentLength <= limits.bodyBytes else { return nil }
        var body = Array(data[end...])
        while body.count < request.contentLength {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            body += buffer[0..<count]
        }
        request.body = Array(body.prefix(request.contentLength))
        return request
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

    /// Ends the stream: its thread stops writing and returns from ``run()``.
    func close() {
        queue.withLock { $0.closed = true }
        available.signal()
    }

    /// Writes events until the page goes away or the stream is closed.
    func run() {
        while true {
            if available.wait(timeout: .now() + 15) == .timedOut {
                // A comment line keeps proxies and the browser from closing an idle stream.
                guard WebHeadUnitServer.write(descriptor, Array(": idle\n\n".utf8)) else { break }
                continue
            }
            let events: [String]? = queue.withLock { queue in
                guard !queue.closed else { return nil }
                defer { queue.events.removeAll(keepingCapacity: true) }
                return queue.events
            }
            guard let events, events.allSatisfy({ WebHeadUnitServer.write(descriptor, Array($0.utf8)) }) else { break }
        }
        queue.withLock { $0.closed = true }
    }
}

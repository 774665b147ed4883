import Foundation
import Glibc
import CarWindowSystemSupport
import CarWindowVideoCore

/// The HTTP side of the browser head unit (`carwindow headunit --web PORT`, `carwindow drive
/// --web PORT`): a small server on the loopback interface that serves one page, streams video
/// units and state to it as server-sent events, and hands the page's controls on in order.
///
/// Only the page itself may use it: every request needs a loopback `Host` with the server's
/// port and, when it has an `Origin`, the page's own; a control also needs a JSON content type
/// and the page's token (``WebRequest/refusal(port:token:)``). Anything else gets 403.
///
/// Plain sockets and a thread per connection, with bounds a local program cannot push past:
/// at most ``Limits/connections`` connections (and threads) at once, of which at most
/// ``Limits/eventStreams`` event streams; a request must arrive whole within
/// ``Limits/requestTimeout``. Each event stream has a bounded queue of its own, so a slow
/// browser drops pictures (until the next IDR) instead of holding up the head unit. Accept
/// errors (out of descriptors, out of memory) pause the server, never end it.
package final class WebHeadUnitServer: Sendable {
    /// What one server takes at most.
    package struct Limits: Sendable {
        /// Connections open at once, event streams included; one more is answered 503 and
        /// closed at once, without a thread of its own.
        package var connections = 64
        /// Event streams (pages) open at once, within ``connections``; a new one closes the
        /// oldest, which is most likely a page that went away without a word.
        package var eventStreams = 16
        /// How long a client has to send a whole request, head and body (slow clients hold a
        /// thread each).
        package var requestTimeout: Duration = .seconds(5)
        /// The longest request head (request line and headers).
        package var headBytes = 16 << 10
        /// The longest request body.
        package var bodyBytes = 64 << 10
        /// The first pause after a failed accept, doubled on each failure in a row up to
        /// ``longestPause``.
        package var shortestPause: Duration = .milliseconds(5)
        /// The longest pause after failed accepts.
        package var longestPause: Duration = .seconds(1)
        /// The process's descriptor limit (nil: its soft `RLIMIT_NOFILE`). The server takes at
        /// most a quarter of it in connections, whatever ``connections`` says: a Swift process
        /// on Linux must never run out of descriptors, since libdispatch's worker monitor ends
        /// the process when it cannot open a file under /proc.
        package var descriptorLimit: Int?

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
    /// ``Limits/connections``, or less under a low descriptor limit.
    package let connectionLimit: Int
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
    /// How long a write to a client may block before the client counts as gone: a page that
    /// stops reading must not hold its thread for ever.
    private static let sendTimeout = timeval(tv_sec: 30, tv_usec: 0)

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
        self.page = Array(page.replacingOccurrences(of: Self.tokenPlaceholder, with: token).utf8)
        self.limits = limits
        connectionLimit = max(1, min(limits.connections, (limits.descriptorLimit ?? Self.softDescriptorLimit) / 4))
        self.log = log
        acceptConnection = accept
        self.pause = pause
        (requests, controls) = AsyncStream.makeStream(of: WebControl.self, bufferingPolicy: .bufferingNewest(256))
        if connectionLimit < limits.connections {
            log("the descriptor limit (\(limits.descriptorLimit ?? Self.softDescriptorLimit), ulimit -n) leaves room for "
                + "\(connectionLimit) connections to the page instead of \(limits.connections); raise it for more pages")
        }
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "carwindow-web"
        thread.start()
    }

    /// The process's soft limit on open descriptors (`ulimit -n`), capped to what an Int holds.
    private static var softDescriptorLimit: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// Connections open now, event streams included: one thread each.
    package var connectionCount: Int { connections.withLock { $0.open.count } }

    /// Event streams (pages) open now.
    package var eventStreamCount: Int { hub.withLock { $0.streams.count } }

    /// The head unit's screen in pixels (each side taken into 1...8192): touches are clamped to it.
    package func setScreen(width: Int, height: Int) {
        screen.withLock { $0 = (min(max(1, width), 8192), min(max(1, height), 8192)) }
    }

    /// Stops listening and ends every connection.
    package func stop() {
        let first = connections.withLock { state in
            guard !state.stopped else { return false }
            state.stopped = true
            // Under the lock: a connection's descriptor is closed only after it left `open`,
            // and the listener only after the accept loop saw `stopped`, so none of these can
            // be a reused number by now.
            for descriptor in state.open.values { shutdown(descriptor, Int32(SHUT_RDWR)) }
            shutdown(listener, Int32(SHUT_RDWR))
            return true
        }
        guard first else { return }
        hub.withLock { hub in
            for stream in hub.streams.values { stream.close() }
        }
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

    /// The part of a state that the server reads itself.
    private struct StateDisplay: Decodable {
        struct Size: Decodable {
            var width: Int
            var height: Int
        }
        var display: Size?
    }

    /// Hands the head unit's state (JSON) to every page. Its `display` (`{"width":W,"height":H}`,
    /// the head unit's screen in pixels, when it has one) becomes the screen that touches are
    /// clamped to, so the state the page sees and the clamping never disagree.
    package func publish(state json: String) {
        if let display = (try? JSONDecoder().decode(StateDisplay.self, from: Data(json.utf8)))?.display {
            setScreen(width: display.width, height: display.height)
        }
        let event = "event: state\ndata: \(json)\n\n"
        for stream in hub.withLock({ Array($0.streams.values) }) { stream.send(event, isVideo: false, isKeyframe: false) }
    }

    /// Logs `message` the first time trouble of `kind` happens: a flood of the same trouble
    /// must not become a flood of lines.
    private func logOnce(_ kind: String, _ message: @autoclosure () -> String) {
        if connections.withLock({ $0.logged.insert(kind).inserted }) { log(message()) }
    }

    private func acceptLoop() {
        var failuresInARow = 0
        while true {
            let (client, error) = acceptConnection(listener)
            if connections.withLock({ $0.stopped }) {
                if client >= 0 { close(client) }
                break
            }
            guard client >= 0 else {
                // A signal, or a client that gave up before it was taken: nothing is wrong.
                if error == EINTR || error == ECONNABORTED { continue }
                // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) passes when
                // connections close; the waiting client stays in the backlog meanwhile. Retrying
                // at once would spin, so pause, longer each time in a row.
                logOnce("accept \(error)", "accepting a connection failed with \(Self.describe(error))"
                        + "\(Self.advice(error)); the page's server pauses and retries (logged once)")
                let factor = 1 << min(failuresInARow, 20)
                pause(min(limits.longestPause, limits.shortestPause * factor))
                failuresInARow += 1
                continue
            }
            failuresInARow = 0
            admit(client)
        }
        close(listener)
    }

    /// Serves `client` on a thread of its own, or turns it away when the server has as many
    /// connections as it takes.
    private func admit(_ client: Int32) {
        let id: Int? = connections.withLock { state in
            guard state.open.count < connectionLimit else { return nil }
            state.next += 1
            state.open[state.next] = client
            return state.next
        }
        guard let id else {
            logOnce("connection limit", "\(connectionLimit) connections are open, the most the page's server takes; "
                    + "further ones are answered 503 until some close (logged once)")
            turnAway(client)
            return
        }
        var timeout = Self.sendTimeout
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            serve(client)
            connections.withLock { _ = $0.open.removeValue(forKey: id) }
            close(client)
        }
        thread.name = "carwindow-web-client"
        thread.start()
    }

    /// Answers 503 on the accepting thread without ever blocking it.
    private func turnAway(_ client: Int32) {
        let response = Self.response(status: "503 Service Unavailable", type: "text/plain",
                                     body: Array("too many connections to the head unit's page; try again when some have closed\n".utf8))
        _ = response.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        shutdown(client, Int32(SHUT_WR))
        // What the client sent already is read, so that the close does not reset the
        // connection (a reset can drop the answer before the client reads it).
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { break }
        }
        close(client)
    }

    /// One request: the page, the event stream (kept open), or a control.
    private func serve(_ client: Int32) {
        let request: WebRequest
        switch readRequest(client, before: .now + limits.requestTimeout) {
        case .request(let read):
            request = read
        case .refused(let status, let reason):
            respond(client, status: status, body: reason)
            return
        case .gone:
            return
        }
        if let refusal = request.refusal(port: port, token: token) {
            let reason = refusal.reason(port: port)
            logOnce("refused \(refusal.kind)", "\(reason) (logged once)")
            respond(client, status: "403 Forbidden", body: reason + "\n")
            return
        }
        switch (request.method, request.path) {
        case ("GET", "/"), ("GET", "/index.html"):
            respond(client, status: "200 OK", type: "text/html; charset=utf-8", body: page)
        case ("GET", "/events"):
            let header = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n\r\n"
            guard Self.write(client, Array(header.utf8)) else { return }
            let stream = EventStream(descriptor: client)
            // Registered and given the pictures since the last IDR in one step, so that none is
            // missed or sent twice.
            let (id, evicted) = hub.withLock { hub in
                var evicted: EventStream?
                if hub.streams.count >= limits.eventStreams, let oldest = hub.streams.keys.min() {
                    evicted = hub.streams.removeValue(forKey: oldest)
                    // Closed under the lock: its descriptor stays open until its thread has
                    // seen it leave the hub.
                    evicted?.close()
                }
                hub.next += 1
                hub.streams[hub.next] = stream
                if hub.complete {
                    for (index, event) in hub.sinceKeyframe.enumerated() { stream.send(event, isVideo: true, isKeyframe: index == 0) }
                }
                return (hub.next, evicted != nil)
            }
            if evicted {
                logOnce("stream limit", "\(limits.eventStreams) pages are open, the most the page's server streams to; "
                        + "each new one closes the oldest (logged once)")
            }
            stream.run()
            hub.withLock { _ = $0.streams.removeValue(forKey: id) }
        case ("POST", "/control"):
            if let control = WebControl.parse(request.body, screen: screen.withLock { $0 }) {
                controls.yield(control)
                respond(client, status: "204 No Content", body: "")
            } else {
                respond(client, status: "400 Bad Request", body: "malformed control: see WebHeadUnitPage for the actions and their fields\n")
            }
        default:
            respond(client, status: "404 Not Found", body: "not found\n")
        }
    }

    private enum ReadOutcome {
        case request(WebRequest)
        /// Answered with this status and reason, then closed.
        case refused(String, String)
        /// The client left, or the connection failed: nothing to answer.
        case gone
    }

    /// Reads a request head of at most ``Limits/headBytes`` and a body of Content-Length (at
    /// most ``Limits/bodyBytes``), all before `deadline`.
    private func readRequest(_ client: Int32, before deadline: ContinuousClock.Instant) -> ReadOutcome {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        while headEnd == nil {
            switch Self.receive(client, into: &buffer, before: deadline) {
            case .bytes(let count): data += buffer[0..<count]
            case .closed: return .gone
            case .timedOut: return .refused("408 Request Timeout", "the request did not arrive within \(limits.requestTimeout)\n")
            }
            if let range = data.firstRange(of: [13, 10, 13, 10]) {
                headEnd = range.upperBound
            }
            if (headEnd ?? data.count) > limits.headBytes {
                return .refused("431 Request Header Fields Too Large", "the request head is over \(limits.headBytes) bytes\n")
            }
        }
        guard let end = headEnd, var request = WebRequest.parse(head: data[0..<end]) else {
            return .refused("400 Bad Request", "malformed request head\n")
        }
        guard request.contentLength <= limits.bodyBytes else {
            return .refused("413 Content Too Large", "the request body is over \(limits.bodyBytes) bytes\n")
        }
        var body = Array(data[end...])
        while body.count < request.contentLength {
            switch Self.receive(client, into: &buffer, before: deadline) {
            case .bytes(let count): body += buffer[0..<count]
            case .closed: return .gone
            case .timedOut: return .refused("408 Request Timeout", "the request did not arrive within \(limits.requestTimeout)\n")
            }
        }
        request.body = Array(body.prefix(request.contentLength))
        return .request(request)
    }

    private enum Received {
        case bytes(Int)
        case closed
        case timedOut
    }

    /// Waits for bytes until `deadline`, however they trickle in.
    private static func receive(_ client: Int32, into buffer: inout [UInt8], before deadline: ContinuousClock.Instant) -> Received {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return .timedOut }
            // Whole milliseconds, rounded up so that the last fraction is waited for too.
            let milliseconds = Int(min(left.inSeconds * 1000, 60_000)) + 1
            var poller = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(milliseconds))
            if ready < 0, errno != EINTR { return .closed }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            if errno != EINTR, errno != EAGAIN, errno != EWOULDBLOCK { return .closed }
        }
    }

    private static func response(status: String, type: String?, body: [UInt8]) -> [UInt8] {
        var header = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\nConnection: close\r\n"
        if let type { header += "Content-Type: \(type)\r\n" }
        return Array((header + "\r\n").utf8) + body
    }

    /// Answers and ends the connection. What the client still sends is read for a moment
    /// first: closing with unread bytes resets the connection, and a reset can drop the answer
    /// before the client reads it.
    private func respond(_ client: Int32, status: String, type: String? = nil, body: [UInt8]) {
        guard Self.write(client, Self.response(status: status, type: type, body: body)) else { return }
        shutdown(client, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(1)
        for _ in 0..<64 {
            guard case .bytes = Self.receive(client, into: &buffer, before: deadline) else { break }
        }
    }

    private func respond(_ client: Int32, status: String, body: String) {
        respond(client, status: status, type: body.isEmpty ? nil : "text/plain; charset=utf-8", body: Array(body.utf8))
    }

    /// Writes everything; false when the peer is gone (or stopped reading for ``sendTimeout``).
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

    /// `EMFILE (Too many open files)`.
    private static func describe(_ error: Int32) -> String {
        let name = switch error {
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case ENOBUFS: "ENOBUFS"
        case ENOMEM: "ENOMEM"
        case EPERM: "EPERM"
        case EPROTO: "EPROTO"
        default: "errno \(error)"
        }
        return "\(name) (\(String(cString: strerror(error))))"
    }

    /// What the user can do about an accept error.
    private static func advice(_ error: Int32) -> String {
        switch error {
        case EMFILE: " (this process's descriptor limit: raise it with ulimit -n, or close pages)"
        case ENFILE: " (the system's descriptor limit: close programs, or raise fs.file-max)"
        case ENOBUFS, ENOMEM: " (the system is short of memory)"
        default: ""
        }
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

    /// Ends the stream: its thread stops writing, also in the middle of a blocked write, and
    /// returns from ``run()``. The caller makes sure the descriptor is still open.
    func close() {
        queue.withLock { $0.closed = true }
        shutdown(descriptor, Int32(SHUT_RDWR))
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

import Foundation
import Glibc
import Testing
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowSystemSupport
@testable import CarWindowTestSupport

/// The browser head unit's HTTP server (issue 25): it outlives accept errors, keeps its
/// connections and threads bounded, and cuts slow clients off.
/// One test at a time: several wait on blocking sockets, each holding one of Swift concurrency's few
/// threads, which the real-clock session tests beside them need.
@Suite(.serialized) struct WebHeadUnitServerTests {
    /// A client connection to the server; every read gives up after the hang guard.
    final class Client {
        let descriptor: Int32

        init(port: Int) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(descriptor >= 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0, "cannot connect to 127.0.0.1:\(port): errno \(errno)")
        }

        deinit { close(descriptor) }

        /// Whether every byte went out (false once the server closed the connection).
        @discardableResult
        func send(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }

        /// What arrives until the server closes the connection, or `marker` arrives, or the
        /// hang guard passes (one deadline for all of it: a stream's keep-alive comments must
        /// not extend it).
        func read(until marker: String? = nil) -> String {
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let end = ContinuousClock.now + hangGuard
            while ContinuousClock.now < end {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) != 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count < 0, errno == EAGAIN || errno == EINTR { continue }
                if count <= 0 { break }
                data += buffer[0..<count]
                if let marker, String(decoding: data, as: UTF8.self).contains(marker) { break }
            }
            return String(decoding: data, as: UTF8.self)
        }

        /// Whether the server has closed the connection (or said something) by now, without waiting.
        var serverSpoke: Bool {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            return poll(&poller, 1, 0) > 0
        }
    }

    /// The status code of a response, or nil when there was none.
    static func status(_ response: String) -> Int? {
        let parts = response.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else { return nil }
        return Int(parts[1])
    }

    static func request(_ method: String, _ path: String, host: String, headers: [(String, String)] = [], body: String = "") -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method == "POST" { text += "Content-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + body
    }

    /// Sends one request on a new connection and reads the whole response.
    static func exchange(_ port: Int, _ method: String, _ path: String, host: String? = nil,
                         headers: [(String, String)] = [], body: String = "") throws -> String {
        let client = try Client(port: port)
        client.send(request(method, path, host: host ?? "127.0.0.1:\(port)", headers: headers, body: body))
        return client.read()
    }

    static let page = "<p>\(WebHeadUnitServer.tokenPlaceholder)</p>"

    static func server(_ limits: WebHeadUnitServer.Limits = .init(), logs: LockedState<[String]> = LockedState([]),
                       accept: @escaping WebHeadUnitServer.AcceptFunction = WebHeadUnitServer.systemAccept,
                       pause: @escaping @Sendable (Duration) -> Void = { _ in }) throws -> WebHeadUnitServer {
        try WebHeadUnitServer(port: 0, page: page, limits: limits, log: { message in logs.withLock { $0.append(message) } },
                              accept: accept, pause: pause)
    }

    /// `accept` failing with EMFILE ended the accept loop for good: the page never answered
    /// again and nothing was logged. Now each kind of error is logged once, the loop pauses
    /// (longer each time in a row) and goes on.
    @Test(.timeLimit(.minutes(2))) func acceptErrorsAreLoggedOnceAndTheServerGoesOn() throws {
        let failures = LockedState([EMFILE, EMFILE, EMFILE, ENFILE, EINTR])
        let pauses = LockedState<[Duration]>([])
        let logs = LockedState<[String]>([])
        var limits = WebHeadUnitServer.Limits()
        limits.shortestPause = .milliseconds(5)
        limits.longestPause = .milliseconds(20)
        let server = try Self.server(limits, logs: logs, accept: { listener in
            if let error = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return (-1, error) }
            return WebHeadUnitServer.systemAccept(listener)
        }, pause: { duration in pauses.withLock { $0.append(duration) } })
        defer { server.stop() }
        let response = try Self.exchange(server.port, "GET", "/")
        #expect(Self.status(response) == 200, "no answer after the accept errors: \(response.debugDescription)")
        #expect(failures.withLock { $0.isEmpty })
        // Interrupted calls are retried at once; the others back off, doubling up to the longest pause.
        #expect(pauses.withLock { $0 } == [.milliseconds(5), .milliseconds(10), .milliseconds(20), .milliseconds(20)])
        let logged = logs.withLock { $0 }
        #expect(logged.filter { $0.contains("EMFILE") }.count == 1, "\(logged)")
        #expect(logged.filter { $0.contains("ENFILE") }.count == 1, "\(logged)")
        #expect(!logged.contains { $0.contains("EINTR") }, "\(logged)")
    }

    /// 600 idle connections took 340 threads. Now connections beyond the cap are answered 503
    /// at once, without a thread, and the page answers again as soon as the idle ones go.
    @Test(.timeLimit(.minutes(3))) func connectionsBeyondTheCapAreTurnedAway() async throws {
        var limits = WebHeadUnitServer.Limits()
        limits.connections = 4
        limits.eventStreams = 2
        // The idle connections must outlast the test however loaded the machine is: the request
        // deadline (5 s by default) cut them once before the count was read.
        limits.requestTimeout = hangGuard
        let logs = LockedState<[String]>([])
        let server = try Self.server(limits, logs: logs)
        defer { server.stop() }
        var idle = try (0..<4).map { _ in try Client(port: server.port) }
        #expect(await eventually { server.connectionCount == 4 })
        for index in 0..<10 {
            let extra = try Client(port: server.port)
            let response = extra.read()
            #expect(Self.status(response) == 503, "connection \(index + 5): \(response.debugDescription)")
        }
        #expect(server.connectionCount == 4)
        let refused = try Self.exchange(server.port, "GET", "/")
        #expect(Self.status(refused) == 503, "\(refused.debugDescription)")
        #expect(logs.withLock { $0.filter { $0.contains("503") }.count } == 1, "\(logs.withLock { $0 })")
        idle.removeAll()
        #expect(await eventually { server.connectionCount == 0 })
        #expect(Self.status(try Self.exchange(server.port, "GET", "/")) == 200)
    }

    /// Under a low descriptor limit the server takes fewer connections, so that it never runs
    /// the process out of descriptors (libdispatch ends a Swift process that does).
    @Test(.timeLimit(.minutes(3))) func aLowDescriptorLimitLowersTheCap() async throws {
        var limits = WebHeadUnitServer.Limits()
        limits.descriptorLimit = 12
        // The idle clients stay open however slowly the test runs: at the default 5 s a starved
        // test could see them cut off before it counted them.
        limits.requestTimeout = hangGuard
        let logs = LockedState<[String]>([])
        let server = try Self.server(limits, logs: logs)
        defer { server.stop() }
        #expect(server.connectionLimit == 3)
        #expect(logs.withLock { $0.contains { $0.contains("ulimit -n") } }, "\(logs.withLock { $0 })")
        let idle = try (0..<3).map { _ in try Client(port: server.port) }
        #expect(await eventually { server.connectionCount == 3 })
        #expect(Self.status(try Self.exchange(server.port, "GET", "/")) == 503)
        #expect(idle.count == 3)
        var defaults = WebHeadUnitServer.Limits()
        defaults.descriptorLimit = 1 << 20
        let roomy = try Self.server(defaults)
        defer { roomy.stop() }
        #expect(roomy.connectionLimit == 64)
    }

    /// A client that sends its request head a byte at a time held a thread for as long as it
    /// kept sending (each read had its own 10 s limit). The whole request now has one deadline.
    @Test(.timeLimit(.minutes(2))) func aSlowRequestIsCutOff() throws {
        var limits = WebHeadUnitServer.Limits()
        limits.requestTimeout = .milliseconds(200)
        let server = try Self.server(limits)
        defer { server.stop() }
        let client = try Client(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nX-Slow: ")
        // A byte every 10 ms, for at most the hang guard and fewer bytes than the head limit.
        var cutOff = false
        for _ in 0..<6_000 {
            if client.serverSpoke || !client.send("a") {
                cutOff = true
                break
            }
            usleep(10_000)
        }
        #expect(cutOff, "the server still waits for the rest of a request that trickled in for a minute")
        let response = client.read()
        #expect(response.isEmpty || Self.status(response) == 408, "\(response.debugDescription)")
    }

    /// A request head beyond the limit gets an answer saying so, not a silent close.
    @Test(.timeLimit(.minutes(2))) func anOversizedRequestHeadIsRefused() throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = try Client(port: server.port)
        let line = "X-Filler: " + String(repeating: "a", count: 100) + "\r\n"
        client.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n" + String(repeating: line, count: 200))
        #expect(Self.status(client.read()) == 431)
    }

    /// Event streams live as long as their page; beyond their own limit the oldest is closed
    /// (a page that went away without a word), so a page that opens now always gets its stream.
    @Test(.timeLimit(.minutes(2))) func theOldestEventStreamMakesRoomForANewOne() async throws {
        var limits = WebHeadUnitServer.Limits()
        limits.eventStreams = 2
        let server = try Self.server(limits)
        defer { server.stop() }
        var streams: [Client] = []
        for index in 0..<3 {
            let client = try Client(port: server.port)
            client.send(Self.request("GET", "/events", host: "127.0.0.1:\(server.port)"))
            #expect(Self.status(client.read(until: "\r\n\r\n")) == 200)
            streams.append(client)
            #expect(await eventually { server.eventStreamCount == min(index + 1, 2) })
        }
        // The first page's stream ends: what remains to read is nothing, then the close.
        #expect(streams[0].read() == "")
        #expect(server.eventStreamCount == 2)
        #expect(!streams[2].serverSpoke)
    }
}

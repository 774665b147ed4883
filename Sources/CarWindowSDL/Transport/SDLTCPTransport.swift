import Dispatch
import Glibc
import SystemPackage
import CarWindowSystemSupport

/// SDL over TCP (what SDL Core's TCP adapter and emulators listen on, port 12345 by default).
///
/// The socket is non-blocking; reads and writes wait in `poll(2)` on one serial dispatch queue
/// per direction, so they never occupy Swift's cooperative threads and a slow head unit holds
/// back only the writer. `close()` shuts the socket down, which wakes both waits at once; the
/// descriptor itself is closed only after both queues have let go of it.
public final class SDLTCPTransport: SDLTransport {
    /// How long one `poll(2)` waits before the closed flag is checked again (a safety net: the
    /// shutdown in ``close()`` normally wakes it at once).
    static let pollSlice: Int32 = 500

    private struct State {
        var descriptor: Int32?
        var isClosed = false
    }

    private let host: String
    private let port: Int
    private let connectTimeout: Duration
    private let writeTimeout: Duration?
    private let sendBufferSize: Int?
    private let state = LockedState(State())
    private let readQueue = DispatchQueue(label: "carwindow.sdl.tcp.read")
    private let writeQueue = DispatchQueue(label: "carwindow.sdl.tcp.write")

    /// A transport that will connect to `host:port` (a name, an IPv4 or IPv6 address).
    ///
    /// - Parameters:
    ///   - host: the head unit's host name, IPv4 or IPv6 address.
    ///   - port: its TCP port (SDL Core listens on 12345 by default).
    ///   - connectTimeout: how long ``connect()`` waits for the head unit.
    ///   - writeTimeout: how long one write may wait for a peer that takes nothing; nil waits
    ///     for ever (back-pressure is then bounded by the caller's queue).
    ///   - sendBufferSize: SO_SNDBUF; smaller makes back-pressure reach the video queue sooner
    ///     (less latency queued in the kernel), nil keeps the system's default.
    public init(host: String, port: Int, connectTimeout: Duration = .seconds(5), writeTimeout: Duration? = .seconds(10),
                sendBufferSize: Int? = nil) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.writeTimeout = writeTimeout
        self.sendBufferSize = sendBufferSize
    }

    /// Wraps a socket that is already connected (from ``SDLTCPListener``).
    init(connectedDescriptor: Int32, peer: String, writeTimeout: Duration? = .seconds(10)) {
        host = peer
        port = 0
        connectTimeout = .zero
        self.writeTimeout = writeTimeout
        sendBufferSize = nil
        state.withLock { $0.descriptor = connectedDescriptor }
    }

    deinit {
        if let descriptor = state.withLock({ $0.descriptor }) { _ = Glibc.close(descriptor) }
    }

    public func connect() async throws(SDLTransportError) {
        try await run(on: writeQueue) { () throws(SDLTransportError) in try self.blockingConnect() }
    }

    public func read(maximumCount: Int) async throws(SDLTransportError) -> [UInt8] {
        try await run(on: readQueue) { () throws(SDLTransportError) in try self.blockingRead(maximumCount: max(1, maximumCount)) }
    }

    public func write(_ bytes: [UInt8]) async throws(SDLTransportError) {
        try await run(on: writeQueue) { () throws(SDLTransportError) in try self.blockingWrite(bytes) }
    }

    public func close() {
        let descriptor: Int32? = state.withLock { state in
            guard !state.isClosed else { return nil }
            state.isClosed = true
            return state.descriptor
        }
        guard let descriptor else { return }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        // Both queues finish what they are doing (they see the flag or the shutdown) before the
        // descriptor number is released for reuse.
        readQueue.async { [self] in
            writeQueue.async { [self] in
                let owned = state.withLock { state -> Int32? in
                    defer { state.descriptor = nil }
                    return state.descriptor
                }
                if let owned { _ = Glibc.close(owned) }
            }
        }
    }

    // MARK: Blocking work, on the queues

    private func run<T: Sendable>(on queue: DispatchQueue,
                                  _ body: @escaping @Sendable () throws(SDLTransportError) -> T) async throws(SDLTransportError) -> T {
        let result: Result<T, SDLTransportError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(SDLTransportError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    private func openDescriptor() throws(SDLTransportError) -> Int32 {
        try state.withLock { state throws(SDLTransportError) -> Int32 in
            guard !state.isClosed, let descriptor = state.descriptor else { throw .closed }
            return descriptor
        }
    }

    private func blockingConnect() throws(SDLTransportError) {
        let addresses: [SocketAddress]
        do {
            addresses = try SocketAddress.resolve(host: host, port: port, socketType: Int32(SOCK_STREAM.rawValue))
        } catch {
            throw .unresolvableHost(host, reason: error.message)
        }
        var lastError = SDLTransportError.timedOut(operation: "connect to \(host):\(port)")
        for address in addresses {
            let descriptor = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard descriptor >= 0 else { throw .systemCallFailed(operation: "socket", .ofLastCall) }
            var enable: Int32 = 1
            // Control messages are small and latency-bound; Nagle would hold them back.
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &enable, socklen_t(MemoryLayout<Int32>.size))
            if let sendBufferSize {
                var size = Int32(clamping: sendBufferSize)
                _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            let result = address.withSockaddr { pointer, length in Glibc.connect(descriptor, pointer, length) }
            if result == 0 || errno == EINPROGRESS {
                do throws(SDLTransportError) {
                    if result != 0 { try waitForConnection(descriptor) }
                    let stored = state.withLock { state -> Bool in
                        guard !state.isClosed else { return false }
                        state.descriptor = descriptor
                        return true
                    }
                    guard stored else {
                        _ = Glibc.close(descriptor)
                        throw .closed
                    }
                    return
                } catch {
                    _ = Glibc.close(descriptor)
                    if error == .closed { throw error }
                    lastError = error
                }
            } else {
                lastError = .systemCallFailed(operation: "connect to \(host):\(port)", .ofLastCall)
                _ = Glibc.close(descriptor)
            }
        }
        throw lastError
    }

    private func waitForConnection(_ descriptor: Int32) throws(SDLTransportError) {
        let deadline = ContinuousClock.now + connectTimeout
        while true {
            if state.withLock({ $0.isClosed }) { throw .closed }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw .timedOut(operation: "connect to \(host):\(port)") }
            let ready = try poll(descriptor, events: Int16(POLLOUT), milliseconds: min(Self.pollSlice, Self.milliseconds(remaining)))
            guard ready else { continue }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else {
                throw .systemCallFailed(operation: "getsockopt", .ofLastCall)
            }
            if error != 0 { throw .systemCallFailed(operation: "connect to \(host):\(port)", Errno(rawValue: error)) }
            return
        }
    }

    private func blockingRead(maximumCount: Int) throws(SDLTransportError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximumCount)
        while true {
            let descriptor = try openDescriptor()
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if received > 0 { return Array(buffer.prefix(received)) }
            if received == 0 {
                if state.withLock({ $0.isClosed }) { throw .closed }
                throw .closedByPeer
            }
            let error = Errno.ofLastCall
            switch error.rawValue {
            case EINTR: continue
            case EAGAIN: _ = try poll(descriptor, events: Int16(POLLIN), milliseconds: Self.pollSlice)
            default:
                if state.withLock({ $0.isClosed }) { throw .closed }
                if error.rawValue == ECONNRESET { throw .closedByPeer }
                throw .systemCallFailed(operation: "recv", error)
            }
        }
    }

    private func blockingWrite(_ bytes: [UInt8]) throws(SDLTransportError) {
        var offset = 0
        let deadline = writeTimeout.map { ContinuousClock.now + $0 }
        while offset < bytes.count {
            let descriptor = try openDescriptor()
            let sent = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            let error = sent == 0 ? Errno(rawValue: EIO) : Errno.ofLastCall
            switch error.rawValue {
            case EINTR: continue
            case EAGAIN:
                if let deadline, ContinuousClock.now >= deadline { throw .timedOut(operation: "write") }
                _ = try poll(descriptor, events: Int16(POLLOUT), milliseconds: Self.pollSlice)
            default:
                if state.withLock({ $0.isClosed }) { throw .closed }
                if error.rawValue == EPIPE || error.rawValue == ECONNRESET { throw .closedByPeer }
                throw .systemCallFailed(operation: "send", error)
            }
        }
    }

    /// Waits for `events`; true when the socket is ready (or in error, which the next call reports).
    private func poll(_ descriptor: Int32, events: Int16, milliseconds: Int32) throws(SDLTransportError) -> Bool {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        let result = Glibc.poll(&entry, 1, milliseconds)
        if result < 0 {
            if errno == EINTR { return false }
            throw .systemCallFailed(operation: "poll", .ofLastCall)
        }
        return result > 0
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let total = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, total))
    }
}

/// A listening TCP socket that hands out connected ``SDLTCPTransport``s: the head-unit side.
package final class SDLTCPListener: Sendable {
    private let descriptor = LockedState<Int32?>(nil)
    private let queue = DispatchQueue(label: "carwindow.sdl.tcp.accept")
    /// The port listened on (the kernel's choice when 0 was asked for).
    package let port: Int

    /// Listens on `host` (an IPv4 address, 127.0.0.1 by default) and `port` (0: any free one).
    /// `receiveBufferSize` sets SO_RCVBUF, which accepted sockets inherit.
    package init(host: String = "127.0.0.1", port: Int = 0, receiveBufferSize: Int? = nil) throws(SDLTransportError) {
        let socketDescriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socketDescriptor >= 0 else { throw .systemCallFailed(operation: "socket", .ofLastCall) }
        var enable: Int32 = 1
        if let receiveBufferSize {
            var size = Int32(clamping: receiveBufferSize)
            _ = setsockopt(socketDescriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        _ = setsockopt(socketDescriptor, SOL_SOCKET, SO_REUSEADDR, &enable, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            _ = Glibc.close(socketDescriptor)
            throw .unresolvableHost(host, reason: "not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketDescriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socketDescriptor, 4) == 0 else {
            let error = Errno.ofLastCall
            _ = Glibc.close(socketDescriptor)
            throw .systemCallFailed(operation: "bind/listen on \(host):\(port)", error)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketDescriptor, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        descriptor.withLock { $0 = socketDescriptor }
    }

    deinit { close() }

    /// Waits up to `timeout` for a connection.
    package func accept(timeout: Duration) async throws(SDLTransportError) -> SDLTCPTransport {
        let result: Result<SDLTCPTransport, SDLTransportError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: self.blockingAccept(timeout: timeout))
            }
        }
        return try result.get()
    }

    private func blockingAccept(timeout: Duration) -> Result<SDLTCPTransport, SDLTransportError> {
        let deadline = ContinuousClock.now + timeout
        while true {
            guard let listening = descriptor.withLock({ $0 }) else { return .failure(.closed) }
            let accepted = Glibc.accept(listening, nil, nil)
            if accepted >= 0 {
                // accept4 is hidden behind _GNU_SOURCE in Glibc's module map; set the flags by hand.
                _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
                _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
                var enable: Int32 = 1
                _ = setsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &enable, socklen_t(MemoryLayout<Int32>.size))
                return .success(SDLTCPTransport(connectedDescriptor: accepted, peer: "client"))
            }
            let error = Errno.ofLastCall
            guard error.rawValue == EAGAIN || error.rawValue == EINTR else {
                return .failure(.systemCallFailed(operation: "accept", error))
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .failure(.timedOut(operation: "accept")) }
            var entry = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
            _ = Glibc.poll(&entry, 1, min(SDLTCPTransport.pollSlice, SDLTCPTransport.milliseconds(remaining)))
        }
    }

    /// Stops listening; a pending accept fails with ``SDLTransportError/closed`` within one poll slice.
    package func close() {
        guard let listening = descriptor.withLock({ state -> Int32? in
            defer { state = nil }
            return state
        }) else { return }
        _ = shutdown(listening, Int32(SHUT_RDWR))
        queue.async { _ = Glibc.close(listening) }
    }
}

import Glibc
import SystemPackage

/// Error numbers say their symbolic name in our messages (`ENOENT`), since swift-system's
/// `Errno` describes itself with strerror's text only.
extension Errno {
    /// The error of the system call that just failed; read it before any other call can
    /// overwrite `errno`.
    package static var ofLastCall: Errno { Errno(rawValue: Glibc.errno) }

    /// The symbolic name (`ENOENT`), or `errno N` for numbers this table does not know.
    package var symbolicName: String {
        switch rawValue {
        case Glibc.EPERM: "EPERM"
        case Glibc.ENOENT: "ENOENT"
        case Glibc.EINTR: "EINTR"
        case Glibc.EIO: "EIO"
        case Glibc.EBADF: "EBADF"
        case Glibc.EAGAIN: "EAGAIN"
        case Glibc.ENOMEM: "ENOMEM"
        case Glibc.EACCES: "EACCES"
        case Glibc.EEXIST: "EEXIST"
        case Glibc.ENOTDIR: "ENOTDIR"
        case Glibc.EISDIR: "EISDIR"
        case Glibc.EINVAL: "EINVAL"
        case Glibc.EMFILE: "EMFILE"
        case Glibc.ENFILE: "ENFILE"
        case Glibc.EFBIG: "EFBIG"
        case Glibc.ENOSPC: "ENOSPC"
        case Glibc.EROFS: "EROFS"
        case Glibc.EPIPE: "EPIPE"
        case Glibc.ENAMETOOLONG: "ENAMETOOLONG"
        case Glibc.ELOOP: "ELOOP"
        case Glibc.EMSGSIZE: "EMSGSIZE"
        case Glibc.EAFNOSUPPORT: "EAFNOSUPPORT"
        case Glibc.EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case Glibc.ENETDOWN: "ENETDOWN"
        case Glibc.ENETUNREACH: "ENETUNREACH"
        case Glibc.ECONNRESET: "ECONNRESET"
        case Glibc.ENOBUFS: "ENOBUFS"
        case Glibc.ENOTCONN: "ENOTCONN"
        case Glibc.ETIMEDOUT: "ETIMEDOUT"
        case Glibc.ECONNREFUSED: "ECONNREFUSED"
        case Glibc.EHOSTUNREACH: "EHOSTUNREACH"
        case Glibc.EDQUOT: "EDQUOT"
        case Glibc.ESPIPE: "ESPIPE"
        case Glibc.ENODEV: "ENODEV"
        case Glibc.ENOLCK: "ENOLCK"
        case Glibc.EOPNOTSUPP: "EOPNOTSUPP"
        default: "errno \(rawValue)"
        }
    }

    /// `ENOENT (No such file or directory)`: the name for searching, the text for reading.
    package var nameAndText: String { "\(symbolicName) (\(description))" }
}

/// What the sinks need of an open file or socket beyond swift-system's `FileDescriptor`: typed
/// errors, writes that finish or fail whole, locking, room allocation and socket calls.
///
/// Whoever opens a descriptor closes it exactly once (`try? descriptor.close()`: on Linux the
/// descriptor is gone whatever close reports).
extension FileDescriptor {
    /// Opens a file for writing, creating it with mode 0644 when it is missing.
    ///
    /// A regular file is locked first (an exclusive, non-blocking `flock`, which belongs to this
    /// open file description) and only then emptied when `truncate` is set: a second writer, in
    /// another process or in this one, fails with ``Errno`` `EWOULDBLOCK` and leaves the first
    /// one's file untouched. The lock lasts until ``close()``. Devices and pipes (`/dev/null`,
    /// `/dev/full`) are neither locked nor truncated. A file system without `flock` is written
    /// unlocked.
    package static func openForWriting(path: String, truncate: Bool) throws(Errno) -> FileDescriptor {
        // O_TRUNC would empty the file before the lock is known to be ours.
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? 0 : O_APPEND)
        let file = FileDescriptor(rawValue: try retryingInterrupts { Glibc.open(path, flags, mode_t(0o644)) })
        do throws(Errno) {
            guard try file.isRegularFile else { return file }
            if flock(file.rawValue, LOCK_EX | LOCK_NB) == -1 {
                let error = Errno.ofLastCall
                if error.rawValue == EWOULDBLOCK { throw error }
                // ENOLCK, EOPNOTSUPP, EINVAL: this file system cannot lock; write as before.
            }
            if truncate { try file.truncate(to: 0) }
        } catch {
            try? file.close()
            throw error
        }
        return file
    }

    /// Whether the descriptor is a regular file (not a device, pipe or socket).
    package var isRegularFile: Bool {
        get throws(Errno) {
            var status = Glibc.stat()
            guard fstat(rawValue, &status) == 0 else { throw Errno.ofLastCall }
            return status.st_mode & S_IFMT == S_IFREG
        }
    }

    /// The file's size in bytes.
    package func size() throws(Errno) -> UInt64 {
        var status = Glibc.stat()
        guard fstat(rawValue, &status) == 0 else { throw Errno.ofLastCall }
        return UInt64(max(0, status.st_size))
    }

    /// Makes the file system allocate `length` bytes from `offset` now (the file grows to cover
    /// them), so later writes there cannot fail for lack of space; a full disk or the process's
    /// file size limit (`ulimit -f`) fails here instead, with `ENOSPC` or `EFBIG`.
    package func allocate(from offset: UInt64, length: UInt64) throws(Errno) {
        while true {
            // posix_fallocate returns the error number instead of setting errno.
            let result = posix_fallocate(rawValue, off_t(offset), off_t(length))
            if result == 0 { return }
            if result != EINTR { throw Errno(rawValue: result) }
        }
    }

    /// Writes every byte at `offset` without moving the file position, so a sink can overwrite a
    /// header it reserved earlier, and a write that failed halfway is simply written over next time.
    package func writeWhole(_ bytes: [UInt8], at offset: UInt64) throws(Errno) {
        var written = 0
        while written < bytes.count {
            let (taken, failure) = bytes.withUnsafeBytes { buffer -> (Int, Errno?) in
                while true {
                    let result = Glibc.pwrite(rawValue, buffer.baseAddress.map { $0 + written }, buffer.count - written,
                                              off_t(offset) + off_t(written))
                    if result >= 0 { return (result, nil) }
                    let error = Errno.ofLastCall
                    if error.rawValue != EINTR { return (result, error) }
                }
            }
            if let failure { throw failure }
            guard taken > 0 else { throw Errno(rawValue: EIO) }
            written += taken
        }
    }

    /// Cuts the file at `length`, dropping what failed writes may have left past the real end.
    package func truncate(to length: UInt64) throws(Errno) {
        while ftruncate(rawValue, off_t(length)) == -1 {
            let error = Errno.ofLastCall
            if error.rawValue != EINTR { throw error }
        }
    }

    /// A new socket; `SOCK_CLOEXEC` so child processes (encoders, ffmpeg) never inherit it.
    package static func socket(family: Int32, type: Int32, protocol: Int32) throws(Errno) -> FileDescriptor {
        let socketType = type | Int32(SOCK_CLOEXEC.rawValue)
        return FileDescriptor(rawValue: try retryingInterrupts { Glibc.socket(family, socketType, `protocol`) })
    }

    /// Writes every byte, looping over short writes (pipes, sockets and full disks return them).
    package func writeWhole(_ bytes: [UInt8]) throws(Errno) {
        try transferAll(bytes) { pointer, count in Glibc.write(rawValue, pointer, count) }
    }

    /// Sends every byte on a connected stream socket without raising SIGPIPE when the peer left.
    package func sendAll(_ bytes: [UInt8]) throws(Errno) {
        try transferAll(bytes) { pointer, count in Glibc.send(rawValue, pointer, count, Int32(MSG_NOSIGNAL)) }
    }

    /// Calls `transfer` until every byte went out; it returns what it took or -1 with `errno` set.
    private func transferAll(_ bytes: [UInt8], _ transfer: (UnsafeRawPointer?, Int) -> Int) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let (taken, failure) = bytes.withUnsafeBytes { buffer -> (Int, Errno?) in
                while true {
                    let result = transfer(buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if result >= 0 { return (result, nil) }
                    let error = Errno.ofLastCall
                    if error.rawValue != EINTR { return (result, error) }
                }
            }
            if let failure { throw failure }
            // write(2) returning 0 for a non-empty buffer would loop forever; treat it as an I/O error.
            guard taken > 0 else { throw Errno(rawValue: EIO) }
            offset += taken
        }
    }

    /// Sends one datagram to `address`; datagrams are never split, so a short send is an error.
    package func sendDatagram(_ bytes: [UInt8], to address: SocketAddress) throws(Errno) {
        let (sent, failure) = bytes.withUnsafeBytes { buffer -> (Int, Errno?) in
            address.withSockaddr { pointer, length in
                while true {
                    let result = sendto(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), pointer, length)
                    if result >= 0 { return (result, nil) }
                    let error = Errno.ofLastCall
                    if error.rawValue != EINTR { return (result, error) }
                }
            }
        }
        if let failure { throw failure }
        guard sent == bytes.count else { throw Errno(rawValue: EMSGSIZE) }
    }

    /// Binds a datagram or stream socket of `family` to `port` on every local address (0: any
    /// free port); returns the port bound.
    package func bind(family: Int32, port: Int) throws(Errno) -> Int {
        var storage = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
                address.sin6_addr = in6addr_any
                raw.storeBytes(of: address, as: sockaddr_in6.self)
            }
        } else {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
                address.sin_addr.s_addr = INADDR_ANY
                raw.storeBytes(of: address, as: sockaddr_in.self)
            }
        }
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(rawValue, $0, length) }
        }
        if bound == -1 { throw Errno.ofLastCall }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &actual) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(rawValue, $0, &actualLength) }
        }
        if named == -1 { throw Errno.ofLastCall }
        // The port sits at the same offset in sockaddr_in and sockaddr_in6.
        let networkOrder = withUnsafeBytes(of: &actual) { $0.load(fromByteOffset: 2, as: UInt16.self) }
        return Int(UInt16(bigEndian: networkOrder))
    }

    /// Binds the socket to `address` (its port 0: any free port); returns the port bound.
    package func bind(to address: SocketAddress) throws(Errno) -> Int {
        let bound = address.withSockaddr { pointer, length in Glibc.bind(rawValue, pointer, length) }
        if bound == -1 { throw Errno.ofLastCall }
        return try localAddress().port
    }

    /// The address the socket is bound to (getsockname).
    package func localAddress() throws(Errno) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(rawValue, $0, &length) }
        }
        if named == -1 { throw Errno.ofLastCall }
        return SocketAddress(family: Int32(storage.ss_family), storage: storage, length: length)
    }

    /// Reads one datagram into `buffer` without waiting, and says who sent it; nil when none is
    /// waiting. A datagram longer than the buffer is cut to it.
    package func receiveDatagramWithSenderIfAny(into buffer: inout [UInt8]) throws(Errno) -> (length: Int, sender: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let (received, failure) = buffer.withUnsafeMutableBytes { raw -> (Int, Errno?) in
            withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    while true {
                        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                        let result = recvfrom(rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), address, &length)
                        if result >= 0 { return (result, nil) }
                        let error = Errno.ofLastCall
                        if error.rawValue != EINTR { return (result, error) }
                    }
                }
            }
        }
        if let failure {
            if failure.rawValue == EAGAIN || failure.rawValue == EWOULDBLOCK { return nil }
            throw failure
        }
        return (received, SocketAddress(family: Int32(storage.ss_family), storage: storage,
                                        length: min(length, socklen_t(MemoryLayout<sockaddr_storage>.size))))
    }

    /// Connects a socket to `address`.
    package func connect(to address: SocketAddress) throws(Errno) {
        // connect(2) interrupted by a signal keeps connecting in the background, so it is not retried.
        let result = address.withSockaddr { pointer, length in Glibc.connect(rawValue, pointer, length) }
        if result == -1 { throw Errno.ofLastCall }
    }

}

/// Calls `body` again while it fails with `EINTR`, and turns -1 into a typed error.
@inline(__always)
private func retryingInterrupts<Result: BinaryInteger>(_ body: () -> Result) throws(Errno) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.ofLastCall
        if error.rawValue != EINTR { throw error }
    }
}

/// One resolved socket address (IPv4 or IPv6), copied out of getaddrinfo's list so it can outlive it.
package struct SocketAddress {
    package var family: Int32
    var storage: sockaddr_storage
    var length: socklen_t

    /// The failure of a name lookup, with getaddrinfo's own words.
    package struct ResolutionFailure: Error {
        package var message: String
    }

    /// Every address of `host` for the given socket type, in the resolver's order of preference.
    package static func resolve(host: String, port: Int, socketType: Int32) throws(ResolutionFailure) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = socketType
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            let reason = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            if status == EAI_SYSTEM { throw ResolutionFailure(message: "\(reason): \(Errno.ofLastCall)") }
            throw ResolutionFailure(message: reason)
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr, Int(current.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { destination in
                    destination.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen)))
                }
                addresses.append(SocketAddress(family: current.pointee.ai_family, storage: storage,
                                               length: current.pointee.ai_addrlen))
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw ResolutionFailure(message: "no IPv4 or IPv6 address") }
        return addresses
    }

    /// The port (0 for a family without one).
    package var port: Int {
        guard family == AF_INET || family == AF_INET6 else { return 0 }
        // The port sits at the same offset in sockaddr_in and sockaddr_in6.
        let networkOrder = withUnsafeBytes(of: storage) { $0.load(fromByteOffset: 2, as: UInt16.self) }
        return Int(UInt16(bigEndian: networkOrder))
    }

    /// The same host with another port.
    package func withPort(_ port: Int) -> SocketAddress {
        var copy = self
        guard family == AF_INET || family == AF_INET6 else { return copy }
        withUnsafeMutableBytes(of: &copy.storage) {
            $0.storeBytes(of: UInt16(truncatingIfNeeded: port).bigEndian, toByteOffset: 2, as: UInt16.self)
        }
        return copy
    }

    /// The host's address bytes: 4 for IPv4, 16 for IPv6 (the scope is left out).
    private var hostBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET: Array(raw[4..<8])
            case AF_INET6: Array(raw[8..<24])
            default: []
            }
        }
    }

    /// Whether `other` names the same host, whatever its port.
    package func isSameHost(as other: SocketAddress) -> Bool {
        family == other.family && !hostBytes.isEmpty && hostBytes == other.hostBytes
    }

    /// Whether this is a multicast group (224.0.0.0/4, ff00::/8), which many hosts receive.
    package var isMulticast: Bool {
        guard let first = hostBytes.first else { return false }
        return family == AF_INET ? first >> 4 == 14 : first == 0xFF
    }

    /// The address as digits (`127.0.0.1`, `::1`).
    package var numericHost: String {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = withSockaddr { pointer, length in
            getnameinfo(pointer, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
        }
        guard status == 0 else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The local address the kernel sends from to reach `destination` (a UDP socket connected
    /// to it, which sends nothing, and asked for its name); nil when there is no route (yet).
    /// Throws the error when the kernel refuses `destination` outright: EACCES for a broadcast
    /// address without SO_BROADCAST, EPERM, EADDRNOTAVAIL or EINVAL.
    package static func localAddress(toReach destination: SocketAddress) throws(Errno) -> SocketAddress? {
        guard let probe = try? FileDescriptor.socket(family: destination.family, type: Int32(SOCK_DGRAM.rawValue), protocol: 0) else {
            return nil
        }
        defer { try? probe.close() }
        do {
            try probe.connect(to: destination)
        } catch {
            if [EACCES, EPERM, EADDRNOTAVAIL, EINVAL].contains(error.rawValue) { throw error }
            return nil
        }
        return try? probe.localAddress().withPort(0)
    }

    /// Lends the address as the `sockaddr` pointer the socket calls take.
    package func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in body(address, length) }
        }
    }
}

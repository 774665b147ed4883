import Glibc
import SystemPackage

/// Reads an input the user named (a style, a sprite index, a GeoJSON file, a route) whole, or
/// says why not in words.
///
/// Foundation's `Data(contentsOf:)` reads `/dev/zero` until memory runs out, blocks forever on a
/// FIFO nobody writes, and reports either as "You don't have permission", even to root. Here
/// the file is opened without blocking and must be a regular file no larger than the limit.
package enum InputFile {
    /// Why a file could not be read: one phrase, to follow the path in a message.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package var reason: String
        /// The file exists but is no regular file (a device, a FIFO, a socket or a folder).
        package var isNotAFile: Bool
        /// The file is larger than allowed: `size` bytes against `limit`.
        package var tooLarge: (size: Int, limit: Int)?

        package var description: String { reason }

        package static func == (lhs: Failure, rhs: Failure) -> Bool {
            lhs.reason == rhs.reason && lhs.isNotAFile == rhs.isNotAFile && lhs.tooLarge?.size == rhs.tooLarge?.size
                && lhs.tooLarge?.limit == rhs.tooLarge?.limit
        }
    }

    /// What a file of `mode` (stat's `st_mode`) is, in words (`a FIFO`); nil for a regular file.
    package static func kind(ofMode mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "a folder"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// The bytes of the regular file at `path`, at most `limit` of them.
    package static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(path, .readOnly, options: [.nonBlocking, .closeOnExec])
        } catch {
            throw Failure(reason: (error as? Errno)?.nameAndText ?? "\(error)", isNotAFile: false)
        }
        defer { try? descriptor.close() }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0 else {
            throw Failure(reason: Errno.ofLastCall.nameAndText, isNotAFile: false)
        }
        if let kind = kind(ofMode: status.st_mode) {
            throw Failure(reason: "it is \(kind), not a regular file", isNotAFile: true)
        }
        let size = Int(status.st_size)
        guard size <= limit else {
            throw Failure(reason: "it has \(size) bytes, more than the \(limit) allowed", isNotAFile: false, tooLarge: (size, limit))
        }
        // The size may change while it is read: read to the end, but never past the limit.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {
            let count: Int
            do {
                count = try bytes.withUnsafeMutableBytes { buffer in
                    try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), retryOnInterrupt: true)
                }
            } catch {
                throw Failure(reason: (error as? Errno)?.nameAndText ?? "\(error)", isNotAFile: false)
            }
            if count == 0 { break }
            filled += count
            if filled == bytes.count, bytes.count <= limit { bytes.append(contentsOf: repeatElement(0, count: min(65_536, limit + 1 - bytes.count))) }
        }
        guard filled <= limit else {
            throw Failure(reason: "it grew past the \(limit) bytes allowed while it was read", isNotAFile: false, tooLarge: (filled, limit))
        }
        bytes.removeSubrange(filled...)
        return bytes
    }
}

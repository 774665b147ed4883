import Foundation
import SystemPackage
import Glibc
import CarWindowVideoCore
import CarWindowSystemSupport

/// Writes access units one after another into an Annex-B `.h264` file that ffmpeg, ffprobe and
/// players read directly (`ffmpeg -f h264 -i file.h264`).
///
/// The folder must exist: a sink that created folders would hide a mistyped path. The file is
/// locked while the sink has it open (see `SinkError.fileLocked(path:)`). A write that fails
/// (a full disk, `ulimit -f`) is cut back so the file ends on the last whole access unit, and
/// the sink closes: what it wrote before decodes without error. A process under a file size
/// limit must ignore `SIGXFSZ` to get the error instead of being killed.
public final class AnnexBFileSink: VideoSink {
    /// The file being written.
    public let url: URL
    /// Bytes of whole access units in the file, counting what it held when opened to append.
    public private(set) var bytesWritten: UInt64 = 0
    /// The error that closed the sink, if a write failed.
    public private(set) var failure: SinkError?
    private var descriptor: FileDescriptor?
    /// Whether the file can be cut back (a regular file; not a device or a pipe).
    private let isRegularFile: Bool

    /// Opens and locks `url` for writing; `appending` keeps what is there (to continue a stream),
    /// otherwise the file starts empty. A file another writer holds throws
    /// `SinkError.fileLocked(path:)` and is left as it was.
    public init(url: URL, appending: Bool = false) throws(SinkError) {
        self.url = url
        let file: FileDescriptor
        do {
            file = try FileDescriptor.openForWriting(path: url.path, truncate: !appending)
            isRegularFile = try file.isRegularFile
            if isRegularFile, appending { bytesWritten = try file.size() }
        } catch {
            throw .opening(path: url.path, error)
        }
        descriptor = file
    }

    deinit { try? descriptor?.close() }

    /// Appends the access unit's bytes as they are (start codes included). On failure the file
    /// is cut back to the end of the previous unit and closed.
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let descriptor else { throw .closed("Annex-B file sink for \(url.path)") }
        do {
            try descriptor.writeWhole(unit.data)
            bytesWritten += UInt64(unit.data.count)
        } catch {
            var failure = SinkError.writeFailed(path: url.path, error)
            if isRegularFile {
                // Part of the unit may be on disk; a decoder would stop at its broken slice.
                do {
                    try descriptor.truncate(to: bytesWritten)
                } catch {
                    failure = .finishFailed(path: url.path, error)
                }
            }
            self.failure = failure
            close()
            throw failure
        }
    }

    /// Closes the file; what was written stays.
    public func close() {
        try? descriptor?.close()
        descriptor = nil
    }
}

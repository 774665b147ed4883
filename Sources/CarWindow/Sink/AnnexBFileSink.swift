import Foundation
import Glibc

/// Writes access units one after another into an Annex-B `.h264` file that ffmpeg, ffprobe and
/// players read directly (`ffmpeg -f h264 -i file.h264`).
///
/// The folder must exist: a sink that created folders would hide a mistyped path.
public final class AnnexBFileSink: VideoSink {
    /// The file being written.
    public let url: URL
    private var descriptor: FileDescriptor?

    /// Opens `url` for writing; `appending` keeps what is there (to continue a stream), otherwise
    /// the file starts empty.
    public init(url: URL, appending: Bool = false) throws(SinkError) {
        self.url = url
        do {
            descriptor = try FileDescriptor.openForWriting(path: url.path, truncate: !appending)
        } catch {
            throw .cannotOpenFile(path: url.path, error)
        }
    }

    deinit { descriptor?.close() }

    /// Appends the access unit's bytes as they are (start codes included).
    public func write(_ unit: AccessUnit) throws(SinkError) {
        guard let descriptor else { throw .closed("Annex-B file sink for \(url.path)") }
        do {
            try descriptor.writeAll(unit.data)
        } catch {
            throw .writeFailed(path: url.path, error)
        }
    }

    /// Closes the file; what was written stays.
    public func close() {
        descriptor?.close()
        descriptor = nil
    }
}

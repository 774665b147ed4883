import CarWindow
import Foundation
import Glibc

/// Where a drive's stream goes besides the head unit: the Annex-B file, the MP4 beside it and an
/// RTP receiver. The files are opened (and locked) before anything else, so a bad path, a
/// missing folder or a file another process writes fails at once rather than when the head unit
/// lets the video start.
///
/// The outputs fail independently (a ``TeeSink``, which the session tees again with the head
/// unit's output that the link adds): a full disk ends the recordings, reported, while the
/// stream to the head unit goes on. Every failure is kept for the summary and the exit status.
final class DriveOutputs: Sendable {
    let annexB: URL
    /// The first MP4 file; a stream that starts again after a stop goes on in `name.2.mp4`.
    let mp4: URL?
    let rtp: (host: String, port: Int)?

    private struct State {
        /// The outputs opened up front, until the first stream takes them.
        var prepared: [any VideoSink]?
        var starts = 0
        var mp4Files: [URL] = []
        var failures: [SinkError] = []
    }
    private let state: LockedState<State>

    /// Opens the files and the RTP socket (writing the `.sdp` beside the Annex-B file once that
    /// file is locked as ours, so a second drive cannot overwrite it either).
    init(annexB: URL, mp4: URL?, rtp: (host: String, port: Int)?, sdp: URL?) throws(SinkError) {
        self.annexB = annexB
        self.mp4 = mp4
        self.rtp = rtp
        var sinks: [any VideoSink] = [try AnnexBFileSink(url: annexB)]
        do {
            if let mp4 { sinks.append(try MP4FileSink(url: mp4)) }
            if let rtp {
                let sink = try RTPUDPSink(host: rtp.host, port: rtp.port)
                sinks.append(sink)
                if let sdp { try sink.writeSDP(to: sdp) }
            }
        } catch {
            for sink in sinks { sink.close() }
            throw error
        }
        state = LockedState(State(prepared: sinks, mp4Files: mp4.map { [$0] } ?? []))
    }

    /// The session's sink factory: the first stream gets the outputs opened up front; a stream
    /// that starts again after a stop appends to the Annex-B file and starts a new MP4 file
    /// (an MP4 cannot be continued). An output that cannot be opened then is reported and left
    /// out; the factory throws only when no output at all is left (the session then streams to
    /// the head unit alone, if it has one).
    var sinkFactory: VideoSinkFactory {
        { [self] _ throws(SinkError) in
            let sinks = takePrepared() ?? reopen()
            if sinks.isEmpty { throw failures.last ?? .allOutputsFailed(count: 0) }
            return TeeSink(sinks, outputFailed: { [self] failure in record(failure) })
        }
    }

    private func takePrepared() -> [any VideoSink]? {
        state.withLock { state in
            state.starts += 1
            let prepared = state.prepared
            state.prepared = nil
            return prepared
        }
    }

    private func reopen() -> [any VideoSink] {
        var sinks: [any VideoSink] = []
        do {
            sinks.append(try AnnexBFileSink(url: annexB, appending: true))
        } catch {
            record(error)
        }
        if let mp4 {
            let number = state.withLock { $0.starts }
            let url = mp4.deletingPathExtension().appendingPathExtension("\(number)").appendingPathExtension("mp4")
            do {
                sinks.append(try MP4FileSink(url: url))
                state.withLock { $0.mp4Files.append(url) }
                Console.say("the stream started again: the MP4 goes on in \(url.path)")
            } catch {
                record(error)
            }
        }
        if let rtp {
            do {
                sinks.append(try RTPUDPSink(host: rtp.host, port: rtp.port))
            } catch {
                record(error)
            }
        }
        return sinks
    }

    private func record(_ failure: SinkError) {
        state.withLock { $0.failures.append(failure) }
    }

    /// Closes the outputs no stream took (the drive stopped before the video started).
    func closeUnused() {
        for sink in takePrepared() ?? [] { sink.close() }
    }

    /// Every output that failed, with its error, in order.
    var failures: [SinkError] { state.withLock { $0.failures } }

    /// The summary's lines: each file written, with its size, and each output that failed.
    func report() -> [String] {
        let (mp4Files, failures) = state.withLock { ($0.mp4Files, $0.failures) }
        var lines: [String] = []
        let failedPaths = Set(failures.compactMap(\.path))
        for url in [annexB] + mp4Files where !failedPaths.contains(url.path) {
            lines.append("wrote \(url.path) (\(Self.size(of: url)))")
        }
        for failure in failures {
            var line = "FAILED: \(failure)"
            if case .writeFailed(let path, _) = failure, let bytes = Self.regularFileSize(path) {
                line += " [kept \(Self.describe(bytes: bytes)), ending on the last whole picture before the failure]"
            }
            lines.append(line)
        }
        return lines
    }

    private static func size(of url: URL) -> String {
        describe(bytes: regularFileSize(url.path) ?? 0)
    }

    /// The size of the file at `path` (links followed); nil for a device, a folder or nothing.
    private static func regularFileSize(_ path: String) -> Int? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    private static func describe(bytes: Int) -> String {
        bytes >= 1 << 20 ? String(format: "%.1f MB", Double(bytes) / 1e6) : "\(bytes) bytes"
    }
}

extension SinkError {
    /// The file the error is about, if it is about one.
    var path: String? {
        switch self {
        case .cannotOpenFile(let path, _), .fileLocked(let path), .writeFailed(let path, _), .finishFailed(let path, _):
            path
        default:
            nil
        }
    }
}

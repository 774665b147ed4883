import Foundation
import Glibc
import CarWindowVideoCore
import CarWindowSystemSupport

/// The outputs an engine or a tool records a projection to: an Annex-B file, an MP4 file, an
/// RTP receiver, and any sinks of its own, made again at each stream start.
///
/// The files are opened (and locked) when this is made, so a bad path, a missing folder or a file
/// another process writes fails at once rather than when the video starts. The outputs fail
/// independently (a ``TeeSink``): a full disk ends the recordings, reported, while the other
/// outputs go on. Every failure is kept for the caller's summary.
///
/// A stream that starts again after a stop appends to the Annex-B file and goes on in a new MP4
/// file, `name.2.mp4` and so on (an MP4 cannot be continued once its index is written).
package final class RecordingOutputs: Sendable {
    /// The Annex-B file, if one is written.
    package let annexB: URL?
    /// The first MP4 file, if one is written.
    package let mp4: URL?
    /// The RTP receiver, if one is fed.
    package let rtp: (host: String, port: Int)?
    /// The SDP file kept current for the RTP receiver, if any.
    private let sdp: URL?
    /// How often the RTP output asks for an IDR for late receivers (nil: never).
    private let rtpKeyframeInterval: Duration?
    /// Makes the caller's own outputs at every stream start (a callback that hands the access
    /// units to an engine, say); nil for none.
    private let makeOwnSinks: (@Sendable () -> [any VideoSink])?
    /// Told the path of each further MP4 file when a stream starts again.
    private let newMP4File: (@Sendable (URL) -> Void)?

    private struct State {
        /// The outputs opened up front, until the first stream takes them.
        var prepared: [any VideoSink]?
        var starts = 0
        var mp4Files: [URL] = []
        var failures: [SinkError] = []
    }
    private let state: LockedState<State>

    /// Opens the files and the RTP socket (writing `sdp` once the Annex-B file, if any, is locked
    /// as ours, so a second writer cannot overwrite it either).
    package init(annexB: URL?, mp4: URL?, rtp: (host: String, port: Int)?, sdp: URL?,
                 rtpKeyframeInterval: Duration? = RTPUDPSink.defaultKeyframeInterval,
                 makeOwnSinks: (@Sendable () -> [any VideoSink])? = nil,
                 newMP4File: (@Sendable (URL) -> Void)? = nil) throws(SinkError) {
        self.annexB = annexB
        self.mp4 = mp4
        self.rtp = rtp
        self.sdp = sdp
        self.rtpKeyframeInterval = rtpKeyframeInterval
        self.makeOwnSinks = makeOwnSinks
        self.newMP4File = newMP4File
        var sinks: [any VideoSink] = []
        do throws(SinkError) {
            if let annexB { sinks.append(try AnnexBFileSink(url: annexB)) }
            if let mp4 { sinks.append(try MP4FileSink(url: mp4)) }
            if let rtp {
                let sink = try RTPUDPSink(host: rtp.host, port: rtp.port, keyframeInterval: rtpKeyframeInterval)
                sinks.append(sink)
                if let sdp { try sink.writeSDP(to: sdp) }
            }
        } catch {
            for sink in sinks { sink.close() }
            throw error
        }
        state = LockedState(State(prepared: sinks, mp4Files: mp4.map { [$0] } ?? []))
    }

    /// The sink of a stream that starts now: the first stream gets the outputs opened up front;
    /// a stream that starts again after a stop reopens them (see the type's description). An
    /// output that cannot be opened then is recorded and left out; it throws only when no
    /// output at all is left.
    package func makeSink() throws(SinkError) -> any VideoSink {
        var sinks = takePrepared() ?? reopen()
        sinks += makeOwnSinks?() ?? []
        if sinks.isEmpty { throw failures.last ?? .allOutputsFailed(count: 0) }
        return TeeSink(sinks, outputFailed: { [self] failure in record(failure) })
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
        if let annexB {
            do {
                sinks.append(try AnnexBFileSink(url: annexB, appending: true))
            } catch {
                record(error)
            }
        }
        if let mp4 {
            let number = state.withLock { $0.starts }
            let url = mp4.deletingPathExtension().appendingPathExtension("\(number)").appendingPathExtension("mp4")
            do {
                sinks.append(try MP4FileSink(url: url))
                state.withLock { $0.mp4Files.append(url) }
                newMP4File?(url)
            } catch {
                record(error)
            }
        }
        if let rtp {
            do {
                let sink = try RTPUDPSink(host: rtp.host, port: rtp.port, keyframeInterval: rtpKeyframeInterval)
                // The new stream's first IDR rewrites the SDP (a resize changes SPS and PPS).
                if let sdp { try? sink.writeSDP(to: sdp) }
                sinks.append(sink)
            } catch {
                record(error)
            }
        }
        return sinks
    }

    private func record(_ failure: SinkError) {
        state.withLock { $0.failures.append(failure) }
    }

    /// Closes the outputs no stream took (the recording stopped before the video started).
    package func closeUnused() {
        for sink in takePrepared() ?? [] { sink.close() }
    }

    /// Every output that failed, with its error, in order.
    package var failures: [SinkError] { state.withLock { $0.failures } }

    /// The MP4 files begun so far, in order.
    package var mp4Files: [URL] { state.withLock { $0.mp4Files } }

    /// A summary's lines: each file written, with its size, and each output that failed.
    package func report() -> [String] {
        let (mp4Files, failures) = state.withLock { ($0.mp4Files, $0.failures) }
        var lines: [String] = []
        let failedPaths = Set(failures.compactMap(\.path))
        for url in (annexB.map { [$0] } ?? []) + mp4Files where !failedPaths.contains(url.path) {
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
    package var path: String? {
        switch self {
        case .cannotOpenFile(let path, _), .fileLocked(let path), .writeFailed(let path, _), .finishFailed(let path, _):
            path
        default:
            nil
        }
    }
}

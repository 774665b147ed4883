import CarWindowVideoCore
import CarWindowMap
import CarWindowH264

/// Where a ``ProjectionSession`` is in its life, with what exists there: a screen from
/// `connect` on, and a stream (encoder, outputs, frame source, loops) while streaming or
/// suspended. A streaming session without an encoder, or a ready one that kept a sink, cannot be
/// written; the session moves between these only through `ProjectionSession.move(to:)`, which
/// knows the legal transitions.
///
/// ```
/// disconnected --connect--> ready --start--> streaming <--suspend/resume--> suspended
///      ^                      |                  |  (a resize: streaming -> streaming,     |
///      |                      |                  |   a new stream on the same outputs)    |
///      +----- stopping <------+------------------+----------------------------------------+
/// ```
///
/// The renderer is not part of it: it outlives a stop (connecting again is quick) and goes only
/// with `close()`.
///
/// Indirect: each case's payload is one boxed reference, so the value is one word that every
/// move writes whole. Inline, with payloads of different sizes, valgrind's memcheck reported each
/// `state` check as a use of uninitialised memory (the C API's check runs under it); a box per
/// move costs nothing per frame.
indirect enum SessionLife {
    case disconnected
    case ready(SessionScreen)
    case streaming(SessionScreen, LiveStream)
    case suspended(SessionScreen, LiveStream)
    /// Ending a stream: it still owns the stream (if there was one) until the stream's loops, encoder
    /// and outputs are finished.
    case stopping(LiveStream?)

    /// The public name of the state.
    var state: ProjectionSessionState {
        switch self {
        case .disconnected: .disconnected
        case .ready: .ready
        case .streaming: .streaming
        case .suspended: .suspended
        case .stopping: .stopping
        }
    }

    /// The head unit's display and the stream size chosen for it; nil before `connect` and once stopping.
    var screen: SessionScreen? {
        switch self {
        case .ready(let screen), .streaming(let screen, _), .suspended(let screen, _): screen
        case .disconnected, .stopping: nil
        }
    }

    /// The stream while one exists: streaming, suspended, or being stopped.
    var stream: LiveStream? {
        switch self {
        case .streaming(_, let stream), .suspended(_, let stream): stream
        case .stopping(let stream): stream
        case .disconnected, .ready: nil
        }
    }

    /// The same state with `screen` in force.
    func with(_ screen: SessionScreen) -> SessionLife {
        switch self {
        case .ready: .ready(screen)
        case .streaming(_, let stream): .streaming(screen, stream)
        case .suspended(_, let stream): .suspended(screen, stream)
        case .disconnected, .stopping: self
        }
    }

    /// Whether the session may go from this state to `next`. Staying in a state is a move when
    /// what it owns changes (a new display; a resize's new stream).
    func allows(_ next: SessionLife) -> Bool {
        switch (state, next.state) {
        case (.disconnected, .ready),
             (.ready, .ready), (.ready, .streaming),
             (.streaming, .streaming), (.streaming, .suspended),
             (.suspended, .suspended), (.suspended, .streaming),
             (.ready, .stopping), (.streaming, .stopping), (.suspended, .stopping),
             (.stopping, .disconnected):
            true
        default:
            false
        }
    }
}

/// The head unit's display in force and the stream size chosen for it.
struct SessionScreen {
    var display: HeadUnitDisplay
    var stream: StreamResolution
}

/// What one stream is made of, made together when it starts and finished together when it ends.
/// Owned by its session's actor, and used only there.
final class LiveStream {
    let encoder: EncoderStage
    /// The stream's outputs: one sink, or a `TeeSink` of several.
    let sink: any VideoSink
    /// The encoder's settings; bitrate and frame rate follow the head unit's updates.
    var settings: EncoderSettings
    /// Where the stream's pictures come from.
    let frames: FrameSource
    /// The picture on screen, for refinements and keep-alives; nil while the encoder has it.
    var lastFrame: NV12Frame?
    /// Zero copy: whether the encoder's surface holds the last picture drawn.
    var lastPictureInSurface = false
    /// Whether the encoder runs at the keep-alive rate.
    var encoderIsIdle = false
    /// The frame rate and detail the bitrate carries; nil when the session does not adapt them.
    var quality: StreamQualityLadder?
    /// Holds drawn pictures back while the last second has no room for them; nil with ``quality``.
    var bitrateGate: BitrateGate?
    /// The frame rate the encoder was last given for the moving map.
    var encoderFramesPerSecond: Double
    /// Follows the encoder's stream so keep-alives can be hand-made skip pictures.
    var skipPictures = SkipPictureStream()
    /// The hand-over between the frame loop and the encode loop.
    let encoding = EncodeQueue()
    var frameLoop: Task<Void, Never>?
    var encodeLoop: Task<Void, Never>?
    /// With the engine's GL: watches for a draw that does not return, and keeps the stream
    /// alive meanwhile.
    var stallGuard: Task<Void, Never>?

    init(encoder: EncoderStage, sink: any VideoSink, settings: EncoderSettings, frames: FrameSource) {
        self.encoder = encoder
        self.sink = sink
        self.settings = settings
        self.frames = frames
        encoderFramesPerSecond = settings.framesPerSecond
    }

    /// Frames per second while the map moves: the negotiated rate, or less where the bitrate
    /// cannot carry it.
    var movingFramesPerSecond: Double { quality?.quality.framesPerSecond ?? settings.framesPerSecond }
}

/// The one-picture queue between the frame loop and the encode loop. Its waits allocate
/// nothing: the continuations are unsafe ones, each resumed exactly once, by the queueing or
/// the loop's end. Used on the session's actor only.
final class EncodeQueue {
    /// The picture waiting for the encode loop.
    var queued: QueuedPicture?
    /// Whether the loop is encoding one now.
    var encodingNow = false
    /// Tells the encode loop to end once nothing is queued.
    var ends = false
    /// The encode loop while it waits for a picture.
    private var loopWaiter: UnsafeContinuation<Void, Never>?
    /// Who waits for the loop to be idle.
    private var idleWaiters: [UnsafeContinuation<Void, Never>] = []

    init() { idleWaiters.reserveCapacity(2) }

    /// Whether a picture is queued or being encoded.
    var isBusy: Bool { queued != nil || encodingNow }

    /// Queues `picture`; the caller has waited for the one before it (``waitUntilIdle()``).
    func enqueue(_ picture: QueuedPicture) {
        queued = picture
        wakeLoop()
    }

    /// Ends the loop once what is queued is done.
    func end() {
        ends = true
        wakeLoop()
    }

    private func wakeLoop() {
        if let waiting = loopWaiter {
            loopWaiter = nil
            waiting.resume()
        }
    }

    /// The encode loop's wait for the next picture (or its end).
    func waitForPicture(isolation: isolated (any Actor)? = #isolation) async {
        await withUnsafeContinuation { loopWaiter = $0 }
    }

    /// Waits until the picture in the encoder (if any) has been sent or dropped.
    func waitUntilIdle(isolation: isolated (any Actor)? = #isolation) async {
        while isBusy {
            await withUnsafeContinuation { idleWaiters.append($0) }
        }
    }

    /// The loop finished a picture: whoever waits for it to be idle goes on.
    func finishedPicture() {
        encodingNow = false
        // Resumed waiters run later, on the session's actor; the list keeps its storage.
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters.removeAll(keepingCapacity: true)
    }
}

/// A picture handed to the encode loop.
struct QueuedPicture {
    let input: EncoderInput
    let kind: PictureKind
    let changeSince: Double?
    let forceIDR: Bool
    /// The session's picture run it belongs to: a picture of an earlier run is never sent.
    let run: Int
    let presentationTime: Double
}

/// What the encoder encodes: a frame read back from the renderer, or the picture the
/// renderer drew into the encoder's own surface.
enum EncoderInput: Sendable {
    case frame(NV12Frame)
    case exportedSurface
}

/// What an access unit carries, for the statistics.
enum PictureKind {
    case rendered
    case refinement
    case keepAlive
}

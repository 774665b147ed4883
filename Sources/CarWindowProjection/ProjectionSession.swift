import Foundation
import Logging
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks
import CarWindowSystemSupport

/// A map projected into one head-unit screen: the API a navigation engine links.
///
/// The engine sets the camera, vehicle, route, style and controls; it never draws. The session
/// draws only when something visible changed, at the negotiated rate and evenly paced, sharpens
/// the last picture with a few refinement frames when the map stops, and keeps a still screen
/// alive well inside a head unit's ~1 s timeout with keep-alives: by default hand-made skip
/// pictures that repeat the last picture for a few bytes and no encoding (see
/// ``KeepAliveMethod``).
///
/// ```
/// engine -> session (camera, vehicle, route, touches)
///              |  frame loop: draw / refine / keep-alive / sleep
///              v
///          MapRenderer (render thread) -> NV12 -> encoder (its own thread) -> outputs
///              |
///              +-> events: state, stream size, haptic regions, taps, warnings, errors
/// ```
///
/// The outputs are the configuration's sink (made by its ``VideoSinkFactory`` at each stream
/// start) and a head unit that a link (`SDLProjectionLink`) added; with both, they fail
/// independently, as in a `TeeSink`. The session owns the sinks it makes and closes them when
/// the stream ends (``stop()``, ``close()``, or the stream failing for good).
///
/// Several sessions (a centre console and an instrument cluster) can share one
/// `RenderContext` (one render thread, one GL context) and one `SharedTileCache`; each has
/// its own size, camera, style, encoder and outputs.
///
/// - Important: Thread-safe: it is an actor; call it from any task.
public actor ProjectionSession {
    /// A new stream of everything the session reports from now on, in order; it ends when the
    /// session is closed.
    ///
    /// Every access makes a stream of its own, so several consumers (an engine, a head-unit
    /// link, a logger) each see every event. Take the stream before the calls whose events you
    /// want, since events before it are not in it:
    ///
    /// ```swift
    /// let events = session.events
    /// Task { for await event in events { /* ... */ } }
    /// try await session.connect(display: display)
    /// ```
    ///
    /// Each stream keeps the newest 4096 events its consumer has not read, so a slow consumer
    /// never stalls the stream or the other consumers.
    public nonisolated var events: AsyncStream<ProjectionSessionEvent> { eventBroadcast.subscribe() }
    /// The render thread and GL context this session draws with.
    public nonisolated let context: RenderContext
    /// The configuration it was made with.
    public nonisolated let configuration: ProjectionSessionConfiguration
    /// The time the session runs on (the configuration's clock).
    nonisolated var clock: SessionClock { configuration.clock }

    /// Where the session is in its life.
    public var state: ProjectionSessionState { life.state }
    /// The head unit's display in force: what ``connect(display:)`` was given, with the updates
    /// since filled in.
    public var display: HeadUnitDisplay? { life.screen?.display }
    /// The stream size chosen from the display and the supported sizes.
    public var stream: StreamResolution? { life.screen?.stream }
    /// The encoder settings of the current stream.
    public var encoderSettings: EncoderSettings? { life.stream?.settings }
    /// The state with what exists in it; changed only by ``move(to:)``.
    private(set) var life = SessionLife.disconnected
    /// Counters and timings since streaming first started.
    public var statistics: ProjectionSessionStatistics {
        var current = recorded
        if let streamingSince { current.streamingTime += .seconds(clock.now - streamingSince) }
        return current
    }
    var recorded = ProjectionSessionStatistics()
    /// The appearance of the last ``setAppearance(_:)`` call that has run: the map shows its
    /// style from the first picture after that style's tiles are laid out.
    public internal(set) var appearance: MapAppearance

    let eventBroadcast = EventBroadcast<ProjectionSessionEvent>(bufferLimit: 4096)
    let logger: Logger
    /// What the pictures are drawn on while connected: the map, or the engine's canvas.
    var canvas: StreamCanvas?
    /// The map renderer while connected; tests on a manual clock read its tile loads.
    package var renderer: MapRenderer? { canvas?.map }
    /// What the engine handed over that no picture has shown yet (``pushPixels(_:)``,
    /// ``pushDmaBuf(_:)``); a dma-buf's descriptors are the session's until a draw takes them.
    /// Replace it through ``dropPendingHandover()``, which closes them; a draw takes it as it is.
    var pendingHandover: EngineHandover?
    /// Where pixels copied from an engine's buffer are kept, reused from push to push.
    var pixelStorage: [UInt8] = []
    /// Whether the engine has handed over pixels for the stream's current size.
    var hasEnginePixels = false
    /// Why the engine's dma-bufs are read through a mapping, as logged last.
    var loggedDmaBufMapping: String?
    /// The engine asks for a picture at every frame interval (``setContinuousFrames(_:)``).
    var continuousFrames = false
    /// When (monotonic seconds) the engine's GL draw in progress began; nil between draws.
    var engineDrawSince: Double?
    /// Whether the draw in progress was reported stalled.
    var engineDrawStalled = false
    /// Whoever waits for the frame loop to end (a stop) while the engine's draw may stall: the
    /// stall guard lets it go on without the loop.
    var stopWaitingForDraw: OneShot?
    var pacer = FramePacer()
    let wake: WakeSignal
    /// Set from tile workers (any thread) when a requested tile is ready.
    let tilesArrived: ArrivalFlag
    /// Given to the renderer: runs on a tile worker when a tile the last frame lacked is ready.
    let tileArrivedHandler: @Sendable () -> Void

    /// What the next frame shows: camera, animation, followed vehicle, overlays.
    var view: SessionView
    var haptics = HapticRegionSet()
    /// Whether the app moves a focus over the haptic regions itself (``setFocusEnabled(_:)``).
    var focusEnabled = false
    /// The region the focus is on.
    var focusedID: Int?
    /// When the oldest change not yet on screen happened, for latency.
    var pendingChangeSince: Double?

    /// Cameras played one picture each (``play(_:forceIDR:)``), instead of paced drawing.
    var script: CameraScript?
    /// Seconds added to the clock's presentation times, so they never go back after a script
    /// that ran ahead of the clock.
    var presentationShift = 0.0
    /// The presentation time of the last picture handed to the encoder.
    var lastPresentation = -Double.infinity
    var needsIDR = true
    /// Until when (session clock) the run's first picture may wait for the view's tiles; nil
    /// once it is drawn.
    var firstPictureDeadline: Double?
    /// Counts runs of pictures: each start, resume and resize begins one with an IDR. A picture
    /// encoded in one run (before a suspend, say) is never sent in the next.
    var pictureRun = 0
    /// Whether the renderer holds a picture drawn at the current size, for ``snapshot()``.
    var hasPicture = false
    /// A script's picture whose readback the next draw collects.
    var pendingReadback: (ticket: FrameSource.Ticket, picture: PendingPicture)?
    var skipPictureCount = 0
    var presentationIndex = 0
    var streamingSince: Double?
    var statisticsOrigin: Double?
    var consecutiveFailures = 0
    /// Outputs added besides the configuration's sink (a head-unit link's), by id.
    private nonisolated let attachedOutputs = LockedState<(next: Int, factories: [(id: Int, makeSink: VideoSinkFactory)])>(
        (next: 0, factories: []))
    /// A life-cycle call is under way; the ones that came after it wait here, in order.
    private var lifeCycleBusy = false
    private var lifeCycleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Counts ``setAppearance(_:)`` calls, so a call that a later one overtook loads no style.
    var appearanceCalls = 0
    /// Styles the engine set at runtime (``setStyles(day:night:)``), in place of the configuration's.
    var engineStyles: (day: Style, night: Style?)?
    /// Counts ``setStyles(day:night:)`` calls, so a call that a later one overtook loads no style.
    var styleCalls = 0
    /// The language of the map's labels (``setLabelLanguage(_:)``); nil: the style's own names.
    public internal(set) var labelLanguage: LabelLanguage?
    /// Calls of ``setLabelLanguage(_:)`` so far: one that a later call overtook is skipped.
    var languageCalls = 0
    /// The alternatives shown, for taps on them.
    var alternativeRoutes: [[GeoCoordinate]] = []
    /// The engine's custom layers, with the style layer each goes below, kept for renderers made
    /// later.
    var customLayers: [(layer: CustomLayer, below: String?)] = []
    /// The engine's GeoJSON by source id, kept for renderers made later (after a stop).
    var geojson: [String: GeoJSONData] = [:]
    /// Frame loops running now: one while a stream exists (streaming or suspended), else none.
    package internal(set) var runningFrameLoops = 0
    /// Encoder stages made and not finished yet: one while a stream exists, else none.
    package internal(set) var liveEncoderStages = 0

    /// A dma-buf handed over and never drawn is closed with the session.
    deinit {
        if case .dmaBuf(let buffer) = pendingHandover { buffer.closeDescriptors() }
    }

    /// A session for `configuration` drawing on `context`; it starts disconnected.
    public init(configuration: ProjectionSessionConfiguration, context: RenderContext) {
        self.configuration = configuration
        self.context = context
        var logger = Logger(label: "carwindow.session")
        logger[metadataKey: "screen"] = "\(configuration.name)"
        self.logger = logger
        let wake = WakeSignal(clock: configuration.clock, label: "carwindow.session.\(configuration.name)")
        let tilesArrived = ArrivalFlag()
        self.wake = wake
        self.tilesArrived = tilesArrived
        tileArrivedHandler = {
            tilesArrived.raise()
            wake.signal()
        }
        view = SessionView(camera: configuration.camera.clamped,
                           overlays: MapOverlays(showsControls: configuration.showsControls),
                           gestures: GestureRecognizer(configuration: configuration.gestures))
        appearance = configuration.appearance
    }

    // MARK: Life cycle
    //
    // Every call that changes the stream (connect, start, suspend, resume, a new display, an
    // appearance, stop, close) runs alone and in the order the calls reached the session: each
    // waits for the ones before it to finish. Without that, actor reentrancy let them interleave
    // at every await (a stop in the middle of a resize left a new encoder and frame loop running
    // on a disconnected session). Camera, overlay, touch and IDR calls change no resources and
    // take effect at once.

    /// Takes the head unit's display and chooses the stream size: disconnected -> ready.
    /// Throws, and stays disconnected, when no size fits the supported sizes or the session is
    /// already connected.
    public func connect(display: HeadUnitDisplay) async throws(ProjectionSessionError) {
        try await oneAtATime { () async throws(ProjectionSessionError) in
            guard state == .disconnected else { throw fail(.invalidState(operation: "connect", state: state)) }
            let chosen = try choose(display)
            try await prepareRenderer(for: chosen)
            move(to: .ready(SessionScreen(display: display, stream: chosen)))
        }
    }

    /// Starts the video: ready -> streaming. The first picture is an IDR.
    ///
    /// Makes the stream's outputs: the configuration's sink and the head unit a link added. An
    /// output that cannot be made is reported as an error event and left out; this throws when
    /// none can be made (or there is none: ``ProjectionSessionError/noOutput``), and the session
    /// stays ready.
    public func startStreaming() async throws(ProjectionSessionError) {
        try await startStreaming(then: nil)
    }

    /// ``startStreaming()``, with `script` installed before the frame loop's first picture.
    func startStreaming(then script: ScriptRequest?) async throws(ProjectionSessionError) {
        try await oneAtATime { () async throws(ProjectionSessionError) in
            guard case .ready(let screen) = life, let canvas else {
                throw fail(.invalidState(operation: "start streaming", state: state))
            }
            let factories = outputFactories()
            guard !factories.isEmpty else { throw fail(.noOutput) }
            let settings = makeEncoderSettings(for: screen.stream)
            let stage = try await makeEncoderStage(settings: settings)
            let sink: any VideoSink
            do throws(ProjectionSessionError) {
                sink = try makeSink(from: factories, for: screen.stream)
                do throws(SinkError) {
                    try sink.streamWillStart(screen.stream.encodedSize)
                } catch {
                    sink.close()
                    throw fail(.sink(error))
                }
            } catch {
                await finishEncoderStage(stage)
                throw error
            }
            let live = await makeLiveStream(encoder: stage, sink: sink, settings: settings, canvas: canvas)
            beginStream(live, stream: screen.stream)
            move(to: .streaming(screen, live))
            if let script { install(script) }
            startLoops(of: live)
        }
    }

    /// Stops sending (the head unit may not show video now); the encoder and outputs stay, and
    /// are told the stream stopped. Does nothing unless streaming.
    public func suspend() async {
        await oneAtATime {
            guard case .streaming(let screen, let live) = life else { return }
            noteStreamingTime()
            live.sink.streamDidStop()
            move(to: .suspended(screen, live))
            endScript()
            wake.signal()
        }
    }

    /// Sends again after ``suspend()``, starting with an IDR.
    public func resume() async throws(ProjectionSessionError) {
        try await oneAtATime { () throws(ProjectionSessionError) in
            guard case .suspended(let screen, let live) = life else {
                throw fail(.invalidState(operation: "resume", state: state))
            }
            do throws(SinkError) {
                try live.sink.streamWillStart(screen.stream.encodedSize)
            } catch {
                throw fail(.sink(error))
            }
            restartPictures()
            streamingSince = clock.now
            move(to: .streaming(screen, live))
            wake.signal()
        }
    }

    /// Makes the next picture an IDR (a head unit that lost sync, a new receiver).
    public func requestIDR() {
        needsIDR = true
        pacer.markChanged()
        wake.signal()
    }

    /// Takes a change of the head unit's display (a resize, a new scale or bitrate). Missing
    /// fields keep their current values. A different stream size stops the stream, restarts it
    /// at the new size with an IDR and reports ``ProjectionSessionEvent/resized(_:)``; the size
    /// never changes mid-stream. A display with no usable size throws and the session goes on as
    /// it was. When the restart itself fails (no encoder, a sink that refuses), the stream ends:
    /// the session is disconnected and the error thrown.
    public func updateDisplay(_ update: HeadUnitDisplay) async throws(ProjectionSessionError) {
        try await oneAtATime { () async throws(ProjectionSessionError) in try await takeDisplay(update) }
    }

    private func takeDisplay(_ update: HeadUnitDisplay) async throws(ProjectionSessionError) {
        guard let current = life.screen else {
            throw fail(.invalidState(operation: "update the display", state: state))
        }
        let merged = update.filling(from: current.display)
        let chosen: StreamResolution
        do {
            chosen = try choose(merged)
        } catch {
            emit(.warning(.displayUpdateIgnored(error, kept: current.stream)))
            throw error
        }
        let screen = SessionScreen(display: merged, stream: chosen)
        haptics.resend()
        guard current.stream.encodedSize != chosen.encodedSize else {
            // Same picture size (a new scale or bitrate): touches and haptics follow at once.
            move(to: life.with(screen))
            pacer.markChanged()
            wake.signal()
            if let live = life.stream { try await applyEncoderLimits(of: chosen, to: live) }
            return
        }
        logger.info("head unit resized the stream: \(current.stream.encodedSize) -> \(chosen.encodedSize)")
        guard let old = life.stream else {
            try await prepareRenderer(for: chosen)
            move(to: .ready(screen))
            emit(.resized(chosen))
            return
        }
        let wasStreaming = state == .streaming
        // A new stream on the same outputs: the old one's loops and encoder end first.
        await stopLoops(of: old)
        old.sink.streamDidStop()
        await finishEncoderStage(old.encoder)
        let settings = makeEncoderSettings(for: chosen)
        let live: LiveStream
        do throws(ProjectionSessionError) {
            try await prepareRenderer(for: chosen)
            emit(.resized(chosen))
            let stage = try await makeEncoderStage(settings: settings)
            live = await makeLiveStream(encoder: stage, sink: old.sink, settings: settings, canvas: old.frames.canvas)
            if wasStreaming {
                do {
                    try live.sink.streamWillStart(chosen.encodedSize)
                } catch {
                    await finishEncoderStage(stage)
                    throw fail(.sink(error))
                }
            }
        } catch {
            // Half a stream is no stream: nothing may keep running on a session that cannot send.
            await tearDown(sinkIsStreaming: false, encoderFinished: true)
            throw error
        }
        beginStream(live, stream: chosen)
        move(to: wasStreaming ? .streaming(screen, live) : .suspended(screen, live))
        startLoops(of: live)
    }

    /// Ends the stream: any state -> stopping -> disconnected. The outputs are closed (a new
    /// stream makes new ones); the renderer stays, so connecting again is quick.
    public func stop() async {
        await oneAtATime { await stopNow() }
    }

    /// Stops, ends every ``events`` stream and lets the renderer go: its GL objects are deleted
    /// on the render thread before this returns. The session cannot be used afterwards.
    ///
    /// The one call that ends a session for good: the frame loop and the encoder stop and the
    /// outputs are closed, so every output is finished when it returns (an MP4 recording has its
    /// index and plays). Call it on quitting, Ctrl-C included, before the process exits. Life-
    /// cycle calls run one at a time, so a stop already under way has finished when it returns.
    public func close() async {
        await oneAtATime {
            await stopNow()
            eventBroadcast.finish()
            await releaseRenderer()
            dropPendingHandover()
        }
    }

    private func stopNow() async {
        guard state != .disconnected, state != .stopping else { return }
        await tearDown(sinkIsStreaming: state == .streaming, encoderFinished: false)
    }

    // MARK: Outputs

    /// Adds an output that every stream from the next start on also goes to (a head unit's video
    /// service, added by its link). Outputs fail independently: see ``TeeSink``.
    package nonisolated func addOutput(_ makeSink: @escaping VideoSinkFactory) -> Int {
        attachedOutputs.withLock { outputs in
            defer { outputs.next += 1 }
            outputs.factories.append((outputs.next, makeSink))
            return outputs.next
        }
    }

    /// Removes the output `id` made by ``addOutput(_:)``; streams from the next start on go
    /// without it.
    package nonisolated func removeOutput(_ id: Int) {
        attachedOutputs.withLock { $0.factories.removeAll { $0.id == id } }
    }

    /// The configuration's sink factory, then the added outputs in the order they were added.
    private func outputFactories() -> [VideoSinkFactory] {
        (configuration.makeSink.map { [$0] } ?? []) + attachedOutputs.withLock { $0.factories.map(\.makeSink) }
    }

    /// The sink of a stream: the one output's sink, or a ``TeeSink`` of several. An output that
    /// cannot be made is reported and left out; it throws only when none can be made.
    private func makeSink(from factories: [VideoSinkFactory],
                          for stream: StreamResolution) throws(ProjectionSessionError) -> any VideoSink {
        var sinks: [any VideoSink] = []
        var failures: [SinkError] = []
        for factory in factories {
            do throws(SinkError) {
                sinks.append(try factory(stream))
            } catch {
                failures.append(error)
            }
        }
        guard !sinks.isEmpty else { throw fail(.sink(failures.first ?? .allOutputsFailed(count: factories.count))) }
        for failure in failures { _ = fail(.sink(failure)) }
        return sinks.count == 1 ? sinks[0] : TeeSink(sinks)
    }

    // MARK: One life-cycle call at a time

    /// Runs `operation` once every life-cycle call that reached the session before it has
    /// finished; later ones wait for it in turn.
    func oneAtATime<Failure: Error>(_ operation: () async throws(Failure) -> Void) async throws(Failure) {
        if lifeCycleBusy {
            await withCheckedContinuation { lifeCycleWaiters.append($0) }
        } else {
            lifeCycleBusy = true
        }
        defer { passLifeCycleOn() }
        try await operation()
    }

    /// Hands the turn to the next waiting call, or frees it.
    private func passLifeCycleOn() {
        if lifeCycleWaiters.isEmpty {
            lifeCycleBusy = false
        } else {
            lifeCycleWaiters.removeFirst().resume()
        }
    }

    // MARK: Internals of the life cycle

    func choose(_ display: HeadUnitDisplay) throws(ProjectionSessionError) -> StreamResolution {
        switch display.chooseStreamResolution(for: configuration.supportedSizes) {
        case .match(let chosen):
            if let asked = chosen.display.scale, asked != chosen.scale {
                emit(.warning(.scaleClamped(asked: asked, used: chosen.scale)))
            }
            return chosen
        case .noMatch(let reason): throw fail(.noMatchingResolution(reason: reason))
        }
    }

    /// Makes the canvas (the map, or the engine's) at the stream's size, or resizes the one
    /// there is.
    func prepareRenderer(for stream: StreamResolution) async throws(ProjectionSessionError) {
        let size = stream.encodedSize
        switch canvas {
        case .map(let renderer):
            do {
                try await renderer.resize(width: size.width, height: size.height)
            } catch {
                throw fail(.renderer(error))
            }
        case .engine(let engineCanvas):
            do {
                try await engineCanvas.resize(width: size.width, height: size.height)
            } catch {
                throw fail(.renderer(error))
            }
            // Pixels of the old size cannot be shown; the engine hands over new ones.
            dropPendingHandover()
            hasEnginePixels = false
        case nil:
            canvas = try await makeCanvas(width: size.width, height: size.height)
        }
        hasPicture = false
    }

    private func makeCanvas(width: Int, height: Int) async throws(ProjectionSessionError) -> StreamCanvas {
        if case .engine = configuration.content {
            do {
                return .engine(try await EngineCanvas(context: context, width: width, height: height))
            } catch {
                throw fail(.renderer(error))
            }
        }
        guard let fonts = configuration.fonts else {
            throw fail(.noFonts)
        }
        do {
            let made = try await MapRenderer(context: context, width: width, height: height,
                                             style: drawnStyle(for: appearance), tiles: configuration.tiles,
                                             sources: configuration.sources, fonts: fonts, camera: view.camera)
            // What the engine set before there was a map to draw it on.
            for (id, data) in geojson.sorted(by: { $0.key < $1.key }) {
                try? await made.setGeoJSON(data, forSource: id)
            }
            for (layer, below) in customLayers {
                do {
                    try await made.addCustomLayer(layer, below: below)
                } catch {
                    try? await made.addCustomLayer(layer, below: nil)
                }
            }
            return .map(made)
        } catch {
            throw fail(.renderer(error))
        }
    }

    /// A stream of `encoder` and `sink` whose pictures `canvas` draws.
    private func makeLiveStream(encoder: EncoderStage, sink: any VideoSink, settings: EncoderSettings,
                                canvas: StreamCanvas) async -> LiveStream {
        // Zero copy: GL on GBM and an encoder that exports its input surface.
        let surface = context.info.platform == .gbm ? await encoder.exportedSurface() : nil
        let frames = FrameSource(canvas: canvas, width: settings.width, height: settings.height,
                                 fullRange: settings.fullRange, encoderSurface: surface)
        return LiveStream(encoder: encoder, sink: sink, settings: settings, frames: frames)
    }

    /// Readies the session's picture state for `live`'s first picture.
    func beginStream(_ live: LiveStream, stream: StreamResolution) {
        let settings = live.settings
        if let asked = stream.display.preferredFramesPerSecond, Double(asked) > EncoderSettings.maximumStreamingFramesPerSecond {
            emit(.warning(.frameRateCapped(asked: asked, streamed: settings.framesPerSecond)))
        }
        startQualityLadder(live)
        pacer = FramePacer(configuration: .init(framesPerSecond: live.movingFramesPerSecond,
                                                refinementFrames: configuration.refinementFrames,
                                                keepAliveInterval: configuration.keepAliveInterval.inSeconds))
        restartPictures()
        haptics.resend()
        let now = clock.now
        // Streaming time counts from now unless the stream restarted while suspended (a resize
        // then), in which case it counts from the resume.
        if state != .suspended, streamingSince == nil { streamingSince = now }
        if statisticsOrigin == nil { statisticsOrigin = now }
        emit(.streamStarted(stream, settings))
        if let quality = live.quality?.quality, quality != StreamQuality(framesPerSecond: settings.framesPerSecond) {
            logger.info("\(settings.bitrate / 1000) kbit/s cannot carry \(stream.encodedSize) at \(settings.framesPerSecond) fps: starting at \(quality)")
            emit(.qualityChanged(quality))
        }
    }

    /// The next picture is drawn afresh and is an IDR.
    func restartPictures() {
        pictureRun &+= 1
        pendingReadback = nil
        pacer.restart()
        needsIDR = true
        pendingChangeSince = clock.now
        let hold = max(configuration.firstPictureHold.inSeconds, 0)
        firstPictureDeadline = hold > 0 ? clock.now + min(hold, Self.longestFirstPictureHold) : nil
    }

    /// The longest ``ProjectionSessionConfiguration/firstPictureHold`` taken: a head unit gives
    /// up on a stream that shows nothing for a few seconds.
    static let longestFirstPictureHold = 2.0

    /// A new bitrate or frame rate for the same size, applied without a restart.
    func applyEncoderLimits(of stream: StreamResolution, to live: LiveStream) async throws(ProjectionSessionError) {
        let settings = live.settings
        let wanted = makeEncoderSettings(for: stream)
        do {
            if wanted.bitrate != settings.bitrate || live.encoderIsIdle { try await live.encoder.setBitrate(wanted.bitrate) }
            if wanted.framesPerSecond != settings.framesPerSecond || live.encoderIsIdle {
                try await live.encoder.setFrameRate(wanted.framesPerSecond)
            }
        } catch {
            throw fail(.encoder(error))
        }
        live.settings.bitrate = wanted.bitrate
        live.settings.framesPerSecond = wanted.framesPerSecond
        live.encoderFramesPerSecond = wanted.framesPerSecond
        // The moving-map rates are in force now; keep-alives switch back to theirs.
        live.encoderIsIdle = false
        let before = live.quality?.quality
        startQualityLadder(live)
        pacer.configuration.framesPerSecond = FramePacer.Configuration(framesPerSecond: live.movingFramesPerSecond).framesPerSecond
        if let quality = live.quality?.quality, quality != before { emit(.qualityChanged(quality)) }
    }

    /// Starts `live`'s frame loop and encode loop; the frame loop counts as running from here
    /// until its last step.
    func startLoops(of live: LiveStream) {
        runningFrameLoops += 1
        // Busy from here until it first waits, so a test's manual clock waits for its first frame.
        wake.attach()
        live.encodeLoop = Task { await self.runEncodeLoop(live) }
        live.frameLoop = Task {
            await self.runFrameLoop(live)
            self.wake.detach()
            self.runningFrameLoops -= 1
        }
        if case .engine(.gl) = configuration.content {
            live.stallGuard = Task { await self.guardEngineDraws(live) }
        }
    }

    /// Ends `live`'s frame loop and waits for the picture in the encoder, then ends the encode
    /// loop: after this, nothing of the stream runs.
    func stopLoops(of live: LiveStream) async {
        guard let loop = live.frameLoop else { return }
        live.frameLoop = nil
        loop.cancel()
        wake.signal()
        if live.stallGuard != nil {
            // The engine's draw may never return: the loop is left to end when it does.
            await endOrStalledDraw(loop)
            live.stallGuard?.cancel()
            await live.stallGuard?.value
            live.stallGuard = nil
        } else {
            await loop.value
        }
        await live.encoding.waitUntilIdle()
        live.encoding.end()
        await live.encodeLoop?.value
        live.encodeLoop = nil
        endScript()
    }

    /// An encoder for `settings` on its own thread, counted until it is finished.
    private func makeEncoderStage(settings: EncoderSettings) async throws(ProjectionSessionError) -> EncoderStage {
        do {
            let stage = try await EncoderStage(settings: settings, choice: configuration.encoder)
            liveEncoderStages += 1
            return stage
        } catch {
            throw fail(.encoder(error))
        }
    }

    /// Ends `stage`'s stream and lets its thread go.
    private func finishEncoderStage(_ stage: EncoderStage) async {
        _ = try? await stage.finish()
        liveEncoderStages -= 1
    }

    /// Lets the renderer go; its isolated deinit deletes its GL objects on the render thread,
    /// queued before the wait below ends.
    private func releaseRenderer() async {
        guard canvas != nil else { return }
        canvas = nil
        hasPicture = false
        // A stalled engine draw holds the render thread: its GL objects go when it returns.
        guard engineDrawSince == nil else { return }
        await context.waitForQueuedWork()
    }

    /// -> stopping -> disconnected: ends the stream's loops, its encoder (unless
    /// `encoderFinished`) and its outputs.
    private func tearDown(sinkIsStreaming: Bool, encoderFinished: Bool) async {
        let live = life.stream
        move(to: .stopping(live))
        noteStreamingTime()
        if let live {
            await stopLoops(of: live)
            if sinkIsStreaming { live.sink.streamDidStop() }
            if !encoderFinished { await finishEncoderStage(live.encoder) }
            live.sink.close()
        }
        move(to: .disconnected)
    }

    /// The head unit's limits merged with the app's own values, for `stream`.
    func makeEncoderSettings(for stream: StreamResolution) -> EncoderSettings {
        if let fixed = configuration.encoderSettings, fixed.width == stream.encodedSize.width,
           fixed.height == stream.encodedSize.height {
            return fixed
        }
        var settings = EncoderSettings(stream: stream, customFramesPerSecond: configuration.customFramesPerSecond,
                                       customBitrate: configuration.customBitrate, rateControl: configuration.rateControl)
        settings.threads = configuration.encoderThreads
        return settings
    }

    /// The one way the session's life changes: to `next`, when the table of
    /// ``SessionLife/allows(_:)`` has the move. A state change is logged and reported.
    func move(to next: SessionLife) {
        precondition(life.allows(next), "the session cannot go from \(life.state) to \(next.state)")
        let old = life.state
        life = next
        guard old != next.state else { return }
        logger.info("\(old.rawValue) -> \(next.state.rawValue)")
        emit(.stateChanged(from: old, to: next.state))
    }

    func emit(_ event: ProjectionSessionEvent) {
        eventBroadcast.yield(event)
    }

    /// Reports `error` as an event and returns it for throwing.
    func fail(_ error: ProjectionSessionError) -> ProjectionSessionError {
        logger.warning("\(error)")
        emit(.error(error))
        return error
    }

    func noteStreamingTime() {
        if let since = streamingSince {
            recorded.streamingTime += .seconds(clock.now - since)
            streamingSince = nil
        }
    }

    func style(for appearance: MapAppearance) -> Style {
        let (day, night) = engineStyles ?? (configuration.dayStyle, configuration.nightStyle)
        return appearance == .night ? (night ?? day) : day
    }

    /// The style for `appearance` as the renderer draws it: with the labels' language applied.
    func drawnStyle(for appearance: MapAppearance) -> Style {
        style(for: appearance).localizingLabels(to: labelLanguage)
    }

    /// Something visible changed: draw at the next frame slot.
    func changed() {
        if pendingChangeSince == nil { pendingChangeSince = clock.now }
        pacer.markChanged()
        wake.signal()
    }
}

/// A flag raised from any thread and taken down by the frame loop.
final class ArrivalFlag: Sendable {
    private let raised = LockedState(false)

    func raise() { raised.withLock { $0 = true } }

    /// Whether it was raised since the last call; lowers it.
    func take() -> Bool {
        raised.withLock { flag in
            defer { flag = false }
            return flag
        }
    }
}

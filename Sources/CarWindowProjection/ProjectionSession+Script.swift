import CarWindowGeo
import CarWindowH264
import CarWindowMap

/// Cameras to draw one picture each, as fast as the pipeline goes: what `carwindow encode`
/// and the benchmark play through a session, so that they measure the loop engines run.
struct CameraScript {
    let cameras: [Camera]
    let forceIDR: Set<Int>
    /// Seconds since the stream's origin of the first picture; later ones step by `interval`.
    let firstPresentation: Double
    let interval: Double
    var next = 0
    var sent = 0
    /// Called once, with `sent`, when the script ends.
    let finished: @Sendable (Int) -> Void

    mutating func noteSent() { sent += 1 }
}

/// A script asked for, before the stream's frame rate and clock place its pictures.
struct ScriptRequest {
    let cameras: [Camera]
    let forceIDR: Set<Int>
    let finished: @Sendable (Int) -> Void
}

extension ProjectionSession {
    /// Draws one picture for each camera, in order, as fast as drawing and encoding go: no
    /// pacing wait, and no refinements or keep-alives before the last picture was sent. The
    /// pictures' presentation times step by the stream's frame interval, so the encoder's rate
    /// control sees the stream's frame rate. `forceIDR` holds indexes of pictures to send as IDR.
    ///
    /// Returns how many pictures the outputs took: fewer when the stream was suspended, resized
    /// or stopped meanwhile, or a picture failed. Throws unless the session is streaming and no
    /// other script plays.
    package func play(_ cameras: [Camera], forceIDR: Set<Int> = []) async throws(ProjectionSessionError) -> Int {
        guard state == .streaming, script == nil, encoderSettings != nil, statisticsOrigin != nil else {
            throw fail(.invalidState(operation: "play a camera script", state: state))
        }
        guard !cameras.isEmpty else { return 0 }
        return await withCheckedContinuation { continuation in
            install(ScriptRequest(cameras: cameras, forceIDR: forceIDR) { continuation.resume(returning: $0) })
            wake.signal()
        }
    }

    /// Starts streaming (``startStreaming()``) and plays `cameras` as ``play(_:forceIDR:)``
    /// does, from the stream's first picture on: no picture is drawn before the script's.
    package func startStreaming(playing cameras: [Camera], forceIDR: Set<Int> = []) async throws(ProjectionSessionError) -> Int {
        guard !cameras.isEmpty else {
            try await startStreaming()
            return 0
        }
        let (counts, counted) = AsyncStream.makeStream(of: Int.self)
        try await startStreaming(then: ScriptRequest(cameras: cameras, forceIDR: forceIDR) { sent in
            counted.yield(sent)
            counted.finish()
        })
        for await sent in counts { return sent }
        return 0
    }

    /// Makes `request` the script the frame loop plays next.
    func install(_ request: ScriptRequest) {
        guard let settings = encoderSettings, let origin = statisticsOrigin else {
            request.finished(0)
            return
        }
        let first = max(clock.now - origin + presentationShift, lastPresentation + 1 / settings.framesPerSecond)
        script = CameraScript(cameras: request.cameras, forceIDR: request.forceIDR, firstPresentation: first,
                              interval: 1 / settings.framesPerSecond, finished: request.finished)
    }

    /// Loads the tiles along `cameras` (every tenth and the last) before a script plays them, so
    /// its pictures show whole maps; `drawing` also draws each, so that later timings are
    /// steady-state ones (shader variants compiled, tiles on the GPU). Needs a connected
    /// session; does nothing otherwise.
    package func preloadTiles(along cameras: [Camera], drawing: Bool = true) async {
        guard let renderer, !cameras.isEmpty else { return }
        for index in Array(stride(from: 0, to: cameras.count, by: 10)) + [cameras.count - 1] {
            await renderer.setCamera(cameras[index].clamped)
            if drawing {
                _ = await renderer.renderWhenLoaded()
            } else {
                await renderer.loadTiles()
            }
        }
    }

    /// The backend the stream's encoder runs; nil while not streaming.
    package var encoderBackend: EncoderBackend? { life.stream?.encoder.backend }

    /// Draws the script's next picture; after the last one, waits for it to be sent and ends
    /// the script.
    func playNextScriptedPicture(_ live: LiveStream) async {
        guard var current = script else { return }
        let index = current.next
        guard index < current.cameras.count else {
            await finishEncoding()
            endScript()
            return
        }
        current.next += 1
        script = current
        view.stopCameraMotion()
        view.camera = current.cameras[index].clamped
        // Each picture is drawn once, with the tiles there are; arrivals do not add pictures.
        _ = tilesArrived.take()
        let now = clock.now
        pendingChangeSince = now
        await renderAndSend(live, at: now, presentationTime: current.firstPresentation + Double(index) * current.interval,
                            forcesIDR: current.forceIDR.contains(index))
    }

    /// Ends the script (played out, or the stream stopped) and returns its count to `play`.
    /// Later pictures take their times from the clock again, never earlier than the script's.
    func endScript() {
        guard let ended = script, let origin = statisticsOrigin else { return }
        script = nil
        presentationShift = max(presentationShift, lastPresentation - (clock.now - origin))
        pacer.drew(at: clock.now)
        ended.finished(ended.sent)
    }
}

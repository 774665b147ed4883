import CarWindowMap
import CarWindowSystemSupport
import Logging
import CarWindowVideoCore

/// What an engine handed over for the next picture.
enum EngineHandover: Sendable {
    case pixels(EnginePixels)
    /// With the session's own duplicates of the descriptors.
    case dmaBuf(EngineDmaBuf)
}

/// The engine's own picture (``ProjectedContent/engine(_:)``): when it changes, and the pixels
/// or dma-bufs an engine that draws with anything hands over.
extension ProjectionSession {
    /// Tells the session the engine's picture changed, as a view's `setNeedsDisplay` does: the
    /// next picture is drawn at the stream's pace (at once when the last one is a frame
    /// interval old), then refinements and keep-alives follow as after any change.
    ///
    /// With the map this redraws it too (after a change the session cannot see, say).
    public func invalidate() {
        changed()
    }

    /// Asks for a picture at every frame interval while `continuous` (the engine animates), or
    /// only on ``invalidate()`` and the session's own reasons when not.
    public func setContinuousFrames(_ continuous: Bool) {
        guard continuous != continuousFrames else { return }
        continuousFrames = continuous
        if continuous { changed() }
    }

    /// Whether the engine asked for continuous frames.
    public var drawsContinuously: Bool { continuousFrames }

    /// Hands over the engine's next picture, drawn with anything, for a session whose content
    /// is ``EngineContent/pixels``: RGBA, BGRA, NV12 or I420. The latest picture wins: one
    /// handed over before the last was drawn is dropped. It is uploaded once, on the render
    /// thread, when the next picture is drawn.
    ///
    /// - Throws: ``ProjectionSessionError/engineContent(_:)``:
    ///   `EngineContentError.wrongContent` when the session shows other
    ///   content, `EngineContentError.noStream` before the session is connected, and the
    ///   errors of `EnginePixels.validate(width:height:)` when the pixels do not fit the
    ///   stream's size or their buffer. Nothing changes on screen then.
    public func pushPixels(_ pixels: EnginePixels) throws(ProjectionSessionError) {
        let size = try streamSizeForPixels(operation: "push pixels")
        do {
            try pixels.validate(width: size.width, height: size.height)
        } catch {
            throw .engineContent(error)
        }
        hand(over: .pixels(pixels))
    }

    /// Hands over the engine's next picture as a dma-buf it exported (from its own GL or
    /// Vulkan context, a video decoder, another process), for a session whose content is
    /// ``EngineContent/pixels``. The session duplicates the descriptors, so close yours when
    /// you like; it imports the buffer as an EGL image at the next picture and converts it
    /// with no copy, keeping the imports of the last few buffers so that a swap chain costs
    /// no import per picture.
    ///
    /// Where EGL cannot import dma-bufs (no `EGL_EXT_image_dma_buf_import`, or the driver
    /// refuses the buffer) a linear buffer is read through a mapping instead, logged once; a
    /// tiled one fails with `EngineContentError.dmaBufUnreadable`, reported as an error event:
    /// hand the pictures over with ``pushPixels(_:)`` then.
    ///
    /// - Throws: ``ProjectionSessionError/engineContent(_:)``:
    ///   `EngineContentError.wrongContent` and `.noStream` as ``pushPixels(_:)``, the errors
    ///   of `EngineDmaBuf.validate(width:height:)`, and `.dmaBufPlanes` for a descriptor that
    ///   is not open. Nothing changes on screen then.
    public func pushDmaBuf(_ buffer: EngineDmaBuf) throws(ProjectionSessionError) {
        let size = try streamSizeForPixels(operation: "push a dma-buf")
        let kept: EngineDmaBuf
        do {
            try buffer.validate(width: size.width, height: size.height)
            kept = try buffer.duplicatingDescriptors()
        } catch {
            throw .engineContent(error)
        }
        hand(over: .dmaBuf(kept))
    }

    /// ``pushPixels(_:)`` for pixels the session may not keep (a C caller's buffer): their rows
    /// are copied into storage the session reuses from push to push, so a steady stream of
    /// pushes allocates nothing. `layout` says where the planes lie in `source`.
    package func pushPixels(copying source: UnsafeRawBufferPointer, layout: PixelLayout) throws(ProjectionSessionError) {
        let size = try streamSizeForPixels(operation: "push pixels")
        let needed: Int
        do {
            needed = try layout.byteCount(available: source.count, expectedWidth: size.width, expectedHeight: size.height)
        } catch {
            throw .engineContent(error)
        }
        // Dropped first, so that the storage is this session's alone again (unless a draw is
        // uploading it right now, when writing copies it instead).
        dropPendingHandover()
        if pixelStorage.count != needed { pixelStorage = [UInt8](repeating: 0, count: needed) }
        pixelStorage.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<needed])) }
        hand(over: .pixels(EnginePixels(format: layout.format, width: layout.width, height: layout.height,
                                        bytesPerRow: layout.bytesPerRow, chromaOffset: layout.chromaOffset,
                                        chromaBytesPerRow: layout.chromaBytesPerRow, crOffset: layout.crOffset,
                                        bytes: pixelStorage)))
    }

    private func hand(over handover: EngineHandover) {
        dropPendingHandover()
        pendingHandover = handover
        hasEnginePixels = true
        changed()
    }

    /// Lets go of what was handed over and not yet drawn, closing a dma-buf's descriptors.
    func dropPendingHandover() {
        if case .dmaBuf(let buffer) = pendingHandover { buffer.closeDescriptors() }
        pendingHandover = nil
    }

    /// Logs when the engine's dma-bufs start being read through a mapping, and why, once.
    func noteDmaBufMapping(_ reason: String?) {
        guard reason != loggedDmaBufMapping else { return }
        loggedDmaBufMapping = reason
        guard let reason else { return }
        logger.warning("the engine's dma-bufs are read through a mapping, with a copy, not imported: \(reason)")
    }

    /// The stream size pixels must have, once the session is known to take pixels.
    private func streamSizeForPixels(operation: String) throws(ProjectionSessionError) -> VideoSize {
        guard case .engine(.pixels) = configuration.content else {
            let shown = if case .engine(let content) = configuration.content { content.name } else { "the map" }
            throw .engineContent(.wrongContent(operation: operation, content: shown))
        }
        guard let size = life.screen?.stream.encodedSize else { throw .engineContent(.noStream) }
        return size
    }

    // MARK: A draw that does not return

    /// Runs one of the engine's draws with its start noted for the stall guard.
    func timingEngineDraw<T>(_ draw: () async -> T) async -> T {
        engineDrawSince = SessionClock.monotonicNow
        engineDrawStalled = false
        let result = await draw()
        if engineDrawStalled, let since = engineDrawSince {
            logger.warning("the engine's stalled draw returned after \(Int((SessionClock.monotonicNow - since) * 1000)) ms")
        }
        engineDrawSince = nil
        engineDrawStalled = false
        return result
    }

    /// The stall guard of a stream with the engine's GL: while a draw runs longer than
    /// ``ProjectionSessionConfiguration/engineDrawTimeout``, it reports it once, lets a waiting
    /// stop go on, and keeps the last picture alive at the keep-alive interval. It never touches
    /// the render thread. It wakes a few times a keep-alive interval, in real time: a draw's
    /// duration is the machine's, whatever clock the session runs on.
    func guardEngineDraws(_ live: LiveStream) async {
        let timeout = max(configuration.engineDrawTimeout.inSeconds, 0.1)
        let keepAlive = max(configuration.keepAliveInterval.inSeconds, 0.05)
        var lastKeepAlive = 0.0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(min(keepAlive, timeout) / 4))
            guard let since = engineDrawSince else { continue }
            let now = SessionClock.monotonicNow
            guard now - since >= timeout else { continue }
            if !engineDrawStalled {
                engineDrawStalled = true
                consecutiveFailures += 1
                emit(.error(.engineContent(.drawStalled(seconds: now - since))))
                stopWaitingForDraw?.fire()
            }
            guard state == .streaming, now - lastKeepAlive >= keepAlive, !live.encoding.isBusy else { continue }
            lastKeepAlive = now
            if !sendSkipPicture(live), let frame = live.lastFrame {
                live.lastFrame = nil
                startEncoding(.frame(frame), live, as: .keepAlive, changeSince: nil, presentationTime: nil)
            }
        }
    }

    /// Waits for `loop` to end, or only until the engine's draw it is in is reported stalled.
    func endOrStalledDraw(_ loop: Task<Void, Never>) async {
        let waiter = OneShot()
        stopWaitingForDraw = waiter
        defer { stopWaitingForDraw = nil }
        if engineDrawStalled {
            logger.warning("stopping while the engine's draw has not returned; the frame loop ends when it does")
            return
        }
        let watcher = Task {
            await loop.value
            waiter.fire()
        }
        await waiter.wait()
        watcher.cancel()
    }
}

/// Lets one waiter go once, whoever fires first; firing before the wait lets it through at
/// once. Used only on a stop, never per picture.
final class OneShot: Sendable {
    private let state = LockedState<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.fired else { return nil }
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let firedAlready = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiter = continuation
                return false
            }
            if firedAlready { continuation.resume() }
        }
    }
}

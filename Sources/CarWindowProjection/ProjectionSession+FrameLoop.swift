import Foundation
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import Logging

/// The frame loop: one task per stream that asks the pacer what to do, does it, and sleeps on
/// the wake signal in between. Engine calls run on the actor between its awaits.
extension ProjectionSession {
    /// Failures in a row after which the stream is given up.
    static let failureLimit = 10

    func runFrameLoop(_ live: LiveStream) async {
        while !Task.isCancelled {
            guard state == .streaming else {
                // Suspended: nothing is sent, not even keep-alives, until resume or stop.
                await wake.wait(until: nil)
                continue
            }
            if script != nil {
                await playNextScriptedPicture(live)
                if givesUpAfterFailures() { return }
                continue
            }
            if tilesArrived.take() {
                if pendingChangeSince == nil { pendingChangeSince = clock.now }
                pacer.markChanged()
            }
            if configuration.drawsEveryFrame || continuousFrames { pacer.markChanged() }
            let now = clock.now
            // Asked before the pacer, which counts a render it hands out as done.
            if await holdsFirstPicture(live, at: now) { continue }
            let action = pacer.nextAction(at: now)
            switch action {
            case .render:
                if let until = live.bitrateGate?.holdUntil(at: now, target: live.settings.bitrate,
                                                           framesPerSecond: live.movingFramesPerSecond) {
                    // The change waits for room in the window; the picture in the encoder
                    // goes out first, as before any wait.
                    pacer.markChanged()
                    await live.encoding.waitUntilIdle()
                    await wake.wait(until: until)
                    if givesUpAfterFailures() { return }
                    continue
                }
                tickGestures(at: now)
                await setIdleRate(false, live)
                await applyQualityToEncoder(live)
                await renderAndSend(live, at: now)
            case .refine:
                await setIdleRate(false, live)
                await resendLastPicture(live, as: .refinement)
            case .keepAlive:
                // A skip picture repeats the encoder's last picture, so that one goes out first.
                await live.encoding.waitUntilIdle()
                if !sendSkipPicture(live) {
                    await setIdleRate(true, live)
                    await resendLastPicture(live, as: .keepAlive)
                }
            case .wait(let until):
                // The picture in the encoder is sent before the loop sleeps: nothing is left
                // running while it waits (a manual clock counts a sleeping loop as idle).
                await live.encoding.waitUntilIdle()
                var deadline = until
                if view.gestures.hasPendingTap {
                    // Wake when the double-tap window of a held-back tap closes, to deliver it.
                    deadline = min(deadline, now + configuration.gestures.doubleTapMaximumInterval.inSeconds + 0.01)
                }
                await wake.wait(until: deadline)
                if view.gestures.hasPendingTap { tickGestures(at: clock.now) }
            }
            if givesUpAfterFailures() { return }
        }
    }

    /// Whether the run's first picture waits for the view's tiles (requesting those still
    /// missing): then the loop sleeps until a tile arrives or the hold ends, and asks again.
    private func holdsFirstPicture(_ live: LiveStream, at now: Double) async -> Bool {
        guard let deadline = firstPictureDeadline else { return false }
        let loading: Int
        switch (live.frames.canvas, configuration.content) {
        case (.map(let renderer), _):
            loading = await renderer.tilesStillLoading(for: view.camera, tileArrived: tileArrivedHandler)
        case (.engine, .engine(.pixels)):
            // The engine's first pixels, which it draws once it has the stream's size.
            loading = hasEnginePixels ? 0 : 1
        case (.engine, _):
            loading = 0
        }
        guard loading > 0, now < deadline else {
            firstPictureDeadline = nil
            if loading > 0 {
                if case .engine = live.frames.canvas {
                    logger.info("the first picture's hold ended before the engine handed over pixels; it shows black")
                } else {
                    logger.info("the first picture's hold ended with \(loading) tiles still loading; it shows their parents")
                }
            }
            return false
        }
        await wake.wait(until: deadline)
        return true
    }

    /// Whether too many failures came in a row: then the stream is stopped.
    private func givesUpAfterFailures() -> Bool {
        guard consecutiveFailures >= Self.failureLimit else { return false }
        emit(.warning(.streamGivenUp(failuresInARow: Self.failureLimit)))
        Task { await self.stop() }
        return true
    }

    /// Bits per second the encoder may spend on keep-alives. The refinements before them have
    /// already sharpened the picture; at this rate the encoder skips nearly every macroblock,
    /// so a still map costs a few hundred bytes a second instead of the moving-map budget.
    static let idleBitrate = 2_000

    /// Switches the encoder's rate control between the moving-map settings and the keep-alive
    /// rate. Rate control works per picture, so its nominal frame rate follows the real one.
    func setIdleRate(_ idle: Bool, _ live: LiveStream) async {
        guard idle != live.encoderIsIdle else { return }
        let encoder = live.encoder, settings = live.settings
        live.encoderIsIdle = idle
        do {
            if idle {
                try await encoder.setFrameRate(1 / pacer.configuration.keepAliveInterval)
                try await encoder.setBitrate(min(Self.idleBitrate, settings.bitrate))
            } else {
                try await encoder.setBitrate(settings.bitrate)
                try await encoder.setFrameRate(live.movingFramesPerSecond)
                live.encoderFramesPerSecond = live.movingFramesPerSecond
            }
        } catch {
            emit(.warning(.encoderRateUnchanged(forKeepAlives: idle, error)))
        }
    }

    /// Starts `live`'s quality ladder on the level its bitrate, size and rate allow, and draws
    /// at that level's detail, with the bitrate gate; neither where the session keeps the
    /// quality it was given (turned off, or offline encoding at fixed settings).
    func startQualityLadder(_ live: LiveStream) {
        let settings = live.settings
        if configuration.adaptsQualityToBitrate, configuration.encoderSettings == nil {
            live.quality = StreamQualityLadder(width: settings.width, height: settings.height,
                                               framesPerSecond: settings.framesPerSecond, bitrate: settings.bitrate)
            if live.bitrateGate == nil { live.bitrateGate = BitrateGate() }
        } else {
            live.quality = nil
            live.bitrateGate = nil
        }
        live.frames.resolutionScale = live.quality?.quality.resolutionScale ?? 1
    }

    /// Gives the encoder the moving map's frame rate where the ladder moved since it was last
    /// given one: the rate control shares the bitrate among that many pictures a second.
    func applyQualityToEncoder(_ live: LiveStream) async {
        let rate = live.movingFramesPerSecond
        guard !live.encoderIsIdle, live.encoderFramesPerSecond != rate else { return }
        live.encoderFramesPerSecond = rate
        do {
            try await live.encoder.setFrameRate(rate)
        } catch {
            emit(.warning(.encoderRateUnchanged(forKeepAlives: false, error)))
        }
    }

    /// Feeds a drawn picture that went out to the quality ladder, and applies a new level: the
    /// pacer's rate now, the encoder's before the next picture, the detail from the next draw.
    private func recordQuality(of unit: AccessUnit, _ live: LiveStream) {
        guard let changed = live.quality?.record(bits: unit.data.count * 8, quantizer: unit.quantizer,
                                                 isKeyframe: unit.isKeyframe, at: clock.now) else { return }
        pacer.configuration.framesPerSecond = FramePacer.Configuration(framesPerSecond: changed.framesPerSecond).framesPerSecond
        live.frames.resolutionScale = changed.resolutionScale
        logger.info("quality for \(live.settings.bitrate / 1000) kbit/s at \(live.settings.width)x\(live.settings.height): \(changed)")
        emit(.qualityChanged(changed))
    }

    /// Draws the current view and starts encoding it; the encoder works while the loop goes on
    /// to the next picture, and the access unit is sent as soon as it is ready.
    ///
    /// `presentationTime` (seconds since the stream's origin) is the session clock's unless a
    /// script gives its own.
    func renderAndSend(_ live: LiveStream, at now: Double, presentationTime: Double? = nil, forcesIDR: Bool = false) async {
        guard let stream else { return }
        let frames = live.frames
        followVehicle(at: now, width: frames.width, height: frames.height)
        if let animation = view.animation {
            view.camera = animation.camera(at: now)
            if animation.isFinished(at: now) {
                view.animation = nil
            } else {
                // Keep frames coming at the paced rate until the animation ends.
                pacer.markChanged()
            }
        }
        if var glide = view.glide {
            let moved = view.camera.panned(by: glide.step(to: now), width: stream.encodedSize.width,
                                           height: stream.encodedSize.height)
            if let moved { view.camera = moved }
            if moved == nil || glide.isFinished(at: now) {
                view.glide = nil
                emit(.cameraMovedByUser(view.camera))
            } else {
                view.glide = glide
                pacer.markChanged()
            }
        }
        let changeSince = pendingChangeSince ?? now
        pendingChangeSince = nil
        // Stamped with the time it is drawn for (the pacer's slot), not the moment its encoding
        // starts, so the stamps keep the paced spacing however long drawing and readback took.
        let stamp = presentationTime ?? statisticsOrigin.map { now - $0 + presentationShift }
        let picture = PendingPicture(run: pictureRun, changeSince: changeSince, presentationTime: stamp, forcesIDR: forcesIDR)
        if let surface = frames.encoderSurface {
            await renderIntoEncoderSurface(surface, live, picture, scale: stream.scale)
            return
        }
        // The next picture is drawn right away in a script: it collects this one, which the GPU
        // finishes meanwhile. Any other picture is collected in the visit that drew it: the next
        // may never come.
        let collectsLater = script.map { $0.next < $0.cameras.count } ?? false
        // The picture read back by the last visit, if it was left for this one to collect.
        let previous = pendingReadback.flatMap { $0.picture.run == pictureRun ? $0 : nil }
        pendingReadback = nil
        let collecting: FrameSource.Collecting = previous.map { .earlier($0.ticket) } ?? (collectsLater ? .nothing : .thisPicture)
        let collected = previous?.picture ?? (collectsLater ? nil : picture)
        // Render and encode times measure the machine, so they are read off the monotonic clock
        // whatever clock the session runs on (a manual one would make them zero).
        let start = SessionClock.monotonicNow
        // The encoder works on the previous picture meanwhile, on its own thread.
        let (ticket, drawn) = if let drawing = nextEngineDrawing(scale: stream.scale) {
            await timingEngineDraw { await frames.drawEngine(drawing, collecting: collecting) }
        } else {
            await frames.drawMap(camera: view.camera, overlays: view.overlays, tileArrived: tileArrivedHandler,
                                 collecting: collecting)
        }
        var renderTime = SessionClock.monotonicNow - start
        noteDmaBufMapping(drawn.dmaBufMapped)
        // A stop left this loop behind while the engine's draw stalled: nothing more of it goes out.
        if case .engine = frames.canvas, Task.isCancelled { return }
        if let error = drawn.error {
            // Nothing of this picture reached its slot; a previous picture collected is still good.
            if let previous, let frame = drawn.collected { await encode(frame, previous.picture, live) }
            consecutiveFailures += 1
            emit(.error(error))
            return
        }
        if let regions = haptics.update(controls: drawn.controls, transform: drawn.transform, scale: stream.scale) {
            emit(.hapticRegions(regions))
        }
        hasPicture = true
        if focusEnabled { followFocusedRegion() }
        if let collected, let frame = drawn.collected { await encode(frame, collected, live) }
        if collectsLater {
            pendingReadback = (ticket, picture)
        } else if previous != nil {
            // This visit collected a script's last-but-one picture; the last one follows.
            let collectStart = SessionClock.monotonicNow
            let frame = await frames.collect(ticket)
            renderTime += SessionClock.monotonicNow - collectStart
            await encode(frame, picture, live)
        }
        record(&recorded.renderTimes, .seconds(renderTime))
    }

    /// What the engine's next picture is, nil when the map is drawn; pixels the engine handed
    /// over are taken (a later picture converts them again from the canvas).
    private func nextEngineDrawing(scale: Double) -> EngineDrawing? {
        switch configuration.content {
        case .map:
            return nil
        case .engine(.gl(let draw)):
            return .gl(draw, scale: scale)
        case .engine(.pixels):
            guard let handover = pendingHandover else { return .samePixels }
            // Taken as it is: the draw closes a dma-buf's descriptors.
            pendingHandover = nil
            return switch handover {
            case .pixels(let pixels): .pixels(pixels)
            case .dmaBuf(let buffer): .dmaBuf(buffer)
            }
        }
    }

    /// A picture drawn, with what its encoding needs to know.
    struct PendingPicture {
        /// The ``pictureRun`` it was drawn in: a picture of an earlier run is never sent.
        let run: Int
        let changeSince: Double
        let presentationTime: Double?
        /// Whoever asked for it wants it as an IDR (a script), besides any IDR the stream needs.
        let forcesIDR: Bool
    }

    /// Starts encoding a collected picture once the encoder has the one before it done.
    private func encode(_ collected: Result<NV12Frame, ProjectionSessionError>, _ picture: PendingPicture, _ live: LiveStream) async {
        switch collected {
        case .success(let frame):
            // One picture in the encoder at a time: the queue between the stages holds one.
            await live.encoding.waitUntilIdle()
            // The picture on screen until now becomes the spare the next frame draws into.
            if let previous = live.lastFrame { live.frames.recycle(previous) }
            live.lastFrame = nil
            startEncoding(.frame(frame), live, as: .rendered, changeSince: picture.changeSince,
                          presentationTime: picture.presentationTime, forcesIDR: picture.forcesIDR)
        case .failure(let error):
            consecutiveFailures += 1
            emit(.error(error))
        }
    }

    /// Zero copy: the picture is converted straight into the encoder's surface. There is one
    /// surface, so drawing waits for the encoder to finish with it.
    private func renderIntoEncoderSurface(_ surface: DMABufPlanes, _ live: LiveStream, _ picture: PendingPicture,
                                          scale: Double) async {
        await live.encoding.waitUntilIdle()
        let start = SessionClock.monotonicNow
        let drawn = if let drawing = nextEngineDrawing(scale: scale) {
            await timingEngineDraw { await live.frames.drawEngineIntoEncoderSurface(surface, drawing) }
        } else {
            await live.frames.drawMapIntoEncoderSurface(surface, camera: view.camera, overlays: view.overlays,
                                                        tileArrived: tileArrivedHandler)
        }
        record(&recorded.renderTimes, .seconds(SessionClock.monotonicNow - start))
        noteDmaBufMapping(drawn.dmaBufMapped)
        if case .engine = live.frames.canvas, Task.isCancelled { return }
        if let error = drawn.error {
            consecutiveFailures += 1
            emit(.error(error))
            return
        }
        if let regions = haptics.update(controls: drawn.controls, transform: drawn.transform, scale: scale) {
            emit(.hapticRegions(regions))
        }
        hasPicture = true
        if focusEnabled { followFocusedRegion() }
        live.lastPictureInSurface = false
        startEncoding(.exportedSurface, live, as: .rendered, changeSince: picture.changeSince,
                      presentationTime: picture.presentationTime, forcesIDR: picture.forcesIDR)
    }

    /// Encodes the last picture again: it sharpens a still map and keeps the head unit showing it.
    func resendLastPicture(_ live: LiveStream, as kind: PictureKind) async {
        await live.encoding.waitUntilIdle()
        if live.frames.encoderSurface != nil, live.lastPictureInSurface {
            startEncoding(.exportedSurface, live, as: kind, changeSince: nil, presentationTime: nil)
            return
        }
        guard let frame = live.lastFrame else {
            // Nothing drawn yet (the first frame failed): draw instead.
            pacer.markChanged()
            return
        }
        live.lastFrame = nil
        startEncoding(.frame(frame), live, as: kind, changeSince: nil, presentationTime: nil)
    }

    /// Queues `input` for `live`'s encode loop and returns at once; the access unit is sent when
    /// it is ready. The caller waits (`EncodeQueue.waitUntilIdle()`) before queueing another.
    func startEncoding(_ input: EncoderInput, _ live: LiveStream, as kind: PictureKind, changeSince: Double?,
                       presentationTime: Double?, forcesIDR: Bool = false) {
        guard let origin = statisticsOrigin else {
            if case .frame(let frame) = input { live.lastFrame = frame }
            return
        }
        let forceIDR = forcesIDR || needsIDR || live.sink.needsKeyframe
        let presentation = nextPresentationTime(presentationTime ?? (clock.now - origin + presentationShift))
        live.encoding.enqueue(QueuedPicture(input: input, kind: kind, changeSince: changeSince, forceIDR: forceIDR,
                                            run: pictureRun, presentationTime: presentation))
    }

    /// Whether a picture is queued for the encoder or being encoded.
    var isEncoding: Bool { life.stream?.encoding.isBusy ?? false }

    /// Waits until the picture in the encoder (if any) has been sent or dropped.
    func finishEncoding() async {
        await life.stream?.encoding.waitUntilIdle()
    }

    /// The encode loop: one task per stream that encodes each queued picture and sends it, so
    /// that a picture costs no task of its own.
    func runEncodeLoop(_ live: LiveStream) async {
        let queue = live.encoding
        while true {
            guard let picture = queue.queued else {
                if queue.ends { return }
                await queue.waitForPicture()
                continue
            }
            queue.queued = nil
            queue.encodingNow = true
            await encodeAndSend(picture, live)
            queue.finishedPicture()
        }
    }

    private func encodeAndSend(_ picture: QueuedPicture, _ live: LiveStream) async {
        let encodeStart = SessionClock.monotonicNow
        let presentationTime = Duration.seconds(picture.presentationTime)
        let unit: AccessUnit
        do {
            let encoded: AccessUnit
            switch picture.input {
            case .frame(let frame):
                let (made, returned) = try await live.encoder.encode(frame, presentationTime: presentationTime,
                                                                     forceIDR: picture.forceIDR)
                encoded = made
                // A picture of an earlier run (before a resize) is not this stream's to repeat.
                if picture.run == pictureRun { live.lastFrame = returned }
            case .exportedSurface:
                encoded = try await live.encoder.encodeExportedSurface(presentationTime: presentationTime,
                                                                       forceIDR: picture.forceIDR)
                if picture.run == pictureRun { live.lastPictureInSurface = true }
            }
            // Renumbered after any skip pictures that went out since the encoder's last picture.
            unit = live.skipPictures.pass(encoded)
        } catch {
            // The encoder keeps the frame only on success; draw afresh next time.
            consecutiveFailures += 1
            needsIDR = true
            pacer.markChanged()
            wake.signal()
            emit(.error(.encoder(error)))
            return
        }
        record(&recorded.encodeTimes, .seconds(SessionClock.monotonicNow - encodeStart))
        // A suspend, resume, resize or stop that came while encoding wins: the unit is not sent.
        guard state == .streaming, picture.run == pictureRun, deliver(unit, to: live.sink) else { return }
        if picture.forceIDR { needsIDR = false }
        record(sent: unit, as: picture.kind, changeSince: picture.changeSince)
        live.bitrateGate?.record(bits: unit.data.count * 8, at: clock.now, drawn: picture.kind == .rendered,
                                 isKeyframe: unit.isKeyframe)
        if picture.kind == .rendered { recordQuality(of: unit, live) }
        script?.noteSent()
    }

    /// Hands `unit` to the sink; returns whether it was taken. Errors of single outputs that the
    /// sink went on without (a tee's failed recording) are reported as they come. When the sink
    /// refuses the unit the error is reported and the next picture is an IDR; an error that ends
    /// the output (a closed sink, a tee with no working output) ends the stream.
    func deliver(_ unit: AccessUnit, to sink: any VideoSink) -> Bool {
        let refusal: SinkError?
        do {
            try sink.write(unit)
            refusal = nil
        } catch {
            refusal = error
        }
        for error in sink.takeOutputErrors() { emit(.error(.sink(error))) }
        guard let refusal else {
            consecutiveFailures = 0
            return true
        }
        recorded.sinkErrors += 1
        consecutiveFailures += 1
        needsIDR = true
        emit(.error(.sink(refusal)))
        if refusal.endsOutput { consecutiveFailures = Self.failureLimit }
        return false
    }

    /// The presentation time of the next picture sent, of whatever kind: `proposed` (seconds
    /// since the stream's origin), or one frame interval after the last picture's when that is
    /// later. Drawn pictures are stamped with the pacer's slot and the others with the clock when
    /// they start; without this one rule the two could land microseconds apart, and an MP4
    /// recording (1/90000 s ticks) refuses a picture that is not after the one before.
    func nextPresentationTime(_ proposed: Double) -> Double {
        let time = max(proposed, lastPresentation + pacer.configuration.frameInterval)
        lastPresentation = time
        return time
    }

    /// Sends a hand-made skip picture as the keep-alive; false when one cannot be used now
    /// (configured otherwise, an IDR is due, or the stream cannot take one). True also when the
    /// stream may not send at all any more: nothing else is to be sent instead.
    func sendSkipPicture(_ live: LiveStream) -> Bool {
        // The loop waited for the encoder before deciding on this: a suspend or stop may have
        // come meanwhile, and nothing goes out once the stream is no longer allowed to send.
        guard state == .streaming else { return true }
        guard configuration.keepAlive == .skipPicture, !needsIDR, !live.sink.needsKeyframe,
              let origin = statisticsOrigin else { return false }
        skipPictureCount += 1
        let presentation = nextPresentationTime(clock.now - origin + presentationShift)
        guard let unit = live.skipPictures.skipPicture(presentationTime: .seconds(presentation),
                                                  frameNumber: skipPictureCount) else { return false }
        // A refused skip picture still counts as handled: the IDR that follows resets the numbering.
        if deliver(unit, to: live.sink) {
            record(sent: unit, as: .keepAlive, changeSince: nil)
            live.bitrateGate?.record(bits: unit.data.count * 8, at: clock.now, drawn: false, isKeyframe: false)
        }
        return true
    }

    /// Counts a unit the sink took.
    func record(sent unit: AccessUnit, as kind: PictureKind, changeSince: Double?) {
        guard let origin = statisticsOrigin else { return }
        let sent = clock.now
        switch kind {
        case .rendered:
            recorded.framesRendered += 1
            if let changeSince { record(&recorded.latencies, .seconds(sent - changeSince)) }
        case .refinement: recorded.refinementFrames += 1
        case .keepAlive: recorded.keepAlives += 1
        }
        if unit.isKeyframe { recorded.idrFrames += 1 }
        recorded.bytesSent += unit.data.count
        let second = Int(sent - origin)
        if second >= 0, second < ProjectionSessionStatistics.sampleCapacity {
            while recorded.bytesPerSecond.count <= second { recorded.bytesPerSecond.append(0) }
            recorded.bytesPerSecond[second] += unit.data.count
            while recorded.framesRenderedPerSecond.count <= second { recorded.framesRenderedPerSecond.append(0) }
            if kind == .rendered { recorded.framesRenderedPerSecond[second] += 1 }
        }
    }

    func record(_ samples: inout [Duration], _ value: Duration) {
        if samples.count < ProjectionSessionStatistics.sampleCapacity { samples.append(value) }
    }
}

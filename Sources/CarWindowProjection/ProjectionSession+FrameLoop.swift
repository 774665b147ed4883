import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks
import CarWindowSystemSupport

/// The frame loop: one task per stream that asks the pacer what to do, does it, and sleeps on
/// the wake signal in between. Engine calls run on the actor between its awaits.
extension ProjectionSession {
    /// What an access unit carries, for the recorded.
    enum PictureKind {
        case rendered
        case refinement
        case keepAlive
    }

    /// Failures in a row after which the stream is given up.
    static let failureLimit = 10

    func runFrameLoop() async {
        while !Task.isCancelled {
            guard state == .streaming else {
                // Suspended: nothing is sent, not even keep-alives, until resume or stop.
                await wake.wait(until: nil)
                continue
            }
            if tilesArrived.take() {
                if pendingChangeSince == nil { pendingChangeSince = clock.now }
                pacer.markChanged()
            }
            if configuration.drawsEveryFrame { pacer.markChanged() }
            let now = clock.now
            let action = pacer.nextAction(at: now)
            switch action {
            case .render:
                tickGestures(at: now)
                await setIdleRate(false)
                await renderAndSend(at: now)
            case .refine:
                await setIdleRate(false)
                await resendLastPicture(as: .refinement)
            case .keepAlive:
                if !sendSkipPicture() {
                    await setIdleRate(true)
                    await resendLastPicture(as: .keepAlive)
                }
            case .wait(let until):
                var deadline = until
                if recognizer.hasPendingTap {
                    // Wake when the double-tap window of a held-back tap closes, to deliver it.
                    deadline = min(deadline, now + configuration.gestures.doubleTapMaximumInterval.inSeconds + 0.01)
                }
                await wake.wait(until: deadline)
                if recognizer.hasPendingTap { tickGestures(at: clock.now) }
            }
            if consecutiveFailures >= Self.failureLimit {
                emit(.warning(.streamGivenUp(failuresInARow: Self.failureLimit)))
                Task { await self.stop() }
                return
            }
        }
    }

    /// Bits per second the encoder may spend on keep-alives. The refinements before them have
    /// already sharpened the picture; at this rate the encoder skips nearly every macroblock,
    /// so a still map costs a few hundred bytes a second instead of the moving-map budget.
    static let idleBitrate = 2_000

    /// Switches the encoder's rate control between the moving-map settings and the keep-alive
    /// rate. Rate control works per picture, so its nominal frame rate follows the real one.
    func setIdleRate(_ idle: Bool) async {
        guard idle != encoderIsIdle, let encoder, let settings = encoderSettings else { return }
        encoderIsIdle = idle
        do {
            if idle {
                try await encoder.setFrameRate(1 / pacer.configuration.keepAliveInterval)
                try await encoder.setBitrate(min(Self.idleBitrate, settings.bitrate))
            } else {
                try await encoder.setBitrate(settings.bitrate)
                try await encoder.setFrameRate(settings.framesPerSecond)
            }
        } catch {
            emit(.warning(.encoderRateUnchanged(forKeepAlives: idle, error)))
        }
    }

    /// Draws the current view and sends it.
    func renderAndSend(at now: Double) async {
        guard let renderer, let settings = encoderSettings, let stream else { return }
        if let animation {
            cameraOnScreen = animation.camera(at: now)
            if animation.isFinished(at: now) {
                self.animation = nil
            } else {
                // Keep frames coming at the paced rate until the animation ends.
                pacer.markChanged()
            }
        }
        let changeSince = pendingChangeSince ?? now
        pendingChangeSince = nil
        let target = takeSpareFrame(width: stream.encodedSize.width, height: stream.encodedSize.height,
                                    fullRange: settings.fullRange)
        // Render and encode times measure the machine, so they are read off the monotonic clock
        // whatever clock the session runs on (a manual one would make them zero).
        let start = SessionClock.monotonicNow
        let drawn = await renderer.drawStreamFrame(camera: cameraOnScreen, overlays: overlays,
                                                   fullRange: settings.fullRange, into: target,
                                                   tileArrived: tileArrivedHandler)
        record(&recorded.renderTimes, .seconds(SessionClock.monotonicNow - start))
        let frame: NV12Frame
        switch drawn.frame {
        case .success(let filled):
            frame = filled
        case .failure(let error):
            consecutiveFailures += 1
            emit(.error(.renderer(error)))
            return
        }
        if let regions = haptics.update(controls: drawn.controls, transform: drawn.transform, scale: stream.scale) {
            emit(.hapticRegions(regions))
        }
        // The picture on screen until now becomes the spare the next frame draws into.
        if let previous = lastFrame { spareFrame = previous }
        lastFrame = nil
        await encodeAndSend(frame, as: .rendered, changeSince: changeSince)
    }

    /// Encodes the last picture again: it sharpens a still map and keeps the head unit showing it.
    func resendLastPicture(as kind: PictureKind) async {
        guard let frame = lastFrame else {
            // Nothing drawn yet (the first frame failed): draw instead.
            pacer.markChanged()
            return
        }
        lastFrame = nil
        await encodeAndSend(frame, as: kind, changeSince: nil)
    }

    func encodeAndSend(_ frame: NV12Frame, as kind: PictureKind, changeSince: Double?) async {
        guard let encoder, let origin = statisticsOrigin else {
            lastFrame = frame
            return
        }
        let forceIDR = needsIDR || sink?.needsKeyframe == true
        let run = pictureRun
        let start = clock.now
        let encodeStart = SessionClock.monotonicNow
        let unit: AccessUnit
        do {
            let (encoded, returned) = try await encoder.encode(frame, presentationTime: .seconds(start - origin), forceIDR: forceIDR)
            lastFrame = returned
            // Renumbered after any skip pictures that went out since the encoder's last picture.
            unit = skipPictures.pass(encoded)
        } catch {
            // The encoder keeps the frame only on success; draw afresh next time.
            consecutiveFailures += 1
            needsIDR = true
            pacer.markChanged()
            emit(.error(.encoder(error)))
            return
        }
        record(&recorded.encodeTimes, .seconds(SessionClock.monotonicNow - encodeStart))
        // A suspend, resume, resize or stop that came while encoding wins: the unit is not sent.
        guard state == .streaming, run == pictureRun, let sink, !Task.isCancelled, deliver(unit, to: sink) else { return }
        if forceIDR { needsIDR = false }
        record(sent: unit, as: kind, changeSince: changeSince)
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

    /// Sends a hand-made skip picture as the keep-alive; false when one cannot be used now
    /// (configured otherwise, an IDR is due, or the stream cannot take one).
    func sendSkipPicture() -> Bool {
        guard configuration.keepAlive == .skipPicture, !needsIDR, sink?.needsKeyframe != true,
              let origin = statisticsOrigin, let sink else { return false }
        skipPictureCount += 1
        guard let unit = skipPictures.skipPicture(presentationTime: .seconds(clock.now - origin),
                                                  frameNumber: skipPictureCount) else { return false }
        // A refused skip picture still counts as handled: the IDR that follows resets the numbering.
        if deliver(unit, to: sink) { record(sent: unit, as: .keepAlive, changeSince: nil) }
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

    /// A frame to draw into: the spare one when it has the right size, else a new one (the
    /// first frames of a stream and after a resize only).
    func takeSpareFrame(width: Int, height: Int, fullRange: Bool) -> NV12Frame {
        if let spare = spareFrame, spare.width == width, spare.height == height, spare.fullRange == fullRange {
            spareFrame = nil
            return spare
        }
        spareFrame = nil
        return NV12Frame(width: width, height: height, fullRange: fullRange)
    }

    func record(_ samples: inout [Duration], _ value: Duration) {
        if samples.count < ProjectionSessionStatistics.sampleCapacity { samples.append(value) }
    }
}

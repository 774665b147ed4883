import CarWindowH264
/// Decides, moment by moment, whether a projection session draws a frame, re-sends the last
/// picture, or sleeps: work only when the map moves, and never a blank head unit.
///
/// - While something visible changes (camera, vehicle, route, style, controls, arriving tiles),
///   frames are drawn at the negotiated rate on an even cadence, never faster.
/// - When changes stop, the last picture is encoded again a few times ("refinement"): each pass
///   sharpens a static picture at the same bitrate, and no drawing is needed.
/// - Idle, a keep-alive (the last picture re-encoded, or a skip picture) goes out often enough
///   that a head unit's ~1 s "no video" timeout never fires.
///
/// Time is given by the caller in seconds on any monotonic clock, so the pacer is a plain value
/// that tests drive deterministically.
package struct FramePacer: Sendable, Equatable {
    /// How often a ``FramePacer`` draws, refines and sends keep-alives.
    package struct Configuration: Sendable, Equatable {
        /// Frames per second while the map moves: the negotiated rate, in 1...60
        /// (`EncoderSettings.maximumStreamingFramesPerSecond`). Sessions negotiate at least 15
        /// (SmartDeviceLink's default) unless the head unit itself asks for less, and a head
        /// unit's limit is never exceeded.
        package var framesPerSecond: Double
        /// Re-encodes of the last picture after motion stops.
        package var refinementFrames: Int
        /// Seconds between keep-alives when idle; below the head unit's ~1 s timeout.
        package var keepAliveInterval: Double

        /// Makes a configuration, bringing values into range: the frame rate into
        /// 1...``EncoderSettings/maximumStreamingFramesPerSecond`` (15 if not finite or not positive),
        /// refinement frames to at least 0, the keep-alive interval into 0.05...0.9 seconds (0.5 if not finite).
        package init(framesPerSecond: Double = 15, refinementFrames: Int = 3, keepAliveInterval: Double = 0.5) {
            self.framesPerSecond = framesPerSecond.isFinite && framesPerSecond > 0
                ? min(max(framesPerSecond, 1), EncoderSettings.maximumStreamingFramesPerSecond) : 15
            self.refinementFrames = max(refinementFrames, 0)
            self.keepAliveInterval = keepAliveInterval.isFinite ? min(max(keepAliveInterval, 0.05), 0.9) : 0.5
        }

        /// Seconds between frames while moving.
        package var frameInterval: Double { 1 / framesPerSecond }
    }

    /// What to do now.
    package enum Action: Sendable, Equatable {
        /// Draw and encode a new picture.
        case render
        /// Encode the last picture again to sharpen it after motion stopped.
        case refine
        /// Send a keep-alive so the head unit keeps showing the picture.
        case keepAlive
        /// Nothing to do before `until` (seconds), unless something changes.
        case wait(until: Double)
    }

    /// The rates the pacer works to.
    package var configuration: Configuration
    private var changedSinceRender = true
    private var lastRender: Double?
    private var lastSend: Double?
    private var refinementsLeft = 0

    /// Makes a pacer with a change pending, so its first frame slot draws.
    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Something visible changed: the next frame slot draws.
    package mutating func markChanged() {
        changedSinceRender = true
    }

    /// Whether a change is waiting to be drawn.
    package var hasPendingChange: Bool { changedSinceRender }

    /// The action for `time`. Call it again after performing the action (or when woken by a
    /// change); a `.wait` says when to call next.
    package mutating func nextAction(at time: Double) -> Action {
        let interval = configuration.frameInterval
        if changedSinceRender {
            // Even cadence: the next slot follows the last picture sent (drawn, refinement or
            // keep-alive), not the moment of the change, unless the map has been still for
            // longer than a frame; so no two pictures are closer than the negotiated interval.
            let last = lastSend.map { send in lastRender.map { max($0, send) } ?? send } ?? lastRender
            if let last, time < last + interval {
                return .wait(until: last + interval)
            }
            changedSinceRender = false
            lastRender = time
            lastSend = time
            refinementsLeft = configuration.refinementFrames
            return .render
        }
        if refinementsLeft > 0, let lastSend {
            if time < lastSend + interval { return .wait(until: lastSend + interval) }
            refinementsLeft -= 1
            self.lastSend = time
            return .refine
        }
        guard let lastSend else {
            return .wait(until: time + configuration.keepAliveInterval)
        }
        let due = lastSend + configuration.keepAliveInterval
        if time < due { return .wait(until: due) }
        self.lastSend = time
        return .keepAlive
    }

    /// A picture was drawn at `time` outside the pacer's cadence (a camera script): refinements
    /// and keep-alives follow from it as after a paced one.
    package mutating func drew(at time: Double) {
        changedSinceRender = false
        lastRender = time
        lastSend = time
        refinementsLeft = configuration.refinementFrames
    }

    /// Starts over as after a (re)start of the stream: the next action draws (with an IDR).
    package mutating func restart() {
        changedSinceRender = true
        lastRender = nil
        lastSend = nil
        refinementsLeft = 0
    }
}

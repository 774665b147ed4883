import Foundation
import Logging
import CarWindowVideoCore

/// How a voice prompt ended.
public enum PromptOutcome: Sendable, Equatable, CustomStringConvertible {
    /// Played to the end: the head unit had all of it and its time has passed.
    case played
    /// Not played: the head unit does not play the app's audio now (not FULL or LIMITED, or
    /// NOT_AUDIBLE), or it refused the audio service; the reason is attached.
    case notAudible(String)
    /// Cut off part way: the head unit stopped playing the app's audio or the connection went.
    case interrupted
    /// Dropped unplayed: more prompts were waiting than ``SDLPromptPlayer/maximumQueuedPrompts``,
    /// or the player stopped.
    case dropped

    public var description: String {
        switch self {
        case .played: "played"
        case .notAudible(let why): "not audible: \(why)"
        case .interrupted: "interrupted"
        case .dropped: "dropped"
        }
    }
}

/// Plays voice prompts on a head unit's audio service, one after another, in real time.
///
/// Each prompt is converted to the head unit's PCM (``SDLConnection/headUnitPCMFormat``) and
/// written in 100 ms pieces no more than ``lead`` ahead of the time it plays, so the head unit
/// buffers little and a prompt cut off by a level change wastes little. ``play(_:)`` returns
/// when the prompt has played (its whole duration has passed since it started), so an engine can
/// wait for one prompt before the next or before muting its own. The audio service is opened
/// when a prompt needs it and stays open while the head unit allows audio.
///
/// - Important: Thread-safe: it is an actor.
public actor SDLPromptPlayer {
    /// The connection whose audio service plays the prompts.
    public nonisolated let connection: SDLConnection
    /// How far ahead of playing time audio is written: enough to ride out a scheduling hiccup,
    /// little enough that a cut prompt stops soon.
    public static let lead = Duration.milliseconds(300)
    /// Audio written per message.
    public static let piece = Duration.milliseconds(100)
    /// Prompts that may wait behind the one playing; more are ``PromptOutcome/dropped``
    /// (guidance that old is wrong anyway).
    public static let maximumQueuedPrompts = 4

    private var queue: [(prompt: AudioPrompt, reply: CheckedContinuation<PromptOutcome, Never>)] = []
    private var playing = false
    private var stopped = false
    private let logger = Logger(label: "carwindow.audio")

    /// A player on `connection`'s audio service.
    public init(connection: SDLConnection) {
        self.connection = connection
    }

    /// Plays `prompt` after those queued before it and returns how it ended.
    public func play(_ prompt: AudioPrompt) async -> PromptOutcome {
        guard !stopped else { return .dropped }
        guard queue.count < Self.maximumQueuedPrompts else { return .dropped }
        return await withCheckedContinuation { continuation in
            queue.append((prompt, continuation))
            if !playing {
                playing = true
                Task { await self.playQueue() }
            }
        }
    }

    /// Drops the prompts waiting, lets the one playing end, and refuses new ones.
    public func stop() {
        stopped = true
        let waiting = queue
        queue.removeAll()
        for item in waiting { item.reply.resume(returning: .dropped) }
    }

    private func playQueue() async {
        while !queue.isEmpty {
            let item = queue.removeFirst()
            let outcome = await playNow(item.prompt)
            if outcome != .played { logger.info("voice prompt \(outcome)") }
            item.reply.resume(returning: outcome)
        }
        playing = false
    }

    private func playNow(_ prompt: AudioPrompt) async -> PromptOutcome {
        guard await connection.isAudioAllowed else { return .notAudible("the head unit does not play the app's audio now") }
        do {
            try await connection.startAudio()
        } catch {
            return .notAudible("\(error)")
        }
        let format = await connection.headUnitPCMFormat
        let pcm = format.encode(prompt.samples, rate: prompt.samplesPerSecond)
        let bytesPerPiece = max(2, Int(Self.piece.inSeconds * Double(format.bytesPerSecond)) & ~1)
        let clock = ContinuousClock()
        let start = clock.now
        var sent = 0
        while sent < pcm.count {
            // Written no earlier than `lead` before it plays.
            let playsAt = start + .seconds(Double(sent) / Double(format.bytesPerSecond))
            let due = playsAt - Self.lead
            if due > clock.now { try? await clock.sleep(until: due) }
            let end = min(sent + bytesPerPiece, pcm.count)
            do {
                try await connection.sendAudio(Array(pcm[sent..<end]))
            } catch {
                return .interrupted
            }
            sent = end
        }
        // Played once its time has passed.
        try? await clock.sleep(until: start + .seconds(Double(pcm.count) / Double(format.bytesPerSecond)))
        return .played
    }
}

import Foundation
import Logging
import CarWindowVideoCore

/// Which backend to use: the best one available, or a forced one.
public enum EncoderChoice: Sendable, Equatable {
    /// VA-API when a render node offers an H.264 encode entrypoint, else OpenH264.
    case automatic
    case forced(EncoderBackend)

    /// The choice the configuration or `CARWINDOW_ENCODER` asks for; the configuration wins.
    public static func requested(configured: EncoderChoice = .automatic) throws(EncoderError) -> EncoderChoice {
        if configured != .automatic { return configured }
        guard let name = ProcessInfo.processInfo.environment[EncoderBackend.environmentVariable], !name.isEmpty else {
            return .automatic
        }
        guard let backend = EncoderBackend(rawValue: name.lowercased()) else { throw .unknownBackendName(name) }
        return .forced(backend)
    }
}

/// Makes the encoder `choice` asks for. With `.automatic`, a VA-API set-up failure is logged
/// with its reason and OpenH264 takes over; a forced backend that fails throws.
public func makeVideoEncoder(_ settings: EncoderSettings, choice: EncoderChoice = .automatic,
                             logger: Logger = Logger(label: "carwindow.encoder")) throws(EncoderError) -> any VideoEncoder {
    try settings.validate()
    switch try EncoderChoice.requested(configured: choice) {
    case .forced(.openh264):
        return try OpenH264Encoder(settings: settings)
    case .forced(.vaapi):
        return try VAAPIEncoder(settings: settings)
    case .automatic:
        do {
            return try VAAPIEncoder(settings: settings)
        } catch {
            logger.info("VA-API encoder not used (\(error)); encoding with OpenH264")
            return try OpenH264Encoder(settings: settings)
        }
    }
}

/// An encoder on a thread of its own, so encoding frame N overlaps drawing frame N+1 on the
/// render thread.
///
/// - Important: Thread-safe: it is an actor; the encoder it owns never leaves its thread.
package actor EncoderStage {
    private let thread: RenderThread
    private let encoder: any VideoEncoder
    /// The backend the stage's encoder runs.
    package nonisolated let backend: EncoderBackend
    /// The settings the encoder was made with; later bitrate and frame rate changes do
    /// not show here.
    package nonisolated let settings: EncoderSettings
    private var exported: DMABufPlanes?

    package nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// Makes the encoder on the stage's own thread.
    package init(settings: EncoderSettings, choice: EncoderChoice = .automatic) async throws(EncoderError) {
        let thread = RenderThread(name: "carwindow.encode")
        let made: Result<any VideoEncoder, EncoderError> = await withCheckedContinuation { continuation in
            thread.enqueueTask {
                do throws(EncoderError) {
                    let encoder = try makeVideoEncoder(settings, choice: choice)
                    nonisolated(unsafe) let handedOver = encoder
                    continuation.resume(returning: .success(handedOver))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        switch made {
        case .success(let encoder):
            self.thread = thread
            self.encoder = encoder
            backend = encoder.backend
            self.settings = settings
        case .failure(let error):
            thread.stop()
            throw error
        }
    }

    /// Encodes `frame`; returns the access unit and the frame, whose storage the caller reuses.
    package func encode(_ frame: NV12Frame, presentationTime: Duration,
                       forceIDR: Bool) throws(EncoderError) -> (AccessUnit, NV12Frame) {
        (try encoder.encode(frame, presentationTime: presentationTime, forceIDR: forceIDR), frame)
    }

    /// The encoder's input surface as dma-buf planes, for drawing into it without copies; nil
    /// unless the encoder has a zero-copy input and the driver exports it.
    package func exportedSurface() -> DMABufPlanes? {
        if let exported { return exported }
        exported = try? encoder.zeroCopyInput?.exportInputSurfaceForGL()
        return exported
    }

    /// Encodes what was drawn into ``exportedSurface()``.
    package func encodeExportedSurface(presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit {
        guard let input = encoder.zeroCopyInput else {
            throw .backendUnavailable(encoder.backend, "the \(encoder.backend) encoder has no zero-copy input to encode")
        }
        return try input.encodeExportedSurface(presentationTime: presentationTime, forceIDR: forceIDR)
    }

    /// Changes the target bitrate, in bits per second, from the next frame on.
    package func setBitrate(_ bitsPerSecond: Int) throws(EncoderError) { try encoder.setBitrate(bitsPerSecond) }
    /// Changes the nominal frame rate, in frames per second, without a restart.
    package func setFrameRate(_ framesPerSecond: Double) throws(EncoderError) { try encoder.setFrameRate(framesPerSecond) }

    /// Ends the stream and lets the thread finish.
    package func finish() throws(EncoderError) -> [AccessUnit] {
        defer { thread.stop() }
        return try encoder.flush()
    }
}

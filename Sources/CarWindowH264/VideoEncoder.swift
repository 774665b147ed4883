import CarWindowSystemSupport
import CarWindowVideoCore
/// How the encoder spends its bits.
public enum RateControl: String, Sendable, CaseIterable {
    /// Constant bitrate: every one-second window of the stream near the target, a steady load on
    /// the head unit's link (OpenH264 is steered picture by picture to it; VA-API drivers get a
    /// hypothetical reference decoder buffer).
    case cbr
    /// Variable bitrate: fewer bits when the map barely changes, one-second windows still
    /// steered toward the target.
    case vbr
}

/// Which encoder implementation runs.
public enum EncoderBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Hardware encoding through VA-API on a DRM render node (Intel, AMD).
    case vaapi
    /// Cisco's OpenH264 (BSD licence) in software.
    case openh264

    /// The environment variable that forces a backend: `vaapi` or `openh264`.
    public static let environmentVariable = "CARWINDOW_ENCODER"

    public var description: String { rawValue }
}

/// What to encode and how. Defaults are SmartDeviceLink's: 15 fps, 600 kbit/s.
public struct EncoderSettings: Sendable, Equatable {
    /// Visible width in pixels; width and height are even, at most ``maximumSide`` each, and
    /// together at most ``maximumMacroblocks`` macroblocks (level 5.1).
    public var width: Int
    /// Visible height in pixels; even, like the width.
    public var height: Int
    /// Frames per second the rate control plans for, in (0, 240]; 15 by default.
    public var framesPerSecond: Double = 15
    /// Target bits per second.
    public var bitrate: Int = 600_000
    /// How bits are spread over frames; CBR by default.
    public var rateControl: RateControl = .cbr
    /// Frames between IDR pictures; nil for none besides the first and those asked for.
    public var idrInterval: Int?
    /// Full-range (0...255) samples instead of BT.601 limited range; the SPS VUI says which.
    public var fullRange = false
    /// Threads of a software encoder (OpenH264), each with a slice of the picture; hardware
    /// encoders ignore it. Automatic by default: from the cores and the picture's size.
    public var threads = EncoderThreads.automatic

    /// Makes settings for a `width` x `height` picture; the rest defaults to 15 fps, 600 kbit/s
    /// CBR. ``validate()`` checks them.
    public init(width: Int, height: Int, framesPerSecond: Double = 15, bitrate: Int = 600_000,
                rateControl: RateControl = .cbr, idrInterval: Int? = nil, fullRange: Bool = false,
                threads: EncoderThreads = .automatic) {
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.bitrate = bitrate
        self.rateControl = rateControl
        self.idrInterval = idrInterval
        self.fullRange = fullRange
        self.threads = threads
    }

    /// Coded width: the visible width rounded up to a multiple of 16 (whole macroblocks).
    public var codedWidth: Int { NV12Frame.align16(width) }
    /// Coded height: the visible height rounded up to a multiple of 16.
    public var codedHeight: Int { NV12Frame.align16(height) }

    /// The largest picture in macroblocks (level 5.1's MaxFS).
    public static let maximumMacroblocks = 36_864
    /// The longest width or height in pixels that ``validate()`` accepts.
    public static let maximumSide = 4096

    /// Throws when the settings cannot be encoded, saying which value is wrong.
    public func validate() throws(EncoderError) {
        guard width > 0, height > 0 else {
            throw .invalidSettings("size \(width)x\(height) must be positive")
        }
        guard width % 2 == 0, height % 2 == 0 else {
            throw .invalidSettings("size \(width)x\(height) must be even in both directions for 4:2:0")
        }
        guard width <= Self.maximumSide, height <= Self.maximumSide,
              (codedWidth / 16) * (codedHeight / 16) <= Self.maximumMacroblocks else {
            throw .invalidSettings("size \(width)x\(height) is beyond H.264 level 5.1 (at most \(Self.maximumSide) pixels a side and \(Self.maximumMacroblocks) macroblocks)")
        }
        guard framesPerSecond.isFinite, framesPerSecond > 0, framesPerSecond <= 240 else {
            throw .invalidSettings("frame rate \(framesPerSecond) must be in (0, 240]")
        }
        guard bitrate > 0, bitrate <= 200_000_000 else {
            throw .invalidSettings("bitrate \(bitrate) bit/s must be in 1...200000000")
        }
        if let idrInterval, idrInterval <= 0 {
            throw .invalidSettings("IDR interval \(idrInterval) must be positive, or nil for none")
        }
        if case .fixed(let count) = threads, !EncoderThreads.allowed.contains(count) {
            throw .invalidSettings("encoder threads \(count) must be in \(EncoderThreads.allowed.lowerBound)...\(EncoderThreads.allowed.upperBound)")
        }
    }
}

/// How many threads a software encoder runs, each encoding one slice of every picture.
///
/// More threads finish a picture sooner (a camera change reaches the head unit sooner, and large
/// pictures keep up with the frame rate) at a small cost in bits: each slice starts its
/// prediction afresh at its top edge.
public enum EncoderThreads: Sendable, Hashable, CustomStringConvertible {
    /// Chosen from the cores the process may run on and the picture's size: one thread per core,
    /// at most ``automaticLimit``, and each slice at least ``rowsPerThread`` macroblock rows.
    case automatic
    /// Exactly this many, in ``allowed``.
    case fixed(Int)

    /// The counts ``fixed(_:)`` accepts.
    public static let allowed = 1...16
    /// The most threads ``automatic`` chooses: beyond it the slices' overhead and the frame's
    /// serial parts (colour planes, bitstream assembly) outweigh what another thread saves.
    public static let automaticLimit = 8
    /// The fewest macroblock rows (16 pixels each) ``automatic`` gives one thread.
    public static let rowsPerThread = 8

    /// The thread count for a `width` x `height` picture on this machine.
    public func count(width: Int, height: Int) -> Int {
        count(width: width, height: height, cores: ProcessorCores.available)
    }

    /// The thread count for a `width` x `height` picture on `cores` cores.
    package func count(width: Int, height: Int, cores: Int) -> Int {
        switch self {
        case .fixed(let count):
            return min(max(count, Self.allowed.lowerBound), Self.allowed.upperBound)
        case .automatic:
            let rows = (max(height, 1) + 15) / 16
            return max(1, min(cores, Self.automaticLimit, rows / Self.rowsPerThread))
        }
    }

    public var description: String {
        switch self {
        case .automatic: "automatic"
        case .fixed(let count): "\(count)"
        }
    }
}

/// Errors of encoding, each saying what went wrong and what to do.
public enum EncoderError: Error, CustomStringConvertible, Equatable {
    /// A setting cannot be encoded.
    case invalidSettings(String)
    /// The backend cannot run here (no device, no library, no H.264 entrypoint).
    case backendUnavailable(EncoderBackend, String)
    /// `CARWINDOW_ENCODER` names no backend.
    case unknownBackendName(String)
    /// The frame does not match the configured size.
    case frameMismatch(String)
    /// The backend failed while encoding.
    case encodeFailed(EncoderBackend, String)
    /// An IDR was requested for this frame and did not come out.
    case idrNotProduced(frameNumber: Int)
    /// The backend dropped a frame although frame skipping is off.
    case frameSkipped(frameNumber: Int)

    public var description: String {
        switch self {
        case .invalidSettings(let reason): "invalid encoder settings: \(reason)"
        case .backendUnavailable(let backend, let reason):
            "the \(backend) encoder is unavailable: \(reason)"
        case .unknownBackendName(let name):
            "\(EncoderBackend.environmentVariable)=\(name) is not a backend: use vaapi or openh264"
        case .frameMismatch(let reason): "frame does not fit the encoder: \(reason)"
        case .encodeFailed(let backend, let reason): "\(backend) failed to encode: \(reason)"
        case .idrNotProduced(let frame): "frame \(frame) was asked to be an IDR but came out as another picture type"
        case .frameSkipped(let frame): "the encoder skipped frame \(frame); frame skipping must stay off"
        }
    }
}

/// One H.264 encoder, whatever its backend: constrained baseline, CAVLC, no B frames, one
/// reference, low delay (VUI max_num_reorder_frames 0, max_dec_frame_buffering 1), SPS and PPS
/// before every IDR, IDR on request.
///
/// - Important: Not thread-safe: one pipeline stage owns it.
public protocol VideoEncoder: AnyObject {
    /// Which implementation this is.
    var backend: EncoderBackend { get }
    /// The settings in use, bitrate and frame rate changes included.
    var settings: EncoderSettings { get }
    /// Encodes one frame into one access unit; `forceIDR` makes it an IDR or throws.
    func encode(_ frame: NV12Frame, presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit
    /// Changes the target bitrate from the next frame on, without a restart.
    func setBitrate(_ bitsPerSecond: Int) throws(EncoderError)
    /// Changes the nominal frame rate (rate control's bits per frame) without a restart.
    func setFrameRate(_ framesPerSecond: Double) throws(EncoderError)
    /// Returns what the encoder still holds (nothing for these low-delay backends) and ends the stream.
    func flush() throws(EncoderError) -> [AccessUnit]
    /// The encoder's zero-copy input, when it has one: a surface the renderer draws into
    /// directly. nil (the default) for an encoder that takes NV12 frames only.
    var zeroCopyInput: (any ZeroCopyEncoderInput)? { get }
}

extension VideoEncoder {
    /// None: the encoder takes NV12 frames, uploaded by the frame path.
    public var zeroCopyInput: (any ZeroCopyEncoderInput)? { nil }
}

/// An encoder's input surface that the renderer can draw into without a copy: exported as
/// dma-buf planes for EGL to import, then encoded in place.
///
/// - Important: Not thread-safe: the stage that owns the encoder calls it.
public protocol ZeroCopyEncoderInput: AnyObject {
    /// The input surface as dma-buf planes; the caller closes the descriptors once EGL has
    /// imported them. Throws when the driver cannot export it (the frame path then uploads).
    func exportInputSurfaceForGL() throws(EncoderError) -> DMABufPlanes
    /// Encodes what was drawn into the exported surface; the renderer must have flushed first.
    func encodeExportedSurface(presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit
}

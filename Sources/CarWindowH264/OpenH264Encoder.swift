internal import COpenH264
import Dispatch
import Glibc
import Logging
import CarWindowSystemSupport
import CarWindowVideoCore

private let openH264Logger = Logger(label: "carwindow.encoder.openh264")

/// OpenH264 writes its diagnostics through this callback instead of to stderr, so they reach the
/// application's logging backend.
private let openH264TraceCallback: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
    _, level, message in
    guard let message else { return }
    var text = String(cString: message)
    while text.last?.isNewline == true { text.removeLast() }
    if level <= Int32(WELS_LOG_ERROR) {
        openH264Logger.error("\(text)")
    } else {
        // OpenH264's warnings are advice about settings chosen on purpose (frame skipping off),
        // repeated for every encoder: debug level keeps them out of users' logs.
        openH264Logger.debug("\(text)")
    }
}

/// H.264 in software with Cisco's OpenH264 (BSD licence): constrained baseline, CAVLC, one
/// reference picture, no frame skipping, IDR only on request (or every `idrInterval` frames).
///
/// OpenH264 reads I420, so each NV12 frame's interleaved chroma is split into two planes that are
/// allocated once, at initialisation. The SPS OpenH264 writes lacks the constrained-baseline flag
/// and the VUI bitstream restriction, so every IDR access unit passes through
/// `H264StreamRewriter.normalize` before it leaves.
///
/// - Important: Not thread-safe: one pipeline stage owns it.
public final class OpenH264Encoder: VideoEncoder {
    /// Which OpenH264 tuning runs. Screen-content mode adds scroll detection but, as OpenH264
    /// warns, holds the bitrate less well; it exists here so tests can compare the two.
    enum ContentKind: Sendable {
        case camera
        case screen
    }

    /// Always ``EncoderBackend/openh264``.
    public let backend: EncoderBackend = .openh264
    /// The settings in use, bitrate and frame rate changes included.
    public private(set) var settings: EncoderSettings
    /// Threads (and slices per picture) in use: `settings.threads` resolved for this machine.
    public let threadCount: Int
    /// The frame rate the stream was opened at, which every SPS's timing states whatever rate
    /// the rate control runs at later (keep-alives, a lowered quality): a player that times a
    /// raw stream by its SPS would otherwise change pace at every IDR (ffmpeg's raw H.264
    /// demuxer gave pictures the same timestamp after an IDR at 10 fps in a 15 fps stream).
    private let streamFramesPerSecond: Double

    private let handle: UnsafeMutablePointer<ISVCEncoder?>
    private let functions: ISVCEncoderVtbl
    private var chromaU: [UInt8]
    private var chromaV: [UInt8]
    private var bitstreamInfo = SFrameBSInfo()
    private var framesEncoded = 0
    private var governor: WindowRateGovernor
    /// The bitrate OpenH264's rate control was last given, in bit/s.
    private var steeredBitrate = 0

    /// Creates and configures an encoder for `settings`.
    ///
    /// - Throws: `.invalidSettings` when the settings cannot be encoded; `.backendUnavailable` or
    ///   `.encodeFailed` when OpenH264 refuses to start.
    public convenience init(settings: EncoderSettings) throws(EncoderError) {
        try self.init(settings: settings, content: .camera)
    }

    init(settings: EncoderSettings, content: ContentKind) throws(EncoderError) {
        try settings.validate()
        var created: UnsafeMutablePointer<ISVCEncoder?>?
        let createResult = WelsCreateSVCEncoder(&created)
        guard createResult == 0, let created, let table = created.pointee?.pointee else {
            throw .backendUnavailable(.openh264, "WelsCreateSVCEncoder returned \(createResult)")
        }
        handle = created
        functions = table
        self.settings = settings
        streamFramesPerSecond = settings.framesPerSecond
        threadCount = settings.threads.count(width: settings.width, height: settings.height)
        governor = WindowRateGovernor(target: settings.bitrate, framesPerSecond: settings.framesPerSecond,
                                      correction: threadCount > 1 ? Self.slicedCorrection : 1)
        steeredBitrate = Self.startingBitrate(for: settings.bitrate, threads: threadCount)
        let chromaPlaneSize = (settings.codedWidth / 2) * (settings.codedHeight / 2)
        chromaU = [UInt8](repeating: 128, count: chromaPlaneSize)
        chromaV = [UInt8](repeating: 128, count: chromaPlaneSize)

        do throws(EncoderError) {
            try configure(content: content)
        } catch {
            WelsDestroySVCEncoder(handle)
            throw error
        }
    }

    deinit {
        let retired = RetiredOpenH264Encoder(handle: handle, functions: functions)
        if threadCount > 1 {
            retired.releaseLater()
        } else {
            retired.release()
        }
    }

    private func configure(content: ContentKind) throws(EncoderError) {
        guard let getDefaults = functions.GetDefaultParams, let initialize = functions.InitializeExt,
              let setOption = functions.SetOption else {
            throw .backendUnavailable(.openh264, "the OpenH264 encoder lacks GetDefaultParams, InitializeExt or SetOption")
        }
        var parameters = SEncParamExt()
        try check(getDefaults(handle, &parameters), "GetDefaultParams")

        parameters.iUsageType = content == .camera ? CAMERA_VIDEO_REAL_TIME : SCREEN_CONTENT_REAL_TIME
        // The visible size: OpenH264 pads to whole macroblocks itself and writes the crop into the SPS.
        parameters.iPicWidth = Int32(settings.width)
        parameters.iPicHeight = Int32(settings.height)
        parameters.fMaxFrameRate = Float(settings.framesPerSecond)
        // OpenH264 picks the first IDR's quantiser from the bits per pixel it starts with, and at
        // the target that IDR alone can take more than a second's bits. Started at a tenth, the
        // IDR fits its window; the governor sets the real target from the second picture on.
        parameters.iTargetBitrate = Int32(Self.startingBitrate(for: settings.bitrate, threads: threadCount))
        // CBR: the timestamp mode spends what the time since the last picture buys, and pays
        // back nothing on its own, so the window governor alone decides; the bitrate mode paid
        // back an IDR twice over (800x480, one-second windows at 0.77-0.88x for three seconds
        // after it, against 0.97-1.0x). OpenH264 has no VBR mode with a cap; quality mode with
        // the maximum bitrate capped spends fewer bits on still pictures.
        parameters.iRCMode = settings.rateControl == .cbr ? RC_TIMESTAMP_MODE : RC_QUALITY_MODE
        // The window governor steers the target picture by picture, up to this cap.
        parameters.iMaxBitrate = Int32(Self.cap(for: settings.bitrate))
        // A skipped frame would leave the head unit showing a stale map; the caller paces frames.
        parameters.bEnableFrameSkip = false
        // The whole QP range, so that a picture can always be made to fit its budget: left at
        // OpenH264's default minimum of 0 the range becomes 12...42, and at 1080p and 600 kbit/s
        // every moving picture sat at QP 42 and the stream ran at 1.7x the target. The session
        // lowers frame rate and detail before the quantiser gets that far (StreamQualityLadder).
        parameters.iMinQp = 12
        parameters.iMaxQp = 51
        parameters.uiIntraPeriod = UInt32(settings.idrInterval ?? 0)
        parameters.iMultipleThreadIdc = UInt16(threadCount)
        parameters.iTemporalLayerNum = 1
        parameters.iSpatialLayerNum = 1
        parameters.iNumRefFrame = 1
        parameters.iEntropyCodingModeFlag = 0
        parameters.eSpsPpsIdStrategy = CONSTANT_ID
        parameters.bPrefixNalAddingCtrl = false
        parameters.bEnableSSEI = false
        parameters.iLoopFilterDisableIdc = 0
        parameters.bEnableFrameCroppingFlag = true
        parameters.bEnableLongTermReference = false
        parameters.sSpatialLayers.0.iVideoWidth = Int32(settings.width)
        parameters.sSpatialLayers.0.iVideoHeight = Int32(settings.height)
        parameters.sSpatialLayers.0.fFrameRate = Float(settings.framesPerSecond)
        parameters.sSpatialLayers.0.iSpatialBitrate = Int32(Self.startingBitrate(for: settings.bitrate, threads: threadCount))
        parameters.sSpatialLayers.0.iMaxSpatialBitrate = Int32(Self.cap(for: settings.bitrate))
        parameters.sSpatialLayers.0.uiProfileIdc = PRO_BASELINE
        if threadCount > 1 {
            // One slice per thread, each a fixed band of rows. OpenH264's load balancing (slice
            // edges moved by how long each took) can overrun its slice buffers before the fix
            // of cisco/openh264#3966 (2026), and Debian 12 ships 2.3.1. Several threads share
            // one rate control, so the stream is not the same byte for byte from run to run;
            // `.fixed(1)` is.
            parameters.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_FIXEDSLCNUM_SLICE
            parameters.sSpatialLayers.0.sSliceArgument.uiSliceNum = UInt32(threadCount)
            parameters.bUseLoadBalancing = false
        } else {
            parameters.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_SINGLE_SLICE
        }
        // BT.601 in the range the frames carry; the rewriter keeps this VUI and adds the rest.
        parameters.sSpatialLayers.0.bVideoSignalTypePresent = true
        parameters.sSpatialLayers.0.uiVideoFormat = UInt8(VF_UNDEF.rawValue)
        parameters.sSpatialLayers.0.bFullRange = settings.fullRange
        parameters.sSpatialLayers.0.bColorDescriptionPresent = true
        parameters.sSpatialLayers.0.uiColorPrimaries = UInt8(CP_SMPTE170M.rawValue)
        parameters.sSpatialLayers.0.uiTransferCharacteristics = UInt8(TRC_SMPTE170M.rawValue)
        parameters.sSpatialLayers.0.uiColorMatrix = UInt8(CM_SMPTE170M.rawValue)

        var callback: (@convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void)? = openH264TraceCallback
        try check(setOption(handle, ENCODER_OPTION_TRACE_CALLBACK, &callback), "SetOption(ENCODER_OPTION_TRACE_CALLBACK)")
        var traceLevel = Int32(WELS_LOG_WARNING)
        try check(setOption(handle, ENCODER_OPTION_TRACE_LEVEL, &traceLevel), "SetOption(ENCODER_OPTION_TRACE_LEVEL)")

        try check(initialize(handle, &parameters), "InitializeExt")
        var format = Int32(videoFormatI420.rawValue)
        try check(setOption(handle, ENCODER_OPTION_DATAFORMAT, &format), "SetOption(ENCODER_OPTION_DATAFORMAT)")
    }

    /// Beyond this OpenH264's millisecond time stamps would lose precision.
    static let latestPresentationTime = Duration.seconds(1_000_000_000_000)

    /// Encodes one frame. Only IDR access units carry SPS and PPS, and only they are rewritten.
    public func encode(_ frame: NV12Frame, presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit {
        try checkFits(frame)
        guard presentationTime >= .zero, presentationTime < Self.latestPresentationTime else {
            throw .frameMismatch("presentation time \(presentationTime) must not be negative and below \(Self.latestPresentationTime)")
        }
        guard let encodeFrame = functions.EncodeFrame, let forceIntra = functions.ForceIntraFrame else {
            throw .encodeFailed(.openh264, "the OpenH264 encoder lacks EncodeFrame or ForceIntraFrame")
        }
        let frameNumber = framesEncoded
        framesEncoded += 1
        splitChroma(frame.chroma)

        if forceIDR {
            try check(forceIntra(handle, true), "ForceIntraFrame")
        }
        let seconds = presentationTime.inSeconds
        // The first picture keeps the starting rate: a new target now would set its quantiser anew.
        let budget = governor.budget(at: seconds)
        if frameNumber > 0 { try steer(to: budget) }
        let codedWidth = settings.codedWidth
        let result = frame.luma.withUnsafeBufferPointer { luma in
            chromaU.withUnsafeMutableBufferPointer { u in
                chromaV.withUnsafeMutableBufferPointer { v in
                    var picture = SSourcePicture()
                    picture.iColorFormat = Int32(videoFormatI420.rawValue)
                    picture.iPicWidth = Int32(settings.width)
                    picture.iPicHeight = Int32(settings.height)
                    picture.iStride = (Int32(codedWidth), Int32(codedWidth / 2), Int32(codedWidth / 2), 0)
                    // OpenH264 only reads the source picture; its C type is merely not const.
                    picture.pData = (UnsafeMutablePointer(mutating: luma.baseAddress), u.baseAddress, v.baseAddress, nil)
                    picture.uiTimeStamp = Int64(presentationTime.inMilliseconds.rounded())
                    return encodeFrame(handle, &picture, &bitstreamInfo)
                }
            }
        }
        try check(result, "EncodeFrame")

        switch bitstreamInfo.eFrameType {
        case videoFrameTypeSkip: throw .frameSkipped(frameNumber: frameNumber)
        case videoFrameTypeInvalid: throw .encodeFailed(.openh264, "EncodeFrame returned an invalid frame type for frame \(frameNumber)")
        default: break
        }

        var data = collectNALUnits()
        governor.record(bits: data.count * 8, at: seconds)
        let types = NALUnit.typeMask(in: data)
        func contains(_ type: NALUnitType) -> Bool { types & (1 << UInt32(type.rawValue)) != 0 }
        let isKeyframe = contains(.idrSlice)
        if forceIDR, !isKeyframe { throw .idrNotProduced(frameNumber: frameNumber) }
        if isKeyframe {
            guard contains(.sequenceParameterSet), contains(.pictureParameterSet) else {
                throw .encodeFailed(.openh264, "IDR frame \(frameNumber) came without SPS and PPS")
            }
            do {
                data = try H264StreamRewriter.normalize(data, fullRange: settings.fullRange,
                                                        framesPerSecond: streamFramesPerSecond)
            } catch {
                throw .encodeFailed(.openh264, "H264StreamRewriter.normalize failed on frame \(frameNumber): \(error)")
            }
        }
        // OpenH264 2.3's statistics leave the picture's QP at 0; the session reads the slice
        // header's instead (SkipPictureStream).
        return AccessUnit(data: data, isKeyframe: isKeyframe, presentationTime: presentationTime, frameNumber: frameNumber)
    }

    /// Changes the target from the next picture on: the window governor aims at it, and
    /// OpenH264's cap moves with it.
    public func setBitrate(_ bitsPerSecond: Int) throws(EncoderError) {
        var changed = settings
        changed.bitrate = bitsPerSecond
        try changed.validate()
        guard let setOption = functions.SetOption else {
            throw .encodeFailed(.openh264, "the OpenH264 encoder lacks SetOption")
        }
        let cap = Self.cap(for: bitsPerSecond)
        // OpenH264 refuses a layer target above that layer's cap, and a cap for all layers does
        // not reach the layer's own, so both caps move, before the target when the rate rises.
        let setCaps = { () throws(EncoderError) in
            for layer in [SPATIAL_LAYER_ALL, SPATIAL_LAYER_0] {
                var limit = SBitrateInfo(iLayer: layer, iBitrate: Int32(cap))
                try self.check(setOption(self.handle, ENCODER_OPTION_MAX_BITRATE, &limit), "SetOption(ENCODER_OPTION_MAX_BITRATE)")
            }
        }
        var target = SBitrateInfo(iLayer: SPATIAL_LAYER_ALL, iBitrate: Int32(bitsPerSecond))
        if bitsPerSecond > settings.bitrate { try setCaps() }
        try check(setOption(handle, ENCODER_OPTION_BITRATE, &target), "SetOption(ENCODER_OPTION_BITRATE)")
        if bitsPerSecond <= settings.bitrate { try setCaps() }
        steeredBitrate = bitsPerSecond
        governor.target = bitsPerSecond
        settings = changed
    }

    /// How much of a window's unspent bits the governor gives one picture when pictures are
    /// sliced. Sliced, OpenH264 follows a new target over two or three pictures instead of
    /// steering within the picture, so a budget raised at once is overshot when it catches up.
    /// Measured with `carwindow encode` at 1080p and 3.24 Mbit/s, 20-40 windows a run, windows
    /// within 10% / largest: every bit at once, 80-95% / up to 1.24x the target; half of the
    /// error either way, 85-100% / 1.24x; half up and whole cuts, 92-100% / 1.24x; 0.35 up and
    /// whole cuts (this), 90-98% / at most 1.09x in 5 runs of 2, 4 and 8 threads and 800x480 (the
    /// windows missed were under the target). One thread, every bit at once: 100% / 1.01x.
    static let slicedCorrection = 0.35

    /// The bitrate OpenH264 is initialised with, for the first IDR's quantiser. Sliced, the IDR
    /// comes out larger and the pictures after it shrink only slowly: at 800x480 a third of
    /// the target made the first window 1.4x the target with 2 threads, a sixth 1.04x.
    static func startingBitrate(for bitrate: Int, threads: Int) -> Int { max(bitrate / (threads > 1 ? 6 : 3), 1_000) }

    /// OpenH264's cap for a target: what the governor may ask for one picture, as a rate.
    static func cap(for bitrate: Int) -> Int { Int(Double(bitrate) * WindowRateGovernor.maximumShare) }

    /// Gives OpenH264's rate control the bitrate at which a picture gets `bits`: its bitrate
    /// mode aims each picture at the rate over the frame rate.
    private func steer(to bits: Int) throws(EncoderError) {
        let bitrate = min(max(Int(Double(bits) * settings.framesPerSecond), 1), Self.cap(for: settings.bitrate))
        guard bitrate != steeredBitrate, let setOption = functions.SetOption else { return }
        var target = SBitrateInfo(iLayer: SPATIAL_LAYER_ALL, iBitrate: Int32(bitrate))
        try check(setOption(handle, ENCODER_OPTION_BITRATE, &target), "SetOption(ENCODER_OPTION_BITRATE)")
        steeredBitrate = bitrate
    }

    public func setFrameRate(_ framesPerSecond: Double) throws(EncoderError) {
        var changed = settings
        changed.framesPerSecond = framesPerSecond
        try changed.validate()
        guard let setOption = functions.SetOption else {
            throw .encodeFailed(.openh264, "the OpenH264 encoder lacks SetOption")
        }
        var rate = Float(framesPerSecond)
        try check(setOption(handle, ENCODER_OPTION_FRAME_RATE, &rate), "SetOption(ENCODER_OPTION_FRAME_RATE)")
        governor.framesPerSecond = framesPerSecond
        settings = changed
    }

    /// Returns once every threaded encoder released so far has been shut down, at most about
    /// two seconds from now. A released encoder with worker threads is shut down a second after
    /// its last picture (an OpenH264 2.3 bug makes an earlier shutdown unsafe); call this before
    /// the process exits, after closing its sessions, so that no encoder thread is left running
    /// while the process's libraries are torn down.
    public static func waitForReleasedEncoders() {
        let deadline = DispatchTime.now() + .seconds(2)
        while RetiredOpenH264Encoder.pendingReleases > 0, DispatchTime.now() < deadline {
            usleep(10_000)
        }
    }

    /// OpenH264 returns every picture from the call that took it, so nothing is left.
    public func flush() throws(EncoderError) -> [AccessUnit] { [] }

    private func checkFits(_ frame: NV12Frame) throws(EncoderError) {
        guard frame.width == settings.width, frame.height == settings.height else {
            throw .frameMismatch("frame is \(frame.width)x\(frame.height), the encoder was set up for \(settings.width)x\(settings.height)")
        }
        let lumaSize = settings.codedWidth * settings.codedHeight
        guard frame.codedWidth == settings.codedWidth, frame.codedHeight == settings.codedHeight,
              frame.luma.count >= lumaSize, frame.chroma.count >= lumaSize / 2 else {
            throw .frameMismatch("frame planes hold \(frame.luma.count) luma and \(frame.chroma.count) chroma bytes, \(lumaSize) and \(lumaSize / 2) are needed")
        }
        guard frame.fullRange == settings.fullRange else {
            throw .frameMismatch("frame is \(frame.fullRange ? "full" : "limited") range, the stream is set up as \(settings.fullRange ? "full" : "limited") range")
        }
    }

    /// NV12's interleaved Cb, Cr pairs into OpenH264's separate planes.
    private func splitChroma(_ interleaved: [UInt8]) {
        let count = chromaU.count
        interleaved.withUnsafeBufferPointer { source in
            chromaU.withUnsafeMutableBufferPointer { u in
                chromaV.withUnsafeMutableBufferPointer { v in
                    for index in 0..<count {
                        u[index] = source[2 * index]
                        v[index] = source[2 * index + 1]
                    }
                }
            }
        }
    }

    /// Joins the layers' Annex-B NAL units into one access unit, allocating exactly its size once.
    private func collectNALUnits() -> [UInt8] {
        let reportedLayers = Int(bitstreamInfo.iLayerNum)
        return withUnsafeBytes(of: &bitstreamInfo.sLayerInfo) { raw in
            let layers = raw.bindMemory(to: SLayerBSInfo.self)
            let layerCount = min(max(reportedLayers, 0), layers.count)
            let total = layers.prefix(layerCount).reduce(0) { $0 + Self.byteCount(of: $1) }
            return [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
                var offset = 0
                for layer in layers.prefix(layerCount) {
                    let size = Self.byteCount(of: layer)
                    guard size > 0, let source = layer.pBsBuf, let destination = buffer.baseAddress else { continue }
                    (destination + offset).initialize(from: source, count: size)
                    offset += size
                }
                initialized = offset
            }
        }
    }

    private static func byteCount(of layer: SLayerBSInfo) -> Int {
        guard let lengths = layer.pNalLengthInByte else { return 0 }
        var size = 0
        for nal in 0..<max(Int(layer.iNalCount), 0) { size += Int(lengths[nal]) }
        return size
    }

    private func check(_ result: Int32, _ call: String) throws(EncoderError) {
        guard result != 0 else { return }
        throw .encodeFailed(.openh264, "\(call) returned \(result) (\(Self.resultName(result)))")
    }

    /// OpenH264's CM_RETURN names, so a failure says more than a number.
    static func resultName(_ code: Int32) -> String {
        switch UInt32(truncatingIfNeeded: code) {
        case cmResultSuccess.rawValue: "cmResultSuccess"
        case cmInitParaError.rawValue: "cmInitParaError: a parameter is invalid"
        case cmUnknownReason.rawValue: "cmUnknownReason"
        case cmMallocMemeError.rawValue: "cmMallocMemeError: out of memory"
        case cmInitExpected.rawValue: "cmInitExpected: the encoder is not initialised"
        case cmUnsupportedData.rawValue: "cmUnsupportedData: the input format is not supported"
        default: "unknown OpenH264 result"
        }
    }
}

/// An OpenH264 encoder no longer used, released at once or, with worker threads, later.
///
/// OpenH264 2.3's threaded encoder frees its task manager in `Uninitialize` while the pool
/// thread that finished the picture's last slice may still be about to unlock that manager's
/// mutex: the thread sets the "slices done" event, which returns `EncodeFrame`, and unlocks
/// afterwards (`CWelsTaskManageBase::OnTaskMinusOne`). An encoder released right after its last
/// picture, by a preempted pool thread, then gets a write into freed memory.
/// `scripts/openh264-release-race.sh` shows it under valgrind (create, two pictures, release, on
/// four threads: "Invalid read of size 4 at pthread_mutex_unlock" in a block freed by
/// `ReleaseMtResource`), and nothing with a grace period. It fits the rare heap corruption seen
/// in the parallel test run since sessions got encoder threads.
///
/// Ownership passes here from the encoder's deinit, and nothing else touches the handle after
/// it: sending it to the release queue is safe.
struct RetiredOpenH264Encoder: @unchecked Sendable {
    let handle: UnsafeMutablePointer<ISVCEncoder?>
    let functions: ISVCEncoderVtbl

    /// How long a threaded encoder outlives its last picture.
    static let gracePeriod = DispatchTimeInterval.seconds(1)
    private static let queue = DispatchQueue(label: "carwindow.encoder.openh264.release")
    private static let waiting = LockedState(0)

    /// Threaded encoders released but not yet uninitialised; a census waits for none.
    package static var pendingReleases: Int { waiting.withLock { $0 } }

    func release() {
        _ = functions.Uninitialize?(handle)
        WelsDestroySVCEncoder(handle)
    }

    func releaseLater() {
        Self.waiting.withLock { $0 += 1 }
        Self.queue.asyncAfter(deadline: .now() + Self.gracePeriod) {
            release()
            Self.waiting.withLock { $0 -= 1 }
        }
    }
}

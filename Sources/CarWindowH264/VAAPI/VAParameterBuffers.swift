internal import CVA
import CarWindowVideoCore

/// Byte layouts of VA-API parameter buffers that C declares with a flexible array member
/// (`VAEncMiscParameterBuffer { type; data[] }`), which Swift cannot express.
enum VAMiscParameter {
    /// Where `data[]` starts: right after the 4-byte type, since the payloads are 4-byte aligned.
    static let payloadOffset = MemoryLayout<VAEncMiscParameterBuffer>.size

    /// One misc parameter buffer: the type followed by the payload struct, as libva reads it.
    static func pack<Payload>(_ type: VAEncMiscParameterType, _ payload: Payload) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: payloadOffset + MemoryLayout<Payload>.size)
        var header = VAEncMiscParameterBuffer()
        header.type = type
        bytes.withUnsafeMutableBytes { raw in
            withUnsafeBytes(of: &header) { raw.copyMemory(from: $0) }
            withUnsafeBytes(of: payload) { source in
                UnsafeMutableRawBufferPointer(rebasing: raw[payloadOffset...]).copyMemory(from: source)
            }
        }
        return bytes
    }
}

/// Rate-control numbers shared by the sequence and misc buffers, derived from the settings.
struct VARateControlPlan: Sendable, Equatable {
    /// `VA_RC_CBR` or `VA_RC_VBR`.
    var mode: UInt32
    var bitsPerSecond: UInt32
    /// Average as a percentage of `bitsPerSecond` (the cap) in VBR; 100 in CBR.
    var targetPercentage: UInt32
    /// The rate-control window: about one frame, in milliseconds.
    var windowMilliseconds: UInt32
    /// VBV size: about one frame of bits, so bursts stay small.
    var bufferBits: UInt32
    /// `framerate` of `VAEncMiscParameterFrameRate`: denominator << 16 | numerator.
    var packedFrameRate: UInt32

    /// The plan for `settings` on a driver offering `supportedModes` (a `VA_RC_*` mask).
    ///
    /// Intel's drivers hold a one-frame VBV better in VBR than in CBR, so CBR requests become
    /// VBR capped at the target with a 100 % average there; VBR requests average 80 % of the
    /// cap to leave room for the bursts of a moving map.
    static func make(settings: EncoderSettings, supportedModes: UInt32, preferVBR: Bool) -> VARateControlPlan? {
        let cbr = UInt32(VA_RC_CBR), vbr = UInt32(VA_RC_VBR)
        let wantsVBR = settings.rateControl == .vbr || preferVBR
        let mode: UInt32
        if wantsVBR, supportedModes & vbr != 0 {
            mode = vbr
        } else if supportedModes & cbr != 0 {
            mode = cbr
        } else if supportedModes & vbr != 0 {
            mode = vbr
        } else {
            return nil
        }
        let bitrate = UInt32(clamping: settings.bitrate)
        let fps = settings.framesPerSecond
        let percentage: UInt32 = mode == vbr && settings.rateControl == .vbr ? 80 : 100
        return VARateControlPlan(
            mode: mode, bitsPerSecond: bitrate, targetPercentage: percentage,
            windowMilliseconds: UInt32(max(1, (1000 / fps).rounded())),
            bufferBits: UInt32(max(1, (Double(bitrate) / fps).rounded())),
            packedFrameRate: packFrameRate(fps))
    }

    /// Packs a rate into 16-bit numerator and denominator: thousandths where they fit
    /// (up to 65.535 fps), else hundredths.
    static func packFrameRate(_ fps: Double) -> UInt32 {
        let denominator: UInt32 = fps * 1000 <= 65_535 ? 1000 : 100
        let numerator = UInt32(max(1, min(65_535, (fps * Double(denominator)).rounded())))
        return denominator << 16 | numerator
    }

    var rateControlBuffer: [UInt8] {
        var payload = VAEncMiscParameterRateControl()
        payload.bits_per_second = bitsPerSecond
        payload.target_percentage = targetPercentage
        payload.window_size = windowMilliseconds
        payload.initial_qp = 26
        payload.min_qp = 10
        payload.max_qp = 51
        // Frames must never be dropped: the pipeline sends only what changed.
        payload.rc_flags.bits.disable_frame_skip = 1
        return VAMiscParameter.pack(VAEncMiscParameterTypeRateControl, payload)
    }

    var frameRateBuffer: [UInt8] {
        var payload = VAEncMiscParameterFrameRate()
        payload.framerate = packedFrameRate
        return VAMiscParameter.pack(VAEncMiscParameterTypeFrameRate, payload)
    }

    var hrdBuffer: [UInt8] {
        var payload = VAEncMiscParameterHRD()
        payload.buffer_size = bufferBits
        payload.initial_buffer_fullness = bufferBits
        return VAMiscParameter.pack(VAEncMiscParameterTypeHRD, payload)
    }
}

/// Copies an `NV12Frame` into a mapped VA image whose planes sit at driver-chosen offsets and
/// pitches (`VAImage.offsets`, `.pitches`).
struct NV12ImageLayout: Sendable, Equatable {
    var lumaOffset: Int
    var lumaPitch: Int
    var chromaOffset: Int
    var chromaPitch: Int
    /// Bytes mapped (`VAImage.data_size`).
    var totalBytes: Int

    /// Checks the layout can hold `width` x `rows` samples per plane, then copies row by row.
    func copy(_ frame: NV12Frame, into destination: UnsafeMutableRawBufferPointer) throws(EncoderError) {
        let width = frame.codedWidth, rows = frame.codedHeight, chromaRows = frame.codedHeight / 2
        guard frame.luma.count >= width * rows, frame.chroma.count >= width * chromaRows else {
            throw .frameMismatch("planes hold \(frame.luma.count) + \(frame.chroma.count) bytes, \(width)x\(rows) NV12 needs \(width * rows) + \(width * chromaRows)")
        }
        guard lumaPitch >= width, chromaPitch >= width, lumaOffset >= 0, chromaOffset >= 0,
              lumaOffset + lumaPitch * (rows - 1) + width <= min(totalBytes, destination.count),
              chromaOffset + chromaPitch * (chromaRows - 1) + width <= min(totalBytes, destination.count) else {
            throw .encodeFailed(.vaapi, "the driver's NV12 image (offsets \(lumaOffset), \(chromaOffset), pitches \(lumaPitch), \(chromaPitch), \(totalBytes) bytes) cannot hold \(width)x\(rows)")
        }
        guard let base = destination.baseAddress else { return }
        frame.luma.withUnsafeBytes { source in
            guard let samples = source.baseAddress else { return }
            for row in 0..<rows {
                (base + lumaOffset + row * lumaPitch).copyMemory(from: samples + row * width, byteCount: width)
            }
        }
        frame.chroma.withUnsafeBytes { source in
            guard let samples = source.baseAddress else { return }
            for row in 0..<chromaRows {
                (base + chromaOffset + row * chromaPitch).copyMemory(from: samples + row * width, byteCount: width)
            }
        }
    }
}

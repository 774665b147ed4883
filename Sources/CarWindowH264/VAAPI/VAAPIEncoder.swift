internal import CVA
import Foundation
import Logging
import CarWindowVideoCore

/// H.264 encoding on the GPU through VA-API (Intel iHD/i965, AMD/Mesa radeonsi).
///
/// Constrained baseline, CAVLC, P pictures predicting from the previous one only, so every
/// frame comes out at once. One input surface receives the NV12 frame (uploaded, or rendered
/// into by GL after `exportInputSurfaceForGL()`); two reconstruction surfaces take turns as the
/// picture being coded and its reference.
///
/// Headers: where the driver takes packed headers (Intel), the SPS and PPS are the project's
/// own (VUI with `max_num_reorder_frames` 0 and `max_dec_frame_buffering` 1) and so is the
/// slice header if allowed. Where it takes none (Mesa), the driver writes its own SPS/PPS in
/// front of every IDR from the sequence parameters sent here; the encoder checks that they are
/// there and fails the frame otherwise instead of prepending headers that might disagree with
/// the driver's slice headers.
///
/// - Important: Not thread-safe: one pipeline stage owns it.
public final class VAAPIEncoder: VideoEncoder, ZeroCopyEncoderInput {
    /// Always ``EncoderBackend/vaapi``.
    public let backend = EncoderBackend.vaapi
    /// The settings in use, bitrate and frame rate changes included.
    public private(set) var settings: EncoderSettings
    /// What the device offered when the encoder was set up.
    public let capabilities: VAAPICapabilities
    /// Headers this encoder writes itself (a subset of what the driver allows).
    public let writtenHeaders: VAAPIPackedHeaders
    /// The entrypoint in use.
    public let entrypoint: VAAPIEntrypoint

    /// The environment variable that names the device to open instead of the first
    /// `/dev/dri/renderD*`: another render node, or any file a driver named by
    /// `LIBVA_DRIVER_NAME` accepts (the test driver of `scripts/va-test-driver.sh` takes
    /// `/dev/null`, since it needs no device).
    public static let deviceEnvironmentVariable = "CARWINDOW_VAAPI_DEVICE"

    private static let logger = Logger(label: "carwindow.vaapi")
    /// How long one picture may take before the GPU is considered hung.
    private static let syncTimeoutNanoseconds: UInt64 = 2_000_000_000

    private let connection: VADisplayConnection
    private var display: VADisplay { connection.display }
    private var configID = VAConfigID(VA_INVALID_ID)
    private var contextID = VAContextID(VA_INVALID_ID)
    private var surfaces: [VASurfaceID] = []
    private var codedBufferID = VABufferID(VA_INVALID_ID)
    /// An image of our own for drivers that cannot derive one from the surface.
    private var uploadImage: VAImage?
    private let codedBufferSize: Int
    private var rateControl: VARateControlPlan
    private let headers: VAAPIHeaderBridge
    private var gop: LowDelayGOP
    private var rateControlChanged = false
    private var useSyncBuffer: Bool
    private var deriveImageWorks = true
    private var framesEncoded = 0
    private var coded: [UInt8] = []
    /// The mean QP the driver reported for the last picture read, if it reports one.
    private var lastQuantizer: Int?
    private var pictureBuffers: [VABufferID] = []

    private var inputSurface: VASurfaceID { surfaces[0] }
    private func reconstructionSurface(_ slot: Int) -> VASurfaceID { surfaces[1 + slot] }

    /// Opens a render node (the given one, or the first `/dev/dri/renderD*` that initialises)
    /// and sets up an encoder for `settings`.
    ///
    /// - Throws: `invalidSettings` for unencodable settings; `backendUnavailable` when there is
    ///   no device, no H.264 encode entrypoint, no 4:2:0 or CBR/VBR support, or a VA call fails.
    public init(settings: EncoderSettings, renderNode: String? = nil) throws(EncoderError) {
        try settings.validate()
        let connection = try VADisplayConnection.open(renderNode: renderNode)
        let capabilities: VAAPICapabilities
        let query: VAConfigQuery?
        do {
            (capabilities, query) = try connection.capabilities()
        } catch {
            throw error.duringSetup
        }
        guard let entrypoint = capabilities.preferredEntrypoint, let query else {
            throw .backendUnavailable(.vaapi, "\(connection.renderNode) (\(capabilities.driverVendor)) has no H.264 constrained-baseline encode entrypoint")
        }
        guard capabilities.supportsYUV420 else {
            throw .backendUnavailable(.vaapi, "\(capabilities.driverVendor) cannot encode 4:2:0 surfaces")
        }
        let isIntel = capabilities.driverVendor.localizedCaseInsensitiveContains("intel")
        guard let plan = VARateControlPlan.make(settings: settings, supportedModes: query.rateControl ?? 0, preferVBR: isIntel) else {
            throw .backendUnavailable(.vaapi, "\(capabilities.driverVendor) offers neither CBR nor VBR rate control (only \(capabilities.rateControlModes.map(\.rawValue)))")
        }
        if let references = capabilities.maxReferenceFrames, references.list0 < 1 {
            throw .backendUnavailable(.vaapi, "\(capabilities.driverVendor) allows no reference picture for P frames")
        }
        self.settings = settings
        self.capabilities = capabilities
        self.connection = connection
        self.entrypoint = entrypoint
        rateControl = plan
        headers = VAAPIHeaderBridge(settings: settings)
        gop = LowDelayGOP(idrInterval: settings.idrInterval, log2MaxFrameNum: headers.log2MaxFrameNum)
        // Write SPS and PPS ourselves only when both are allowed; the slice header only on top of those.
        var written: VAAPIPackedHeaders = []
        if capabilities.packedHeaders.isSuperset(of: [.sequence, .picture]) {
            written = [.sequence, .picture]
            if capabilities.packedHeaders.contains(.slice) { written.insert(.slice) }
        }
        writtenHeaders = written
        useSyncBuffer = connection.apiVersion >= (1, 9)
        // Worst case of an I picture is about 1.5 bytes a pixel (raw PCM macroblocks) plus headers.
        codedBufferSize = settings.codedWidth * settings.codedHeight * 3 / 2 + 64 * 1024
        coded.reserveCapacity(codedBufferSize)

        // From here on deinit releases whatever was created, also when a step throws.
        do {
            try createPipeline(query: query)
        } catch {
            throw error.duringSetup
        }
        Self.logger.info("VA-API encoder on \(connection.renderNode) (\(capabilities.driverVendor)), \(entrypoint.rawValue), \(plan.mode == UInt32(VA_RC_VBR) ? "VBR" : "CBR"), writes headers: \(written)")
    }

    deinit {
        if let uploadImage { vaDestroyImage(display, uploadImage.image_id) }
        destroyPictureBuffers()
        if codedBufferID != VABufferID(VA_INVALID_ID) { vaDestroyBuffer(display, codedBufferID) }
        if contextID != VAContextID(VA_INVALID_ID) { vaDestroyContext(display, contextID) }
        if !surfaces.isEmpty { vaDestroySurfaces(display, &surfaces, Int32(surfaces.count)) }
        if configID != VAConfigID(VA_INVALID_ID) { vaDestroyConfig(display, configID) }
        // `connection` terminates the display and closes the node after this.
    }

    private func createPipeline(query: VAConfigQuery) throws(VAStatusError) {
        var attributes = [
            VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420)),
            VAConfigAttrib(type: VAConfigAttribRateControl, value: rateControl.mode),
        ]
        if query.packedHeaders != nil {
            attributes.append(VAConfigAttrib(type: VAConfigAttribEncPackedHeaders, value: writtenHeaders.rawValue))
        }
        try VAStatusError.check(vaCreateConfig(display, VAProfileH264ConstrainedBaseline, entrypoint.raw,
                                               &attributes, Int32(attributes.count), &configID), "vaCreateConfig")

        var format = VASurfaceAttrib()
        format.type = VASurfaceAttribPixelFormat
        format.flags = UInt32(VA_SURFACE_ATTRIB_SETTABLE)
        format.value.type = VAGenericValueTypeInteger
        format.value.value.i = Int32(bitPattern: VAFourCC.nv12)
        var created = [VASurfaceID](repeating: VASurfaceID(VA_INVALID_ID), count: 3)
        try VAStatusError.check(vaCreateSurfaces(display, UInt32(VA_RT_FORMAT_YUV420), UInt32(settings.codedWidth),
                                                 UInt32(settings.codedHeight), &created, UInt32(created.count), &format, 1),
                                "vaCreateSurfaces")
        surfaces = created

        try VAStatusError.check(vaCreateContext(display, configID, Int32(settings.codedWidth), Int32(settings.codedHeight),
                                                Int32(VA_PROGRESSIVE), &surfaces, Int32(surfaces.count), &contextID),
                                "vaCreateContext")
        try VAStatusError.check(vaCreateBuffer(display, contextID, VAEncCodedBufferType, UInt32(codedBufferSize), 1, nil,
                                               &codedBufferID), "vaCreateBuffer(coded)")
    }

    // MARK: - VideoEncoder

    public func encode(_ frame: NV12Frame, presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit {
        guard frame.width == settings.width, frame.height == settings.height,
              frame.codedWidth == settings.codedWidth, frame.codedHeight == settings.codedHeight else {
            throw .frameMismatch("frame is \(frame.width)x\(frame.height), the encoder was set up for \(settings.width)x\(settings.height)")
        }
        try upload(frame)
        return try encodeInputSurface(presentationTime: presentationTime, forceIDR: forceIDR)
    }

    /// Itself: its input surface can be exported for the renderer to draw into.
    public var zeroCopyInput: (any ZeroCopyEncoderInput)? { self }

    /// Encodes what GL rendered into the surface from `exportInputSurfaceForGL()`; nothing is
    /// uploaded. The renderer must have flushed (glFlush) its writes before this call.
    public func encodeExportedSurface(presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit {
        try encodeInputSurface(presentationTime: presentationTime, forceIDR: forceIDR)
    }

    public func setBitrate(_ bitsPerSecond: Int) throws(EncoderError) {
        var changed = settings
        changed.bitrate = bitsPerSecond
        try applyRateSettings(changed)
    }

    public func setFrameRate(_ framesPerSecond: Double) throws(EncoderError) {
        var changed = settings
        changed.framesPerSecond = framesPerSecond
        try applyRateSettings(changed)
    }

    public func flush() throws(EncoderError) -> [AccessUnit] { [] }

    private func applyRateSettings(_ changed: EncoderSettings) throws(EncoderError) {
        try changed.validate()
        let supported = rateControl.mode
        guard let plan = VARateControlPlan.make(settings: changed, supportedModes: supported, preferVBR: supported == UInt32(VA_RC_VBR)) else {
            throw .invalidSettings("rate control cannot change mode after set-up")
        }
        settings = changed
        rateControl = plan
        rateControlChanged = true
    }

    // MARK: - Zero copy

    /// Exports the input surface as DMA-BUF planes (Y as R8, UV as GR88) for GL to render into.
    ///
    /// The caller owns the returned file descriptors and closes them (`DMABufPlanes.closeFileDescriptors()`)
    /// once EGL has imported them; the surface itself stays the encoder's.
    public func exportInputSurfaceForGL() throws(EncoderError) -> DMABufPlanes {
        var descriptor = VADRMPRIMESurfaceDescriptor()
        let status = vaExportSurfaceHandle(display, inputSurface, UInt32(VA_SURFACE_ATTRIB_MEM_TYPE_DRM_PRIME_2),
                                           UInt32(VA_EXPORT_SURFACE_WRITE_ONLY | VA_EXPORT_SURFACE_SEPARATE_LAYERS),
                                           &descriptor)
        guard status == VA_STATUS_SUCCESS else {
            throw .backendUnavailable(.vaapi, VAStatusError(function: "vaExportSurfaceHandle", status: status).description)
        }
        return try DMABufPlanes(descriptor: descriptor)
    }

    // MARK: - Per frame

    private func upload(_ frame: NV12Frame) throws(EncoderError) {
        if deriveImageWorks {
            var image = VAImage()
            let status = vaDeriveImage(display, inputSurface, &image)
            if status == VA_STATUS_SUCCESS {
                defer { vaDestroyImage(display, image.image_id) }
                try copy(frame, into: image)
                return
            }
            // Tiled or compressed surfaces cannot be mapped directly; use an image and vaPutImage.
            Self.logger.info("vaDeriveImage unavailable (\(VAStatusError(function: "vaDeriveImage", status: status).symbolicName)); uploading through vaPutImage")
            deriveImageWorks = false
        }
        let image = try ownUploadImage()
        try copy(frame, into: image)
        let width = UInt32(settings.codedWidth), height = UInt32(settings.codedHeight)
        do {
            try VAStatusError.check(vaPutImage(display, inputSurface, image.image_id, 0, 0, width, height, 0, 0, width, height),
                                    "vaPutImage")
        } catch {
            throw error.duringEncoding
        }
    }

    private func ownUploadImage() throws(EncoderError) -> VAImage {
        if let uploadImage { return uploadImage }
        var format = VAImageFormat()
        format.fourcc = VAFourCC.nv12
        format.byte_order = UInt32(VA_LSB_FIRST)
        format.bits_per_pixel = 12
        var image = VAImage()
        let status = vaCreateImage(display, &format, Int32(settings.codedWidth), Int32(settings.codedHeight), &image)
        guard status == VA_STATUS_SUCCESS else {
            throw VAStatusError(function: "vaCreateImage", status: status).duringEncoding
        }
        uploadImage = image
        return image
    }

    private func copy(_ frame: NV12Frame, into image: VAImage) throws(EncoderError) {
        guard image.format.fourcc == VAFourCC.nv12, image.num_planes >= 2 else {
            throw .encodeFailed(.vaapi, "the driver's image is fourcc 0x\(String(image.format.fourcc, radix: 16)) with \(image.num_planes) planes, not NV12")
        }
        var mapped: UnsafeMutableRawPointer?
        let status = vaMapBuffer(display, image.buf, &mapped)
        guard status == VA_STATUS_SUCCESS, let mapped else {
            throw VAStatusError(function: "vaMapBuffer(image)", status: status).duringEncoding
        }
        defer { vaUnmapBuffer(display, image.buf) }
        let layout = NV12ImageLayout(lumaOffset: Int(image.offsets.0), lumaPitch: Int(image.pitches.0),
                                     chromaOffset: Int(image.offsets.1), chromaPitch: Int(image.pitches.1),
                                     totalBytes: Int(image.data_size))
        try layout.copy(frame, into: UnsafeMutableRawBufferPointer(start: mapped, count: Int(image.data_size)))
    }

    private func encodeInputSurface(presentationTime: Duration, forceIDR: Bool) throws(EncoderError) -> AccessUnit {
        let frameNumber = framesEncoded
        let picture = gop.next(forceIDR: forceIDR)
        do {
            try codePicture(picture)
        } catch {
            destroyPictureBuffers()
            gop.restartAfterFailure()
            throw error.duringEncoding
        }
        framesEncoded += 1
        let data: [UInt8]
        do {
            data = try readCodedBuffer()
        } catch {
            gop.restartAfterFailure()
            throw error
        }
        let types = NALUnit.types(in: data)
        guard types.contains(NALUnitType.idrSlice.rawValue) || types.contains(NALUnitType.slice.rawValue) else {
            gop.restartAfterFailure()
            throw .frameSkipped(frameNumber: frameNumber)
        }
        let isKeyframe = types.contains(NALUnitType.idrSlice.rawValue)
        if picture.isIDR {
            guard isKeyframe else {
                gop.restartAfterFailure()
                throw .idrNotProduced(frameNumber: frameNumber)
            }
            guard let sps = types.firstIndex(of: NALUnitType.sequenceParameterSet.rawValue),
                  let idr = types.firstIndex(of: NALUnitType.idrSlice.rawValue), sps < idr,
                  types.contains(NALUnitType.pictureParameterSet.rawValue) else {
                gop.restartAfterFailure()
                throw .encodeFailed(.vaapi, "\(capabilities.driverVendor) wrote an IDR without SPS and PPS in front (NAL types \(types)); this driver cannot be used, choose the openh264 backend")
            }
        }
        return AccessUnit(data: data, isKeyframe: isKeyframe, presentationTime: presentationTime, frameNumber: frameNumber,
                          quantizer: lastQuantizer)
    }

    private func codePicture(_ picture: LowDelayGOP.Picture) throws(VAStatusError) {
        try VAStatusError.check(vaBeginPicture(display, contextID, inputSurface), "vaBeginPicture")
        // A sequence buffer starts a new sequence on some drivers, so it goes with IDRs only;
        // bitrate and frame-rate changes travel in misc buffers on any picture.
        if picture.isIDR {
            try addBuffer(VAEncSequenceParameterBufferType, sequenceParameters(), "sequence parameters")
        }
        if picture.isIDR || rateControlChanged {
            try addRawBuffer(VAEncMiscParameterBufferType, rateControl.rateControlBuffer, "rate-control parameters")
            try addRawBuffer(VAEncMiscParameterBufferType, rateControl.frameRateBuffer, "frame-rate parameters")
            try addRawBuffer(VAEncMiscParameterBufferType, rateControl.hrdBuffer, "HRD parameters")
            rateControlChanged = false
        }
        if picture.isIDR, writtenHeaders.contains(.sequence) {
            try addPackedHeader(VAEncPackedHeaderSequence, bytes: headers.sequenceNAL, bitLength: headers.sequenceNAL.count * 8)
            try addPackedHeader(VAEncPackedHeaderPicture, bytes: headers.pictureNAL, bitLength: headers.pictureNAL.count * 8)
        }
        try addBuffer(VAEncPictureParameterBufferType, pictureParameters(picture), "picture parameters")
        if writtenHeaders.contains(.slice) {
            let slice = headers.sliceHeader(for: picture)
            try addPackedHeader(VAEncPackedHeaderSlice, bytes: slice.bytes, bitLength: slice.bitLength, escaped: false)
        }
        try addBuffer(VAEncSliceParameterBufferType, sliceParameters(picture), "slice parameters")
        let rendered = vaRenderPicture(display, contextID, &pictureBuffers, Int32(pictureBuffers.count))
        // vaEndPicture must follow vaBeginPicture even when rendering failed, or the context stays busy.
        let ended = vaEndPicture(display, contextID)
        destroyPictureBuffers()
        try VAStatusError.check(rendered, "vaRenderPicture")
        try VAStatusError.check(ended, "vaEndPicture")
    }

    private func readCodedBuffer() throws(EncoderError) -> [UInt8] {
        do {
            try waitForCodedBuffer()
        } catch {
            throw error.duringEncoding
        }
        var mapped: UnsafeMutableRawPointer?
        let status = vaMapBuffer(display, codedBufferID, &mapped)
        guard status == VA_STATUS_SUCCESS else {
            throw VAStatusError(function: "vaMapBuffer(coded)", status: status).duringEncoding
        }
        defer { vaUnmapBuffer(display, codedBufferID) }
        coded.removeAll(keepingCapacity: true)
        do {
            try VACodedSegments.append(from: UnsafeRawPointer(mapped), into: &coded, limit: codedBufferSize)
            lastQuantizer = VACodedSegments.quantizer(from: UnsafeRawPointer(mapped))
        } catch {
            throw .encodeFailed(.vaapi, error.description)
        }
        return coded
    }

    private func waitForCodedBuffer() throws(VAStatusError) {
        if useSyncBuffer {
            let status = vaSyncBuffer(display, codedBufferID, Self.syncTimeoutNanoseconds)
            if status != VA_STATUS_ERROR_UNIMPLEMENTED {
                try VAStatusError.check(status, "vaSyncBuffer")
                return
            }
            useSyncBuffer = false
        }
        try VAStatusError.check(vaSyncSurface(display, inputSurface), "vaSyncSurface")
    }

    // MARK: - Parameter buffers

    private func addBuffer<Parameters>(_ type: VABufferType, _ value: Parameters, _ what: String) throws(VAStatusError) {
        var value = value
        var id = VABufferID(VA_INVALID_ID)
        let status = withUnsafeMutableBytes(of: &value) {
            vaCreateBuffer(display, contextID, type, UInt32($0.count), 1, $0.baseAddress, &id)
        }
        try VAStatusError.check(status, "vaCreateBuffer(\(what))")
        pictureBuffers.append(id)
    }

    private func addRawBuffer(_ type: VABufferType, _ bytes: [UInt8], _ what: String) throws(VAStatusError) {
        var bytes = bytes
        var id = VABufferID(VA_INVALID_ID)
        let status = bytes.withUnsafeMutableBytes {
            vaCreateBuffer(display, contextID, type, UInt32($0.count), 1, $0.baseAddress, &id)
        }
        try VAStatusError.check(status, "vaCreateBuffer(\(what))")
        pictureBuffers.append(id)
    }

    /// `escaped`: whether `bytes` already carry emulation-prevention bytes (our SPS and PPS do;
    /// a packed slice header does not, and the driver escapes it with the slice data).
    private func addPackedHeader(_ type: VAEncPackedHeaderType, bytes: [UInt8], bitLength: Int,
                                 escaped: Bool = true) throws(VAStatusError) {
        var parameters = VAEncPackedHeaderParameterBuffer()
        parameters.type = type.rawValue
        parameters.bit_length = UInt32(bitLength)
        parameters.has_emulation_bytes = escaped ? 1 : 0
        try addBuffer(VAEncPackedHeaderParameterBufferType, parameters, "packed header parameters")
        try addRawBuffer(VAEncPackedHeaderDataBufferType, bytes, "packed header data")
    }

    private func destroyPictureBuffers() {
        for id in pictureBuffers { vaDestroyBuffer(display, id) }
        pictureBuffers.removeAll(keepingCapacity: true)
    }

    private var widthInMacroblocks: Int { settings.codedWidth / 16 }
    private var heightInMacroblocks: Int { settings.codedHeight / 16 }

    private func sequenceParameters() -> VAEncSequenceParameterBufferH264 {
        var sequence = VAEncSequenceParameterBufferH264()
        sequence.seq_parameter_set_id = 0
        sequence.level_idc = headers.levelIdc
        sequence.intra_period = UInt32(clamping: settings.idrInterval ?? 0)
        sequence.intra_idr_period = UInt32(clamping: settings.idrInterval ?? 0)
        sequence.ip_period = 1
        sequence.bits_per_second = rateControl.bitsPerSecond
        sequence.max_num_ref_frames = 1
        sequence.picture_width_in_mbs = UInt16(widthInMacroblocks)
        sequence.picture_height_in_mbs = UInt16(heightInMacroblocks)
        sequence.seq_fields.bits.chroma_format_idc = 1
        sequence.seq_fields.bits.frame_mbs_only_flag = 1
        sequence.seq_fields.bits.direct_8x8_inference_flag = 1
        sequence.seq_fields.bits.log2_max_frame_num_minus4 = UInt32(headers.log2MaxFrameNum - 4)
        sequence.seq_fields.bits.pic_order_cnt_type = 2
        let cropRight = settings.codedWidth - settings.width, cropBottom = settings.codedHeight - settings.height
        if cropRight > 0 || cropBottom > 0 {
            // Crop offsets count chroma samples: two luma samples each in 4:2:0.
            sequence.frame_cropping_flag = 1
            sequence.frame_crop_right_offset = UInt32(cropRight / 2)
            sequence.frame_crop_bottom_offset = UInt32(cropBottom / 2)
        }
        sequence.vui_parameters_present_flag = 1
        sequence.vui_fields.bits.timing_info_present_flag = 1
        sequence.vui_fields.bits.bitstream_restriction_flag = 1
        sequence.vui_fields.bits.log2_max_mv_length_horizontal = 15
        sequence.vui_fields.bits.log2_max_mv_length_vertical = 15
        sequence.vui_fields.bits.motion_vectors_over_pic_boundaries_flag = 1
        // Two ticks a frame, as H.264 counts fields.
        sequence.num_units_in_tick = 1000
        // The rate the stream was opened at, as the packed SPS says: not the rate control's
        // current one (keep-alives, a lowered quality), or a player timing a raw stream by its
        // SPS would change pace at every IDR.
        sequence.time_scale = UInt32((headers.framesPerSecond * 2000).rounded())
        return sequence
    }

    private func pictureParameters(_ picture: LowDelayGOP.Picture) -> VAEncPictureParameterBufferH264 {
        var parameters = VAEncPictureParameterBufferH264()
        parameters.CurrPic = VAPictureH264.make(surface: reconstructionSurface(picture.reconstructionSlot),
                                                frameNum: picture.frameNum, order: picture.pictureOrderCount, flags: 0)
        VAPictureH264.fillInvalid(&parameters.ReferenceFrames)
        if let reference = picture.reference {
            withUnsafeMutableBytes(of: &parameters.ReferenceFrames) { raw in
                raw.storeBytes(of: VAPictureH264.make(surface: reconstructionSurface(reference.slot), frameNum: reference.frameNum,
                                                      order: reference.pictureOrderCount,
                                                      flags: UInt32(VA_PICTURE_H264_SHORT_TERM_REFERENCE)),
                               as: VAPictureH264.self)
            }
        }
        parameters.coded_buf = codedBufferID
        parameters.pic_parameter_set_id = 0
        parameters.seq_parameter_set_id = 0
        parameters.frame_num = UInt16(truncatingIfNeeded: picture.frameNum)
        parameters.pic_init_qp = 26
        parameters.num_ref_idx_l0_active_minus1 = 0
        parameters.pic_fields.bits.idr_pic_flag = picture.isIDR ? 1 : 0
        parameters.pic_fields.bits.reference_pic_flag = 1
        parameters.pic_fields.bits.entropy_coding_mode_flag = 0
        parameters.pic_fields.bits.deblocking_filter_control_present_flag = 1
        return parameters
    }

    private func sliceParameters(_ picture: LowDelayGOP.Picture) -> VAEncSliceParameterBufferH264 {
        var slice = VAEncSliceParameterBufferH264()
        slice.macroblock_address = 0
        slice.num_macroblocks = UInt32(widthInMacroblocks * heightInMacroblocks)
        slice.macroblock_info = VABufferID(VA_INVALID_ID)
        slice.slice_type = picture.isIDR ? VASliceType.i : VASliceType.p
        slice.pic_parameter_set_id = 0
        slice.idr_pic_id = UInt16(truncatingIfNeeded: picture.idrPicId)
        VAPictureH264.fillInvalid(&slice.RefPicList0)
        VAPictureH264.fillInvalid(&slice.RefPicList1)
        if let reference = picture.reference {
            slice.num_ref_idx_active_override_flag = 1
            slice.num_ref_idx_l0_active_minus1 = 0
            withUnsafeMutableBytes(of: &slice.RefPicList0) { raw in
                raw.storeBytes(of: VAPictureH264.make(surface: reconstructionSurface(reference.slot), frameNum: reference.frameNum,
                                                      order: reference.pictureOrderCount,
                                                      flags: UInt32(VA_PICTURE_H264_SHORT_TERM_REFERENCE)),
                               as: VAPictureH264.self)
            }
        }
        slice.disable_deblocking_filter_idc = 0
        return slice
    }
}

/// `slice_type` values of VA-API's H.264 slice buffer (those of the standard, modulo 5).
enum VASliceType {
    static let p: UInt8 = 0
    static let i: UInt8 = 2
}

/// Four-character codes; the C `VA_FOURCC` macro does not import into Swift.
enum VAFourCC {
    static func make(_ code: StaticString) -> UInt32 {
        code.withUTF8Buffer { bytes in
            bytes.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        }
    }

    static let nv12 = make("NV12")
}

extension VAPictureH264 {
    static func make(surface: VASurfaceID, frameNum: Int, order: Int, flags: UInt32) -> VAPictureH264 {
        var picture = VAPictureH264()
        picture.picture_id = surface
        picture.frame_idx = UInt32(truncatingIfNeeded: frameNum)
        picture.flags = flags
        picture.TopFieldOrderCnt = Int32(truncatingIfNeeded: order)
        picture.BottomFieldOrderCnt = Int32(truncatingIfNeeded: order)
        return picture
    }

    static var invalid: VAPictureH264 {
        var picture = VAPictureH264()
        picture.picture_id = VASurfaceID(VA_INVALID_ID)
        picture.flags = UInt32(VA_PICTURE_H264_INVALID)
        return picture
    }

    /// Marks every entry of a C array of pictures (imported as a tuple) unused.
    static func fillInvalid<Tuple>(_ tuple: inout Tuple) {
        withUnsafeMutableBytes(of: &tuple) { raw in
            let stride = MemoryLayout<VAPictureH264>.stride
            for index in 0..<(raw.count / stride) {
                raw.storeBytes(of: invalid, toByteOffset: index * stride, as: VAPictureH264.self)
            }
        }
    }
}

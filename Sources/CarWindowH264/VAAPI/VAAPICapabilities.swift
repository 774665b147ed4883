internal import CVA
import Foundation
import Logging

/// The VA-API encode entrypoints this project can use for H.264.
public enum VAAPIEntrypoint: String, Sendable, CaseIterable {
    /// `VAEntrypointEncSliceLP`: the fixed-function low-power encoder (Intel VDEnc), preferred.
    case encodeSliceLowPower
    /// `VAEntrypointEncSlice`: the shader- or VCN-based encoder.
    case encodeSlice

    var raw: VAEntrypoint { self == .encodeSliceLowPower ? VAEntrypointEncSliceLP : VAEntrypointEncSlice }
}

/// Rate-control modes a driver reports for the chosen entrypoint.
public enum VAAPIRateControlMode: String, Sendable, CaseIterable {
    case cbr, vbr, cqp

    var mask: UInt32 {
        switch self {
        case .cbr: UInt32(VA_RC_CBR)
        case .vbr: UInt32(VA_RC_VBR)
        case .cqp: UInt32(VA_RC_CQP)
        }
    }
}

/// Which headers the application may write itself (`VAConfigAttribEncPackedHeaders`).
public struct VAAPIPackedHeaders: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// SPS (`VA_ENC_PACKED_HEADER_SEQUENCE`).
    public static let sequence = VAAPIPackedHeaders(rawValue: UInt32(VA_ENC_PACKED_HEADER_SEQUENCE))
    /// PPS (`VA_ENC_PACKED_HEADER_PICTURE`).
    public static let picture = VAAPIPackedHeaders(rawValue: UInt32(VA_ENC_PACKED_HEADER_PICTURE))
    /// Slice headers (`VA_ENC_PACKED_HEADER_SLICE`).
    public static let slice = VAAPIPackedHeaders(rawValue: UInt32(VA_ENC_PACKED_HEADER_SLICE))
    /// SEI and other NAL units (`VA_ENC_PACKED_HEADER_MISC`).
    public static let misc = VAAPIPackedHeaders(rawValue: UInt32(VA_ENC_PACKED_HEADER_MISC))
    /// Arbitrary bytes (`VA_ENC_PACKED_HEADER_RAW_DATA`).
    public static let rawData = VAAPIPackedHeaders(rawValue: UInt32(VA_ENC_PACKED_HEADER_RAW_DATA))

    public var description: String {
        let names: [(VAAPIPackedHeaders, String)] = [(.sequence, "sequence"), (.picture, "picture"), (.slice, "slice"),
                                                     (.misc, "misc"), (.rawData, "raw-data")]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "none (the driver writes every header)" : present.joined(separator: ", ")
    }
}

/// What a VA-API device can do for constrained-baseline H.264 encoding: used to choose a
/// backend automatically and printed by the CLI.
public struct VAAPICapabilities: Sendable, Equatable, CustomStringConvertible {
    /// The DRM render node that answered, e.g. `/dev/dri/renderD128`.
    public var renderNode: String
    /// `vaQueryVendorString`, e.g. "Intel iHD driver ... " or "Mesa Gallium driver ...".
    public var driverVendor: String
    /// The VA-API version of the library at run time (1.17 for libva 2.17).
    public var apiVersion: (major: Int, minor: Int)
    /// H.264 encode entrypoints for the constrained baseline profile, best first.
    public var entrypoints: [VAAPIEntrypoint]
    /// Rate-control modes of the first entrypoint.
    public var rateControlModes: [VAAPIRateControlMode]
    /// Headers the application may write, for the first entrypoint.
    public var packedHeaders: VAAPIPackedHeaders
    /// Reference pictures in list 0 and list 1 (`VAConfigAttribEncMaxRefFrames`); nil when unreported.
    public var maxReferenceFrames: (list0: Int, list1: Int)?
    /// Slices per picture (`VAConfigAttribEncMaxSlices`); nil when unreported.
    public var maxSlices: Int?
    /// Whether 4:2:0 surfaces (`VA_RT_FORMAT_YUV420`) are accepted.
    public var supportsYUV420: Bool

    /// The entrypoint the encoder uses.
    public var preferredEntrypoint: VAAPIEntrypoint? { entrypoints.first }

    /// Whether `VAAPIEncoder` can run with these capabilities.
    public var canEncodeH264: Bool {
        preferredEntrypoint != nil && supportsYUV420 && (rateControlModes.contains(.cbr) || rateControlModes.contains(.vbr))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.renderNode == rhs.renderNode && lhs.driverVendor == rhs.driverVendor
            && lhs.apiVersion == rhs.apiVersion && lhs.entrypoints == rhs.entrypoints
            && lhs.rateControlModes == rhs.rateControlModes && lhs.packedHeaders == rhs.packedHeaders
            && lhs.maxReferenceFrames?.list0 == rhs.maxReferenceFrames?.list0
            && lhs.maxReferenceFrames?.list1 == rhs.maxReferenceFrames?.list1
            && lhs.maxSlices == rhs.maxSlices && lhs.supportsYUV420 == rhs.supportsYUV420
    }

    public var description: String {
        let references = maxReferenceFrames.map { "\($0.list0) (list 0), \($0.list1) (list 1)" } ?? "unreported"
        return """
            VA-API \(apiVersion.major).\(apiVersion.minor) on \(renderNode): \(driverVendor)
              H.264 constrained baseline entrypoints: \(entrypoints.isEmpty ? "none" : entrypoints.map(\.rawValue).joined(separator: ", "))
              rate control: \(rateControlModes.isEmpty ? "none" : rateControlModes.map(\.rawValue).joined(separator: ", "))
              packed headers: \(packedHeaders)
              max reference frames: \(references); max slices: \(maxSlices.map(String.init) ?? "unreported")
              4:2:0 surfaces: \(supportsYUV420 ? "yes" : "no")
            """
    }
}

/// Raw attribute values of one profile/entrypoint pair, as the encoder needs them.
struct VAConfigQuery {
    var rtFormat: UInt32?
    var rateControl: UInt32?
    var packedHeaders: UInt32?
    var maxReferenceFrames: UInt32?
    var maxSlices: UInt32?

    static let notSupported = UInt32(VA_ATTRIB_NOT_SUPPORTED)

    static func read(display: VADisplay, entrypoint: VAEntrypoint) throws(VAStatusError) -> VAConfigQuery {
        var attributes = [VAConfigAttribRTFormat, VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders,
                          VAConfigAttribEncMaxRefFrames, VAConfigAttribEncMaxSlices].map {
            VAConfigAttrib(type: $0, value: 0)
        }
        let status = vaGetConfigAttributes(display, VAProfileH264ConstrainedBaseline, entrypoint,
                                           &attributes, Int32(attributes.count))
        try VAStatusError.check(status, "vaGetConfigAttributes")
        func value(_ index: Int) -> UInt32? { attributes[index].value == notSupported ? nil : attributes[index].value }
        return VAConfigQuery(rtFormat: value(0), rateControl: value(1), packedHeaders: value(2),
                             maxReferenceFrames: value(3), maxSlices: value(4))
    }
}

/// An open render node with an initialised VA display; closes both when released.
final class VADisplayConnection {
    let renderNode: String
    let fileDescriptor: Int32
    let display: VADisplay
    let apiVersion: (major: Int, minor: Int)

    static let logger = Logger(label: "carwindow.vaapi")
    static let deviceDirectory = "/dev/dri"

    private init(renderNode: String, fileDescriptor: Int32, display: VADisplay, apiVersion: (major: Int, minor: Int)) {
        self.renderNode = renderNode
        self.fileDescriptor = fileDescriptor
        self.display = display
        self.apiVersion = apiVersion
    }

    deinit {
        vaTerminate(display)
        close(fileDescriptor)
    }

    /// The render nodes to try: the one asked for, else the device `CARWINDOW_VAAPI_DEVICE`
    /// names, else every `/dev/dri/renderD*` in number order.
    static func candidateNodes(renderNode: String?) throws(EncoderError) -> [String] {
        if let renderNode { return [renderNode] }
        if let named = ProcessInfo.processInfo.environment[VAAPIEncoder.deviceEnvironmentVariable], !named.isEmpty {
            return [named]
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: deviceDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .backendUnavailable(.vaapi, "no DRM render node: \(deviceDirectory) does not exist (no GPU driver, or a container started without --device \(deviceDirectory)); use the openh264 backend, or name a device in \(VAAPIEncoder.deviceEnvironmentVariable)")
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: deviceDirectory)) ?? []
        let nodes = names.filter { $0.hasPrefix("renderD") }
            .sorted { (Int($0.dropFirst(7)) ?? .max, $0) < (Int($1.dropFirst(7)) ?? .max, $1) }
        guard !nodes.isEmpty else {
            throw .backendUnavailable(.vaapi, "no DRM render node: \(deviceDirectory) holds no renderD* device; use the openh264 backend")
        }
        return nodes.map { "\(deviceDirectory)/\($0)" }
    }

    /// Opens the first node whose VA driver initialises, or the one given.
    static func open(renderNode: String?) throws(EncoderError) -> VADisplayConnection {
        var failures: [String] = []
        for node in try candidateNodes(renderNode: renderNode) {
            switch openOne(node) {
            case .success(let connection): return connection
            case .failure(let failure): failures.append(failure.reason)
            }
        }
        throw .backendUnavailable(.vaapi, failures.joined(separator: "; "))
    }

    private static func openOne(_ node: String) -> Result<VADisplayConnection, NodeFailure> {
        let descriptor = Glibc.open(node, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(NodeFailure(reason: "cannot open \(node): \(String(cString: strerror(errno)))"))
        }
        guard let display = vaGetDisplayDRM(descriptor) else {
            close(descriptor)
            return .failure(NodeFailure(reason: "vaGetDisplayDRM(\(node)) gave no display"))
        }
        // libva prints to stderr by default; route its messages to our log instead.
        vaSetErrorCallback(display, { _, message in
            if let message { VADisplayConnection.logger.warning("libva: \(String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines))") }
        }, nil)
        vaSetInfoCallback(display, { _, message in
            if let message { VADisplayConnection.logger.debug("libva: \(String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines))") }
        }, nil)
        var major: Int32 = 0, minor: Int32 = 0
        let status = vaInitialize(display, &major, &minor)
        guard status == VA_STATUS_SUCCESS else {
            vaTerminate(display)
            close(descriptor)
            return .failure(NodeFailure(reason: "\(node): \(VAStatusError(function: "vaInitialize", status: status))"))
        }
        return .success(VADisplayConnection(renderNode: node, fileDescriptor: descriptor, display: display,
                                            apiVersion: (Int(major), Int(minor))))
    }

    struct NodeFailure: Error { var reason: String }

    var vendor: String { vaQueryVendorString(display).map { String(cString: $0) } ?? "unknown driver" }

    /// The H.264 constrained-baseline encode entrypoints, low-power first.
    func encodeEntrypoints() throws(VAStatusError) -> [VAAPIEntrypoint] {
        var entrypoints = [VAEntrypoint](repeating: VAEntrypoint(0), count: Int(max(1, vaMaxNumEntrypoints(display))))
        var count: Int32 = 0
        let status = vaQueryConfigEntrypoints(display, VAProfileH264ConstrainedBaseline, &entrypoints, &count)
        // A driver without the profile is "no entrypoints", not a failure of the device.
        if status == VA_STATUS_ERROR_UNSUPPORTED_PROFILE { return [] }
        try VAStatusError.check(status, "vaQueryConfigEntrypoints")
        let found = Set(entrypoints.prefix(Int(max(0, min(count, Int32(entrypoints.count))))).map(\.rawValue))
        return VAAPIEntrypoint.allCases.filter { found.contains($0.raw.rawValue) }
    }

    func capabilities() throws(VAStatusError) -> (VAAPICapabilities, VAConfigQuery?) {
        let entrypoints = try encodeEntrypoints()
        var capabilities = VAAPICapabilities(
            renderNode: renderNode, driverVendor: vendor, apiVersion: apiVersion, entrypoints: entrypoints,
            rateControlModes: [], packedHeaders: [], maxReferenceFrames: nil, maxSlices: nil, supportsYUV420: false)
        guard let first = entrypoints.first else { return (capabilities, nil) }
        let query = try VAConfigQuery.read(display: display, entrypoint: first.raw)
        capabilities.supportsYUV420 = (query.rtFormat ?? 0) & UInt32(VA_RT_FORMAT_YUV420) != 0
        capabilities.rateControlModes = VAAPIRateControlMode.allCases.filter { (query.rateControl ?? 0) & $0.mask != 0 }
        capabilities.packedHeaders = VAAPIPackedHeaders(rawValue: query.packedHeaders ?? 0)
        capabilities.maxReferenceFrames = query.maxReferenceFrames.map { (Int($0 & 0xffff), Int($0 >> 16)) }
        capabilities.maxSlices = query.maxSlices.map(Int.init)
        return (capabilities, query)
    }
}

extension VAAPIEncoder {
    /// Opens a render node (the given one, or the first `/dev/dri/renderD*` that initialises) and
    /// describes what it offers for H.264 encoding, without creating an encoder.
    ///
    /// Fails with `backendUnavailable` naming the node or the missing `/dev/dri`; returns quickly
    /// when there is no device.
    public static func probe(renderNode: String? = nil) -> Result<VAAPICapabilities, EncoderError> {
        do throws(EncoderError) {
            let connection = try VADisplayConnection.open(renderNode: renderNode)
            do {
                return .success(try connection.capabilities().0)
            } catch {
                throw error.duringSetup
            }
        } catch {
            return .failure(error)
        }
    }
}

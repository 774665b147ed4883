package import CVA

/// A failed libva call: which function, its status code, and libva's own wording of it.
///
/// Kept as a value so set-up and encoding can turn it into the right `EncoderError` case
/// (`backendUnavailable` while opening, `encodeFailed` afterwards) with one readable reason.
package struct VAStatusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The libva function that failed, e.g. `vaCreateConfig`.
    package var function: String
    /// The raw `VAStatus`.
    package var status: VAStatus

    /// Records a failure of `function` with `status`.
    package init(function: String, status: VAStatus) {
        self.function = function
        self.status = status
    }

    /// The C macro name, e.g. `VA_STATUS_ERROR_UNSUPPORTED_PROFILE`, so logs can be searched.
    package var symbolicName: String { Self.symbolicName(of: status) }

    /// libva's sentence for the status (`vaErrorStr`, which needs no display).
    package var message: String { String(cString: vaErrorStr(status)) }

    package var description: String { "\(function) failed: \(message) (\(symbolicName))" }

    /// The macro name of a status; unknown codes are shown in hex.
    package static func symbolicName(of status: VAStatus) -> String {
        switch UInt32(bitPattern: status) {
        case 0x00: "VA_STATUS_SUCCESS"
        case 0x01: "VA_STATUS_ERROR_OPERATION_FAILED"
        case 0x02: "VA_STATUS_ERROR_ALLOCATION_FAILED"
        case 0x03: "VA_STATUS_ERROR_INVALID_DISPLAY"
        case 0x04: "VA_STATUS_ERROR_INVALID_CONFIG"
        case 0x05: "VA_STATUS_ERROR_INVALID_CONTEXT"
        case 0x06: "VA_STATUS_ERROR_INVALID_SURFACE"
        case 0x07: "VA_STATUS_ERROR_INVALID_BUFFER"
        case 0x08: "VA_STATUS_ERROR_INVALID_IMAGE"
        case 0x09: "VA_STATUS_ERROR_INVALID_SUBPICTURE"
        case 0x0a: "VA_STATUS_ERROR_ATTR_NOT_SUPPORTED"
        case 0x0b: "VA_STATUS_ERROR_MAX_NUM_EXCEEDED"
        case 0x0c: "VA_STATUS_ERROR_UNSUPPORTED_PROFILE"
        case 0x0d: "VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT"
        case 0x0e: "VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT"
        case 0x0f: "VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE"
        case 0x10: "VA_STATUS_ERROR_SURFACE_BUSY"
        case 0x11: "VA_STATUS_ERROR_FLAG_NOT_SUPPORTED"
        case 0x12: "VA_STATUS_ERROR_INVALID_PARAMETER"
        case 0x13: "VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED"
        case 0x14: "VA_STATUS_ERROR_UNIMPLEMENTED"
        case 0x15: "VA_STATUS_ERROR_SURFACE_IN_DISPLAYING"
        case 0x16: "VA_STATUS_ERROR_INVALID_IMAGE_FORMAT"
        case 0x17: "VA_STATUS_ERROR_DECODING_ERROR"
        case 0x18: "VA_STATUS_ERROR_ENCODING_ERROR"
        case 0x19: "VA_STATUS_ERROR_INVALID_VALUE"
        case 0x20: "VA_STATUS_ERROR_UNSUPPORTED_FILTER"
        case 0x21: "VA_STATUS_ERROR_INVALID_FILTER_CHAIN"
        case 0x22: "VA_STATUS_ERROR_HW_BUSY"
        case 0x24: "VA_STATUS_ERROR_UNSUPPORTED_MEMORY_TYPE"
        case 0x25: "VA_STATUS_ERROR_NOT_ENOUGH_BUFFER"
        case 0x26: "VA_STATUS_ERROR_TIMEDOUT"
        case 0xffff_ffff: "VA_STATUS_ERROR_UNKNOWN"
        case let other: "VA status 0x" + String(other, radix: 16)
        }
    }

    /// Throws unless `status` is success.
    static func check(_ status: VAStatus, _ function: String) throws(VAStatusError) {
        guard status == VA_STATUS_SUCCESS else { throw VAStatusError(function: function, status: status) }
    }
}

extension VAStatusError {
    /// The failure as a set-up error: the backend cannot be used here.
    var duringSetup: EncoderError { .backendUnavailable(.vaapi, description) }
    /// The failure as an error of one frame.
    var duringEncoding: EncoderError { .encodeFailed(.vaapi, description) }
}

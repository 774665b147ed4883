import Glibc
import CCarWindow
import CarWindow

// The custom-layer functions of carwindow.h; each is documented there.

/// The engine's custom-layer callback with its user data. The header makes the engine promise
/// that both may be used from the session's render thread, which is what makes this Sendable.
struct CustomLayerCallback: @unchecked Sendable {
    let function: carwindow_custom_layer_callback
    let userData: UnsafeMutableRawPointer?

    /// The map's draw of the layer: the C callback with the frame, marked as a library callback
    /// so an API call from it (other than the matrix helper) fails instead of waiting for the
    /// render thread it blocks.
    var draw: CustomLayerDraw {
        { [self] frame throws(CustomLayerCallbackRefused) in
            var picture = carwindow_custom_layer_frame()
            picture.framebuffer = frame.framebuffer
            picture.width = UInt32(clamping: frame.width)
            picture.height = UInt32(clamping: frame.height)
            picture.camera = CCamera.make(frame.camera)
            withUnsafeMutableBytes(of: &picture.mercator_matrix) { target in
                withUnsafeBytes(of: frame.mercatorMatrix) { target.copyMemory(from: $0) }
            }
            let result = CallingThread.insideLibraryCallback { function(&picture, userData) }
            if result != 0 { throw CustomLayerCallbackRefused(result: result) }
        }
    }
}

/// What the engine's custom-layer callback returned when it did not draw.
struct CustomLayerCallbackRefused: Error, CustomStringConvertible {
    let result: Int32
    var description: String {
        "the custom layer's callback returned \(result) (not 0), so the layer was left out of that picture"
    }
}

/// Ids longer than this are refused: they are names, not data.
private let longestLayerID = 256

/// `carwindow_session_add_custom_layer` (see carwindow.h).
@_cdecl("carwindow_session_add_custom_layer")
public func capiSessionAddCustomLayer(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ below: UnsafePointer<CChar>?,
                                      _ draw: carwindow_custom_layer_callback?, _ userData: UnsafeMutableRawPointer?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let what = "carwindow_session_add_custom_layer"
        let projection = try SessionEntry.table.entry(handle, in: what).session
        guard let id, strnlen(id, longestLayerID + 1) <= longestLayerID else {
            throw .invalidArgument("\(what): id is NULL or longer than \(longestLayerID) bytes")
        }
        let name = String(cString: id)
        guard !name.isEmpty else { throw .invalidArgument("\(what): id is empty; name the layer") }
        guard let draw else { throw .invalidArgument("\(what): draw is NULL; give the function that draws the layer") }
        let belowID = below.map { String(cString: $0) }
        let layer = CustomLayer(id: name, draw: CustomLayerCallback(function: draw, userData: userData).draw)
        try waitForThrowing(doing: what) { try await projection.addCustomLayer(layer, below: belowID) }
    }
}

/// `carwindow_session_remove_custom_layer` (see carwindow.h).
@_cdecl("carwindow_session_remove_custom_layer")
public func capiSessionRemoveCustomLayer(_ handle: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int32 {
    apiCall { () throws(APIFailure) in
        let what = "carwindow_session_remove_custom_layer"
        let projection = try SessionEntry.table.entry(handle, in: what).session
        guard let id else { throw .invalidArgument("\(what): id is NULL") }
        let name = String(cString: id)
        waitFor { await projection.removeCustomLayer(id: name) }
    }
}

/// `carwindow_custom_layer_matrix` (see carwindow.h). Pure arithmetic on the caller's values, so
/// it may be called from inside the layer's draw, where every other function is refused.
@_cdecl("carwindow_custom_layer_matrix")
public func capiCustomLayerMatrix(_ frame: UnsafePointer<carwindow_custom_layer_frame>?, _ origin: carwindow_coordinate,
                                  _ out: UnsafeMutablePointer<Float>?) -> Int32 {
    arithmeticCall { () throws(APIFailure) in
        let what = "carwindow_custom_layer_matrix"
        guard let frame = frame?.pointee, let out else { throw .invalidArgument("\(what): frame or out_matrix is NULL") }
        let camera = try SessionSetup.checkCamera(frame.camera, "\(what): frame->camera")
        guard origin.latitude.isFinite, origin.longitude.isFinite, abs(origin.latitude) <= 90, abs(origin.longitude) <= 180 else {
            throw .invalidArgument("\(what): origin must lie within latitude -90...90 and longitude -180...180 "
                + "(got \(origin.latitude), \(origin.longitude))")
        }
        guard (1...16384).contains(frame.width), (1...16384).contains(frame.height) else {
            throw .invalidArgument("\(what): frame->width and height must be 1...16384 (got \(frame.width)x\(frame.height))")
        }
        let view = CustomLayerFrame(framebuffer: frame.framebuffer,
                                    transform: MapTransform(camera: camera, width: Int(frame.width), height: Int(frame.height)))
        let matrix = view.matrix(metresAround: GeoCoordinate(latitude: origin.latitude, longitude: origin.longitude))
        withUnsafeBytes(of: matrix) { UnsafeMutableRawPointer(out).copyMemory(from: $0.baseAddress!, byteCount: 16 * 4) }
    }
}

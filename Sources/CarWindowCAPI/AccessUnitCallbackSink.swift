import CCarWindow
import CarWindow

/// The engine's access-unit callback with its user data. The header makes the engine promise
/// that both may be used from the session's encoder thread, which is what makes this Sendable.
struct AccessUnitCallback: @unchecked Sendable {
    let function: carwindow_access_unit_callback
    let userData: UnsafeMutableRawPointer?
}

/// What the engine's callback returned when it refused a picture.
struct AccessUnitCallbackRefused: Error, CustomStringConvertible {
    let result: Int32
    var description: String {
        "the engine's access-unit callback returned \(result) (not 0), so that output ends for this stream; return 0 to go on"
    }
}

/// An output that hands each access unit to the engine's C callback, on the thread the session
/// writes its outputs from. The callback returning non-zero ends this output (others go on).
final class AccessUnitCallbackSink: VideoSink {
    private let callback: AccessUnitCallback
    private var refused: SinkError?

    init(_ callback: AccessUnitCallback) {
        self.callback = callback
    }

    func write(_ unit: AccessUnit) throws(SinkError) {
        if refused != nil { throw .closed("access-unit callback output") }
        let microseconds = unit.presentationTime.components.seconds * 1_000_000
            + unit.presentationTime.components.attoseconds / 1_000_000_000_000
        let result = CallingThread.insideLibraryCallback {
            unit.data.withUnsafeBufferPointer {
                callback.function($0.baseAddress, $0.count, microseconds, unit.isKeyframe ? 1 : 0, callback.userData)
            }
        }
        if result != 0 {
            let error = SinkError.transportFailed(underlying: AccessUnitCallbackRefused(result: result))
            refused = error
            throw error
        }
    }

    var failure: SinkError? { refused }

    func close() {}
}

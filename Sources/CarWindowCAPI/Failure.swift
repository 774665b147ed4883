import Foundation
import Glibc
import CCarWindow
import CarWindow
import CarWindowSystemSupport

/// Why a C call failed: the status it returns and the message `carwindow_last_error_message`
/// gives, which says what was wrong and what to do.
struct APIFailure: Error {
    var status: carwindow_status
    var message: String

    init(_ status: carwindow_status, _ message: String) {
        self.status = status
        self.message = message
    }

    static func invalidArgument(_ message: String) -> APIFailure { APIFailure(CARWINDOW_ERROR_INVALID_ARGUMENT, message) }
    static func invalidState(_ message: String) -> APIFailure { APIFailure(CARWINDOW_ERROR_INVALID_STATE, message) }
    static func input(_ message: String) -> APIFailure { APIFailure(CARWINDOW_ERROR_INPUT, message) }

    /// The status and message for an error of the Swift library.
    init(_ error: any Error, doing what: String) {
        let status: carwindow_status
        switch error {
        case let failure as APIFailure:
            self = failure
            return
        case let session as ProjectionSessionError:
            switch session {
            case .noMatchingResolution: status = CARWINDOW_ERROR_HEAD_UNIT
            case .invalidState: status = CARWINDOW_ERROR_INVALID_STATE
            case .renderer(.unknownGeoJSONSource), .renderer(.unknownLayer): status = CARWINDOW_ERROR_INPUT
            case .renderer: status = CARWINDOW_ERROR_GRAPHICS
            case .encoder: status = CARWINDOW_ERROR_ENCODER
            case .sink: status = CARWINDOW_ERROR_OUTPUT
            case .noOutput: status = CARWINDOW_ERROR_INVALID_ARGUMENT
            case .noFonts: status = CARWINDOW_ERROR_INVALID_ARGUMENT
            case .engineContent(.noStream), .engineContent(.wrongContent): status = CARWINDOW_ERROR_INVALID_STATE
            case .engineContent(.drawFailed), .engineContent(.output): status = CARWINDOW_ERROR_GRAPHICS
            case .engineContent: status = CARWINDOW_ERROR_INVALID_ARGUMENT
            }
        case is GLSetupError, is MapRenderError: status = CARWINDOW_ERROR_GRAPHICS
        case is SinkError: status = CARWINDOW_ERROR_OUTPUT
        case is EncoderError: status = CARWINDOW_ERROR_ENCODER
        case is SDLConnectionError: status = CARWINDOW_ERROR_HEAD_UNIT
        case is TileSourceError, is StyleError, is FontError, is GeoJSONError, is VideoStreamingCapabilityError,
             is TouchEventRejection, is CocoaError:
            status = CARWINDOW_ERROR_INPUT
        default: status = CARWINDOW_ERROR_INTERNAL
        }
        self.init(status, "\(what): \(error)")
    }

    /// The constant's name for `status`, as a static C string.
    static func name(of status: carwindow_status) -> StaticString {
        switch status {
        case CARWINDOW_OK: "CARWINDOW_OK"
        case CARWINDOW_ERROR_INVALID_ARGUMENT: "CARWINDOW_ERROR_INVALID_ARGUMENT"
        case CARWINDOW_ERROR_INVALID_HANDLE: "CARWINDOW_ERROR_INVALID_HANDLE"
        case CARWINDOW_ERROR_INVALID_STATE: "CARWINDOW_ERROR_INVALID_STATE"
        case CARWINDOW_ERROR_INPUT: "CARWINDOW_ERROR_INPUT"
        case CARWINDOW_ERROR_OUTPUT: "CARWINDOW_ERROR_OUTPUT"
        case CARWINDOW_ERROR_GRAPHICS: "CARWINDOW_ERROR_GRAPHICS"
        case CARWINDOW_ERROR_ENCODER: "CARWINDOW_ERROR_ENCODER"
        case CARWINDOW_ERROR_HEAD_UNIT: "CARWINDOW_ERROR_HEAD_UNIT"
        case CARWINDOW_ERROR_BUSY: "CARWINDOW_ERROR_BUSY"
        case CARWINDOW_ERROR_INTERNAL: "CARWINDOW_ERROR_INTERNAL"
        default: "unknown status"
        }
    }
}

/// Per-thread state of the C API: the last error's message, and whether the thread is inside an
/// access-unit callback or delivering a session's events. Kept with POSIX thread-specific data
/// because the callers' threads are C threads that Swift concurrency knows nothing of.
enum CallingThread {
    private static let errorKey = makeKey { free($0) }
    private static let libraryCallbackKey = makeKey(destructor: nil)
    private static let deliveringKey = makeKey(destructor: nil)
    /// What the message reads before any call on a thread failed.
    private static let noError: StaticString = ""

    private static func makeKey(destructor: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> pthread_key_t {
        var key = pthread_key_t()
        // Three keys of PTHREAD_KEYS_MAX (1024) at load; failing here means the process is broken.
        precondition(pthread_key_create(&key, destructor) == 0, "pthread_key_create failed")
        return key
    }

    /// Keeps `message` as this thread's last error (a copy the thread's exit frees).
    static func setError(_ message: String) {
        let old = pthread_getspecific(errorKey)
        pthread_setspecific(errorKey, strdup(message))
        free(old)
    }

    /// This thread's last error message, owned by the thread's slot.
    static var lastError: UnsafePointer<CChar> {
        if let message = pthread_getspecific(errorKey) { return UnsafePointer(message.assumingMemoryBound(to: CChar.self)) }
        return UnsafeRawPointer(noError.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Runs `body` marked as inside an access-unit or log callback: the library's own thread is
    /// waiting for it there, so an API call from it could wait for that thread for ever.
    static func insideLibraryCallback<T>(_ body: () -> T) -> T {
        let outer = pthread_getspecific(libraryCallbackKey)
        pthread_setspecific(libraryCallbackKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(libraryCallbackKey, outer) }
        return body()
    }

    static var isInsideLibraryCallback: Bool { pthread_getspecific(libraryCallbackKey) != nil }

    /// Marks this thread as the one delivering the events of the session with `token`.
    static func markDelivering(token: UInt) {
        pthread_setspecific(deliveringKey, UnsafeRawPointer(bitPattern: token))
    }

    /// The token of the session whose events this thread delivers; 0 on every other thread.
    static var deliveringToken: UInt { UInt(bitPattern: pthread_getspecific(deliveringKey)) }
}

/// ``apiCall(_:)`` for a function that is arithmetic on the caller's values alone: it waits for
/// nothing, so it may run inside a library callback (a custom layer's draw) too.
func arithmeticCall(_ body: () throws(APIFailure) -> Void) -> carwindow_status {
    do {
        try body()
        return CARWINDOW_OK
    } catch {
        CallingThread.setError(error.message)
        return error.status
    }
}

/// Runs one C call: its result, or the failure's status with the message kept for the thread.
/// Every exported function goes through this, so none can throw into C or block inside an
/// access-unit or log callback, and the log handler is in place before any work.
func apiCall(_ body: () throws(APIFailure) -> Void) -> carwindow_status {
    LogForwarding.installed
    if CallingThread.isInsideLibraryCallback {
        let message = "no CarWindow function may be called from inside the access-unit, draw or log callback (the library's "
            + "thread waits for that callback to return); copy what you need and act on it from another thread"
        CallingThread.setError(message)
        return CARWINDOW_ERROR_INVALID_STATE
    }
    do {
        try body()
        return CARWINDOW_OK
    } catch {
        CallingThread.setError(error.message)
        return error.status
    }
}

/// Waits on the calling (C) thread for `operation` to finish on Swift's own threads: the C API
/// is synchronous, the library is async. The callers are C threads (never Swift's cooperative
/// pool, whose threads this would block), so waiting here cannot starve the work waited for.
func waitFor<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let outcome = LockedState<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let value = await operation()
        outcome.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    // The semaphore orders the write before this read; the value is always set by then.
    return outcome.withLock { $0! }
}

/// `waitFor` for throwing work: the error comes back typed as the API's failure.
func waitForThrowing<T: Sendable>(doing what: String, _ operation: @escaping @Sendable () async throws -> T) throws(APIFailure) -> T {
    let result: Result<T, APIFailure> = waitFor {
        do {
            return .success(try await operation())
        } catch {
            return .failure(APIFailure(error, doing: what))
        }
    }
    return try result.get()
}

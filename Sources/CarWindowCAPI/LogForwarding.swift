import Foundation
import Glibc
import Logging
import CCarWindow
import CarWindowSystemSupport

/// Where the library's log lines go in a C host: standard error by default, or the engine's
/// callback (`carwindow_set_log`), from the given level up.
///
/// The library logs through swift-log, whose handler is chosen once per process; the C API
/// installs this one before its first call does any work, so every logger made afterwards
/// reads the engine's current choice at each line.
enum LogForwarding {
    struct Target: @unchecked Sendable {
        // The engine's promise in the header: callable from any thread, user data included.
        var callback: carwindow_log_callback?
        var userData: UnsafeMutableRawPointer?
        var minimum: Logger.Level = .info
    }
    static let target = LockedState(Target())

    /// Installs the handler; evaluated once, on the first call that needs it.
    static let installed: Void = {
        LoggingSystem.bootstrap { label in ForwardingLogHandler(label: label) }
    }()

    static func level(from code: carwindow_log_level) -> Logger.Level? {
        switch code {
        case CARWINDOW_LOG_DEBUG: .debug
        case CARWINDOW_LOG_INFO: .info
        case CARWINDOW_LOG_WARNING: .warning
        case CARWINDOW_LOG_ERROR: .error
        case CARWINDOW_LOG_OFF: .critical
        default: nil
        }
    }

    static func code(for level: Logger.Level) -> carwindow_log_level {
        switch level {
        case .trace, .debug: CARWINDOW_LOG_DEBUG
        case .info, .notice: CARWINDOW_LOG_INFO
        case .warning: CARWINDOW_LOG_WARNING
        case .error, .critical: CARWINDOW_LOG_ERROR
        }
    }
}

/// A swift-log handler that sends each line where ``LogForwarding/target`` says.
struct ForwardingLogHandler: LogHandler {
    let label: String
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    /// The engine's level; setting it on one logger would change no other, so it is not settable
    /// per logger here.
    var logLevel: Logger.Level {
        get { LogForwarding.target.withLock { $0.minimum } }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let target = LogForwarding.target.withLock { $0 }
        // OFF is stored as critical, which the library never logs at.
        guard event.level >= target.minimum, target.minimum != .critical else { return }
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let context = fields.isEmpty ? "" : "[" + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: " ") + "] "
        let line = "\(label): \(context)\(event.message)"
        if let callback = target.callback {
            CallingThread.insideLibraryCallback {
                line.withCString { callback(LogForwarding.code(for: event.level), $0, target.userData) }
            }
        } else {
            // One write per line, so lines of several threads do not interleave.
            var text = Array("carwindow \(event.level): \(line)\n".utf8)
            _ = text.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }
}

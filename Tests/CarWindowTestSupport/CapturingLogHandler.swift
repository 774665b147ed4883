import Logging
import CarWindowSystemSupport

/// Keeps every message logged through it, so a test can count the warnings.
final class CapturingLogHandler: LogHandler, Sendable {
    let messages = LockedState<[(Logger.Level, String)]>([])
    var metadata: Logger.Metadata { get { [:] } set {} }
    var metadataProvider: Logger.MetadataProvider? { get { nil } set {} }
    var logLevel: Logger.Level { get { .trace } set {} }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? { get { nil } set {} }
    func log(event: LogEvent) {
        messages.withLock { $0.append((event.level, event.message.description)) }
    }
    var warnings: [String] { messages.withLock { $0.filter { $0.0 == .warning }.map(\.1) } }
}

import CarWindow
import Foundation
import Glibc

/// Standard output and error for the commands: lines go out unbuffered, so progress and
/// messages never appear out of order, and a progress line suits where the output goes.
enum Console {
    /// Whether standard output is a terminal: only there may a progress line be redrawn in place.
    static let isTerminal = isatty(STDOUT_FILENO) == 1

    /// Writes a line to standard output at once.
    static func say(_ text: String) {
        endProgressLine()
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `error: text` to standard error.
    static func error(_ text: String) {
        endProgressLine()
        FileHandle.standardError.write(Data("error: \(text)\n".utf8))
    }

    /// Writes `warning: text` to standard error.
    static func warning(_ text: String) {
        endProgressLine()
        FileHandle.standardError.write(Data("warning: \(text)\n".utf8))
    }

    private struct ProgressState {
        var lineOpen = false
        var lastPlainLine: Double = -.infinity
    }
    private static let progressState = LockedState(ProgressState())

    /// Seconds between progress lines when the output is a log or a pipe.
    static let plainProgressInterval = 5.0

    /// Shows `text` as the progress: redrawn in place on a terminal; elsewhere (a log, CI) one
    /// plain line every ``plainProgressInterval`` seconds, or at once when `force` is set.
    static func progress(_ text: String, force: Bool = false) {
        if isTerminal {
            progressState.withLock { $0.lineOpen = true }
            FileHandle.standardOutput.write(Data(("\r" + text).utf8))
            return
        }
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let due = progressState.withLock { state in
            guard force || now - state.lastPlainLine >= plainProgressInterval else { return false }
            state.lastPlainLine = now
            return true
        }
        if due { FileHandle.standardOutput.write(Data((text.trimmingCharacters(in: .whitespaces) + "\n").utf8)) }
    }

    /// Ends a progress line drawn in place, so the next message starts on a line of its own.
    static func endProgressLine() {
        guard isTerminal else { return }
        let open = progressState.withLock { state in
            defer { state.lineOpen = false }
            return state.lineOpen
        }
        if open { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}

/// Writes a line to standard output at once.
func say(_ text: String) { Console.say(text) }

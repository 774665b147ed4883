import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc

/// Standard output and error for the commands: lines go out unbuffered, so progress and
/// messages never appear out of order, and a progress line suits where the output goes.
///
/// A reader that goes away (`carwindow drive | head -1`) must not end the command: SIGPIPE is
/// ignored (``CarWindowCommand``), and a stream whose reader left (EPIPE) is written no more,
/// while the command finishes its files as if nothing happened.
enum Console {
    /// Whether standard output is a terminal: only there may a progress line be redrawn in place.
    static let isTerminal = isatty(STDOUT_FILENO) == 1

    /// Writes a line to standard output at once.
    static func say(_ text: String) {
        endProgressLine()
        write(text + "\n", to: STDOUT_FILENO)
    }

    /// Writes `error: text` to standard error.
    static func error(_ text: String) {
        endProgressLine()
        write("error: \(text)\n", to: STDERR_FILENO)
    }

    /// Writes `warning: text` to standard error.
    static func warning(_ text: String) {
        endProgressLine()
        write("warning: \(text)\n", to: STDERR_FILENO)
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
            write("\r" + text, to: STDOUT_FILENO)
            return
        }
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let due = progressState.withLock { state in
            guard force || now - state.lastPlainLine >= plainProgressInterval else { return false }
            state.lastPlainLine = now
            return true
        }
        if due { write(text.trimmingCharacters(in: .whitespaces) + "\n", to: STDOUT_FILENO) }
    }

    /// Ends a progress line drawn in place, so the next message starts on a line of its own.
    static func endProgressLine() {
        guard isTerminal else { return }
        let open = progressState.withLock { state in
            defer { state.lineOpen = false }
            return state.lineOpen
        }
        if open { write("\n", to: STDOUT_FILENO) }
    }

    /// The streams whose reader went away (EPIPE): nothing more is written to them.
    private static let closedStreams = LockedState(Set<Int32>())

    /// Writes all of `text` to `descriptor` with write(2), as Foundation's `FileHandle.write`
    /// would, except that a failure (EPIPE: the reader left; EIO, ENOSPC) drops the text instead
    /// of trapping: losing a message must not lose the recordings.
    static func write(_ text: String, to descriptor: Int32) {
        guard !closedStreams.withLock({ $0.contains(descriptor) }) else { return }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
            } else if written < 0, errno == EINTR || errno == EAGAIN {
                continue
            } else {
                if written < 0, errno == EPIPE { closedStreams.withLock { _ = $0.insert(descriptor) } }
                return
            }
        }
    }
}

/// Writes a line to standard output at once.
func say(_ text: String) { Console.say(text) }

internal import CEGL
import CarWindowSystemSupport

/// The kinds of GL object names CarWindow makes.
package enum GLObjectKind: Int, CaseIterable, Sendable {
    case buffer, texture, vertexArray, framebuffer, renderbuffer, program
}

/// How many GL object names of each kind a context holds.
package struct GLObjectCensus: Sendable, Equatable, CustomStringConvertible {
    package var buffers = 0
    package var textures = 0
    package var vertexArrays = 0
    package var framebuffers = 0
    package var renderbuffers = 0
    package var programs = 0

    package init() {}

    package subscript(kind: GLObjectKind) -> Int {
        get {
            switch kind {
            case .buffer: buffers
            case .texture: textures
            case .vertexArray: vertexArrays
            case .framebuffer: framebuffers
            case .renderbuffer: renderbuffers
            case .program: programs
            }
        }
        set {
            switch kind {
            case .buffer: buffers = newValue
            case .texture: textures = newValue
            case .vertexArray: vertexArrays = newValue
            case .framebuffer: framebuffers = newValue
            case .renderbuffer: renderbuffers = newValue
            case .program: programs = newValue
            }
        }
    }

    /// Names of every kind together.
    package var total: Int { GLObjectKind.allCases.reduce(0) { $0 + self[$1] } }

    package var description: String {
        "\(buffers) buffers, \(textures) textures, \(vertexArrays) vertex arrays, \(framebuffers) framebuffers, "
            + "\(renderbuffers) renderbuffers, \(programs) programs"
    }
}

/// The EGL context a GL object name belongs to; names are only valid in it.
struct GLContextID: Hashable, Sendable {
    let raw: UInt

    /// No context: what a name made without a current context (which GL does not make) has.
    static let none = GLContextID(raw: 0)

    /// The context current on the calling thread.
    static var current: GLContextID { GLContextID(raw: UInt(bitPattern: eglGetCurrentContext())) }
}

/// Counts GL object names where they are made and deleted, per context, and guards deletion.
///
/// A name may be deleted only on the thread where the context that made it is current: the
/// render thread. The actors that own GL objects (``MapRenderer``) release them in an isolated
/// deinit, which runs there. A release anywhere else makes no GL call:
/// - after ``RenderContext/shutdown()`` the name goes with the context, so it only stops counting;
/// - before it, deleting would hit whatever context is current on that thread, or none, so the
///   name is left (a leak the census keeps showing) and counted as a stray release.
enum GLObjectLedger {
    private struct Book {
        var live = GLObjectCensus()
        /// Shut down: released from its thread, never current again.
        var hasEnded = false
        var strayReleases = 0
        /// Ended with nothing left to count or report: the book may go.
        var isSettled: Bool { hasEnded && live == GLObjectCensus() && strayReleases == 0 }
    }

    private static let books = LockedState<[GLContextID: Book]>([:])

    /// Counts `count` names of `kind` just made in the context current on this thread, and
    /// returns that context for their release.
    static func made(_ kind: GLObjectKind, count: Int = 1) -> GLContextID {
        let context = GLContextID.current
        guard context != .none else { return .none }
        books.withLock { $0[context, default: Book()].live[kind] += count }
        return context
    }

    /// Releases `count` names of `kind` made in `context`: `delete` (the glDelete call) runs
    /// only when that context is current on this thread.
    static func release(_ kind: GLObjectKind, count: Int = 1, madeIn context: GLContextID, delete: () -> Void) {
        guard context != .none else { return }
        let isCurrent = GLContextID.current == context
        if isCurrent { delete() }
        books.withLock { books in
            guard var book = books[context] else { return }
            if isCurrent || book.hasEnded {
                book.live[kind] -= count
            } else {
                book.strayReleases += count
            }
            books[context] = book.isSettled ? nil : book
        }
    }

    /// The names `context` holds now.
    static func census(of context: GLContextID) -> GLObjectCensus {
        books.withLock { $0[context]?.live ?? GLObjectCensus() }
    }

    /// Contexts with a book now: live ones, and ended ones with names still held or strays.
    static var bookCount: Int { books.withLock { $0.count } }

    /// Releases of `context`'s names that came on a thread where it was not current.
    static func strayReleases(of context: GLContextID) -> Int {
        books.withLock { $0[context]?.strayReleases ?? 0 }
    }

    /// `context` was shut down: later releases make no GL call and need none.
    static func contextEnded(_ context: GLContextID) {
        books.withLock { $0[context, default: Book()].hasEnded = true }
    }

    /// `context` was just made: a book of its own, even where EGL reused the handle of a
    /// context destroyed before.
    static func contextBegan(_ context: GLContextID) {
        books.withLock { $0[context] = Book() }
    }

    /// `context` was destroyed with every name it held. Its book stays, ended, while maps still
    /// hold names (they release them later without a GL call, and the census shows them go) or
    /// strays are on record; then it goes, so the books do not grow with every context made.
    static func contextDestroyed(_ context: GLContextID) {
        books.withLock { books in
            var book = books[context] ?? Book()
            book.hasEnded = true
            books[context] = book.isSettled ? nil : book
        }
    }
}

import CCarWindow
import CarWindow
import CarWindowSystemSupport

/// A `carwindow_context`: the render thread and GL context, and how many sessions use it.
final class ContextEntry: Sendable {
    static let table = HandleTable<ContextEntry>(kindTag: 1, kindName: "context")

    let token: UInt
    let renderContext: RenderContext
    private let state = LockedState<(sessions: Int, closed: Bool)>((0, false))

    init(token: UInt, renderContext: RenderContext) {
        self.token = token
        self.renderContext = renderContext
    }

    /// Counts a new session on this context; fails once the context is being closed.
    func addSession() throws(APIFailure) {
        try state.withLock { (state) throws(APIFailure) in
            guard !state.closed else {
                throw APIFailure(CARWINDOW_ERROR_INVALID_HANDLE, "carwindow_session_create: the context was closed; create a new one")
            }
            state.sessions += 1
        }
    }

    func removeSession() {
        state.withLock { $0.sessions -= 1 }
    }

    /// Marks the context closed unless sessions still use it.
    func beginClose() throws(APIFailure) {
        try state.withLock { (state) throws(APIFailure) in
            guard state.sessions == 0 else {
                throw APIFailure(CARWINDOW_ERROR_BUSY,
                                 "carwindow_context_close: \(state.sessions) session(s) still use this context; close them first (nothing was closed)")
            }
            state.closed = true
        }
    }
}

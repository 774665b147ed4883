import CCarWindow
import CarWindowSystemSupport

/// The live handles the C API has handed out. A handle is a token, not an address: the library
/// never dereferences what a caller passes, and tokens are never reused, so a closed, freed or
/// made-up handle is found missing (CARWINDOW_ERROR_INVALID_HANDLE) instead of crashing, even
/// when a new object happens to live where an old one did.
final class HandleTable<Entry: AnyObject & Sendable>: Sendable {
    private let entries = LockedState<(next: UInt, live: [UInt: Entry])>((1, [:]))
    /// Told apart by the low bits, so a context passed where a session belongs is refused.
    private let kindTag: UInt
    private let kindName: String

    init(kindTag: UInt, kindName: String) {
        self.kindTag = kindTag
        self.kindName = kindName
    }

    /// Registers `entry` and returns its new token (never 0, so never NULL in C).
    func insert(_ make: (UInt) -> Entry) -> (token: UInt, entry: Entry) {
        entries.withLock { table in
            let token = table.next << 4 | kindTag
            table.next += 1
            let entry = make(token)
            table.live[token] = entry
            return (token, entry)
        }
    }

    /// The entry behind `handle`, or the invalid-handle failure naming the function.
    func entry(_ handle: OpaquePointer?, in function: String) throws(APIFailure) -> Entry {
        let token = UInt(bitPattern: handle.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0)
        guard token != 0 else {
            throw APIFailure(CARWINDOW_ERROR_INVALID_HANDLE, "\(function): the \(kindName) is NULL; pass the handle that carwindow_\(kindName)_create gave")
        }
        guard let entry = entries.withLock({ $0.live[token] }) else {
            throw APIFailure(CARWINDOW_ERROR_INVALID_HANDLE,
                             "\(function): \(handle.map { "\($0)" } ?? "nil") is not an open \(kindName): it was closed or did not come from carwindow_\(kindName)_create")
        }
        return entry
    }

    /// Forgets `token`; true when it was live (the caller then owns the last word on it).
    func remove(_ token: UInt) -> Bool {
        entries.withLock { $0.live.removeValue(forKey: token) != nil }
    }

    /// The handle C code receives for `token`.
    static func handle(for token: UInt) -> OpaquePointer {
        // Never nil: tokens are at least 1 << 4.
        OpaquePointer(bitPattern: token)!
    }
}

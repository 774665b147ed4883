#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value guarded by a POSIX mutex, with the same `withLock` shape as `Synchronization.Mutex`.
///
/// Why not `Mutex`: on Linux the standard library's `Mutex` locks with futex calls and atomics
/// compiled without the thread sanitizer, so TSan cannot see its happens-before edges and reports
/// every pair of accesses it guards as a race (a four-thread counter gets 27-77 reports per run).
/// `pthread_mutex_lock` is intercepted by TSan, so state kept here is checked for real races
/// instead of hidden behind suppressions. Uncontended, both cost an atomic exchange; this one
/// allocates once, when it is made, never per lock.
package final class LockedState<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let storage: UnsafeMutablePointer<Value>

    /// Guards `initialValue` from now on.
    package init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        // A default mutex cannot fail to initialise on Linux; checking keeps a broken libc loud.
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        storage = .allocate(capacity: 1)
        storage.initialize(to: initialValue)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the value while no other thread can reach it. Not reentrant: calling
    /// `withLock` on the same instance from `body` deadlocks, as with `Mutex`.
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}

import Foundation
import CarWindowSystemSupport

/// A dedicated thread that runs the jobs of one actor, so every job of that actor runs on the
/// same OS thread.
///
/// OpenGL ES contexts are bound to the thread that made them current. An actor whose
/// `unownedExecutor` is a `RenderThread` therefore owns its GL context for good: every isolated
/// method runs on this thread and nowhere else.
///
/// After ``stop()`` the thread ends once its queue is empty. A job that arrives later (the
/// isolated deinit of a renderer released after its context shut down, say) starts a thread
/// again that runs it and ends in turn, so such jobs run, one at a time, rather than wait
/// forever; no GL context is current there any more.
///
/// - Important: Thread-safe. `enqueue` may be called from any thread.
package final class RenderThread: SerialExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [UnownedJob] = []
    private var running: [UnownedJob] = []
    private var stopping = false
    /// Whether a thread serves the queue now.
    private var hasThread = false
    private var threadID: pthread_t?
    /// The OS thread serving the queue, or the last one, until it is joined or detached.
    private var osThread: pthread_t?
    private let name: String

    /// Starts the thread. It runs until ``stop()`` is called and its queue is empty.
    package init(name: String = "carwindow.render") {
        self.name = name
        condition.lock()
        startThread()
        while threadID == nil { condition.wait() }
        condition.unlock()
    }

    /// Starts the OS thread that serves the queue; called with `condition` locked.
    ///
    /// A joinable POSIX thread, so that ``waitUntilEnded()`` can know it has ended entirely,
    /// thread-local destructors included (the GL driver's among them), before a host process
    /// exits. A thread nobody waits for is detached: when a later one replaces it, or with the
    /// executor.
    private func startThread() {
        if let previous = osThread {
            pthread_detach(previous)
            osThread = nil
        }
        hasThread = true
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, 8 << 20)
        // The thread keeps its executor alive while it runs: jobs may still be queued.
        let executor = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, &attributes, { executor in
            // Non-nil: the pointer passed below.
            let renderThread = Unmanaged<RenderThread>.fromOpaque(executor!).takeRetainedValue()
            renderThread.runLoop()
            return nil
        }, executor)
        // Without its thread no GL or encoder job could ever run; the process is out of threads.
        precondition(result == 0, "pthread_create failed for \(name): \(result)")
        osThread = thread
    }

    /// After ``stop()``: returns once the OS thread has ended entirely, its thread-local
    /// destructors included, so that a process may exit without racing them (a C host's `exit`
    /// runs the GL driver's destructors). Returns at once when called on the thread itself or
    /// when no thread was started since the last wait. Waits for ever if ``stop()`` was not called.
    package func waitUntilEnded() {
        condition.lock()
        if let threadID, pthread_equal(threadID, pthread_self()) != 0 {
            condition.unlock()
            return
        }
        while hasThread { condition.wait() }
        let ended = osThread
        osThread = nil
        condition.unlock()
        if let ended { pthread_join(ended, nil) }
    }

    deinit {
        if let osThread { pthread_detach(osThread) }
    }

    /// Queues `job` to run on the thread after the jobs already queued; if the thread has ended
    /// after ``stop()``, a new one starts to run it.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        pending.append(job)
        if hasThread {
            condition.signal()
        } else {
            startThread()
        }
        condition.unlock()
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    package func checkIsolated() {
        precondition(isCurrent, "expected to run on the render thread")
    }

    /// Whether the calling code runs on this thread.
    package var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let threadID else { return false }
        return pthread_equal(threadID, pthread_self()) != 0
    }

    /// Lets the thread end once the jobs already queued have run.
    package func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// OS threads of render threads running now, per name (`carwindow.render`,
    /// `carwindow.encode`): a census for leak tests. The kernel's names (`/proc/self/task/*/comm`)
    /// cannot stand in: ours sometimes read as a dispatch queue's there.
    package static func running(named name: String) -> Int {
        runningThreads.withLock { $0[name] ?? 0 }
    }

    private static let runningThreads = LockedState<[String: Int]>([:])

    private func runLoop() {
        Self.runningThreads.withLock { $0[name, default: 0] += 1 }
        defer { Self.runningThreads.withLock { $0[name, default: 0] -= 1 } }
        // Set from the thread itself so the system name (what profilers show) changes too;
        // Linux keeps 15 characters.
        Thread.current.name = String(name.prefix(15))
        condition.lock()
        threadID = pthread_self()
        condition.broadcast()
        while true {
            while pending.isEmpty && !stopping { condition.wait() }
            if pending.isEmpty && stopping { break }
            // Swap the queues so jobs run without the lock held and neither array reallocates
            // once both have grown to the working size.
            swap(&pending, &running)
            condition.unlock()
            for job in running {
                job.runSynchronously(on: asUnownedSerialExecutor())
            }
            running.removeAll(keepingCapacity: true)
            condition.lock()
        }
        hasThread = false
        threadID = nil
        condition.broadcast()
        condition.unlock()
    }
}

extension RenderThread {
    /// Runs a plain closure on the thread, outside any actor: only for set-up before the actor
    /// that owns the context exists.
    package func enqueueTask(_ body: @escaping @Sendable () -> Void) {
        Task.detached(executorPreference: TaskExecutorAdapter(self)) { body() }
    }
}

/// Lets a detached task run on the render thread.
private final class TaskExecutorAdapter: TaskExecutor, @unchecked Sendable {
    let thread: RenderThread
    init(_ thread: RenderThread) { self.thread = thread }
    func enqueue(_ job: consuming ExecutorJob) { thread.enqueue(job) }
}

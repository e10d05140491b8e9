import ServiceKit
import Synchronization
import Testing

@Suite("withDeadline: the body's outcome or the deadline's error, whichever comes first", .timeLimit(.minutes(1)))
struct DeadlineTests {
    struct TimedOut: Error, Equatable {}
    struct Failed: Error, Equatable {}

    @Test("a body that ends first gives its value or its error")
    func bodyFirst() async throws {
        let value = try await withDeadline(.seconds(30), orThrow: TimedOut()) { 42 }
        #expect(value == 42)
        await #expect(throws: Failed()) {
            try await withDeadline(.seconds(30), orThrow: TimedOut()) { () async throws -> Int in throw Failed() }
        }
    }

    @Test("a body that ignores cancellation does not hold the caller past the deadline; it is cancelled and ends on its own")
    func bodyIgnoringCancellation() async throws {
        let body = DeafBody()
        // Were the deadline to wait for the body, it would return only once this opens the gate,
        // and the body would have ended: the test fails rather than hangs.
        let safetyNet = Task {
            try? await Task.sleep(for: .seconds(20))
            body.gate.open()
        }
        defer { safetyNet.cancel() }
        await #expect(throws: TimedOut()) {
            try await withDeadline(.milliseconds(50), orThrow: TimedOut()) { await body.run() }
        }
        // The deadline answered while the body was still waiting.
        #expect(!body.ended.isOpen)
        #expect(await body.release())
    }

    @Test("cancelling the caller throws CancellationError at once, even when the body ignores cancellation; the body is cancelled")
    func callerCancelledBodyIgnoring() async throws {
        let body = DeafBody()
        // Were the caller held until the deadline, it would get TimedOut instead.
        let caller = Task {
            try await withDeadline(.seconds(20), orThrow: TimedOut()) { await body.run() }
        }
        await body.started.wait()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(!body.ended.isOpen)
        #expect(await body.release())
    }

    @Test("cancelling the caller, whose body reacts to cancellation, throws CancellationError")
    func callerCancelled() async throws {
        let started = Gate()
        let caller = Task {
            try await withDeadline(.seconds(30), orThrow: TimedOut()) {
                started.open()
                try await Task.sleep(for: .seconds(60))
            }
        }
        await started.wait()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
    }
}

/// A body that ignores cancellation: it waits for its gate, then notes whether it was cancelled.
private final class DeafBody: Sendable {
    let started = Gate()
    let gate = Gate()
    let ended = Gate()
    private let sawCancellation = Mutex(false)

    func run() async {
        self.started.open()
        await self.gate.wait()
        self.sawCancellation.withLock { $0 = Task.isCancelled }
        self.ended.open()
    }

    /// Opens the gate and waits for the body to end; whether it saw its cancellation.
    func release() async -> Bool {
        self.gate.open()
        await self.ended.wait()
        return self.sawCancellation.withLock { $0 }
    }
}

/// Opened once; `wait` returns once it is open and does not react to cancellation.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    var isOpen: Bool { self.state.withLock { $0.open } }

    func open() {
        let waiters = self.state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = self.state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}

import ServiceKit
import Synchronization

/// Wakes the polls waiting on this replica when a command for their agent is stored: one
/// subscription to every command subject (made at the first poll, kept for the replica's life),
/// handed out by subject to the polls that registered for it. One subscription, not one per poll:
/// nats.c gives each subscription a delivery thread of its own.
///
/// Commands are few (each is an operator's or a gate's, within the control limits), so every
/// replica hearing all of them costs little. A wake lost to a full buffer is not a command lost:
/// the poll reads the stream again when a command in flight falls due, or at its next poll.
final class CommandWakes: Sendable {
    private let connection: NATSConnection
    private let subject: String
    private let waiting = Mutex<[String: [ObjectIdentifier: CommandWake]]>([:])
    /// The listener once subscribed; the subscribe under way before that.
    private let state = Mutex<(listener: Task<Void, Never>?, subscribing: Task<Result<Void, ServiceKitError>, Never>?)>((nil, nil))

    /// `subject`: every command subject (``Contracts/Subjects/allControlCommands``).
    init(connection: NATSConnection, subject: String) {
        self.connection = connection
        self.subject = subject
    }

    /// A wake for the polls of `subject` (one agent's), signalled by every command stored on it
    /// from now on. ``unregister(_:)`` it when the poll ends.
    func register(_ subject: String) async throws(ServiceKitError) -> CommandWake {
        try await self.listen()
        let wake = CommandWake(subject: subject)
        self.waiting.withLock { $0[subject, default: [:]][ObjectIdentifier(wake)] = wake }
        return wake
    }

    /// Wakes the polls registered for `subject` (a command stored on it, or handed back).
    func signal(_ subject: String) {
        let woken = self.waiting.withLock { waiting in waiting[subject].map { Array($0.values) } ?? [] }
        for wake in woken { wake.signal() }
    }

    func unregister(_ wake: CommandWake) {
        self.waiting.withLock { waiting in
            waiting[wake.subject]?[ObjectIdentifier(wake)] = nil
            if waiting[wake.subject]?.isEmpty == true { waiting[wake.subject] = nil }
        }
    }

    /// Subscribes once, at the first poll; polls that arrive while it subscribes wait for that
    /// one subscribe (a subscribe waits on nats.c's lock while it reconnects).
    private func listen() async throws(ServiceKitError) {
        let pending = self.state.withLock { state -> Task<Result<Void, ServiceKitError>, Never>? in
            if state.listener != nil { return nil }
            if let subscribing = state.subscribing { return subscribing }
            let subscribing = Task { await self.subscribe() }
            state.subscribing = subscribing
            return subscribing
        }
        try await pending?.value.get()
    }

    /// The one subscribe of ``listen()``: on success, the listener that wakes the polls.
    private func subscribe() async -> Result<Void, ServiceKitError> {
        let subscription: NATSSubscription
        do {
            subscription = try await self.connection.subscribe(to: self.subject, buffering: .dropNewest(maxMessages: 4096, maxBytes: 16 << 20))
        } catch {
            self.state.withLock { $0.subscribing = nil }
            return .failure(error)
        }
        self.state.withLock { state in
            state.subscribing = nil
            state.listener = Task { [weak self] in
                for await batch in subscription.batches {
                    guard let self else { return }
                    for message in batch { self.signal(message.subject) }
                }
                // The connection closed: the next poll subscribes again.
                self?.state.withLock { $0.listener = nil }
            }
        }
        return .success(())
    }

    deinit {
        self.state.withLock { $0.listener }?.cancel()
    }
}

/// One poll's wake: signalled by a command on its agent's subject, remembered until waited on.
final class CommandWake: Sendable {
    let subject: String
    private let state = Mutex<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    init(subject: String) {
        self.subject = subject
    }

    func signal() {
        let waiter = self.state.withLock { state in
            defer { state = (state.waiter == nil, nil) }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Until a signal (one that came before counts, and is used up), `deadline`, or cancellation.
    /// True when signalled.
    func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.signalled() }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
    }

    private func signalled() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
            return !Task.isCancelled
        } onCancel: {
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}

import CNATS
import Synchronization

/// Fans connection events out to listeners, and keeps the connection's status as they tell it.
/// Retained by the C connection and released by its closed callback, which fires exactly once.
///
/// The status is kept here rather than read from nats.c because `natsConnection_Status` takes the
/// connection's lock, which nats.c's reconnect thread holds through each connect attempt (up to
/// the connect timeout, for a server that is gone without a reset): a readiness probe reading it
/// would wait on a Swift concurrency thread that long.
final class ConnectionEvents: Sendable {
    private struct State {
        var listeners: [Int: AsyncStream<NATSConnectionEvent>.Continuation] = [:]
        var nextID = 0
        var closed = false
        var closedWaiters: [CheckedContinuation<Void, Never>] = []
        var status = NATSConnectionStatus.connecting
    }

    private let state = Mutex(State())

    func stream() -> AsyncStream<NATSConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: NATSConnectionEvent.self,
            bufferingPolicy: .bufferingNewest(64)
        )
        let alreadyClosed = self.state.withLock { state -> Bool in
            if state.closed { return true }
            let id = state.nextID
            state.nextID += 1
            state.listeners[id] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
            }
            return false
        }
        if alreadyClosed {
            continuation.yield(.closed)
            continuation.finish()
        }
        return stream
    }

    func emit(_ event: NATSConnectionEvent) {
        let (listeners, waiters) = self.state.withLock { state in
            state.status = state.status.after(event)
            if event == .closed {
                state.closed = true
                defer {
                    state.listeners = [:]
                    state.closedWaiters = []
                }
                return (Array(state.listeners.values), state.closedWaiters)
            }
            return (Array(state.listeners.values), [])
        }
        for listener in listeners {
            listener.yield(event)
            if event == .closed { listener.finish() }
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the connection is closed.
    func waitUntilClosed() async {
        await withCheckedContinuation { continuation in
            let closed = self.state.withLock { state -> Bool in
                if state.closed { return true }
                state.closedWaiters.append(continuation)
                return false
            }
            if closed { continuation.resume() }
        }
    }

    var isClosed: Bool { self.state.withLock { $0.closed } }

    /// The status the events so far tell.
    var status: NATSConnectionStatus { self.state.withLock { $0.status } }

    /// Records the first connection, made by `natsConnection_Connect` (which posts no event): only
    /// over `.connecting`, so a disconnection that came first stands.
    func recordConnected() {
        self.state.withLock { state in
            if state.status == .connecting { state.status = .connected }
        }
    }

    /// Records that the connection drains (until it closes).
    func recordDraining() {
        self.state.withLock { state in
            if state.status != .closed { state.status = .draining }
        }
    }
}

// The connection callbacks run on one library-wide thread: keep them tiny.
let natsDisconnectedTrampoline: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<ConnectionEvents>.fromOpaque(closure).takeUnretainedValue().emit(.disconnected)
}

let natsConnectedTrampoline: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<ConnectionEvents>.fromOpaque(closure).takeUnretainedValue().emit(.connected)
}

let natsReconnectedTrampoline: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<ConnectionEvents>.fromOpaque(closure).takeUnretainedValue().emit(.reconnected)
}

let natsClosedTrampoline: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    let unmanaged = Unmanaged<ConnectionEvents>.fromOpaque(closure)
    unmanaged.takeUnretainedValue().emit(.closed)
    unmanaged.release()
}

let natsErrorTrampoline: natsErrHandler = { _, _, status, closure in
    guard let closure else { return }
    // Slow-consumer errors fire each time a subscription enters the slow state; the drop
    // counts are read from the subscription itself, so only the kind is reported here.
    Unmanaged<ConnectionEvents>.fromOpaque(closure).takeUnretainedValue()
        .emit(.error(String(cString: natsStatus_GetText(status))))
}

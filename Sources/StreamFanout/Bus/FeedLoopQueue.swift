import NIOCore
import Synchronization

/// What a tenant feed has for the listeners of one event loop and has not offered yet: the
/// feed appends, and one `execute` at a time takes everything waiting and offers it there. So
/// the batches that arrive while the event loop is busy reach its connections together (one
/// outbox lock, one write and one flush per connection for all of them), as nats-server writes
/// what is pending for a client once per read; an idle event loop gets each batch at once.
///
/// Bounded: past ``maxEvents`` waiting, the feed waits for the event loop
/// (``waitUntilTaken()``); its NATS subscription's pending limit then holds what follows, and
/// what that drops is back-filled from the log (the seq check).
final class FeedLoopQueue: Sendable {
    enum Item {
        case events([FeedEvent])
        case gap(from: Int64, to: Int64)
    }

    private struct State {
        var items: [Item] = []
        var events = 0
        var scheduled = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Events waiting at most before the feed waits.
    static let maxEvents = 16_384

    let eventLoop: any EventLoop
    private let state = Mutex(State())

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Adds `item` after what waits (events after events join them). Returns whether the event
    /// loop must be asked to take it (nothing was asked yet) and whether the bound is passed.
    func append(_ item: Item) -> (schedule: Bool, full: Bool) {
        self.state.withLock { state in
            switch item {
            case .events(let events):
                state.events += events.count
                if case .events? = state.items.last, case .events(var before) = state.items.removeLast() {
                    before += events  // moved out of the list: appended in place
                    state.items.append(.events(before))
                } else {
                    state.items.append(item)
                }
            case .gap:
                state.items.append(item)
            }
            defer { state.scheduled = true }
            return (!state.scheduled, state.events > Self.maxEvents)
        }
    }

    /// Takes everything waiting (on the event loop); what is appended from now on asks for
    /// another turn.
    func take() -> [Item] {
        let (items, waiters) = self.state.withLock { state in
            defer {
                state.items = []
                state.events = 0
                state.scheduled = false
                state.waiters = []
            }
            return (state.items, state.waiters)
        }
        for waiter in waiters { waiter.resume() }
        return items
    }

    /// Returns once no more than ``maxEvents`` wait.
    func waitUntilTaken() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLock { state in
                guard state.events > Self.maxEvents else { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

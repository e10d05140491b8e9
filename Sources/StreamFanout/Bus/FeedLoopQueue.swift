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
        /// At most ``maxJoined`` events.
        case events([FeedEvent])
        case gap(from: Int64, to: Int64)
    }

    private struct State {
        var items: [Item] = []
        var events = 0
        var scheduled = false
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        var nextWaiter: UInt64 = 0
    }

    /// Events waiting at most before the feed waits (it waits once an append passes it).
    static let maxEvents = 16_384
    /// Events joined into one item at most: each item is offered to a connection on its own,
    /// and its writer writes it before the next (so a writable connection's queue, bounded by
    /// `fanout.queue-events`, never holds more than an item, however many wait here).
    static let maxJoined = TenantFeed.maxBatch

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
                if case .events(let last)? = state.items.last, last.count + events.count <= Self.maxJoined,
                    case .events(var before) = state.items.removeLast()
                {
                    before += events  // moved out of the list (copied once if the feed still shares it)
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
        for waiter in waiters { waiter.continuation.resume() }
        return items
    }

    /// Returns once no more than ``maxEvents`` wait, or the task is cancelled (the feed
    /// stopping).
    func waitUntilTaken() async {
        let id = self.state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state in
                    // Cancelled before it was listed: the handler found nothing to resume.
                    guard state.events > Self.maxEvents, !Task.isCancelled else { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }
}

import Foundation

/// The bridge between a subscription's delivery thread and its async consumer.
///
/// The producer appends under a lock; the consumer takes everything buffered at once, so a
/// burst costs one wake-up per batch rather than one per message.
final class SubscriptionBuffer: MessageSink, @unchecked Sendable {
    private let policy: NATSBufferingPolicy
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var messages: [NATSMessage] = []
    private var bytes = 0
    private var waiter: CheckedContinuation<[NATSMessage]?, Never>?
    private var finished = false
    private var cancelled = false
    private var droppedHere: Int64 = 0

    init(policy: NATSBufferingPolicy) {
        self.policy = policy
        self.messages.reserveCapacity(min(policy.maxMessages, 1024))
    }

    /// Messages dropped by this buffer (not counting the library's own drops).
    var dropped: Int64 {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.droppedHere
    }

    /// Whether the subscription has ended.
    var isFinished: Bool {
        self.condition.lock()
        defer { self.condition.unlock() }
        return self.finished && self.messages.isEmpty
    }

    /// Messages and bytes held right now.
    var held: (messages: Int, bytes: Int) {
        self.condition.lock()
        defer { self.condition.unlock() }
        return (self.messages.count, self.bytes)
    }

    func deliver(_ message: NATSMessage) {
        self.condition.lock()
        while self.isFull && !self.cancelled && self.policy.mode == .backpressure {
            self.condition.wait()
        }
        if self.cancelled || self.isFull {
            self.droppedHere += 1
            self.condition.unlock()
            return
        }
        self.messages.append(message)
        self.bytes += message.payload.count
        let waiter = self.takeWaiterWithBatch()
        self.condition.unlock()
        waiter?.continuation.resume(returning: waiter?.batch)
    }

    func complete() {
        self.condition.lock()
        self.finished = true
        let waiter = self.waiter
        self.waiter = nil
        // A waiting consumer holds no messages (it would not wait otherwise): it gets the end.
        // Messages still buffered are taken by the consumer's next calls, then the end.
        self.condition.broadcast()
        self.condition.unlock()
        waiter?.resume(returning: nil)
    }

    /// Stops accepting messages and wakes a blocked producer (called on unsubscribe).
    func cancel() {
        self.condition.lock()
        self.cancelled = true
        self.condition.broadcast()
        self.condition.unlock()
    }

    /// The next batch, or `nil` once the subscription is finished and empty.
    func next() async -> [NATSMessage]? {
        switch self.take() {
        case .batch(let batch): return batch
        case .finished: return nil
        case .empty: break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                self.takeOrWait(continuation)
            }
        } onCancel: {
            self.cancelWaiter()
        }
    }

    private enum Take {
        case batch([NATSMessage])
        case finished
        case empty
    }

    private func take() -> Take {
        self.condition.lock()
        defer { self.condition.unlock() }
        if !self.messages.isEmpty { return .batch(self.drain()) }
        return self.finished ? .finished : .empty
    }

    private func takeOrWait(_ continuation: CheckedContinuation<[NATSMessage]?, Never>) {
        self.condition.lock()
        if !self.messages.isEmpty {
            let batch = self.drain()
            self.condition.unlock()
            continuation.resume(returning: batch)
        } else if self.finished || Task.isCancelled {
            self.condition.unlock()
            continuation.resume(returning: nil)
        } else {
            self.waiter = continuation
            self.condition.unlock()
        }
    }

    private func cancelWaiter() {
        self.condition.lock()
        let waiter = self.waiter
        self.waiter = nil
        self.condition.unlock()
        waiter?.resume(returning: nil)
    }

    private var isFull: Bool {
        self.messages.count >= self.policy.maxMessages || self.bytes >= self.policy.maxBytes
    }

    /// Takes the buffer; must hold the lock. Wakes a producer blocked on a full buffer.
    private func drain() -> [NATSMessage] {
        let batch = self.messages
        self.messages.removeAll(keepingCapacity: true)
        self.bytes = 0
        self.condition.broadcast()
        return batch
    }

    private func takeWaiterWithBatch() -> (continuation: CheckedContinuation<[NATSMessage]?, Never>, batch: [NATSMessage])? {
        guard let waiter = self.waiter else { return nil }
        self.waiter = nil
        return (waiter, self.drain())
    }
}

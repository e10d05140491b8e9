import CNATS

/// The messages of one subscription, in the order the server sent them.
///
/// Buffering is bounded by its ``NATSBufferingPolicy``; what could not be buffered is
/// counted in ``dropped``. Iterate it from one task.
public struct NATSSubscription: AsyncSequence, Sendable {
    public typealias Element = NATSMessage

    /// The subject (possibly with wildcards) subscribed to.
    public let subject: String
    let handle: NATSSubscriptionHandle
    let buffer: SubscriptionBuffer

    init(subject: String, handle: NATSSubscriptionHandle, buffer: SubscriptionBuffer) {
        self.subject = subject
        self.handle = handle
        self.buffer = buffer
    }

    /// Messages that were not delivered because the consumer fell behind: those nats.c dropped
    /// as a slow consumer plus those the buffer dropped.
    ///
    /// nats.c answers for a live subscription only; the last count read is kept, and read once
    /// more by ``unsubscribe()`` and ``drain()``, so the figure stays available after the end.
    public var dropped: Int64 {
        self.handle.libraryDropped() + self.buffer.dropped
    }

    /// Messages waiting: in nats.c's queue and in the buffer.
    public var pending: (messages: Int, bytes: Int) {
        var messages: Int32 = 0
        var bytes: Int32 = 0
        _ = natsSubscription_GetPending(self.handle.pointer, &messages, &bytes)
        let held = self.buffer.held
        return (Int(messages) + held.messages, Int(bytes) + held.bytes)
    }

    /// Stops the subscription; messages not yet delivered are dropped. Returns at once: nats.c is
    /// told from the connection's dedicated threads, since its lock can be held by a reconnect
    /// attempt, and the iteration ends when nats.c has finished the subscription.
    public func unsubscribe() {
        _ = self.handle.libraryDropped()
        self.buffer.cancel()
        let handle = self.handle
        runBlockingDetached { _ = natsSubscription_Unsubscribe(handle.pointer) }
    }

    /// Stops taking new messages but delivers those already received, then ends. Like
    /// ``unsubscribe()``, it returns at once and tells nats.c from the dedicated threads.
    public func drain() {
        _ = self.handle.libraryDropped()
        let handle = self.handle
        runBlockingDetached { _ = natsSubscription_Drain(handle.pointer) }
    }

    /// The same messages, each batch holding what had arrived when the consumer asked (one
    /// wake-up per batch): for consumers that handle a burst at once.
    public var batches: Batches { Batches(handle: self.handle, buffer: self.buffer) }

    /// The subscription's messages in batches, in order; never an empty batch.
    public struct Batches: AsyncSequence, Sendable {
        public typealias Element = [NATSMessage]
        let handle: NATSSubscriptionHandle
        let buffer: SubscriptionBuffer

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(handle: self.handle, buffer: self.buffer)
        }

        public struct AsyncIterator: AsyncIteratorProtocol {
            /// Held so that iterating keeps the subscription alive even when the sequence is gone.
            let handle: NATSSubscriptionHandle
            let buffer: SubscriptionBuffer

            public mutating func next() async -> [NATSMessage]? {
                await self.buffer.next()
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: self.handle, buffer: self.buffer)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        /// Held so that iterating keeps the subscription alive even when the sequence is gone.
        let handle: NATSSubscriptionHandle
        let buffer: SubscriptionBuffer
        var batch: [NATSMessage] = []
        var index = 0

        public mutating func next() async -> NATSMessage? {
            if self.index == self.batch.count {
                guard let next = await self.buffer.next() else { return nil }
                self.batch = next
                self.index = 0
            }
            defer { self.index += 1 }
            return self.batch[self.index]
        }
    }
}

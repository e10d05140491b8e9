import Foundation

/// Pulls from a durable consumer with requests it drives itself.
///
/// Each ``fetch(batch:expires:)`` sends one `CONSUMER.MSG.NEXT` request with its own reply
/// token and collects until the batch is full, the server says the request is done (404, 408,
/// 409), or a local deadline passes. The deadline covers a pull request lost in a reconnect
/// (a reconnect re-sends subscriptions but not outstanding pulls).
public actor JetStreamConsumer {
    /// The stream pulled from.
    public nonisolated let stream: String
    /// The durable consumer's name.
    public nonisolated let name: String
    private let jetStream: JetStream
    private let inbox: String
    private let subscription: NATSSubscription
    private var leftover: [NATSMessage] = []
    private var fetching = false

    init(jetStream: JetStream, stream: String, name: String) throws {
        self.jetStream = jetStream
        self.stream = stream
        self.name = name
        self.inbox = jetStream.connection.newInbox()
        self.subscription = try jetStream.connection.subscribe(to: self.inbox + ".*")
    }

    deinit {
        self.subscription.unsubscribe()
    }

    /// Up to `batch` messages; fewer (possibly none) if the consumer has fewer within `expires`.
    public func fetch(batch: Int, expires: Duration = .seconds(5)) async throws -> [JetStreamMessage] {
        precondition(batch > 0, "batch must be positive")
        // The actor is re-entrant at its awaits; two fetches would share one inbox buffer.
        guard !self.fetching else {
            throw ServiceKitError(.jetStream, "fetch on \(self.stream)/\(self.name) while another fetch runs: one at a time per consumer")
        }
        self.fetching = true
        defer { self.fetching = false }
        let token = NUID.next()
        let reply = self.inbox + "." + token
        let request = #"{"batch":\#(batch),"expires":\#(expires.nanoseconds)}"#
        try self.jetStream.connection.publish(
            Array(request.utf8),
            to: "\(self.jetStream.apiPrefix).CONSUMER.MSG.NEXT.\(self.stream).\(self.name)",
            reply: reply
        )
        let deadline = ContinuousClock.now + expires + .seconds(2)
        var collected: [JetStreamMessage] = []
        while collected.count < batch {
            let messages = try await self.next(until: deadline)
            guard !messages.isEmpty else { break }  // local deadline
            var done = false
            for (index, message) in messages.enumerated() {
                if let status = message.status {
                    // 100 is an idle heartbeat; other statuses end the request they answer.
                    if status != 100 && message.subject == reply {
                        done = true
                    }
                    continue
                }
                // Data from an earlier request that timed out locally is delivered all the same.
                collected.append(JetStreamMessage(message, connection: self.jetStream.connection))
                if collected.count == batch {
                    self.leftover.append(contentsOf: messages[(index + 1)...].filter { $0.status == nil })
                    done = true
                    break
                }
            }
            if done { break }
        }
        return collected
    }

    /// The next buffered messages, or none once `deadline` passes.
    private func next(until deadline: ContinuousClock.Instant) async throws -> [NATSMessage] {
        if !self.leftover.isEmpty {
            defer { self.leftover = [] }
            return self.leftover
        }
        let buffer = self.subscription.buffer
        return try await withThrowingTaskGroup(of: [NATSMessage].self) { group in
            group.addTask { await buffer.next() ?? [] }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return []
            }
            var messages: [NATSMessage] = []
            // Take the first answer, then collect the other too: a batch handed over while the
            // wait was being cancelled must not be lost.
            if let first = try await group.next() { messages += first }
            group.cancelAll()
            while let more = try await group.next() { messages += more }
            if messages.isEmpty && self.subscription.buffer.isFinished {
                throw ServiceKitError(.natsClosed, "the consumer's subscription ended")
            }
            return messages
        }
    }
}

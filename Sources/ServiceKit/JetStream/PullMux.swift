import CNATS
import Synchronization

/// Routes the answers to JetStream pull requests through one wildcard inbox subscription per
/// connection, so a thousand waiting pulls cost a thousand dictionary entries, not a thousand
/// subscriptions (each of which nats.c serves with a thread of its own).
///
/// A pull is one `CONSUMER.MSG.NEXT` request with its own reply token. The server answers its
/// end (404, 408, 409) on that token, but delivers data under the message's own subject, so
/// data is routed by the consumer its acknowledgement subject names, to that consumer's
/// oldest waiting pull (the order the server serves pull requests in). A pull collects until
/// its batch is full, the server ends it, or a local deadline passes (a reconnect re-sends
/// subscriptions, not outstanding pulls). A message no pull waits for is negatively
/// acknowledged, so the server delivers it again at once instead of after the ack wait.
final class PullMux: MessageSink {
    private struct Pull {
        var consumer: String
        var batch: Int
        var messages: [NATSMessage] = []
        var continuation: CheckedContinuation<[NATSMessage], any Error>?
    }

    private struct State {
        var pulls: [String: Pull] = [:]
        /// Stream and consumer → tokens of its waiting pulls, oldest first.
        var queues: [String: [String]] = [:]

        mutating func remove(_ token: String) -> Pull? {
            guard let pull = self.pulls.removeValue(forKey: token) else { return nil }
            self.queues[pull.consumer]?.removeAll { $0 == token }
            if self.queues[pull.consumer]?.isEmpty == true { self.queues[pull.consumer] = nil }
            return pull
        }
    }

    private let prefix: String
    private let state = Mutex(State())
    private let subscription = Mutex<NATSSubscriptionHandle?>(nil)
    private weak let connection: NATSConnection?

    private init(connection: NATSConnection) {
        self.prefix = connection.newInbox()
        self.connection = connection
    }

    /// A mux subscribed to its own inbox wildcard on `connection`.
    static func make(on connection: NATSConnection) throws(ServiceKitError) -> PullMux {
        let mux = PullMux(connection: connection)
        let handle = try connection.subscribe(subject: mux.prefix + ".*", queue: nil, sink: mux)
        mux.subscription.withLock { $0 = handle }
        return mux
    }

    /// How many pulls are waiting.
    var waiting: Int { self.state.withLock { $0.pulls.count } }

    private static func consumerKey(stream: String, consumer: String) -> String { stream + "." + consumer }

    func deliver(_ message: NATSMessage) {
        if let status = message.status {
            guard status != 100, message.subject.hasPrefix(self.prefix + ".") else { return }  // 100: an idle heartbeat
            let token = String(message.subject.dropFirst(self.prefix.utf8.count + 1))
            let ended = self.state.withLock { $0.remove(token) }
            guard let ended else { return }
            // 404 and 408 end a pull that found nothing; 409 (the consumer was deleted, or has
            // too many pulls waiting) and 503 (no such consumer) are failures the caller must see.
            if status == 409 || status == 503, ended.messages.isEmpty {
                let reason = message.statusDescription ?? "status \(status)"
                ended.continuation?.resume(throwing: ServiceKitError(.jetStream, "pull from \(ended.consumer) refused: \(reason)"))
            } else {
                ended.continuation?.resume(returning: ended.messages)
            }
            return
        }
        guard let reply = message.reply, let metadata = JetStreamMessage.parse(reply) else { return }
        let key = Self.consumerKey(stream: metadata.stream, consumer: metadata.consumer)
        enum Outcome {
            case collected
            case full(CheckedContinuation<[NATSMessage], any Error>?, [NATSMessage])
            case unclaimed
        }
        let outcome: Outcome = self.state.withLock { state in
            guard let token = state.queues[key]?.first, var pull = state.pulls[token] else { return .unclaimed }
            pull.messages.append(message)
            guard pull.messages.count >= pull.batch else {
                state.pulls[token] = pull
                return .collected
            }
            _ = state.remove(token)
            return .full(pull.continuation, pull.messages)
        }
        switch outcome {
        case .collected:
            break
        case .full(let continuation?, let messages):
            continuation.resume(returning: messages)
        case .full(nil, let messages):
            // Its pull had not begun waiting yet (it will answer empty): hand them back.
            self.handBack(messages)
        case .unclaimed:
            // Its pull has ended.
            self.handBack([message])
        }
    }

    /// Has the server deliver `messages` again now, instead of after the consumer's ack wait.
    private func handBack(_ messages: [NATSMessage]) {
        for message in messages {
            if let reply = message.reply { try? self.connection?.publish(Array("-NAK".utf8), to: reply) }
        }
    }

    func complete() {
        let all = self.state.withLock { state in
            defer { state = State() }
            return state.pulls.values.compactMap(\.continuation)
        }
        for continuation in all {
            continuation.resume(throwing: ServiceKitError(.natsClosed, "connection closed while pulling"))
        }
    }

    /// Sends one pull request for up to `batch` messages (the server waits up to `expires`) and
    /// answers the data messages it delivered, once the batch is full, the server ends the
    /// request, or `expires` and two seconds have passed.
    func pull(
        stream: String,
        consumer: String,
        batch: Int,
        expires: Duration,
        apiPrefix: String,
        on connection: NATSConnection
    ) async throws -> [NATSMessage] {
        let token = NUID.next()
        let request = #"{"batch":\#(batch),"expires":\#(expires.nanoseconds)}"#
        let key = Self.consumerKey(stream: stream, consumer: consumer)
        self.state.withLock { state in
            state.pulls[token] = Pull(consumer: key, batch: batch)
            state.queues[key, default: []].append(token)
        }
        return try await withThrowingTaskGroup(of: [NATSMessage]?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        let armed = self.state.withLock { state -> Bool in
                            guard state.pulls[token] != nil else { return false }
                            state.pulls[token]?.continuation = continuation
                            return true
                        }
                        guard armed else {
                            continuation.resume(returning: [])
                            return
                        }
                        do {
                            try connection.publish(
                                Array(request.utf8),
                                to: JetStreamOperation.consumerNext(stream: stream, consumer: consumer).subject(apiPrefix: apiPrefix),
                                reply: self.prefix + "." + token
                            )
                        } catch {
                            self.end(token, with: .failure(error))
                        }
                    }
                } onCancel: {
                    self.end(token, with: .success(()))
                }
            }
            group.addTask {
                try? await Task.sleep(for: expires + .seconds(2))
                self.end(token, with: .success(()))
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let messages = result { return messages }
            }
            return []
        }
    }

    /// Ends a pull: it answers what it collected, or `result`'s error.
    private func end(_ token: String, with result: Result<Void, any Error>) {
        let ended = self.state.withLock { $0.remove(token) }
        guard let ended else { return }
        switch result {
        case .success:
            ended.continuation?.resume(returning: ended.messages)
        case .failure(let error):
            ended.continuation?.resume(throwing: error)
        }
    }
}

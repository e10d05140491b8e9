import CNATS
import Synchronization

/// Routes replies to waiting requests through one wildcard inbox subscription.
final class RequestMux: MessageSink {
    private let prefix: String
    private let waiting = Mutex<[String: CheckedContinuation<NATSMessage, any Error>]>([:])
    /// Keeps the C subscription alive; set once right after init.
    private let subscription = Mutex<NATSSubscriptionHandle?>(nil)

    private init(prefix: String) {
        self.prefix = prefix
    }

    /// A mux subscribed to its own inbox wildcard. Replies are handed straight to the waiting
    /// request on the delivery thread, so the mux never buffers.
    static func make(on connection: NATSConnection) throws(ServiceKitError) -> RequestMux {
        let mux = RequestMux(prefix: connection.newInbox())
        let handle = try connection.subscribe(subject: mux.prefix + ".*", queue: nil, sink: mux)
        mux.subscription.withLock { $0 = handle }
        return mux
    }

    func deliver(_ message: NATSMessage) {
        let token = message.subject.dropFirst(self.prefix.utf8.count + 1)
        let continuation = self.waiting.withLock { $0.removeValue(forKey: String(token)) }
        guard let continuation else { return }  // a reply after its timeout
        if message.status == 503 {
            continuation.resume(throwing: ServiceKitError(.natsNoResponders, "no responders for the request"))
        } else {
            continuation.resume(returning: message)
        }
    }

    func complete() {
        let all = self.waiting.withLock { waiting in
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for continuation in all {
            continuation.resume(throwing: ServiceKitError(.natsClosed, "connection closed while waiting for a reply"))
        }
    }

    func request(
        _ payload: some Collection<UInt8>,
        to subject: String,
        headers: NATSHeaders,
        timeout: Duration,
        on connection: NATSConnection
    ) async throws -> NATSMessage {
        let token = NUID.next()
        let reply = self.prefix + "." + token
        let payload = Array(payload)
        return try await withThrowingTaskGroup(of: NATSMessage?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        self.waiting.withLock { $0[token] = continuation }
                        // Cancelled (by the timeout or the caller) before registering: onCancel
                        // found nothing to fail, so fail here.
                        if Task.isCancelled {
                            self.fail(token, CancellationError())
                            return
                        }
                        do {
                            try connection.publish(payload, to: subject, reply: reply, headers: headers)
                        } catch {
                            self.fail(token, error)
                        }
                    }
                } onCancel: {
                    self.fail(token, CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                self.fail(token, ServiceKitError(.natsTimeout, "no reply from \(subject) within \(timeout)"))
                throw ServiceKitError(.natsTimeout, "no reply from \(subject) within \(timeout)")
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let message = result { return message }
            }
            throw ServiceKitError(.natsTimeout, "no reply from \(subject) within \(timeout)")
        }
    }

    private func fail(_ token: String, _ error: any Error) {
        let continuation = self.waiting.withLock { $0.removeValue(forKey: token) }
        continuation?.resume(throwing: error)
    }
}

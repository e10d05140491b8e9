import Synchronization

/// The local provider's memory: the request counter, the scripted faults waiting (FIFO), and
/// the requests received (the last ``maximumRecords``).
final class AnthropicLocalState: Sendable {
    static let maximumRecords = 10_000
    static let maximumFaults = 1000

    private struct Storage {
        var counter = 0
        var faults: [AnthropicLocalFault] = []
        var requests: [AnthropicLocalServer.RecordedRequest] = []
    }

    private let storage = Mutex(Storage())

    /// Counts one more request to `/v1/messages`; answers its number (1, 2, 3…).
    func nextIndex() -> Int {
        self.storage.withLock { storage in
            storage.counter += 1
            return storage.counter
        }
    }

    /// How many requests `/v1/messages` has received.
    var requestCount: Int { self.storage.withLock { $0.counter } }

    /// Queues `faults`; false (and nothing queued) past ``maximumFaults``.
    func enqueue(_ faults: [AnthropicLocalFault]) -> Bool {
        self.storage.withLock { storage in
            guard storage.faults.count + faults.count <= Self.maximumFaults else { return false }
            storage.faults.append(contentsOf: faults)
            return true
        }
    }

    /// The oldest queued fault, removed.
    func takeFault() -> AnthropicLocalFault? {
        self.storage.withLock { storage in storage.faults.isEmpty ? nil : storage.faults.removeFirst() }
    }

    /// How many faults are queued.
    var pendingFaults: Int { self.storage.withLock { $0.faults.count } }

    func clearFaults() {
        self.storage.withLock { $0.faults.removeAll() }
    }

    func record(_ request: AnthropicLocalServer.RecordedRequest) {
        self.storage.withLock { storage in
            storage.requests.append(request)
            if storage.requests.count > Self.maximumRecords { storage.requests.removeFirst(storage.requests.count - Self.maximumRecords) }
        }
    }

    /// The requests recorded, in the order their answers were decided.
    var requests: [AnthropicLocalServer.RecordedRequest] { self.storage.withLock { $0.requests } }
}

import Synchronization

/// ``AsyncPermits`` per key (a tenant): at most `count` holders of one key at once, the rest
/// of that key wait their turn; other keys are not held up. A key's permits exist while
/// someone holds or waits for them.
public final class KeyedPermits: Sendable {
    private let permits = Mutex<[String: (permits: AsyncPermits, users: Int)]>([:])
    /// The most holders of one key at once.
    public let count: Int

    public init(_ count: Int) {
        precondition(count > 0)
        self.count = count
    }

    /// Runs `body` holding one of `key`'s permits.
    /// - Throws: `CancellationError` if cancelled while waiting; what `body` throws.
    public func run<T>(_ key: String, _ body: () async throws -> T) async throws -> T {
        let permits = self.permits.withLock { all in
            let entry = all[key] ?? (AsyncPermits(self.count), 0)
            all[key] = (entry.permits, entry.users + 1)
            return entry.permits
        }
        defer {
            self.permits.withLock { all in
                guard let entry = all[key] else { return }
                all[key] = entry.users > 1 ? (entry.permits, entry.users - 1) : nil
            }
        }
        return try await permits.run(body)
    }
}

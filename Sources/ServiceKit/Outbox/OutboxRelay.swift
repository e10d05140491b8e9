public import Logging
public import PostgresNIO
public import ServiceLifecycle

/// Sends what a service's transactional outbox holds, then deletes it. A service writes outbox
/// rows in the transaction that changes its state (table `outbox` of its schema: `id bigserial`,
/// `tenant_id`, `kind`, `payload bytea`, `attempts integer`); the relay hands them to `send`
/// after commit. Each row is sent at least once: a crash between sending and deleting sends it
/// again, so what a row carries must be idempotent (a msgId, a JetStream message id).
///
/// A round runs at once when a change commits (``kick()``) and every half second. One replica
/// sends at a time (a transaction-scoped advisory lock per schema); rows of the ``Policy/first``
/// kinds go first; a failure holds back only the later rows of its kind and tenant; consecutive
/// rows of a ``Policy/batched`` kind and one tenant go to `send` together (at most
/// ``Policy/maxBatch``); a row refused for good (a ``ServiceEventRefusal`` that is not
/// retryable) is kept with `attempts` = ``dead`` and not sent again.
public final class OutboxRelay: Service, Sendable {
    /// How the rows of one service's outbox are ordered, grouped and sent.
    public struct Policy: Sendable {
        /// Names the advisory lock (with the schema), e.g. `approvals outbox`.
        public var lockName: String
        /// Kinds sent before any other (what someone waits for).
        public var first: Set<String>
        /// Kinds whose consecutive rows of one tenant are sent together.
        public var batched: Set<String>
        /// The most rows sent together.
        public var maxBatch: Int

        public init(lockName: String, first: Set<String> = [], batched: Set<String> = [], maxBatch: Int = ServiceEventSender.maxBatch) {
            self.lockName = lockName
            self.first = first
            self.batched = batched
            self.maxBatch = maxBatch
        }
    }

    /// Sends rows of one kind and tenant (one row unless the kind is batched).
    public typealias Send = @Sendable (_ kind: String, _ tenant: String, _ payloads: [[UInt8]]) async throws -> Void

    let client: PostgresClient
    let policy: Policy
    let send: Send
    let logger: Logger
    private let wakeUps = WakeUps(every: .milliseconds(500))

    /// Rows taken per round.
    public static let batch = 200
    /// The `attempts` of a row refused for good: kept for an operator to look at, not sent again.
    public static let dead = 1_000_000

    public init(client: PostgresClient, policy: Policy, logger: Logger, send: @escaping Send) {
        self.client = client
        self.policy = policy
        self.send = send
        self.logger = logger
    }

    /// Starts a round now (a change has committed).
    public func kick() {
        self.wakeUps.kick()
    }

    /// Ends at graceful shutdown; what is left is sent by the next start (or another replica).
    public func run() async throws {
        await self.wakeUps.run {
            do {
                return try await self.round() >= Self.batch
            } catch  where !Task.isCancelled {
                self.logger.warning("outbox round failed", metadata: ["error": "\(String(reflecting: error))"])
            } catch {}
            return false
        }
    }

    /// Sends what waits; returns the number of rows sent.
    @discardableResult
    public func round() async throws -> Int {
        try await self.client.transaction(logger: self.logger) { connection in
            // Per schema: deployments (and tests) sharing a database do not wait for each other.
            let lock = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtext(\(self.policy.lockName)), hashtext(current_schema()))",
                logger: self.logger
            )
            var locked = false
            for try await value in lock.decode(Bool.self) { locked = value }
            guard locked else { return 0 }
            let rows = try await connection.query(
                "SELECT id, tenant_id, kind, payload FROM outbox WHERE attempts < \(Self.dead) ORDER BY id LIMIT \(Self.batch)",
                logger: self.logger
            )
            var items: [(id: Int64, tenant: String, kind: String, payload: ByteBuffer)] = []
            for try await (id, tenant, kind, payload) in rows.decode((Int64, String, String, ByteBuffer).self) {
                items.append((id, tenant, kind, payload))
            }
            items = items.filter { self.policy.first.contains($0.kind) } + items.filter { !self.policy.first.contains($0.kind) }
            var sent: [Int64] = []
            var failed: [Int64] = []
            var dead: [Int64] = []
            var blocked: Set<String> = []
            var index = 0
            while index < items.count {
                let item = items[index]
                let lane = item.kind + "\u{0}" + item.tenant
                if blocked.contains(lane) {
                    index += 1
                    continue
                }
                var end = index + 1
                if self.policy.batched.contains(item.kind) {
                    while end < items.count, end - index < self.policy.maxBatch, items[end].kind == item.kind, items[end].tenant == item.tenant {
                        end += 1
                    }
                }
                let group = items[index..<end]
                do {
                    try await self.send(item.kind, item.tenant, group.map { Array(buffer: $0.payload) })
                    sent += group.map(\.id)
                } catch  where Task.isCancelled {
                    throw CancellationError()
                } catch let refusal as ServiceEventRefusal where !refusal.retryable && group.count > 1 {
                    // One bad row must not take the others with it: each goes alone, once.
                    for row in group {
                        do {
                            try await self.send(row.kind, row.tenant, [Array(buffer: row.payload)])
                            sent.append(row.id)
                        } catch let refusal as ServiceEventRefusal where !refusal.retryable {
                            dead.append(row.id)
                            self.logger.error(
                                "outbox item refused for good; kept, not sent again",
                                metadata: ["id": "\(row.id)", "error": "\(refusal)"]
                            )
                        } catch {
                            failed.append(row.id)
                            blocked.insert(lane)
                        }
                    }
                } catch let refusal as ServiceEventRefusal where !refusal.retryable {
                    dead += group.map(\.id)
                    self.logger.error(
                        "outbox item refused for good; kept, not sent again",
                        metadata: ["ids": "\(group.map(\.id))", "error": "\(refusal)"]
                    )
                } catch {
                    blocked.insert(lane)
                    failed += group.map(\.id)
                    self.logger.warning(
                        "outbox items not sent yet",
                        metadata: ["kind": "\(item.kind)", "count": "\(group.count)", "error": "\(String(reflecting: error))"]
                    )
                }
                index = end
            }
            if !sent.isEmpty {
                try await connection.query("DELETE FROM outbox WHERE id = ANY(\(sent))", logger: self.logger)
            }
            if !failed.isEmpty {
                try await connection.query("UPDATE outbox SET attempts = attempts + 1 WHERE id = ANY(\(failed))", logger: self.logger)
            }
            if !dead.isEmpty {
                try await connection.query("UPDATE outbox SET attempts = \(Self.dead) WHERE id = ANY(\(dead))", logger: self.logger)
            }
            return sent.count
        }
    }
}

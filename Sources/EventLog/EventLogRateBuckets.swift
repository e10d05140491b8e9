public import Logging
public import PostgresNIO
public import ServiceKit

/// Ingest's tenant rates in its schema (`rate_buckets`), shared by every replica: one bucket per
/// tenant and lane, keyed `<lane>:<tenant>`.
public enum EventLogRateBuckets {
    static let table = "rate_buckets"

    /// The buckets of one lane (`bulk`, `priority`), keyed by tenant: `capacity` events at once,
    /// refilled at `perSecond`.
    public static func lane(_ lane: String, client: PostgresClient, capacity: Double, perSecond: Double, logger: Logger) -> PostgresTokenBuckets {
        PostgresTokenBuckets(client: client, table: Self.table, keyPrefix: lane + ":", capacity: capacity, perSecond: perSecond, logger: logger)
    }
}

/// What a subscription does when its consumer falls behind. Every policy is bounded, and
/// every message that is not delivered is counted in ``NATSSubscription/dropped``.
public struct NATSBufferingPolicy: Sendable, Hashable {
    enum Mode: Hashable {
        case backpressure
        case dropNewest
    }

    let mode: Mode
    /// The most messages held between the library and the consumer.
    public let maxMessages: Int
    /// The most payload bytes held between the library and the consumer.
    public let maxBytes: Int

    /// Holds up to the limits here; beyond them the library's delivery thread of this
    /// subscription waits, so messages queue in nats.c up to its pending limits (the same
    /// numbers again), past which nats.c drops them and counts them as a slow consumer.
    /// Nothing is lost while the consumer keeps up on average; memory stays within twice
    /// the limits.
    ///
    /// The default message limit is high because a burst first queues in nats.c, in front of
    /// the per-message copy into Swift: a 100k burst on a busy 2-core machine overflowed a
    /// 64k queue in a debug build. The byte limit bounds memory whatever the message count.
    public static func backpressure(maxMessages: Int = 262_144, maxBytes: Int = 64 << 20) -> Self {
        Self(mode: .backpressure, maxMessages: max(1, maxMessages), maxBytes: max(1, maxBytes))
    }

    /// Holds up to the limits and drops (and counts) newer messages while full. Never blocks
    /// the library: for consumers where the newest data is replaceable (e.g. a live view that
    /// back-fills gaps from the database).
    public static func dropNewest(maxMessages: Int = 65_536, maxBytes: Int = 64 << 20) -> Self {
        Self(mode: .dropNewest, maxMessages: max(1, maxMessages), maxBytes: max(1, maxBytes))
    }
}

import Synchronization

/// A token bucket: `perSecond` tokens added continuously, at most `capacity` held. Pure: the
/// caller passes the time.
public struct TokenBucket: Sendable {
    /// The most tokens held (the burst).
    public var capacity: Double
    /// Tokens added per second.
    public var perSecond: Double
    private var tokens: Double
    private var updated: ContinuousClock.Instant

    /// A full bucket.
    public init(capacity: Double, perSecond: Double, now: ContinuousClock.Instant = .now) {
        self.capacity = capacity
        self.perSecond = perSecond
        self.tokens = capacity
        self.updated = now
    }

    /// Takes one token at `now`; `nil` if there was one, else how long until there is.
    public mutating func take(now: ContinuousClock.Instant = .now) -> Duration? {
        self.charge(1, now: now)
    }

    /// Charges `cost` tokens at `now` if the bucket is not in debt: a charge may take it below
    /// zero (a large request goes through whole), and then nothing more passes until the refill
    /// has paid the debt back. `nil` if charged, else how long until the bucket is out of debt.
    public mutating func charge(_ cost: Double, now: ContinuousClock.Instant = .now) -> Duration? {
        if let wait = self.debt(now: now) { return wait }
        self.tokens -= cost
        return nil
    }

    /// Takes `cost` tokens at `now` whatever the bucket holds (it may go into debt): for what
    /// was admitted after ``debt(now:)`` found none.
    public mutating func spend(_ cost: Double, now: ContinuousClock.Instant = .now) {
        _ = self.debt(now: now)
        self.tokens -= cost
    }

    /// How long until the bucket is out of debt at `now` (`nil`: it holds a token or more now).
    /// Refills, and charges nothing.
    public mutating func debt(now: ContinuousClock.Instant = .now) -> Duration? {
        self.tokens = min(self.capacity, self.tokens + max(0, (now - self.updated).secondsDouble) * self.perSecond)
        self.updated = max(self.updated, now)  // callers racing on a shared bucket never move it back
        guard self.tokens < 1 else { return nil }
        return self.perSecond > 0 ? .seconds((1 - self.tokens) / self.perSecond) : .seconds(Int64.max)
    }

    /// Whether the bucket holds as many tokens as it can at `now` (it carries no information).
    public func isFull(now: ContinuousClock.Instant) -> Bool {
        self.tokens + (now - self.updated).secondsDouble * self.perSecond >= self.capacity
    }
}

/// Token buckets per key (an actor of a tenant, a source address), each `capacity` deep and
/// refilled at `perSecond`. Bounded: past `maxKeys`, buckets that have refilled are forgotten
/// (they hold no information); if that is not enough, the key is refused until some refill.
/// Per replica: N replicas admit up to N times as many.
public final class KeyedTokenBuckets: Sendable {
    public let capacity: Double
    public let perSecond: Double
    public let maxKeys: Int
    private let buckets: Mutex<[String: TokenBucket]>

    public init(capacity: Double, perSecond: Double, maxKeys: Int = 100_000) {
        self.capacity = capacity
        self.perSecond = perSecond
        self.maxKeys = maxKeys
        self.buckets = Mutex([:])
    }

    /// `perMinute` a minute, up to `perMinute` at once.
    public convenience init(perMinute: Int, maxKeys: Int = 100_000) {
        self.init(capacity: Double(perMinute), perSecond: Double(perMinute) / 60, maxKeys: maxKeys)
    }

    /// Takes one token for `key`; `nil` if admitted, else how long until one is free.
    public func take(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        self.withBucket(key, now: now) { $0.take(now: now) }
    }

    /// Charges `cost` tokens to `key` unless its bucket is in debt (see ``TokenBucket/charge(_:now:)``);
    /// `nil` if charged, else how long until it is out of debt.
    public func charge(_ key: String, cost: Double, now: ContinuousClock.Instant = .now) -> Duration? {
        self.withBucket(key, now: now) { $0.charge(cost, now: now) }
    }

    /// Takes `cost` tokens from `key`'s bucket whatever it holds (see ``TokenBucket/spend(_:now:)``).
    public func spend(_ key: String, cost: Double, now: ContinuousClock.Instant = .now) {
        _ = self.withBucket(key, now: now) {
            $0.spend(cost, now: now)
            return nil
        }
    }

    /// How long until `key`'s bucket is out of debt (`nil`: it is not in debt); charges nothing.
    public func debt(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        self.buckets.withLock { buckets in
            guard var bucket = buckets[key] else { return nil }
            let wait = bucket.debt(now: now)
            buckets[key] = bucket
            return wait
        }
    }

    private func withBucket(_ key: String, now: ContinuousClock.Instant, _ body: (inout TokenBucket) -> Duration?) -> Duration? {
        self.buckets.withLock { buckets in
            if buckets[key] == nil, buckets.count >= self.maxKeys {
                buckets = buckets.filter { !$0.value.isFull(now: now) }
                guard buckets.count < self.maxKeys else { return .seconds(1) }
            }
            var bucket = buckets[key] ?? TokenBucket(capacity: self.capacity, perSecond: self.perSecond, now: now)
            let wait = body(&bucket)
            buckets[key] = bucket
            return wait
        }
    }
}

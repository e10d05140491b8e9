import Foundation
import Synchronization

/// Token buckets per key (an actor of a tenant): `perMinute` requests a minute, refilled
/// continuously, up to `perMinute` at once. Per replica: N replicas admit up to N times as many.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let perMinute: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    init(perMinute: Int) {
        self.perMinute = perMinute
    }

    /// Takes one token for `key`; nil if admitted, else the seconds until one is free.
    func take(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        let capacity = Double(self.perMinute)
        let perSecond = capacity / 60
        return self.buckets.withLock { buckets in
            if buckets.count > 100_000 {
                // Forget buckets that have refilled: they hold no information.
                buckets = buckets.filter { now - $0.value.updated < .seconds(60) }
            }
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updated: now)
            let elapsed = now - bucket.updated
            bucket.tokens = min(capacity, bucket.tokens + perSecond * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }
}

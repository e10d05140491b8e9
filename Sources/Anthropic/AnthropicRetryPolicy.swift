public import Foundation

/// When and how long to wait before trying a request again, as the official SDKs do.
///
/// - Retried: 408, 409, 429, every 5xx (529 included) and connection failures; never 400, 401,
///   403, 404 or 413. An `x-should-retry: false` header forbids a retry; `x-should-retry: true`
///   allows one for a status not in the never list.
/// - The wait before retry `n` (0 for the first) is `min(base · 2ⁿ, cap)` (0.5 s and 8 s by
///   default) times a random factor in 0.75…1, unless the answer said how long to wait with
///   `retry-after-ms` or `retry-after` (seconds or an HTTP date), and that is more than 0 and at
///   most 60 s.
public struct AnthropicRetryPolicy: Sendable, Equatable {
    /// How many times a failed request is sent again (2: three attempts in all).
    public var maxRetries: Int
    /// The wait before the first retry, before jitter.
    public var backoffBase: Duration
    /// The longest wait computed by backoff (a `retry-after` may ask for more, up to 60 s).
    public var backoffCap: Duration

    /// The longest `retry-after` honoured; a longer one falls back to the backoff.
    public static let maximumRetryAfter = Duration.seconds(60)

    /// A policy; the defaults are the SDKs'.
    public init(maxRetries: Int = 2, backoffBase: Duration = .milliseconds(500), backoffCap: Duration = .seconds(8)) {
        self.maxRetries = max(0, maxRetries)
        self.backoffBase = max(.zero, backoffBase)
        self.backoffCap = max(self.backoffBase, backoffCap)
    }

    /// Whether an answer with `status` may be retried, given its `x-should-retry` header.
    public static func shouldRetry(status: Int, shouldRetryHeader: String?) -> Bool {
        if [400, 401, 403, 404, 413].contains(status) { return false }
        switch shouldRetryHeader?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "true": return true
        case "false": return false
        default: return status == 408 || status == 409 || status == 429 || (500...599).contains(status)
        }
    }

    /// The wait before retry `retriesSoFar` + 1 without a `retry-after`: `min(base · 2ⁿ, cap)`
    /// times `jitter` (a factor in 0.75…1; random when not given).
    public func backoff(retriesSoFar: Int, jitter: Double = Double.random(in: 0.75...1)) -> Duration {
        let exponent = Double(min(max(retriesSoFar, 0), 30))
        let seconds = min(Self.seconds(self.backoffBase) * pow(2, exponent), Self.seconds(self.backoffCap))
        return .nanoseconds(Int64((seconds * min(max(jitter, 0.75), 1) * 1e9).rounded()))
    }

    /// The wait before the next retry: the `retry-after` the answer asked for when it is more
    /// than 0 and at most 60 s, otherwise ``backoff(retriesSoFar:jitter:)``.
    public func delay(retriesSoFar: Int, retryAfter: Double?, jitter: Double = Double.random(in: 0.75...1)) -> Duration {
        if let retryAfter, retryAfter > 0, retryAfter <= Self.seconds(Self.maximumRetryAfter) {
            return .nanoseconds(Int64((retryAfter * 1e9).rounded()))
        }
        return self.backoff(retriesSoFar: retriesSoFar, jitter: jitter)
    }

    /// How many seconds an answer asks to wait: `retry-after-ms` (milliseconds) first, then
    /// `retry-after` as seconds or as an HTTP date (relative to `now`). Nil when neither header
    /// is there or readable; not bounded (``delay(retriesSoFar:retryAfter:jitter:)`` is).
    public static func retryAfterSeconds(retryAfterMilliseconds: String?, retryAfter: String?, now: Date = Date()) -> Double? {
        if let value = retryAfterMilliseconds.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }), value.isFinite {
            return value / 1000
        }
        guard let retryAfter = retryAfter?.trimmingCharacters(in: .whitespaces), !retryAfter.isEmpty else { return nil }
        if let seconds = Double(retryAfter) { return seconds.isFinite ? seconds : nil }
        guard let date = Self.httpDate(retryAfter) else { return nil }
        return date.timeIntervalSince(now)
    }

    /// An HTTP date (RFC 9110's IMF-fixdate, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

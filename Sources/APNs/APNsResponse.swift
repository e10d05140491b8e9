/// What APNs answered one push: its status, the `reason` of its JSON body and, on a 410, since
/// when the token is no longer valid.
public struct APNsResponse: Sendable, Hashable {
    public var status: Int
    /// The `reason` of an error body (`BadDeviceToken`, `Unregistered`…); nil on success.
    public var reason: String?
    /// A 410's `timestamp` (milliseconds since the epoch): the token has not been valid since.
    public var timestamp: Int64?
    /// The `apns-id` APNs echoed.
    public var apnsID: String?

    public init(status: Int, reason: String?, timestamp: Int64?, apnsID: String?) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
    }

    /// What to do about this answer, as Apple's documentation says.
    public var outcome: APNsOutcome {
        switch (self.status, self.reason) {
        case (200, _): .delivered
        case (410, _): .unregistered(since: self.timestamp)
        case (400, "BadDeviceToken"): .wrongEnvironment
        case (400, "DeviceTokenNotForTopic"), (400, "TopicDisallowed"): .rejected
        case (403, "ExpiredProviderToken"), (403, "InvalidProviderToken"): .providerTokenRejected
        case (429, "TooManyProviderTokenUpdates"): .retryLater
        case (429, _): .deviceThrottled
        case (500...599, _): .retryLater
        default: .rejected
        }
    }
}

/// The decision an APNs answer calls for.
public enum APNsOutcome: Sendable, Hashable {
    /// Accepted by APNs.
    case delivered
    /// 410: the token is no longer valid since the given time (milliseconds since the epoch);
    /// remove it unless the device registered it again after that.
    case unregistered(since: Int64?)
    /// 400 `BadDeviceToken`: the token is not valid in this environment (most often a sandbox
    /// token sent to production); mark it, do not retry there.
    case wrongEnvironment
    /// 403 `ExpiredProviderToken`/`InvalidProviderToken`: renew the provider token once, then
    /// retry.
    case providerTokenRejected
    /// 429 `TooManyRequests`: too many pushes to this one device; back off that device only.
    case deviceThrottled
    /// 5xx, or a provider token throttle: retry with exponential backoff.
    case retryLater
    /// Any other 4xx: a bug or bad data; never retried.
    case rejected
}

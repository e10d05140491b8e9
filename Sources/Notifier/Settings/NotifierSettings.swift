public import ServiceKit

/// The notifier's own configuration keys and their values.
public struct NotifierSettings: ServiceSettings {
    /// The Postgres schema the notifier owns: devices, preferences, push jobs.
    @Setting("notifier.schema", "the Postgres schema the notifier owns", default: "notifier", .identifier)
    public var schema: String
    /// APNs' base URL for both environments, or nil for Apple's hosts.
    @Setting(
        "notifier.apns.url",
        "APNs' base URL for both environments (a local APNs server); Apple's hosts for sandbox and production when absent",
        .optional(.baseURL(schemes: ["https"]))
    )
    var apnsURL: String?
    /// The team's signing key (`.p8`, PEM).
    @Setting("notifier.apns.key-file", "the team's APNs signing key (.p8, PEM)", secret: true, .fileContents)
    var apnsKeyPEM: String
    @Setting("notifier.apns.key-id", "the signing key's id (10 characters, from Apple)")
    var apnsKeyID: String
    @Setting("notifier.apns.team-id", "the developer team id (10 characters, from Apple)")
    var apnsTeamID: String
    /// The bundle ids a device may register for.
    @Setting(
        "notifier.apns.topic",
        "the app's bundle id, or several comma-separated; a registration for another topic answers 400",
        default: ["dev.swarmdeck.app"],
        .list
    )
    var apnsTopics: Set<String>
    /// Extra CA certificates (PEM) to trust for APNs, for the local server.
    @Setting(
        "notifier.apns.ca-file",
        "a PEM file of CA certificates to trust for APNs besides the system's (the local server's)",
        .optional(.fileContents)
    )
    var apnsCertificateAuthorityPEM: String?
    /// How long one APNs request may take.
    @Setting("notifier.apns.timeout-ms", "the deadline of one APNs request, connection included", default: 10_000, in: 100...120_000)
    var apnsTimeoutMilliseconds: Int
    /// Pushes one device gets in a window before the rest fold into one summary.
    @Setting(
        "notifier.device-push-limit",
        "pushes one device gets in a window of notifier.device-window-seconds; past it they fold into one summary push sent when the window ends",
        default: 5,
        in: 1...1000
    )
    var devicePushLimit: Int
    /// The length of a device's rate window.
    @Setting(
        "notifier.device-window-seconds",
        "the length of a device's rate window (notifier.device-push-limit counts pushes in it)",
        default: 60,
        in: 1...3600
    )
    var deviceWindowSeconds: Int
    /// Pushes in flight at once per replica.
    @Setting("notifier.send-concurrency", "pushes in flight at once per replica (streams on the APNs connection)", default: 64, in: 1...1000)
    var sendConcurrency: Int
    /// Attempts before a job that keeps failing for a retryable reason is given up.
    @Setting("notifier.max-attempts", "attempts before a push that keeps failing (5xx, timeouts) is given up as failed", default: 12, in: 1...100)
    var maxAttempts: Int
    /// The first retry's longest wait, and the cap of the exponential backoff.
    @Setting("notifier.backoff-base-ms", "the longest wait before the first retry; it doubles each attempt", default: 1000, in: 10...600_000)
    var backoffBaseMilliseconds: Int
    @Setting(
        "notifier.backoff-cap-ms",
        "the longest wait between two attempts, at least notifier.backoff-base-ms",
        default: 300_000,
        in: 10...86_400_000
    )
    var backoffCapMilliseconds: Int
    /// `apns-expiration`: how long APNs keeps trying to reach an offline device.
    @Setting("notifier.expiration-seconds", "apns-expiration: how long APNs keeps trying an offline device", default: 3600, in: 0...2_592_000)
    var expirationSeconds: Int
    /// A notice older than this when it arrives (a notifier down for long) is not pushed.
    @Setting(
        "notifier.max-notice-age-seconds",
        "an incident or gate notice older than this when the notifier takes it (after a long outage) is acknowledged without a push",
        default: 3600,
        in: 10...604_800
    )
    var maxNoticeAgeSeconds: Int
    /// Devices with a push registration per tenant (429 past it).
    @Setting("notifier.max-devices-per-tenant", "devices with a push registration per tenant (429 past it)", default: 10_000, in: 1...1_000_000)
    var maxDevicesPerTenant: Int
    /// How long sent and failed jobs are kept.
    @Setting("notifier.job-retention-hours", "how long sent, failed and dropped push jobs are kept", default: 72, in: 1...8760)
    var jobRetentionHours: Int
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    @Setting(.trustedProxies("notifier"))
    var trustedProxies: Set<String>
    /// An ACP thread's advances are pushed (silently) at most once per device per this many
    /// seconds, at the end of each such span.
    @Setting(
        "notifier.acp-push-interval-seconds",
        "an ACP thread's advances reach a device as at most one silent push per this many seconds (at the span's end)",
        default: 30,
        in: 1...3600
    )
    var acpPushIntervalSeconds: Int
    /// `/v1/acp` connections whose live threads are remembered (their presence announcements).
    @Setting(
        "notifier.max-presence-connections",
        "/v1/acp connections whose live threads the notifier remembers (past it a new one is not, and its device may get a needless silent push)",
        default: 100_000,
        in: 1...10_000_000
    )
    var maxPresenceConnections: Int

    public init() {}

    public mutating func validate() throws(ServiceKitError) {
        try self.$backoffCapMilliseconds.check(self.backoffCapMilliseconds, in: self.backoffBaseMilliseconds...86_400_000)
    }
}

public import Configuration
import Foundation
public import ServiceKit

/// The notifier's own configuration keys and their values.
public struct NotifierSettings: ServiceSettings {
    /// The Postgres schema the notifier owns: devices, preferences, push jobs.
    public var schema: String
    /// APNs' base URL for both environments, or nil for Apple's hosts.
    var apnsURL: String?
    /// The team's signing key (`.p8`, PEM).
    var apnsKeyPEM: String
    var apnsKeyID: String
    var apnsTeamID: String
    /// The bundle ids a device may register for.
    var apnsTopics: Set<String>
    /// Extra CA certificates (PEM) to trust for APNs, for the local server.
    var apnsCertificateAuthorityPEM: String?
    /// How long one APNs request may take.
    var apnsTimeoutMilliseconds: Int
    /// Pushes one device gets in a window before the rest fold into one summary.
    var devicePushLimit: Int
    /// The length of a device's rate window.
    var deviceWindowSeconds: Int
    /// Pushes in flight at once per replica.
    var sendConcurrency: Int
    /// Attempts before a job that keeps failing for a retryable reason is given up.
    var maxAttempts: Int
    /// The first retry's longest wait, and the cap of the exponential backoff.
    var backoffBaseMilliseconds: Int
    var backoffCapMilliseconds: Int
    /// `apns-expiration`: how long APNs keeps trying to reach an offline device.
    var expirationSeconds: Int
    /// A notice older than this when it arrives (a notifier down for long) is not pushed.
    var maxNoticeAgeSeconds: Int
    /// Devices with a push registration per tenant (429 past it).
    var maxDevicesPerTenant: Int
    /// How long sent and failed jobs are kept.
    var jobRetentionHours: Int
    /// Peers whose `X-Forwarded-For` names the client (the edge); `*` trusts every peer.
    var trustedProxies: Set<String>
    /// An ACP thread's advances are pushed (silently) at most once per device per this many
    /// seconds, at the end of each such span.
    var acpPushIntervalSeconds: Int
    /// `/v1/acp` connections whose live threads are remembered (their presence announcements).
    var maxPresenceConnections: Int

    public static let keys: [SettingKey] = [
        .notifierSchema, .apnsURL, .apnsKeyFile, .apnsKeyID, .apnsTeamID, .apnsTopics, .apnsCAFile, .apnsTimeoutMilliseconds,
        .devicePushLimit, .deviceWindowSeconds, .sendConcurrency, .maxAttempts, .backoffBaseMilliseconds, .backoffCapMilliseconds, .expirationSeconds,
        .maxNoticeAgeSeconds, .maxDevicesPerTenant, .jobRetentionHours, .notifierTrustedProxies, .acpPushIntervalSeconds,
        .maxPresenceConnections,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.notifierSchema)
        self.apnsURL = try reader.optionalSetting(.apnsURL, expected: "an https URL") { text in
            var base = text
            while base.hasSuffix("/") { base.removeLast() }
            return base.hasPrefix("https://") ? base : nil
        }
        self.apnsKeyPEM = try Self.file(reader, .apnsKeyFile)
        self.apnsKeyID = try reader.setting(.apnsKeyID)
        self.apnsTeamID = try reader.setting(.apnsTeamID)
        self.apnsTopics = Set(
            try reader.setting(.apnsTopics).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        )
        self.apnsCertificateAuthorityPEM = try reader.optionalSetting(.apnsCAFile, expected: "a readable PEM file") { path in
            try? String(contentsOfFile: path, encoding: .utf8)
        }
        self.apnsTimeoutMilliseconds = try reader.setting(.apnsTimeoutMilliseconds, in: 100...120_000)
        self.devicePushLimit = try reader.setting(.devicePushLimit, in: 1...1000)
        self.deviceWindowSeconds = try reader.setting(.deviceWindowSeconds, in: 1...3600)
        self.sendConcurrency = try reader.setting(.sendConcurrency, in: 1...1000)
        self.maxAttempts = try reader.setting(.maxAttempts, in: 1...100)
        self.backoffBaseMilliseconds = try reader.setting(.backoffBaseMilliseconds, in: 10...600_000)
        self.backoffCapMilliseconds = try reader.setting(.backoffCapMilliseconds, in: self.backoffBaseMilliseconds...86_400_000)
        self.expirationSeconds = try reader.setting(.expirationSeconds, in: 0...2_592_000)
        self.maxNoticeAgeSeconds = try reader.setting(.maxNoticeAgeSeconds, in: 10...604_800)
        self.maxDevicesPerTenant = try reader.setting(.maxDevicesPerTenant, in: 1...1_000_000)
        self.jobRetentionHours = try reader.setting(.jobRetentionHours, in: 1...8760)
        self.acpPushIntervalSeconds = try reader.setting(.acpPushIntervalSeconds, in: 1...3600)
        self.maxPresenceConnections = try reader.setting(.maxPresenceConnections, in: 1...10_000_000)
        self.trustedProxies = Set(try reader.setting(.notifierTrustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }

    private static func file(_ reader: ConfigReader, _ key: SettingKey) throws(ServiceKitError) -> String {
        try reader.setting(key, expected: "a readable file") { path in try? String(contentsOfFile: path, encoding: .utf8) }
    }
}

extension SettingKey {
    static let notifierSchema = SettingKey("notifier.schema", "the Postgres schema the notifier owns", default: "notifier")
    static let apnsURL = SettingKey(
        "notifier.apns.url",
        "APNs' base URL for both environments (a local APNs server); Apple's hosts for sandbox and production when absent",
        optional: true
    )
    static let apnsKeyFile = SettingKey("notifier.apns.key-file", "the team's APNs signing key (.p8, PEM)", secret: true)
    static let apnsKeyID = SettingKey("notifier.apns.key-id", "the signing key's id (10 characters, from Apple)")
    static let apnsTeamID = SettingKey("notifier.apns.team-id", "the developer team id (10 characters, from Apple)")
    static let apnsTopics = SettingKey(
        "notifier.apns.topic",
        "the app's bundle id, or several comma-separated; a registration for another topic answers 400",
        default: "dev.swarmdeck.app"
    )
    static let apnsCAFile = SettingKey(
        "notifier.apns.ca-file",
        "a PEM file of CA certificates to trust for APNs besides the system's (the local server's)",
        optional: true
    )
    static let apnsTimeoutMilliseconds = SettingKey(
        "notifier.apns.timeout-ms",
        "the deadline of one APNs request, connection included",
        default: "10000"
    )
    static let devicePushLimit = SettingKey(
        "notifier.device-push-limit",
        "pushes one device gets in a window of notifier.device-window-seconds; past it they fold into one summary push sent when the window ends",
        default: "5"
    )
    static let deviceWindowSeconds = SettingKey(
        "notifier.device-window-seconds",
        "the length of a device's rate window (notifier.device-push-limit counts pushes in it)",
        default: "60"
    )
    static let sendConcurrency = SettingKey(
        "notifier.send-concurrency",
        "pushes in flight at once per replica (streams on the APNs connection)",
        default: "64"
    )
    static let maxAttempts = SettingKey(
        "notifier.max-attempts",
        "attempts before a push that keeps failing (5xx, timeouts) is given up as failed",
        default: "12"
    )
    static let backoffBaseMilliseconds = SettingKey(
        "notifier.backoff-base-ms",
        "the longest wait before the first retry; it doubles each attempt",
        default: "1000"
    )
    static let backoffCapMilliseconds = SettingKey("notifier.backoff-cap-ms", "the longest wait between two attempts", default: "300000")
    static let expirationSeconds = SettingKey(
        "notifier.expiration-seconds",
        "apns-expiration: how long APNs keeps trying an offline device",
        default: "3600"
    )
    static let maxNoticeAgeSeconds = SettingKey(
        "notifier.max-notice-age-seconds",
        "an incident or gate notice older than this when the notifier takes it (after a long outage) is acknowledged without a push",
        default: "3600"
    )
    static let maxDevicesPerTenant = SettingKey(
        "notifier.max-devices-per-tenant",
        "devices with a push registration per tenant (429 past it)",
        default: "10000"
    )
    static let acpPushIntervalSeconds = SettingKey(
        "notifier.acp-push-interval-seconds",
        "an ACP thread's advances reach a device as at most one silent push per this many seconds (at the span's end)",
        default: "30"
    )
    static let maxPresenceConnections = SettingKey(
        "notifier.max-presence-connections",
        "/v1/acp connections whose live threads the notifier remembers (past it a new one is not, and its device may get a needless silent push)",
        default: "100000"
    )
    static let jobRetentionHours = SettingKey("notifier.job-retention-hours", "how long sent, failed and dropped push jobs are kept", default: "72")
    static let notifierTrustedProxies = SettingKey(
        "notifier.trusted-proxies",
        "peers whose X-Forwarded-For names the client, comma-separated; * trusts every peer",
        default: "127.0.0.1,::1"
    )
}

public import Configuration
public import ServiceKit

/// terminal-broker's own configuration keys and their values.
public struct TerminalSettings: ServiceSettings {
    /// The Postgres schema terminal-broker owns: hosts, pinned host keys, the audit trail.
    public var schema: String
    /// The broker's SSH private key (OpenSSH format, ed25519, unencrypted), as read at start.
    var keyText: String
    /// Hosts one tenant may register.
    var maxHostsPerTenant: Int
    /// Seconds to connect and authenticate to a host before `SSHHostUnreachable`.
    var connectTimeoutSeconds: Int
    /// The longest wait before a host that failed is tried again (the backoff doubles up to it).
    var maxBackoffSeconds: Int
    /// Output kept per attached session for viewers that reconnect, in bytes.
    var replayBytes: Int
    /// Output one viewer may have waiting before it gets a fresh screen instead.
    var viewerBufferBytes: Int
    /// Viewers one session may have at once (across phones).
    var maxViewersPerSession: Int
    /// Attached sessions (tmux clients) one tenant may have at once on this replica.
    var maxAttachesPerTenant: Int
    /// The largest input message a viewer may send, in bytes.
    var maxInputBytes: Int
    /// Where recordings are written.
    var recordingsDirectory: String
    /// Days a recording is kept.
    var recordingRetentionDays: Int
    /// The largest recording, in bytes (the rest of that attach is not kept).
    var maxRecordingBytes: Int
    /// The most one tenant's recordings may take on this replica, in bytes.
    var maxTenantRecordingBytes: Int
    /// Peers whose `X-Forwarded-For` names the client.
    var trustedProxies: Set<String>
    /// Which addresses hosts may have: public ones, and those in `terminal.allowed-networks`.
    var addressPolicy: AddressPolicy

    public static let keys: [SettingKey] = [
        .terminalSchema, .terminalKeyFile, .terminalMaxHostsPerTenant, .terminalConnectTimeoutSeconds, .terminalMaxBackoffSeconds,
        .terminalReplayBytes, .terminalViewerBufferBytes, .terminalMaxViewersPerSession, .terminalMaxAttachesPerTenant, .terminalMaxInputBytes,
        .terminalRecordingsDirectory, .terminalRecordingRetentionDays, .terminalMaxRecordingBytes,
        .terminalMaxTenantRecordingBytes, .terminalTrustedProxies,
        .terminalAllowedNetworks,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.terminalSchema)
        self.keyText = try reader.setting(.terminalKeyFile, expected: "a readable OpenSSH private key file") { path in
            try? String(contentsOfFile: path, encoding: .utf8)
        }
        do {
            _ = try OpenSSHPrivateKey(openSSH: self.keyText)
        } catch {
            throw ServiceKitError(.configuration, "\(SettingKey.terminalKeyFile): \(error)")
        }
        self.maxHostsPerTenant = try reader.setting(.terminalMaxHostsPerTenant, in: 1...10_000)
        self.connectTimeoutSeconds = try reader.setting(.terminalConnectTimeoutSeconds, in: 1...120)
        self.maxBackoffSeconds = try reader.setting(.terminalMaxBackoffSeconds, in: 1...3600)
        self.replayBytes = try reader.setting(.terminalReplayBytes, in: 4096...(64 << 20))
        self.viewerBufferBytes = try reader.setting(.terminalViewerBufferBytes, in: 4096...(64 << 20))
        self.maxViewersPerSession = try reader.setting(.terminalMaxViewersPerSession, in: 1...10_000)
        self.maxAttachesPerTenant = try reader.setting(.terminalMaxAttachesPerTenant, in: 1...10_000)
        self.maxInputBytes = try reader.setting(.terminalMaxInputBytes, in: 1...(1 << 20))
        self.recordingsDirectory = try reader.setting(.terminalRecordingsDirectory)
        self.recordingRetentionDays = try reader.setting(.terminalRecordingRetentionDays, in: 1...3650)
        self.maxRecordingBytes = try reader.setting(.terminalMaxRecordingBytes, in: 4096...(1 << 30))
        self.maxTenantRecordingBytes = try reader.setting(.terminalMaxTenantRecordingBytes, in: self.maxRecordingBytes...(1 << 50))
        self.trustedProxies = Set(try reader.setting(.terminalTrustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        let networks = try reader.setting(.terminalAllowedNetworks, expected: "comma-separated networks in CIDR notation") { IPNetwork.list($0) }
        self.addressPolicy = AddressPolicy(allowedNetworks: networks)
    }
}

extension SettingKey {
    static let terminalSchema = SettingKey("terminal.schema", "the Postgres schema terminal-broker owns", default: "terminal")
    static let terminalKeyFile = SettingKey(
        "terminal.ssh.key-file",
        "the broker's SSH private key (OpenSSH format, ed25519, unencrypted); hosts list its public key in authorized_keys",
        secret: true
    )
    static let terminalMaxHostsPerTenant = SettingKey(
        "terminal.max-hosts-per-tenant",
        "hosts one tenant may register (409 beyond)",
        default: "100"
    )
    static let terminalConnectTimeoutSeconds = SettingKey(
        "terminal.connect-timeout-seconds",
        "seconds to connect and authenticate to a host (SSHHostUnreachable beyond)",
        default: "10"
    )
    static let terminalMaxBackoffSeconds = SettingKey(
        "terminal.max-backoff-seconds",
        "the longest wait before a host that failed is tried again; until then requests get its last error at once",
        default: "30"
    )
    static let terminalReplayBytes = SettingKey(
        "terminal.replay-bytes",
        "output kept per attached session for viewers that reconnect (older output: a fresh screen instead)",
        default: "262144"
    )
    static let terminalViewerBufferBytes = SettingKey(
        "terminal.viewer-buffer-bytes",
        "output one viewer may have waiting; a viewer past it gets a fresh screen instead of what it missed",
        default: "1048576"
    )
    static let terminalMaxViewersPerSession = SettingKey(
        "terminal.max-viewers-per-session",
        "viewers one session may have at once on this replica (RateLimited, close 1013 beyond)",
        default: "200"
    )
    static let terminalMaxAttachesPerTenant = SettingKey(
        "terminal.max-attaches-per-tenant",
        "sessions one tenant may have attached at once on this replica (RateLimited, close 1013 beyond)",
        default: "50"
    )
    static let terminalMaxInputBytes = SettingKey(
        "terminal.max-input-bytes",
        "the largest input message a viewer may send (the WebSocket closes with 1009 beyond)",
        default: "16384"
    )
    static let terminalRecordingsDirectory = SettingKey(
        "terminal.recordings-dir",
        "where every attach's asciicast recording is written (one file per attached session, on this replica's disk)",
        default: "recordings"
    )
    static let terminalRecordingRetentionDays = SettingKey(
        "terminal.recordings-retention-days",
        "days a recording is kept (swept hourly)",
        default: "30"
    )
    static let terminalMaxRecordingBytes = SettingKey(
        "terminal.max-recording-bytes",
        "the largest recording; past it a marker says the rest of that attach was not kept",
        default: "67108864"
    )
    static let terminalAllowedNetworks = SettingKey(
        "terminal.allowed-networks",
        "networks (CIDR, comma-separated) hosts may be in besides public addresses; loopback, private, link-local (cloud metadata) and other internal addresses are refused unless listed",
        default: ""
    )
    static let terminalMaxTenantRecordingBytes = SettingKey(
        "terminal.max-recording-bytes-per-tenant",
        "the most one tenant's recordings may take on a replica's disk; a new recording first removes the tenant's oldest until it fits at terminal.max-recording-bytes",
        default: "1073741824"
    )
    static let terminalTrustedProxies = SettingKey(
        "terminal.trusted-proxies",
        "peers whose X-Forwarded-For names the client, comma-separated; * trusts every peer",
        default: "127.0.0.1,::1"
    )
}

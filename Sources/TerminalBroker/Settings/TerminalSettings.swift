public import ServiceKit

/// terminal-broker's own configuration keys and their values.
public struct TerminalSettings: ServiceSettings {
    /// The Postgres schema terminal-broker owns: hosts, pinned host keys, the audit trail.
    @Setting("terminal.schema", "the Postgres schema terminal-broker owns", default: "terminal", .identifier)
    public var schema: String
    /// The broker's SSH private key (OpenSSH format, ed25519, unencrypted), as read at start.
    @Setting(
        "terminal.ssh.key-file",
        "the broker's SSH private key (OpenSSH format, ed25519, unencrypted), read at start; each tenant's key is derived from it, and hosts list their tenant's public key (`GET /v1/terminal/ssh-key`) in `authorized_keys`. Missing, unreadable or not such a key: the service does not start. A new key changes every tenant's key",
        secret: true,
        .fileContents
    )
    var keyText: String
    /// Hosts one tenant may register.
    @Setting("terminal.max-hosts-per-tenant", "hosts one tenant may register (409 beyond)", default: 100, in: 1...10_000)
    var maxHostsPerTenant: Int
    /// Seconds to connect and authenticate to a host before `SSHHostUnreachable`.
    @Setting(
        "terminal.connect-timeout-seconds",
        "seconds for the TCP connection, and again for the SSH handshake and authentication; later is `SSHHostUnreachable`",
        default: 10,
        in: 1...120
    )
    var connectTimeoutSeconds: Int
    /// The longest wait before a host that failed is tried again (the backoff doubles up to it).
    @Setting(
        "terminal.max-backoff-seconds",
        "the longest wait before a host that failed is tried again (1 s, doubling to it); until then requests get its last error at once",
        default: 30,
        in: 1...3600
    )
    var maxBackoffSeconds: Int
    /// Output kept per attached session for viewers that reconnect, in bytes.
    @Setting(
        "terminal.replay-bytes",
        "output kept per attached session for viewers that reconnect; a viewer that missed older output gets a fresh screen instead",
        default: 262_144,
        in: 4096...(64 << 20)
    )
    var replayBytes: Int
    /// Output one viewer may have waiting before it gets a fresh screen instead.
    @Setting(
        "terminal.viewer-buffer-bytes",
        "output one viewer may have waiting; a viewer past it gets a fresh screen instead of what it missed",
        default: 1_048_576,
        in: 4096...(64 << 20)
    )
    var viewerBufferBytes: Int
    /// Viewers one session may have at once (across phones).
    @Setting(
        "terminal.max-viewers-per-session",
        "viewers one session may have at once on this replica (RateLimited, close 1013 beyond)",
        default: 200,
        in: 1...10_000
    )
    var maxViewersPerSession: Int
    /// Attached sessions (tmux clients) one tenant may have at once on this replica.
    @Setting(
        "terminal.max-attaches-per-tenant",
        "sessions one tenant may have attached (tmux clients) at once on this replica; attaching one more is refused: `end` `RateLimited`, close 1013",
        default: 50,
        in: 1...10_000
    )
    var maxAttachesPerTenant: Int
    /// The largest input message a viewer may send, in bytes.
    @Setting(
        "terminal.max-input-bytes",
        "the largest input a viewer may send: a client message over this plus 256 bytes closes the WebSocket with 1009",
        default: 16_384,
        in: 1...(1 << 20)
    )
    var maxInputBytes: Int
    /// Where recordings are written.
    @Setting(
        "terminal.recordings-dir",
        "where recordings are written (relative: to the working directory); one file per attachment, `DIR/base64url(tenant)/HOST/base64url(session)/MILLIS-HEX.cast`, mode 0600",
        default: "recordings"
    )
    var recordingsDirectory: String
    /// Days a recording is kept.
    @Setting("terminal.recordings-retention-days", "days a recording is kept (swept hourly)", default: 30, in: 1...3650)
    var recordingRetentionDays: Int
    /// The largest recording, in bytes (the rest of that attach is not kept).
    @Setting(
        "terminal.max-recording-bytes",
        "the largest recording; past it a marker says the rest of that attach was not kept",
        default: 67_108_864,
        in: 4096...(1 << 30)
    )
    var maxRecordingBytes: Int
    /// The most one tenant's recordings may take on this replica, in bytes.
    @Setting(
        "terminal.max-recording-bytes-per-tenant",
        "the most one tenant's recordings may take on a replica's disk, at least terminal.max-recording-bytes; a new recording first removes the tenant's oldest until it fits at terminal.max-recording-bytes",
        default: 1 << 30,
        in: 4096...(1 << 50)
    )
    var maxTenantRecordingBytes: Int
    /// Peers whose `X-Forwarded-For` names the client.
    @Setting(.trustedProxies("terminal"))
    var trustedProxies: Set<String>
    /// The networks hosts may be in besides public addresses (``addressPolicy``).
    @Setting(
        "terminal.allowed-networks",
        "networks hosts may be in besides public addresses; loopback, private, link-local and other internal addresses are refused otherwise (400 at registration for a numeric address, `SSHHostUnreachable` for a name). Malformed: the service does not start",
        default: [],
        SettingFormat(
            expected: "comma-separated networks in CIDR notation",
            parse: IPNetwork.list,
            render: { $0.map(\.description).joined(separator: ",") }
        )
    )
    var allowedNetworks: [IPNetwork]

    public init() {}

    public mutating func validate() throws(ServiceKitError) {
        do {
            _ = try OpenSSHPrivateKey(openSSH: self.keyText)
        } catch {
            throw ServiceKitError(.configuration, "\(self.$keyText): \(error)")
        }
        try self.$maxTenantRecordingBytes.check(self.maxTenantRecordingBytes, in: self.maxRecordingBytes...(1 << 50))
    }

    /// Which addresses hosts may have: public ones, and those in `terminal.allowed-networks`.
    var addressPolicy: AddressPolicy { AddressPolicy(allowedNetworks: self.allowedNetworks) }
}

import Configuration

/// One documented configuration key.
///
/// A key `nats.url` is read, first match wins, from the command line (`--nats-url`), the
/// environment (`NATS_URL`) and the JSON file named by `CONFIG_FILE` (`{"nats": {"url": …}}`).
public struct SettingKey: Sendable, Hashable, CustomStringConvertible {
    /// The dotted name, e.g. `nats.url`.
    public let name: String
    /// What it sets, for `swarmdeckd config keys` and the docs.
    public let summary: String
    /// The value used when none is configured; `nil` makes the key required.
    public let defaultValue: String?
    /// Whether to keep the value out of logs.
    public let isSecret: Bool
    /// Whether the key may be absent even without a default (the reader decides what that means).
    public let isOptional: Bool
    /// What a value must be ("an integer in 1...100"), when the key was declared with a
    /// ``SettingFormat``.
    public let expected: String?

    public init(
        _ name: String,
        _ summary: String,
        default defaultValue: String? = nil,
        secret: Bool = false,
        optional: Bool = false,
        expected: String? = nil
    ) {
        self.name = name
        self.summary = summary
        self.defaultValue = defaultValue
        self.isSecret = secret
        self.isOptional = optional
        self.expected = expected
    }

    /// `NATS_URL` for `nats.url`.
    public var environmentName: String {
        String(self.name.uppercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
    }

    /// `--nats-url` for `nats.url`.
    public var flag: String {
        "--" + String(self.name.map { $0 == "." ? "-" : $0 })
    }

    public var description: String {
        "'\(self.name)' (environment \(self.environmentName), flag \(self.flag))"
    }

    var configKey: ConfigKey { ConfigKey(self.name) }
}

extension SettingKey {
    /// Throws unless `value` is in `range`: for a range another setting bounds, checked in
    /// ``SettingsGroup/validate()``.
    public func check(_ value: Int, in range: ClosedRange<Int>) throws(ServiceKitError) {
        guard range.contains(value) else {
            throw ServiceKitError(
                .configuration,
                "malformed configuration key \(self): '\(value)' is not an integer in \(range.lowerBound)...\(range.upperBound)"
            )
        }
    }
}

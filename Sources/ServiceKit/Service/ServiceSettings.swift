public import Configuration

/// A service's own configuration: its keys, read and checked once at start-up.
///
/// ``ServiceMain`` reads the settings before anything else, so a bad value stops the service
/// with a message naming the key, before it touches NATS or Postgres.
public protocol ServiceSettings: Sendable {
    /// Every key the service reads beyond ``ServiceConfiguration/keys``, for
    /// `swarmdeck config keys` and the service's doc page.
    static var keys: [SettingKey] { get }

    /// The Postgres schema the service owns (its migrations run there).
    var schema: String { get }

    /// Reads and validates the keys.
    init(reader: ConfigReader) throws(ServiceKitError)
}

extension ConfigReader {
    /// A schema or other SQL identifier from `key`: `[a-z_][a-z0-9_]{0,62}`.
    public func identifierSetting(_ key: SettingKey) throws(ServiceKitError) -> String {
        try self.setting(key, expected: "an identifier matching [a-z_][a-z0-9_]{0,62}") { text in
            Migrator.isIdentifier(text) ? text : nil
        }
    }
}

/// A service's own configuration: its ``Setting`` declarations, read and checked once at
/// start-up by ``SettingsGroup/init(reader:)``.
///
/// ``ServiceMain`` reads the settings together with ServiceKit's (``ServiceKitSettings``) right
/// at start, before it touches NATS or Postgres, so a bad value stops the service with a
/// message naming every bad key of both. Its keys, beyond ``ServiceConfiguration/keys``, are
/// ``SettingsGroup/keys``.
public protocol ServiceSettings: SettingsGroup {
    /// The Postgres schema the service owns (its migrations run there).
    var schema: String { get }
}

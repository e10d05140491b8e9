/// A service's own configuration: its ``Setting`` declarations, read and checked once at
/// start-up by ``SettingsGroup/init(reader:)``.
///
/// ``ServiceMain`` reads the settings right after `log.level`, before it touches NATS or
/// Postgres, so a bad value stops the service with a message naming every bad key of the
/// service's own (ServiceKit's keys are read after, one at a time). Its keys, beyond
/// ``ServiceConfiguration/keys``, are ``SettingsGroup/keys``.
public protocol ServiceSettings: SettingsGroup {
    /// The Postgres schema the service owns (its migrations run there).
    var schema: String { get }
}

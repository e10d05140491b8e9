/// One configuration setting, declared once where its value is kept: its key, summary, typed
/// default and format (the range of an integer), as swift-argument-parser's `@Option` declares
/// an option.
///
/// ```swift
/// public struct ApprovalsSettings: ServiceSettings {
///     @Setting("approvals.max-pending-per-agent", "pending gates one agent may have (429 past it)", default: 20, in: 1...10_000)
///     var maxPendingPerAgent: Int
///     public init() {}
/// }
/// ```
///
/// The settings are read by ``SettingsGroup/init(reader:)``, which reports every key that is
/// missing or malformed at once; `keys` lists the declarations in order, for `swarmdeck
/// config keys` and the docs. Inside a ``SettingGroup`` the name is relative to the group's
/// prefix. `$name` is the key, for messages that name it.
@propertyWrapper
public struct Setting<Value: Sendable>: Sendable {
    /// The key, its group's prefix included.
    public let key: SettingKey
    var value: Value?

    /// The value read (or the default, outside ``SettingsGroup/init(reader:)``).
    public var wrappedValue: Value {
        get {
            guard let value = self.value else {
                preconditionFailure("\(self.key) has no value: settings are made by init(reader:)")
            }
            return value
        }
        set { self.value = newValue }
    }

    /// The key, for messages that name it.
    public var projectedValue: SettingKey { self.key }

    /// A setting named `name` (relative to its group's prefix), described by `summary`,
    /// parsed by `format`; without a default it is required (unless `format` allows absence).
    public init(_ name: String, _ summary: String, default defaultValue: Value? = nil, secret: Bool = false, _ format: SettingFormat<Value>) {
        let scope = SettingsScope.current
        self.key = SettingKey(
            scope?.qualified(name) ?? name,
            summary,
            default: defaultValue.map(format.render),
            secret: secret,
            optional: format.allowsAbsence,
            expected: format.expected
        )
        // Outside a reading scope (listing the keys): the default, or what absence means.
        self.value = scope?.read(self.key, format) ?? defaultValue ?? format.absentValue
    }

    /// A shared declaration (``Setting/trustedProxies(_:)``), declared here.
    public init(_ shared: Self) {
        self = shared
    }
}

extension Setting where Value == Int {
    /// An integer setting within `range`.
    public init(_ name: String, _ summary: String, default defaultValue: Int? = nil, in range: ClosedRange<Int>) {
        self.init(name, summary, default: defaultValue, .integer(in: range))
    }
}

extension Setting where Value == Double {
    /// A decimal setting within `range`.
    public init(_ name: String, _ summary: String, default defaultValue: Double, in range: ClosedRange<Double>) {
        self.init(name, summary, default: defaultValue, .number(in: range))
    }
}

extension Setting where Value == Bool {
    /// A boolean setting.
    public init(_ name: String, _ summary: String, default defaultValue: Bool) {
        self.init(name, summary, default: defaultValue, .boolean)
    }
}

extension Setting where Value == String {
    /// A setting of any non-empty text.
    public init(_ name: String, _ summary: String, default defaultValue: String? = nil, secret: Bool = false) {
        self.init(name, summary, default: defaultValue, secret: secret, .text)
    }

    /// The schema of ingest's event log, read (never written) `use`: the same default and
    /// format wherever a service reads the log.
    public static func eventLogSchema(_ name: String, _ use: String) -> Self {
        Self(name, "ingest's schema, read (never written) \(use)", default: "ingest", .identifier)
    }

    /// `<service>.web-base-url`: the base of the `webUrl` deep links in `answers`.
    public static func webBaseURL(_ service: String, _ answers: String) -> Self {
        Self("\(service).web-base-url", "base of the webUrl deep links \(answers)", default: "http://127.0.0.1:8080", .baseURL)
    }

}

extension Setting where Value == Set<String> {
    /// `<service>.trusted-proxies`: the peers whose `X-Forwarded-For` names the client (the
    /// edge); `*` trusts every peer.
    public static func trustedProxies(_ service: String) -> Self {
        Self(
            "\(service).trusted-proxies",
            "comma-separated peers whose X-Forwarded-For names the client (the edge); * trusts every peer",
            default: ["127.0.0.1", "::1"],
            .list
        )
    }
}

extension Setting: Equatable where Value: Equatable {}

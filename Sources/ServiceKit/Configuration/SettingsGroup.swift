public import Configuration

/// A group of ``Setting``s: a service's settings (``ServiceSettings``), or a part of them
/// several services share, declared with ``SettingGroup``.
///
/// A group is a struct of `@Setting` and `@SettingGroup` properties with an empty `init()`.
/// Checks that span settings go in ``validate()``, which also derives values kept beside them.
public protocol SettingsGroup: Sendable {
    /// The declarations with their defaults; ``init(reader:)`` is what reads them.
    init()

    /// Checks the values read together (one setting's range bounded by another's) and derives
    /// what is kept beside them. Runs only when every declaration read.
    mutating func validate() throws(ServiceKitError)
}

extension SettingsGroup {
    public mutating func validate() throws(ServiceKitError) {}

    /// Every key the group declares, in order, for `swarmdeckd config keys` and the docs.
    public static var keys: [SettingKey] {
        SettingsScope.making(reader: nil) { Self() }.1.keys
    }

    /// The group read from `reader` and validated.
    /// - Throws: ``ServiceKitError/Code/configuration`` naming every key that is missing or
    ///   malformed, or what ``validate()`` found.
    public init(reader: ConfigReader) throws(ServiceKitError) {
        let (made, state) = SettingsScope.making(reader: reader) { Self() }
        if let first = state.problems.first {
            throw state.problems.count == 1 ? first : ServiceKitError(.configuration, state.problems.map(\.message).joined(separator: "; "))
        }
        self = made
        try self.validate()
    }
}

/// Settings shared by several services, declared once (as swift-argument-parser's
/// `@OptionGroup`): `@SettingGroup("control.oidc") var oidc: OIDCSignInSettings` reads the
/// group's keys under `control.oidc.`.
@propertyWrapper
public struct SettingGroup<Group: SettingsGroup>: Sendable {
    public var wrappedValue: Group

    /// The group with its keys under `prefix`.
    public init(_ prefix: String) {
        self.init(prefix, reading: true)
    }

    /// The group with its keys under `prefix`, read only when its key `gate` is configured and
    /// not empty (`control.oidc.issuer`): while it is not, the feature is off, and the group
    /// keeps its defaults without reading or checking any of its keys.
    public init(_ prefix: String, enabledBy gate: String) {
        let configured = SettingsScope.current.flatMap { scope in
            scope.reader?.string(forKey: ConfigKey(scope.qualified(prefix + "." + gate)))
        }
        self.init(prefix, reading: !(configured ?? "").trimmingWhitespace.isEmpty)
    }

    private init(_ prefix: String, reading: Bool) {
        // Outside a scope (its type made with init()): its defaults, its keys still under prefix.
        let scope = SettingsScope.current ?? SettingsScope(reader: nil, prefix: "", record: SettingsScope.Record())
        var group = scope.nested(prefix, reading: reading) { Group() }
        if reading && scope.reader != nil && scope.isValid {
            do {
                try group.validate()
            } catch {
                scope.recordProblem(error)
            }
        }
        self.wrappedValue = group
    }
}

extension SettingGroup: Equatable where Group: Equatable {}

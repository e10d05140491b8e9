public import Configuration
import Synchronization

/// Where the ``Setting``s being made read their values: while a settings type is made by
/// ``SettingsGroup/init(reader:)`` or listed by ``SettingsGroup/keys``, each declaration
/// records its key here and, when reading, its value or what is wrong with it.
struct SettingsScope: Sendable {
    /// The scope of the settings being made on this task, if any.
    @TaskLocal static var current: SettingsScope?

    /// nil while the keys are only listed.
    let reader: ConfigReader?
    /// The prefix of the ``SettingGroup`` being made ("" at the top).
    let prefix: String
    let record: Record

    /// What the declarations made in one scope left.
    final class Record: Sendable {
        struct State {
            var keys: [SettingKey] = []
            var problems: [ServiceKitError] = []
        }
        let state = Mutex(State())
    }

    func qualified(_ name: String) -> String {
        self.prefix.isEmpty ? name : self.prefix + "." + name
    }

    /// Records `key`, and reads it when reading: nil (and a problem recorded) when it is
    /// missing or malformed.
    func read<Value>(_ key: SettingKey, _ format: SettingFormat<Value>) -> Value? {
        self.record.state.withLock { $0.keys.append(key) }
        guard let reader = self.reader else { return nil }
        do {
            return try reader.setting(key, format)
        } catch {
            self.recordProblem(error)
            return nil
        }
    }

    /// Whether the declarations made so far all read.
    var isValid: Bool { self.record.state.withLock { $0.problems.isEmpty } }

    func recordProblem(_ error: ServiceKitError) {
        self.record.state.withLock { $0.problems.append(error) }
    }

    /// `make()` with a scope of its own; what its declarations left.
    static func making<Made>(reader: ConfigReader?, _ make: () -> Made) -> (Made, Record.State) {
        let scope = SettingsScope(reader: reader, prefix: "", record: Record())
        let made = Self.$current.withValue(scope) { make() }
        return (made, scope.record.state.withLock { $0 })
    }

    /// `make()` with this scope's record, its keys under `prefix`, and this scope's reader
    /// when `reading` (otherwise the keys are only listed).
    func nested<Made>(_ prefix: String, reading: Bool, _ make: () -> Made) -> Made {
        let scope = SettingsScope(reader: reading ? self.reader : nil, prefix: self.qualified(prefix), record: self.record)
        return Self.$current.withValue(scope) { make() }
    }
}

extension ConfigReader {
    /// The key's value in `format`, or its default (or `format`'s absence when it allows one).
    /// - Throws: ``ServiceKitError/Code/configuration`` naming the key when it is missing or
    ///   malformed (with what the format expects and why it refused the text; a secret's
    ///   value never).
    public func setting<Value>(_ key: SettingKey, _ format: SettingFormat<Value>) throws(ServiceKitError) -> Value {
        if let absent = format.absentValue, key.defaultValue == nil, self.string(forKey: key.configKey, isSecret: key.isSecret) == nil {
            return absent
        }
        let configured = self.string(forKey: key.configKey, isSecret: key.isSecret)
        guard let text = configured ?? key.defaultValue else {
            throw ServiceKitError(.configuration, "missing configuration key \(key): \(key.summary)")
        }
        switch format.interpret(text.trimmingWhitespace) {
        case .success(let value):
            return value
        case .failure(let refusal):
            let shown = key.isSecret ? "<secret>" : "'\(text)'"
            let why = refusal.reason.map { " (\($0))" } ?? ""
            throw ServiceKitError(.configuration, "malformed configuration key \(key): \(shown) is not \(format.expected)\(why)")
        }
    }
}

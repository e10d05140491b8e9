import Foundation

/// How a setting's text becomes its value, and a value its text again (a default in
/// `swarmdeckd config keys` and the docs).
///
/// The text is trimmed of white space before it is parsed.
public struct SettingFormat<Value: Sendable>: Sendable {
    /// What a value must be, for error messages and the docs: "an integer in 1...100".
    public let expected: String
    /// The text's value, or why it is refused (never the text itself: a secret's value must
    /// not reach the message).
    let interpret: @Sendable (String) -> Result<Value, SettingRefusal>
    let render: @Sendable (Value) -> String
    /// The value of a key that is absent and has no default, when absence is allowed; `nil`
    /// makes such a key missing (an error).
    let absentValue: Value?

    /// A format that parses with `parse` (nil: malformed) and renders with `render`.
    public init(expected: String, parse: @escaping @Sendable (String) -> Value?, render: @escaping @Sendable (Value) -> String) {
        self.init(expected: expected, interpret: { parse($0).map { .success($0) } ?? .failure(SettingRefusal()) }, render: render)
    }

    /// A format that interprets a text as its value or says why it refuses it (what is wrong,
    /// beyond ``expected``; never the text), and renders with `render`.
    public init(
        expected: String,
        interpret: @escaping @Sendable (String) -> Result<Value, SettingRefusal>,
        render: @escaping @Sendable (Value) -> String
    ) {
        self.init(expected: expected, interpret: interpret, render: render, absentValue: nil)
    }

    init(
        expected: String,
        interpret: @escaping @Sendable (String) -> Result<Value, SettingRefusal>,
        render: @escaping @Sendable (Value) -> String,
        absentValue: Value?
    ) {
        self.expected = expected
        self.interpret = interpret
        self.render = render
        self.absentValue = absentValue
    }

    /// Whether a key of this format may be absent without a default.
    var allowsAbsence: Bool {
        if case .some = self.absentValue { return true }
        return false
    }

    /// This format's values passed through `check`: nil refuses the value, and `expected`
    /// says what is wanted instead.
    public func checked(_ expected: String, _ check: @escaping @Sendable (Value) -> Bool) -> Self {
        let interpret = self.interpret
        return Self(
            expected: expected,
            interpret: { text in
                interpret(text).flatMap { check($0) ? .success($0) : .failure(SettingRefusal()) }
            },
            render: self.render,
            absentValue: self.absentValue
        )
    }

    /// A format whose value is absent (`nil`) when the key is not configured, or configured
    /// empty when `emptyIsAbsent`.
    public static func optional<Wrapped: Sendable>(_ wrapped: SettingFormat<Wrapped>, emptyIsAbsent: Bool = false) -> Self
    where Value == Wrapped? {
        Self(
            expected: emptyIsAbsent ? "\(wrapped.expected), or empty" : wrapped.expected,
            interpret: { text in
                if emptyIsAbsent && text.isEmpty { return .success(nil) }
                return wrapped.interpret(text).map { .some($0) }
            },
            render: { value in value.map(wrapped.render) ?? "" },
            absentValue: .some(nil)
        )
    }
}

/// Why a setting's text was refused: `reason` says what is wrong beyond the format's
/// `expected` (never the text), or nil when there is nothing more to say.
public struct SettingRefusal: Error {
    public var reason: String?

    public init(_ reason: String? = nil) {
        self.reason = reason
    }
}

extension SettingFormat where Value == Int {
    /// A decimal integer within `range`.
    public static func integer(in range: ClosedRange<Int>) -> Self {
        Self(
            expected: "an integer in \(range.lowerBound)...\(range.upperBound)",
            parse: { Int($0).flatMap { range.contains($0) ? $0 : nil } },
            render: { String($0) }
        )
    }
}

extension SettingFormat where Value == Double {
    /// A finite decimal number within `range`.
    public static func number(in range: ClosedRange<Double>) -> Self {
        Self(
            expected: "a number in \(range.lowerBound)...\(range.upperBound)",
            parse: { Double($0).flatMap { $0.isFinite && range.contains($0) ? $0 : nil } },
            render: { String($0) }
        )
    }
}

extension SettingFormat where Value == Bool {
    /// `true`, `false`, `1`, `0`, `yes`, `no`, `on` or `off`.
    public static var boolean: Self {
        Self(
            expected: "a boolean (true or false)",
            parse: { text in
                switch text.lowercased() {
                case "true", "1", "yes", "on": true
                case "false", "0", "no", "off": false
                default: nil
                }
            },
            render: { String($0) }
        )
    }
}

extension SettingFormat where Value == String {
    /// Any text but the empty one.
    public static var text: Self {
        Self(expected: "a non-empty string", parse: { $0.isEmpty ? nil : $0 }, render: { $0 })
    }

    /// Any text, the empty one included.
    public static var anyText: Self {
        Self(expected: "a string", parse: { $0 }, render: { $0 })
    }

    /// A schema or other SQL identifier: `[a-z_][a-z0-9_]{0,62}`.
    public static var identifier: Self {
        Self(expected: "an identifier matching [a-z_][a-z0-9_]{0,62}", parse: { Migrator.isIdentifier($0) ? $0 : nil }, render: { $0 })
    }

    /// An http(s) base URL, kept without a trailing slash (for `webUrl` deep links).
    public static var baseURL: Self { Self.baseURL(schemes: ["https", "http"]) }

    /// A base URL of one of `schemes`, kept without a trailing slash.
    public static func baseURL(schemes: [String]) -> Self {
        Self(
            expected: schemes == ["https"] ? "an https URL" : "an http(s) URL",
            parse: { text in
                var base = text
                while base.hasSuffix("/") { base.removeLast() }
                return schemes.contains(where: { base.hasPrefix($0 + "://") }) ? base : nil
            },
            render: { $0 }
        )
    }

    /// The path of a readable text file; the value is the file's content (read at start).
    public static var fileContents: Self {
        Self(
            expected: "a readable file",
            interpret: { path in
                // The OS's reason when it cannot be read (the path is not a secret; the content may be).
                Result { try String(contentsOfFile: path, encoding: .utf8) }.mapError { SettingRefusal($0.localizedDescription) }
            },
            render: { $0 }
        )
    }
}

extension SettingFormat where Value == Set<String> {
    /// Items separated by commas (white space around each trimmed, empty ones dropped); at least one.
    public static var list: Self {
        Self(
            expected: "a comma-separated list",
            parse: { text in
                let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                return items.isEmpty ? nil : Set(items)
            },
            render: { $0.sorted().joined(separator: ",") }
        )
    }
}

/// The configuration tables of the README and the services' pages, written from the
/// declarations (`swarmdeckd config docs`) and checked against them by a unit test, so that no
/// page describes a key the code does not read.
public enum ConfigurationDocs {
    /// The line before a page's table.
    public static let begin = "<!-- BEGIN config keys: written by `swarmdeckd config docs` from the declarations; do not edit -->"
    /// The line after it.
    public static let end = "<!-- END config keys -->"

    /// A page and the keys its table shows.
    public struct Page: Sendable {
        /// The page's path from the repository's root.
        public let path: String
        public let keys: [SettingKey]
    }

    /// The README with the keys every service reads, and `docs/<name>.md` with each service's own.
    public static func pages(services: [(name: String, keys: [SettingKey])]) -> [Page] {
        [Page(path: "README.md", keys: ServiceConfiguration.keys)] + services.map { Page(path: "docs/\($0.name).md", keys: $0.keys) }
    }

    /// `keys` as a Markdown table: key, environment variable, default, what a value must be,
    /// meaning (the flag is the key after `--`, dashes for dots).
    public static func table(_ keys: [SettingKey]) -> String {
        var lines = ["| key | environment | default | accepts | meaning |", "| --- | --- | --- | --- | --- |"]
        for key in keys {
            let value =
                switch key.defaultValue {
                case .some(""): "empty"
                case .some(let text): "`\(text)`"
                case .none: key.isOptional ? "optional" : "required"
                }
            let shown = key.isSecret ? value + " (secret: never printed)" : value
            let cells = [
                "`\(key.name)`", "`\(key.environmentName)`", shown, key.expected ?? "", key.summary,
            ].map { $0.replacingOccurrences(of: "|", with: "\\|") }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` with what lies between its markers replaced by `keys`' table; nil when it lacks
    /// the markers (each once, in order).
    public static func rewritten(_ text: String, keys: [SettingKey]) -> String? {
        text.replacingSection(between: Self.begin, and: Self.end, with: Self.table(keys))
    }
}

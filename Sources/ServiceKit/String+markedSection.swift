extension String {
    /// The text with the lines between the line `begin` and the line `end` (each present once,
    /// in that order, matched whole) replaced by `body` (its lines, each ending in a newline);
    /// nil when the markers are not so. What a generator that owns part of a hand-written file
    /// (a docs table, a compose file's list) rewrites.
    public func replacingSection(between begin: String, and end: String, with body: String) -> String? {
        let lines = self.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(of: Substring(begin)), let last = lines.firstIndex(of: Substring(end)), first < last,
            lines.filter({ $0 == begin || $0 == end }).count == 2
        else { return nil }
        let before = lines[...first].joined(separator: "\n")
        let after = lines[last...].joined(separator: "\n")
        return before + "\n" + body + after
    }
}

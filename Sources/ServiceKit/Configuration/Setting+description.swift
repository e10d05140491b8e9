extension Setting: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key and its value, a secret's value left out: a settings struct printed, dumped or
    /// shown by a failing test never shows a password or a key.
    public var description: String {
        "\(self.key.name)=\(self.shownValue)"
    }

    public var debugDescription: String { self.description }

    public var customMirror: Mirror {
        Mirror(self, children: ["key": self.key.name, "value": self.shownValue], displayStyle: .struct)
    }

    private var shownValue: String {
        guard !self.key.isSecret else { return "<secret>" }
        return self.value.map { String(describing: $0) } ?? "<unread>"
    }
}

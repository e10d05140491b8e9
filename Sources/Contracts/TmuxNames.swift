/// What the agent connector and terminal-broker agree on about tmux: the names they accept
/// and the session options through which a session names the agent running in it.
public enum TmuxNames {
    /// The session option naming the agent (`swarmdeck agent run --tmux` sets it,
    /// terminal-broker lists it as the session's `agentId`).
    public static let agentOption = "@swarmdeck-agent"
    /// The session option naming the agent's swarm.
    public static let swarmOption = "@swarmdeck-swarm"

    /// Letters, digits, `.`, `_` and `-`: nothing a shell or tmux reads specially.
    public static func isNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F
            || byte == 0x2D
    }

    /// Why `name` is no tmux server socket name (`tmux -L`), or nil: 1 to 64 name bytes, not
    /// starting with `-`.
    public static func problem(socket name: String) -> String? {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy(Self.isNameByte) && !name.hasPrefix("-")
            ? nil : "1 to 64 of A-Z a-z 0-9 . _ -, not starting with -"
    }

    /// Why `name` is no session name the connector makes, or nil: as a socket name, without
    /// `.` (tmux turns `.` and `:` in session names into `_`).
    public static func problem(session name: String) -> String? {
        Self.problem(socket: name) == nil && !name.contains(".") ? nil : "1 to 64 of A-Z a-z 0-9 _ -, not starting with -"
    }
}

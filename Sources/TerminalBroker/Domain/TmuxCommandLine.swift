import Contracts
import Foundation
import ServiceKit

/// The shell command lines the broker runs on a host, and the parsing of what they print.
/// Every argument is single-quoted for the remote shell; names were validated on the way in.
enum TmuxCommandLine {
    /// `'…'` for a POSIX shell: a single quote inside becomes `'\''`.
    static func shellQuote(_ argument: String) -> String {
        "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `tmux [-L socket] ARGS…`, quoted. `LC_ALL=C.UTF-8` so tmux passes UTF-8 through.
    static func tmux(socket: String?, _ arguments: [String]) -> String {
        var words = ["tmux", "-u"]
        if let socket { words += ["-L", socket] }
        return "LC_ALL=C.UTF-8 " + (words + arguments).map(Self.shellQuote).joined(separator: " ")
    }

    /// The fields `list-sessions` prints, tab-separated.
    static let sessionFormat =
        "#{session_name}\t#{session_created}\t#{session_activity}\t#{session_attached}\t#{window_width}\t#{window_height}"
        + "\t#{\(TmuxNames.agentOption)}\t#{\(TmuxNames.swarmOption)}"

    static func listSessions(socket: String?) -> String {
        Self.tmux(socket: socket, ["list-sessions", "-F", Self.sessionFormat])
    }

    /// A control-mode client of session `name` that never resizes its windows.
    /// - Throws: `InvalidRequest` for a name ``isPassable(_:)`` refuses: it never reaches a shell.
    static func controlAttach(socket: String?, session name: String) throws(APIError) -> String {
        guard Self.isPassable(name) else {
            throw APIError(
                .invalidRequest,
                "the broker does not pass a session name holding a quote, a backslash, ! or a control character to a host's shell; rename the session (tmux rename-session)"
            )
        }
        return Self.tmux(socket: socket, ["-C", "attach-session", "-f", "ignore-size", "-t", "=" + name])
    }

    /// Whether `name` means the same inside single quotes to every login shell a host may have:
    /// sh, bash, zsh, fish (where `\'` inside quotes is a quote) and csh/tcsh (where `!`
    /// expands and a newline ends the line): 1 to 256 bytes, no `'`, `\`, `!` or control
    /// character. A client chooses the name it attaches to (it is in the session id), so a
    /// name outside this set could end the quote on some shell and run what follows.
    static func isPassable(_ name: String) -> Bool {
        (1...256).contains(name.utf8.count)
            && name.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "'") && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "!") }
    }

    /// One tmux session as `list-sessions` reports it.
    struct Session: Sendable, Equatable {
        var name: String
        var created: Date
        var lastActivity: Date
        var attachedClients: Int
        var cols: Int
        var rows: Int
        /// The agent and swarm the session's options name, when both are valid ids.
        var agentID: String?
        var swarmID: String?
    }

    /// What `list-sessions` printed; lines that do not parse are skipped.
    static func parseSessions(_ text: String) -> [Session] {
        text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 8, !fields[0].isEmpty, let created = Double(fields[1]), let activity = Double(fields[2]),
                let attached = Int(fields[3]), let cols = Int(fields[4]), let rows = Int(fields[5])
            else { return nil }
            let agent = String(fields[6])
            let swarm = String(fields[7])
            let mapped = EntityID.problem(agent, field: "agent") == nil && EntityID.problem(swarm, field: "swarm") == nil
            return Session(
                name: String(fields[0]),
                created: Date(timeIntervalSince1970: created),
                lastActivity: Date(timeIntervalSince1970: activity),
                attachedClients: attached,
                cols: cols,
                rows: rows,
                agentID: mapped ? agent : nil,
                swarmID: mapped ? swarm : nil
            )
        }
    }

    /// Whether `list-sessions` failed only because no tmux server runs (no sessions at all).
    static func isNoServer(_ stderr: String) -> Bool {
        stderr.contains("no server running") || stderr.contains("error connecting to") || stderr.contains("No such file or directory")
    }
}

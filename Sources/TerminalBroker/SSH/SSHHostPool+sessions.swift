import ServiceKit

extension SSHHostPool {
    /// The tmux sessions on `host`, asked over its connection now; none when no tmux server runs.
    /// - Throws: the connection's errors, or `TerminalInitFailed` when tmux is missing or fails.
    func sessions(on host: TerminalHost, tenant: String) async throws -> [TmuxCommandLine.Session] {
        let connection = try await self.connection(to: host, tenant: tenant)
        let result = try await connection.run(TmuxCommandLine.listSessions(socket: host.tmuxSocket), maxOutputBytes: 1 << 20)
        if result.exitStatus == 0 { return TmuxCommandLine.parseSessions(result.stdoutText) }
        if TmuxCommandLine.isNoServer(result.stderrText) { return [] }
        if result.exitStatus == 127 { throw APIError(.terminalInitFailed, "tmux is not installed on \(host.name)") }
        throw APIError(.terminalInitFailed, "tmux list-sessions failed on \(host.name): \(result.stderrText.prefix(300))")
    }
}

import Foundation
import ServiceHarnesses
import SwarmdeckTools
import TestSupport
import Testing

/// terminal-broker's commands reach a host through its user's login shell (sshd runs them with
/// `shell -c`): they must mean the same to fish as to a POSIX shell.
@Suite("terminal-broker through a fish login shell (live, a real sshd, tmux and fish)")
struct TerminalLoginShellTests {
    typealias H = TerminalHarness

    /// A system user whose login shell is fish, made once on this machine (root only; the test
    /// command installs fish).
    static let fishUser = "swarmdeck-fish-test"
    static var fishUserAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/fish")
    }

    static func ensureFishUser() throws {
        if try Spawn.result("/usr/bin/id", ["-u", Self.fishUser]).status == 0 { return }
        let home = "/var/lib/" + Self.fishUser
        // No password, not locked (sshd lets no one into a locked account), a home of its own
        // (fish keeps its history there).
        let made = try Spawn.result(
            "/usr/sbin/useradd",
            ["--system", "--user-group", "--shell", "/usr/bin/fish", "--home-dir", home, "--create-home", "-p", "*", Self.fishUser]
        )
        try #require(made.status == 0, "useradd: \(made.errors)")
    }

    @Test(
        "a host whose user logs in to fish: its sessions are listed and attached, typed input reaches them, and a session name that fish would run is refused",
        .enabled(if: TerminalLoginShellTests.fishUserAvailable, "needs root and fish (scripts/test installs fish)")
    )
    func fishLoginShell() async throws {
        try Self.ensureFishUser()
        #expect(try Spawn.output("/usr/bin/getent", ["passwd", Self.fishUser]).hasSuffix(":/usr/bin/fish\n"))
        let harness = try await H(loginUser: Self.fishUser)
        try await harness.sshd.newSession("agent-1")
        try await harness.sshd.type("agent-1", "echo before-attach-$((6*7))")
        // Somewhere the fish user could write, had a name reached its shell.
        let marker = "/tmp/sdt-pwned-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        try await harness.run { client in
            let host = try await harness.register(client)
            let phone = try await harness.token(scopes: [.terminalAttach, .terminalWrite])
            let (sessions, hosts) = try await harness.sessions(client, token: phone)
            #expect(hosts.first?["status"] as? String == "ok", "\(hosts)")
            let listed = try #require(sessions.first { $0["tmuxSessionName"] as? String == "agent-1" }, "\(sessions)")
            #expect(listed["username"] as? String == Self.fishUser)

            let viewer = harness.viewer(client, session: harness.sessionID(host: host, name: "agent-1"), token: phone, query: "input=true")
            defer { viewer.close() }
            try await viewer.wait(for: "the first screen") { _ in viewer.painted.contains("before-attach-42") }
            try viewer.send(["type": "input", "data": "echo typed-$((5*5))\r"])
            try await viewer.wait(for: "typed input's output") { _ in viewer.painted.contains("typed-25") }

            // Names that could end the quote are refused before any shell sees them.
            for name in [#"\';touch \#(marker);#"#, "x'; touch \(marker); '"] {
                let hostile = harness.viewer(client, session: harness.sessionID(host: host, name: name), token: phone, query: "input=true")
                #expect(try await hostile.closed()?.reason == "InvalidRequest", "\(name)")
                hostile.close()
            }
            // Quoted, the rest reach fish as one literal word, as they reach sh: tmux has no such session.
            for name in ["a;touch \(marker)", "a$(touch \(marker))", "a (touch \(marker))", "a|touch \(marker)&"] {
                let missing = harness.viewer(client, session: harness.sessionID(host: host, name: name), token: phone, query: "input=true")
                #expect(try await missing.closed()?.reason == "TmuxSessionNotFound", "\(name)")
                missing.close()
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
    }
}

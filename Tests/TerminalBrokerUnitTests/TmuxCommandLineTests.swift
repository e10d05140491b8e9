import Foundation
import ServiceKit
import Testing

@testable import TerminalBroker

@Suite("tmux list-sessions output parses into sessions, with the agent a session's options name")
struct TmuxCommandLineTests {
    @Test func sessionsParseWithTheirAgentWhenBothOptionsAreSet() {
        let text = [
            "demo-1\t1764100000\t1764100042\t1\t200\t50\tdemo-1\tdemo",
            "plain\t1764100001\t1764100001\t0\t80\t24\t\t",
            "half\t1764100001\t1764100001\t0\t80\t24\tagent-only\t",
            "broken\t1764100001\tnot-a-time\t0\t80\t24\t\t",
            "short\t1764100001",
        ].joined(separator: "\n")
        let sessions = TmuxCommandLine.parseSessions(text)
        #expect(sessions.map(\.name) == ["demo-1", "plain", "half"])
        #expect(sessions[0].agentID == "demo-1" && sessions[0].swarmID == "demo")
        #expect(sessions[0].attachedClients == 1 && sessions[0].cols == 200 && sessions[0].rows == 50)
        #expect(sessions[0].lastActivity == Date(timeIntervalSince1970: 1_764_100_042))
        #expect(sessions[1].agentID == nil && sessions[1].swarmID == nil)
        #expect(sessions[2].agentID == nil && sessions[2].swarmID == nil)
    }

    @Test func theListCommandAsksForTheAgentOptionsAndQuotesEveryWord() {
        let command = TmuxCommandLine.listSessions(socket: "swarmdeck-demo")
        #expect(command.hasPrefix("LC_ALL=C.UTF-8 'tmux' '-u' '-L' 'swarmdeck-demo' 'list-sessions' '-F' "))
        #expect(command.contains("#{@swarmdeck-agent}\t#{@swarmdeck-swarm}'"))
        #expect(TmuxCommandLine.shellQuote("it's") == #"'it'\''s'"#)
    }

    @Test("a session name reaches a shell only if it means the same in single quotes to sh, fish and csh")
    func passableNames() throws {
        for name in ["demo-1", "my session", "é café", "a;b|c$(d)`e`", "x/y:z=1,2"] {
            #expect(TmuxCommandLine.isPassable(name), "\(name)")
            #expect(try TmuxCommandLine.controlAttach(socket: nil, session: name).hasSuffix("'=\(name)'"))
        }
        for name in [#"\';touch /tmp/pwned;#"#, "it's", "a\\b", "bang!", "line\nbreak", "tab\tx", "", String(repeating: "a", count: 257)] {
            #expect(!TmuxCommandLine.isPassable(name), "\(name)")
            #expect(throws: APIError.self) { try TmuxCommandLine.controlAttach(socket: nil, session: name) }
        }
    }
}

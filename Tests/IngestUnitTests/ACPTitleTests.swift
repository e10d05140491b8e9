import Foundation
import Testing

@testable import Ingest

@Suite("ACP thread titles: what a message names its thread")
struct ACPTitleTests {
    static func title(_ body: String, _ direction: String) throws -> (text: String, replaces: Bool)? {
        let event = try ACPFrame.prepare(
            body: Array(body.utf8),
            threadID: "t",
            sessionID: nil,
            direction: direction,
            msgID: "m",
            swarmID: "s",
            agentID: "a",
            now: Date()
        )
        return event.acp?.title.map { ($0.text, $0.replaces) }
    }

    @Test("a person's first prompt names the thread by its first line; the agent's session_info_update replaces it")
    func titles() throws {
        let prompt =
            #"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"t","prompt":[{"type":"image"},{"type":"text","text":"  fix the build\nthen push"}]}}"#
        let named = try #require(try Self.title(prompt, "client_to_agent"))
        #expect(named.text == "fix the build" && !named.replaces)
        let info =
            #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"t","update":{"sessionUpdate":"session_info_update","title":"Build fixes"}}}"#
        let renamed = try #require(try Self.title(info, "agent_to_client"))
        #expect(renamed.text == "Build fixes" && renamed.replaces)
        // The agent's prompt-shaped frame, or a person's info update, names nothing.
        #expect(try Self.title(prompt, "agent_to_client") == nil)
        #expect(try Self.title(info, "client_to_agent") == nil)
    }

    @Test("a title holds no control or format characters and at most 240 bytes")
    func bounded() throws {
        let sneaky = "a\u{202E}b\u{0007}c" + String(repeating: "é\u{0301}", count: 400)
        let body = try JSONSerialization.data(withJSONObject: [
            "jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": ["prompt": [["type": "text", "text": sneaky]]],
        ])
        let named = try #require(try Self.title(String(decoding: body, as: UTF8.self), "client_to_agent"))
        #expect(named.text.hasPrefix("abc"))
        #expect(named.text.utf8.count <= ACPFrame.maxTitleBytes)
        #expect(!named.text.unicodeScalars.contains { $0.value == 0x202E || $0.value == 7 })
    }

    @Test("every envelope names its session: the one posted, else the message's, else the thread")
    func sessions() throws {
        func session(_ body: String, posted: String?) throws -> String? {
            let event = try ACPFrame.prepare(
                body: Array(body.utf8),
                threadID: "thread-1",
                sessionID: posted,
                direction: "agent_to_client",
                msgID: "m",
                swarmID: "s",
                agentID: "a",
                now: Date()
            )
            return event.acp?.sessionID
        }
        let update = #"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-9"}}"#
        #expect(try session(update, posted: "posted") == "posted")
        #expect(try session(update, posted: nil) == "sess-9")
        #expect(try session(#"{"jsonrpc":"2.0","method":"x"}"#, posted: nil) == "thread-1")
    }
}

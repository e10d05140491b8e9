import Contracts
import Foundation
import Testing

@testable import StreamFanout

@Suite("ACP client frames: what /v1/acp reads of a person's frame")
struct ACPClientFrameTests {
    static let permission = Array(
        #"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"c1"},"options":[{"optionId":"allow-once","name":"Allow","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}"#
            .utf8
    )

    static func frame(_ text: String) throws -> ACPClientFrame { try ACPClientFrame.parse(Array(text.utf8)) }

    @Test("requests, notifications and results are told apart; the thread is the sessionId, else the bound one")
    func kinds() throws {
        let prompt = try Self.frame(#"{"jsonrpc":"2.0","id":"p-1","method":"session/prompt","params":{"sessionId":"sess-1","prompt":[]}}"#)
        #expect(prompt.kind == .request)
        #expect(prompt.id == #""p-1""#)
        #expect(prompt.thread(bound: "other") == "sess-1")
        let cancel = try Self.frame(#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#)
        #expect(cancel.kind == .notification)
        #expect(cancel.thread(bound: "bound") == "bound")
        #expect(cancel.thread(bound: nil) == nil)
        let answer = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#)
        #expect(answer.kind == .result)
        #expect(answer.id == "0")
        #expect(answer.selectedOption == "allow-once")
    }

    @Test(
        "malformed frames are refused",
        arguments: [
            #"[1,2]"#, #"{"id":1,"method":"x"}"#, #"{"jsonrpc":"2.0","id":true,"method":"x"}"#, #"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            #"{"jsonrpc":"2.0","method":""}"#, #"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#, #"{"jsonrpc":"2.0","result":{}}"#,
            #"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#, #"{"jsonrpc":"2.0","id":1}"#,
        ]
    )
    func malformed(_ text: String) {
        #expect(throws: ACPClientFrame.Problem.self) { try Self.frame(text) }
    }

    @Test("a device sends prompts, cancels and answers; nothing that reconfigures the agent")
    func methods() throws {
        #expect(try Self.frame(#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#).isForDevices)
        #expect(try Self.frame(#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#).isForDevices)
        #expect(try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{}}"#).isForDevices)
        for method in ["session/new", "session/load", "session/set_mode", "initialize", "authenticate", "fs/read_text_file"] {
            #expect(try !Self.frame(#"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":{}}"#).isForDevices, "\(method)")
        }
    }

    @Test(
        "an answer that can let a tool run needs tool:run: an allow option, or any shape not read as a refusal; a reject, cancelled or error needs thread:write; an option not offered is refused"
    )
    func scopes() throws {
        func scopes(_ answer: String) throws -> [Scope] { try Self.frame(answer).answerScopes(to: Self.permission) }
        #expect(
            try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#) == [.threadWrite, .toolRun]
        )
        #expect(try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject-once"}}}"#) == [.threadWrite])
        #expect(try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#) == [.threadWrite])
        #expect(try scopes(#"{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"no"}}"#) == [.threadWrite])
        // Shapes an agent's parser might read as something else need tool:run.
        #expect(
            try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","option_id":"allow-once"}}}"#) == [.threadWrite, .toolRun]
        )
        #expect(
            try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled","optionId":"allow-once"}}}"#) == [.threadWrite, .toolRun]
        )
        #expect(throws: ACPClientFrame.Problem.self) {
            try scopes(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"yolo"}}}"#)
        }
        // An answer to another kind of request needs thread:write.
        let other = Array(#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{}}"#.utf8)
        #expect(try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{}}"#).answerScopes(to: other) == [.threadWrite])
    }

    @Test("a frame sent again is the same msgId while its anchor holds: an answer's request, a prompt's last agent envelope")
    func duplicates() throws {
        let prompt = try Self.frame(#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#)
        #expect(prompt.msgID(device: "d", thread: "s", anchor: 4) == prompt.msgID(device: "d", thread: "s", anchor: 4))
        #expect(prompt.msgID(device: "d", thread: "s", anchor: 4) != prompt.msgID(device: "d", thread: "s", anchor: 9))
        #expect(prompt.msgID(device: "d", thread: "s", anchor: 4) != prompt.msgID(device: "e", thread: "s", anchor: 4))
        #expect(prompt.msgID(device: "d", thread: "s", anchor: 4).hasPrefix("client-"))
        let answer = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#)
        #expect(answer.msgID(device: "d", thread: "s", anchor: 7) != answer.msgID(device: "d", thread: "s", anchor: 12))
    }
}

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

    @Test("allowing a tool needs tool:run; rejecting, cancelling or another answer needs thread:write; an option not offered is refused")
    func scopes() throws {
        let allow = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#)
        let kind = try #require(allow.selectedOptionKind(in: Self.permission))
        #expect(kind == "allow_once")
        #expect(allow.requiredScopes(answeredOptionKind: kind) == [.threadWrite, .toolRun])
        let reject = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject-once"}}}"#)
        #expect(reject.requiredScopes(answeredOptionKind: reject.selectedOptionKind(in: Self.permission) ?? nil) == [.threadWrite])
        let cancelled = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#)
        #expect(cancelled.selectedOptionKind(in: Self.permission) == .some(nil))
        let forged = try Self.frame(#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"yolo"}}}"#)
        #expect(forged.selectedOptionKind(in: Self.permission) == nil)
    }

    @Test("a request sent again is the same msgId; a notification is only while the thread has not moved")
    func duplicates() throws {
        let prompt = try Self.frame(#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}"#)
        #expect(prompt.msgID(device: "d", thread: "s", head: 4) == prompt.msgID(device: "d", thread: "s", head: 9))
        #expect(prompt.msgID(device: "d", thread: "s", head: 4) != prompt.msgID(device: "e", thread: "s", head: 4))
        #expect(prompt.msgID(device: "d", thread: "s", head: 4).hasPrefix("client-"))
        let cancel = try Self.frame(#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#)
        #expect(cancel.msgID(device: "d", thread: "s", head: 4) == cancel.msgID(device: "d", thread: "s", head: 4))
        #expect(cancel.msgID(device: "d", thread: "s", head: 4) != cancel.msgID(device: "d", thread: "s", head: 5))
    }
}

import Foundation
import SwarmdeckTools
import Testing

@Suite("ACP wire: what the connector's bridge delivers to its agent")
struct ACPWireTests {
    static func envelope(_ direction: String, origin: String?, _ body: String, seq: Int64 = 1) -> ACPWire.Envelope {
        var object: [String: Any] = [
            "thread_id": "t", "seq": seq, "jsonrpc": "2.0", "direction": direction,
            "body": try! JSONSerialization.jsonObject(with: Data(body.utf8)),
        ]
        if let origin { object["origin"] = origin }
        let text = String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        return ACPWire.envelope(text)!
    }

    @Test("people's and approvals' frames go to the agent; the agent's own and its connector's do not")
    func origins() {
        var pending: Set<String> = []
        let prompt = #"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: "client", prompt), pending: &pending) == .deliver)
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: nil, prompt), pending: &pending) == .skip)
        #expect(ACPWire.delivery(of: Self.envelope("agent_to_client", origin: nil, prompt), pending: &pending) == .skip)
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: "agent", prompt), pending: &pending) == .skip)
    }

    @Test("an answer reaches the agent once, only for a request it made, with the same id type")
    func firstAnswerWins() {
        var pending: Set<String> = ["0"]
        let answer = #"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#
        let asString = #"{"jsonrpc":"2.0","id":"0","result":{"outcome":{"outcome":"cancelled"}}}"#
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: "client", asString), pending: &pending) == .skip)
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: "service", answer), pending: &pending) == .deliver)
        #expect(ACPWire.delivery(of: Self.envelope("client_to_agent", origin: "client", answer), pending: &pending) == .skip)
        #expect(pending.isEmpty)
    }

    @Test("the agent's lines: requests, notifications and results; anything else is no message")
    func messages() {
        #expect(ACPWire.message(#"{"jsonrpc":"2.0","id":3,"method":"session/request_permission"}"#)?.kind == .request)
        #expect(ACPWire.message(#"{"jsonrpc":"2.0","method":"session/update"}"#)?.kind == .notification)
        #expect(ACPWire.message(#"{"jsonrpc":"2.0","id":"a","result":{}}"#)?.id == #""a""#)
        #expect(ACPWire.message(#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#)?.result == nil)
        #expect(ACPWire.message("not json") == nil)
        #expect(ACPWire.message(#"{"id":1,"method":"x"}"#) == nil)
        #expect(ACPWire.envelope(#"{"jsonrpc":"2.0","id":1,"result":{}}"#) == nil)
    }
}

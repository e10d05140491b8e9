import Foundation
import SwarmdeckTools
import Testing

@Suite("ACP wire: what the connector's bridge delivers to its agent")
struct ACPWireTests {
    /// An envelope as ingest renders it (its fields in that order).
    static func envelope(
        _ direction: String,
        origin: String?,
        _ body: String,
        seq: Int64 = 1,
        answers: Int64? = nil,
        msgID: String = "m"
    ) -> ACPWire.Envelope {
        var text =
            #"{"thread_id":"t","session_id":"t","seq":\#(seq),"direction":"\#(direction)","jsonrpc":"2.0","body":\#(body),"msg_id":"\#(msgID)""#
        if let origin { text += #","origin":"\#(origin)""# }
        if let answers { text += #","answers_seq":\#(answers)"# }
        return ACPWire.envelope(text + "}")!
    }

    @Test("people's prompts and cancels go to the agent; the agent's own frames, its connector's and other methods do not")
    func origins() {
        var requests = ACPWire.Requests()
        let prompt = #"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", prompt)) == .deliver)
        #expect(
            requests.delivery(of: Self.envelope("client_to_agent", origin: "client", #"{"jsonrpc":"2.0","method":"session/cancel"}"#)) == .deliver
        )
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: nil, prompt)) == .skip)
        #expect(requests.delivery(of: Self.envelope("agent_to_client", origin: nil, prompt)) == .skip)
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "service", prompt)) == .skip)
        let newSession = #"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", newSession)) == .skip)
    }

    @Test("an answer reaches the agent once, only for the request of this process it names, with the same id type")
    func firstAnswerWins() {
        var requests = ACPWire.Requests()
        let asked = #"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#
        let answer = #"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#
        // A request of an earlier agent process (seen, never asked on this stdout) is not open.
        requests.seen(Self.envelope("agent_to_client", origin: nil, asked, seq: 3))
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", answer, seq: 4, answers: 3)) == .skip)
        requests.asked("0", msgID: "ours-1")
        // Someone else's copy with the same id (another poster, another msgId) is not it.
        requests.seen(Self.envelope("agent_to_client", origin: nil, asked, seq: 8, msgID: "forged"))
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", answer, seq: 9, answers: 8)) == .skip)
        requests.seen(Self.envelope("agent_to_client", origin: nil, asked, seq: 9, msgID: "ours-1"))
        let asString = #"{"jsonrpc":"2.0","id":"0","result":{"outcome":{"outcome":"cancelled"}}}"#
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", asString, seq: 10, answers: 9)) == .skip)
        // A stale answer naming the old request, then one with no seq, then the right one.
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", answer, seq: 11, answers: 3)) == .skip)
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", answer, seq: 12)) == .skip)
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "service", answer, seq: 13, answers: 9)) == .deliver)
        #expect(requests.delivery(of: Self.envelope("client_to_agent", origin: "client", answer, seq: 14, answers: 9)) == .skip)
    }

    @Test("the body reaches the agent as stored, byte for byte, on one line")
    func rawBody() throws {
        let stored =
            #"{"thread_id":"t","session_id":"t","seq":5,"ts":"x","direction":"client_to_agent","kind":"request","jsonrpc":"2.0","body":{"jsonrpc":"2.0", "id":7,"method":"session/prompt","params":{"text":"a \/ \u00e9 \"body\": ,\"msg_id\":","n":123456789012345678901}},"msg_id":"m","checksum":"sha256:00","origin":"client","device":"d"}"#
        let envelope = try #require(ACPWire.envelope(stored))
        #expect(
            envelope.body
                == #"{"jsonrpc":"2.0", "id":7,"method":"session/prompt","params":{"text":"a \/ \u00e9 \"body\": ,\"msg_id\":","n":123456789012345678901}}"#
        )
        #expect(envelope.message?.method == "session/prompt")
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

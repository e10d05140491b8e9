import Foundation
import NIOCore
import Testing

@testable import EventLog
@testable import Ingest

/// The frame accessors of the event log library against frames rendered by ingest's own code:
/// the layout they rely on is the one ingest writes.
@Suite("Event frames: what readers take from a frame is what ingest rendered")
struct EventFrameTests {
    private func nativeFrame(_ json: String, seq: Int64 = 7) throws -> ByteBuffer {
        let events = try NativeBatchParser.parse(Array(#"{"events":[\#(json)]}"#.utf8))
        let prepared = try #require(try events.first?.get()).prepare(now: 1_700_000_000_000, maxEventBytes: 65536)
        return ByteBuffer(bytes: prepared.frame(seq: seq))
    }

    @Test("a log frame's message is the rendered text, escapes and all, whatever the attributes hold")
    func message() throws {
        let frame = try self.nativeFrame(
            #"{"msgId":"m1","swarmId":"s","agentId":"a","kind":"log","level":"warn","message":"say \"hi\" \\ ,\"message\":\"x","attrs":{"message":"decoy","n":[1,2]}}"#
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: frame)) as? [String: Any])
        #expect(object["seq"] as? Int == 7)
        let message = try #require(EventFrame.message(in: frame))
        #expect(String(decoding: message, as: UTF8.self) == #"say \"hi\" \\ ,\"message\":\"x"#)
    }

    @Test("a tool call frame's tool, unescaped; a tool named in a swarm, agent or log text is no tool; none in other kinds")
    func tool() throws {
        let plain = try self.nativeFrame(#"{"msgId":"m1","swarmId":"s,\"tool\":\"x","agentId":"a","kind":"tool_call","tool":"bash","ok":true}"#)
        #expect(EventFrame.tool(in: plain) == "bash")
        let odd = try self.nativeFrame(
            #"{"msgId":"m1","swarmId":"s","agentId":"a","kind":"tool_call","tool":"sh \"x\" \\ é\u0001","ok":false,"error":"e"}"#
        )
        #expect(EventFrame.tool(in: odd) == "sh \"x\" \\ é\u{1}")
        let log = try self.nativeFrame(#"{"msgId":"m1","swarmId":"s","agentId":"a","kind":"log","message":",\"tool\":\"bash"}"#)
        #expect(EventFrame.tool(in: log) == nil)
        #expect(EventFrame.tool(in: ByteBuffer(string: #"{"seq":1,"tool":"cut"#)) == nil)
    }

    @Test("a tool name as a replay's SQL matches it is what ingest's writer renders, escapes and all")
    func renderedTool() {
        for name in ["bash", #"sh "x" \ é"#, "tab\tnew\nline\rnul\u{0}bell\u{7}", "😀/"] {
            var writer = JSONWriter()
            writer.string(name)
            #expect(EventFrame.renderedStringTail(name) == Array(writer.bytes.dropFirst()), "\(name)")
        }
    }

    @Test("a frame without a message has none")
    func noMessage() throws {
        let frame = try self.nativeFrame(#"{"msgId":"m1","swarmId":"s","agentId":"a","kind":"state","state":"running"}"#)
        #expect(EventFrame.message(in: frame) == nil)
    }

    @Test("a state frame's fields: state, task summary, the worker flag; a non-boolean flag is none")
    func state() throws {
        let frame = try self.nativeFrame(
            #"{"msgId":"m1","swarmId":"s","agentId":"a","kind":"state","state":"paused","taskSummary":"fix \"it\"","attrs":{"worker":true}}"#
        )
        let state = try #require(EventFrame.state(in: frame.readableBytesView))
        #expect(state.state == "paused")
        #expect(state.taskSummary == #"fix "it""#)
        #expect(state.attrs?.worker == true)
        let odd = try self.nativeFrame(#"{"msgId":"m2","swarmId":"s","agentId":"a","kind":"state","state":"running","attrs":{"worker":"yes"}}"#)
        #expect(EventFrame.state(in: odd.readableBytesView)?.attrs?.worker == nil)
    }

    @Test("an ACP frame's envelope is the stored envelope, byte for byte, with its thread seq and the body as received")
    func envelope() throws {
        let body = #"{"jsonrpc":"2.0","id":3,"method":"session/update","params":{"envelope":{"x":1},"s":"\"}"}}"#
        let prepared = try ACPFrame.prepare(
            body: Array(body.utf8),
            threadID: "t1",
            sessionID: "sess",
            direction: "agent_to_client",
            msgID: "m9",
            swarmID: "s",
            agentID: "a",
            now: Date(timeIntervalSince1970: 1_700_000_000)
        )
        let frame = ByteBuffer(bytes: prepared.frame(seq: 41, threadSeq: 5))
        let envelope = try #require(EventFrame.envelope(in: frame))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: envelope)) as? [String: Any])
        #expect(object["seq"] as? Int == 5)
        #expect(object["thread_id"] as? String == "t1")
        let whole = try #require(try JSONSerialization.jsonObject(with: Data(buffer: frame)) as? [String: Any])
        #expect(NSDictionary(dictionary: whole["envelope"] as? [String: Any] ?? [:]).isEqual(to: object))
        #expect(String(buffer: envelope).contains(body))
    }

    @Test("a committed event's frame counted, rendered into Data and rendered alone are the same bytes, ACP or not, at any seq")
    func committedFrame() throws {
        let native = try #require(
            try NativeBatchParser.parse(Array(#"{"events":[{"msgId":"m1","swarmId":"s","agentId":"a","kind":"log","message":"é \" 😀"}]}"#.utf8))
                .first?.get()
        ).prepare(now: 1_700_000_000_000, maxEventBytes: 65536)
        let acp = try ACPFrame.prepare(
            body: Array(#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#.utf8),
            threadID: "t1",
            sessionID: nil,
            direction: "agent_to_client",
            msgID: "m9",
            swarmID: "s",
            agentID: "a",
            now: Date(timeIntervalSince1970: 1_700_000_000)
        )
        for event in [native, acp] {
            for (seq, threadSeq) in [(Int64(1), Int64(0)), (9, 10), (123_456_789, 99), (.max, .max), (.min, -1)] {
                let committed = CommittedEvent(seq: seq, threadSeq: threadSeq, event: event)
                let frame = event.frame(seq: seq, threadSeq: threadSeq)
                #expect(committed.frame == frame)
                #expect(committed.frameCount == frame.count)
                #expect(committed.frameData == Data(frame))
                #expect(frame.starts(with: Array(#"{"seq":\#(seq),"eventId":"\#(seq)""#.utf8)))
            }
        }
    }
}

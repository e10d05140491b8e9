import Testing

@testable import ControlAPI

@Suite("Ack tokens: only the exact delivery subject of the agent's own command (unit)")
struct AckTokenTests {
    let stream = "SD_CONTROL_SD"
    let consumer = "agent_t1_a1"
    var token: String { "$JS.ACK.\(self.stream).\(self.consumer).1.42.7.1795400000000000000.0" }

    @Test("the delivery's own subject is accepted")
    func accepted() {
        #expect(CommandBus.isDelivery(self.token, stream: self.stream, consumer: self.consumer, sequence: 42))
    }

    @Test(
        "anything else is refused: another sequence, consumer or stream; extra or missing tokens; wildcards, spaces, protocol lines",
        arguments: [
            ("another sequence", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.43.7.1795400000000000000.0"),
            ("another agent's consumer", "$JS.ACK.SD_CONTROL_SD.agent_t1_a2.1.42.7.1795400000000000000.0"),
            ("another stream", "$JS.ACK.OTHER.agent_t1_a1.1.42.7.1795400000000000000.0"),
            ("a token too many", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.1795400000000000000.0.9"),
            ("a token too few", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.1795400000000000000"),
            ("a wildcard", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.*.0"),
            ("a tail wildcard", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.>"),
            ("an empty token", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42..1795400000000000000.0"),
            ("a space", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.1795400000000000000.0 x"),
            ("a protocol line", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.1795400000000000000.0\r\nPUB x 1\r\n"),
            ("a huge number", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.999999999999999999999.0"),
            ("not an ack subject", "sd.ctl.t1.a1"),
            ("empty", ""),
        ]
    )
    func refused(_ why: String, _ token: String) {
        #expect(!CommandBus.isDelivery(token, stream: self.stream, consumer: self.consumer, sequence: 42), "\(why) was accepted")
    }
}

@Suite("Ack handles: sealed, bound to one agent's command, opaque (unit)")
struct AckHandleTests {
    let handles = AckHandle(secret: Array("-----BEGIN PRIVATE KEY-----test".utf8))
    let subject = "$JS.ACK.SD_CONTROL_SD.agent_x.1.42.7.1795400000000000000.0"

    @Test("a handle opens to its subject for exactly the tenant, swarm, agent and command it was sealed for")
    func roundTrip() throws {
        let handle = try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: "c")
        #expect(!handle.contains("$JS") && !handle.contains("."))
        #expect(self.handles.open(handle, tenant: "t", swarm: "s", agent: "a", command: "c") == self.subject)
        for (tenant, swarm, agent, command) in [
            ("u", "s", "a", "c"), ("t", "x", "a", "c"), ("t", "s", "b", "c"), ("t", "s", "a", "d"), ("t", "sa", "", "c"),
        ] {
            #expect(self.handles.open(handle, tenant: tenant, swarm: swarm, agent: agent, command: command) == nil)
        }
        // Two seals of one subject differ (a fresh nonce each time).
        #expect(try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: "c") != handle)
    }

    @Test("another key, an altered byte, a cut or padded handle, raw subjects and junk do not open")
    func refused() throws {
        let handle = try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: "c")
        let other = AckHandle(secret: Array("another key".utf8))
        #expect(other.open(handle, tenant: "t", swarm: "s", agent: "a", command: "c") == nil)
        var bytes = Array(handle.utf8)
        for index in stride(from: 4, to: bytes.count, by: 7) {
            let original = bytes[index]
            bytes[index] = original == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(self.handles.open(String(decoding: bytes, as: UTF8.self), tenant: "t", swarm: "s", agent: "a", command: "c") == nil)
            bytes[index] = original
        }
        for junk in [
            String(handle.dropLast(3)), handle + "AAAA", self.subject, "", "ah1_", "ah1_!!!!", "ah2_" + handle.dropFirst(4),
            String(repeating: "A", count: 5000),
        ] {
            #expect(self.handles.open(junk, tenant: "t", swarm: "s", agent: "a", command: "c") == nil, "\(junk.prefix(40)) opened")
        }
    }
}

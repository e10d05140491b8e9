import Testing

@testable import ControlAPI

@Suite("Delivery tokens: only a stream sequence, as sealed in an ack handle (unit)")
struct AckTokenTests {
    @Test("a delivery's own token reads back as its sequence")
    func accepted() {
        #expect(CommandBus.deliveredSequence(CommandBus.deliveryToken(42)) == 42)
        #expect(CommandBus.deliveredSequence(CommandBus.deliveryToken(.max)) == .max)
    }

    @Test(
        "anything else is refused: another prefix, no digits, signs, spaces, protocol lines, numbers past 64 bits, JetStream ack subjects",
        arguments: [
            ("another version", "q2.42"),
            ("no prefix", "42"),
            ("no digits", "q1."),
            ("a sign", "q1.-42"),
            ("a plus", "q1.+42"),
            ("a space", "q1.42 "),
            ("a second token", "q1.42.1"),
            ("a protocol line", "q1.42\r\nPUB x 1\r\n"),
            ("past 64 bits", "q1.18446744073709551616"),
            ("twenty-one digits", "q1.000000000000000000042"),
            ("a JetStream ack subject", "$JS.ACK.SD_CONTROL_SD.agent_t1_a1.1.42.7.1795400000000000000.0"),
            ("empty", ""),
        ]
    )
    func refused(_ why: String, _ token: String) {
        #expect(CommandBus.deliveredSequence(token) == nil, "\(why) was accepted")
    }
}

@Suite("Ack handles: sealed, bound to one agent's command, opaque (unit)")
struct AckHandleTests {
    let handles = AckHandle(secret: Array("-----BEGIN PRIVATE KEY-----test".utf8))
    let subject = CommandBus.deliveryToken(42)

    @Test("a handle opens to its subject for exactly the tenant, swarm, agent and command it was sealed for")
    func roundTrip() throws {
        let handle = try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: "c")
        // Opaque: base64url, so not the token (which has a dot).
        #expect(!handle.contains("."))
        #expect(self.handles.open(handle, tenant: "t", swarm: "s", agent: "a", command: "c") == self.subject)
        for (tenant, swarm, agent, command) in [
            ("u", "s", "a", "c"), ("t", "x", "a", "c"), ("t", "s", "b", "c"), ("t", "s", "a", "d"), ("t", "sa", "", "c"),
        ] {
            #expect(self.handles.open(handle, tenant: tenant, swarm: swarm, agent: agent, command: command) == nil)
        }
        // Two seals of one subject differ (a fresh nonce each time).
        #expect(try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: "c") != handle)
    }

    @Test("a handle given out over one control stream does not open over a stream made again (another creation time)")
    func boundToTheStream() throws {
        let binding = CommandBus.handleBinding("c", epoch: "2026-11-30T20:00:00Z")
        let handle = try self.handles.seal(self.subject, tenant: "t", swarm: "s", agent: "a", command: binding)
        #expect(self.handles.open(handle, tenant: "t", swarm: "s", agent: "a", command: binding) == self.subject)
        let again = CommandBus.handleBinding("c", epoch: "2026-11-30T21:00:00Z")
        #expect(self.handles.open(handle, tenant: "t", swarm: "s", agent: "a", command: again) == nil)
        #expect(self.handles.open(handle, tenant: "t", swarm: "s", agent: "a", command: "c") == nil)
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

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

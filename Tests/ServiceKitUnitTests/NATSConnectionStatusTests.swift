import Testing

@testable import ServiceKit

@Suite struct NATSConnectionStatusTests {
    @Test(
        "the connection's events move its status",
        arguments: [
            (NATSConnectionStatus.connecting, NATSConnectionEvent.connected, NATSConnectionStatus.connected),
            (.connected, .disconnected, .reconnecting),
            (.reconnecting, .reconnected, .connected),
            (.reconnecting, .disconnected, .reconnecting),
            (.connected, .error("slow consumer"), .connected),
            (.reconnecting, .error("slow consumer"), .reconnecting),
            (.connected, .closed, .closed),
            (.reconnecting, .closed, .closed),
        ]
    )
    func transitions(from: NATSConnectionStatus, event: NATSConnectionEvent, to: NATSConnectionStatus) {
        #expect(from.after(event) == to)
    }

    @Test("a closed connection stays closed, and a draining one drains until it closes")
    func terminal() {
        for event in [NATSConnectionEvent.connected, .reconnected, .disconnected, .error("x"), .closed] {
            #expect(NATSConnectionStatus.closed.after(event) == .closed)
            #expect(NATSConnectionStatus.draining.after(event) == (event == .closed ? .closed : .draining))
        }
    }
}

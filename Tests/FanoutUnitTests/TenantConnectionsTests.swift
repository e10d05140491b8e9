import Testing

@testable import StreamFanout

/// The per-tenant connection count, without sockets.
@Suite struct TenantConnectionsTests {
    @Test func eachTenantHoldsAtMostItsMaximumAndReleasedSlotsAreReused() {
        let connections = TenantConnections(maxPerTenant: 2)
        #expect(connections.acquire("a") && connections.acquire("a"))
        #expect(!connections.acquire("a"))
        #expect(connections.acquire("b"))
        connections.release("a")
        #expect(connections.count("a") == 1 && connections.acquire("a"))
        connections.release("a")
        connections.release("a")
        connections.release("b")
        #expect(connections.count("a") == 0 && connections.count("b") == 0)
    }
}

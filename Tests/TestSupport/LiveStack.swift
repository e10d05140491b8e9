public import HummingbirdTesting
public import ServiceKit

/// Services of a ``LiveHarness`` running in this process (``LiveHarness/withStack(_:_:extra:_:)``),
/// each reached through its test client by its type: `stack[ControlAPIService.self]`.
public struct LiveStack: Sendable {
    private let clients: [String: any TestClientProtocol]

    fileprivate init(clients: [String: any TestClientProtocol]) {
        self.clients = clients
    }

    /// The test client of `service`; a service the stack was not started with is a test's bug.
    public subscript<Service: SwarmdeckService>(_ service: Service.Type) -> any TestClientProtocol {
        guard let client = self.clients[Service.name] else {
            preconditionFailure("\(Service.name) is not in this stack (started: \(self.clients.keys.sorted()))")
        }
        return client
    }
}

extension LiveHarness {
    /// Starts `services` in this process, in the order given (each one's dependencies first:
    /// ingest before the services that read its event log), from the harness's environment
    /// plus `extra[name]` for the service of that name, runs `body` with them, then stops
    /// them in reverse. `mode` is how they are reached: `.router` (no socket) or `.live` (a
    /// port each, for processes and WebSockets).
    public func withStack<Value: Sendable>(
        _ services: [any SwarmdeckService.Type],
        _ mode: TestingSetup = .router,
        extra: [String: [String: String]] = [:],
        _ body: @Sendable (LiveStack) async throws -> Value
    ) async throws -> Value {
        try await self.start(services[...], mode, extra: extra, started: [:], body)
    }

    private func start<Value: Sendable>(
        _ services: ArraySlice<any SwarmdeckService.Type>,
        _ mode: TestingSetup,
        extra: [String: [String: String]],
        started: [String: any TestClientProtocol],
        _ body: @Sendable (LiveStack) async throws -> Value
    ) async throws -> Value {
        guard let service = services.first else { return try await body(LiveStack(clients: started)) }
        return try await self.startOne(service, mode, extra: extra) { client in
            try await self.start(services.dropFirst(), mode, extra: extra, started: started.merging([service.name: client]) { $1 }, body)
        }
    }

    private func startOne<Service: SwarmdeckService, Value: Sendable>(
        _ service: Service.Type,
        _ mode: TestingSetup,
        extra: [String: [String: String]],
        _ body: @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        try await self.application(service, extra: extra[service.name] ?? [:]).test(mode, body)
    }
}

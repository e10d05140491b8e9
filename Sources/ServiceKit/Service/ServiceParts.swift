public import HummingbirdCore
public import ServiceLifecycle

/// What a service's ``SwarmdeckService/assemble(_:)`` step returns besides the routes it added.
public struct ServiceParts: Sendable {
    /// Run beside the HTTP server in one `ServiceGroup`, shut down gracefully with it:
    /// consumers, workers, periodic jobs. Each starts once the migrations and
    /// ``beforeServerStarts`` are done, but a ``ReleasingService``, which starts at once.
    public var services: [any Service]
    /// Checked by `/readyz` besides NATS and Postgres.
    public var readiness: [ReadinessCheck]
    /// Run in order after the migrations and before the server accepts requests and
    /// ``services`` start (they must not wait for those).
    public var beforeServerStarts: [@Sendable () async throws -> Void]
    /// The HTTP server: `.http1()`, or an upgrade to the service's WebSocket routes.
    public var server: HTTPServerBuilder

    public init(
        services: [any Service] = [],
        readiness: [ReadinessCheck] = [],
        beforeServerStarts: [@Sendable () async throws -> Void] = [],
        server: HTTPServerBuilder = .http1()
    ) {
        self.services = services
        self.readiness = readiness
        self.beforeServerStarts = beforeServerStarts
        self.server = server
    }
}

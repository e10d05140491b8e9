public import ServiceLifecycle

/// Runs a NATS connection in a `ServiceGroup`: on graceful shutdown it drains (stops taking
/// messages, lets consumers finish, flushes publishes) and then closes.
public struct NATSService: Service {
    public let connection: NATSConnection

    public init(connection: NATSConnection) {
        self.connection = connection
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await self.connection.drain()
    }
}

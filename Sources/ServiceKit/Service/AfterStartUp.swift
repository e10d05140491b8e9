public import ServiceLifecycle

/// One of a service's own services that only waits for shutdown to release what it holds (an
/// HTTP client, SSH connections). It starts with the service group, not after the start-up work
/// (``ServiceParts/services``), so what it holds is released even when the start-up fails.
public protocol ReleasingService: Service {}

/// A ``ReleasingService`` made of what it releases: `release` runs at the service's shutdown
/// (or once its start-up failed), e.g. an HTTP client's `shutdown()`.
public struct ReleaseAtShutdown: ReleasingService {
    private let release: @Sendable () async throws -> Void

    public init(_ release: @escaping @Sendable () async throws -> Void) {
        self.release = release
    }

    public func run() async throws {
        try? await gracefulShutdown()
        try await self.release()
    }
}

/// One of a service's own services (``ServiceParts/services``), run only once the migrations
/// and the service's start-up work are done (``begin()``): a consumer or a periodic job then
/// never meets a table or a stream that is not there yet. Cancelled or asked to shut down
/// before then (a start-up that failed), it ends without running.
final class AfterStartUp: Service, CustomStringConvertible {
    private let service: any Service
    private let started = FirstAnswer<Void>()

    init(_ service: any Service) {
        self.service = service
    }

    /// `services` in their order (the group stops them in reverse), each wrapped to wait for the
    /// start-up but a ``ReleasingService``; and the wrapped ones, to ``begin()``.
    static func wrapping(_ services: [any Service]) -> (services: [any Service], waiting: [AfterStartUp]) {
        let wrapped: [any Service] = services.map { $0 is any ReleasingService ? $0 : AfterStartUp($0) }
        return (wrapped, wrapped.compactMap { $0 as? AfterStartUp })
    }

    /// The migrations and the start-up work are done: the service runs.
    func begin() {
        self.started.answer(.success(()))
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { self.started.arm($0) }
                } onCancel: {
                    self.started.answer(.failure(CancellationError()))
                }
            }
        } catch is CancellationError {
            return
        }
        try await self.service.run()
    }

    var description: String { "\(self.service)" }
}

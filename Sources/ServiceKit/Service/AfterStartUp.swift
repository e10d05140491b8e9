import ServiceLifecycle

/// One of a service's own services (``ServiceParts/services``), run only once the migrations
/// and the service's start-up work are done (``begin()``): a consumer or a periodic job then
/// never meets a table or a stream that is not there yet. Asked to shut down (or cancelled)
/// before then, it ends without running.
final class AfterStartUp: Service, CustomStringConvertible {
    private let service: any Service
    private let started = FirstAnswer<Void>()

    init(_ service: any Service) {
        self.service = service
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

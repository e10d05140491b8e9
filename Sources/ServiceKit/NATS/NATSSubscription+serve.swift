import ServiceLifecycle

extension NATSSubscription {
    /// Handles each message with `handle`, at most `maxConcurrent` at once (past it the
    /// subscription's buffer, then NATS, holds the rest), until the task is cancelled or the
    /// service shuts down gracefully, which drains the subscription: what a ``NATSResponder``
    /// runs.
    public func serve(maxConcurrent: Int, _ handle: @escaping @Sendable (NATSMessage) async -> Void) async {
        await withTaskCancellationOrGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await message in self {
                    if running == maxConcurrent {
                        await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask { await handle(message) }
                }
            }
        } onCancelOrGracefulShutdown: {
            self.drain()
        }
    }
}

import ServiceLifecycle

/// Runs `round` every `interval` until graceful shutdown, which ends it cleanly (a round in
/// progress is cancelled). A service's periodic work: maintenance, checks, timers.
public func repeatUntilShutdown(every interval: Duration, _ round: @escaping @Sendable () async -> Void) async {
    do {
        try await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: interval)
                await round()
            }
        }
    } catch {
        // Cancelled by graceful shutdown: the loop's only way to end.
    }
}

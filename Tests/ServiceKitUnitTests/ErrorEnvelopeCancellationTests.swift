import Contracts
import ServiceKit
import Testing
import _ConnectionPoolModule

@Suite("The error envelope of a cancelled request", .timeLimit(.minutes(1)))
struct ErrorEnvelopeCancellationTests {
    /// `envelope(for:)` as a request's task that was cancelled reads it.
    static func envelopeWhenCancelled(_ error: any Error) async -> (Int, ErrorCode, Int?) {
        let task = Task {
            // Returns at once: the task is cancelled before it runs, or wakes it.
            try? await Task.sleep(for: .seconds(600))
            let (status, body) = ErrorEnvelopeMiddleware.envelope(for: error, requestID: nil)
            return (status.code, body.code, body.retryAfterSeconds)
        }
        task.cancel()
        return await task.value
    }

    @Test("in a cancelled task, a cancellation (Swift's or postgres-nio's pool wait) answers 503 with Retry-After; any other error keeps its answer")
    func cancelledTask() async {
        #expect(await Self.envelopeWhenCancelled(CancellationError()) == (503, .serviceUnavailable, 1))
        #expect(await Self.envelopeWhenCancelled(ConnectionPoolError.requestCancelled) == (503, .serviceUnavailable, 1))
        #expect(await Self.envelopeWhenCancelled(APIError(.invalidRequest, "bad")) == (400, .invalidRequest, nil))
        struct Crash: Error {}
        #expect(await Self.envelopeWhenCancelled(Crash()) == (500, .serverError, nil))
    }

    @Test("outside a cancelled task, a cancellation is a fault of ours (500); a pool shut down is 503")
    func notCancelled() {
        for error: any Error in [CancellationError(), ConnectionPoolError.requestCancelled] {
            let (status, body) = ErrorEnvelopeMiddleware.envelope(for: error, requestID: nil)
            #expect(status.code == 500 && body.code == .serverError, "\(error)")
            #expect(ErrorEnvelopeMiddleware.isCancellation(error))
        }
        let (status, body) = ErrorEnvelopeMiddleware.envelope(for: ConnectionPoolError.poolShutdown, requestID: nil)
        #expect(status.code == 503 && body.retryAfterSeconds == 1)
        #expect(!ErrorEnvelopeMiddleware.isCancellation(ConnectionPoolError.poolShutdown))
    }
}

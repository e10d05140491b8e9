import Foundation
import ServiceKit

/// The events of one pipeline run, sent in order by a task of their own, so the run never waits
/// on ingest between two steps: a stage's orchestration costs a few Postgres statements, not
/// round trips to ingest's commits. Each step keeps the time it was queued. At most
/// ``maxQueued`` batches wait (past it a batch is dropped and logged: the pipeline's record in
/// Postgres is the truth, the stream a view of it); ``finish()`` sends what waits, for at most
/// ``finishDeadline``.
final class PipelineEventQueue: Sendable {
    private typealias Batch = (key: String, steps: [PipelineEvents.Step], at: Date)
    private let continuation: AsyncStream<Batch>.Continuation
    private let sender: Task<Void, Never>
    private let events: PipelineEvents

    static let maxQueued = 1000
    static let finishDeadline: Duration = .seconds(15)

    init(events: PipelineEvents, tenant: String, pipeline: String) {
        let (stream, continuation) = AsyncStream.makeStream(of: Batch.self, bufferingPolicy: .bufferingOldest(Self.maxQueued))
        self.continuation = continuation
        self.events = events
        self.sender = Task {
            for await batch in stream { await events.record(tenant: tenant, pipeline: pipeline, key: batch.key, batch.steps, at: batch.at) }
        }
    }

    /// Queues `steps` (message ids from `key`, as ``PipelineEvents/record(tenant:pipeline:key:_:at:)`` makes them).
    func record(key: String, _ steps: [PipelineEvents.Step]) {
        if case .dropped = self.continuation.yield((key, steps, Date.nowMilliseconds)) {
            self.events.logger.warning("pipeline events dropped: \(Self.maxQueued) batches wait for ingest", metadata: ["key": "\(key)"])
        }
    }

    /// Sends what is queued (for at most ``finishDeadline``; the rest is dropped), then ends.
    func finish() async {
        self.continuation.finish()
        let sender = self.sender
        let timer = Task {
            try? await Task.sleep(for: Self.finishDeadline)
            sender.cancel()
        }
        await sender.value
        timer.cancel()
    }
}

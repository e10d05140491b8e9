/// The events of one pipeline run, sent in order by a task of their own, so the run never waits
/// on ingest between two steps: a stage's orchestration costs a few Postgres statements, not
/// round trips to ingest's commits. ``finish()`` waits until every event queued is sent.
final class PipelineEventQueue: Sendable {
    private let continuation: AsyncStream<(key: String, steps: [PipelineEvents.Step])>.Continuation
    private let sender: Task<Void, Never>

    init(events: PipelineEvents, tenant: String, pipeline: String) {
        let (stream, continuation) = AsyncStream.makeStream(of: (key: String, steps: [PipelineEvents.Step]).self)
        self.continuation = continuation
        self.sender = Task {
            for await batch in stream { await events.record(tenant: tenant, pipeline: pipeline, key: batch.key, batch.steps) }
        }
    }

    /// Queues `steps` (message ids from `key`, as ``PipelineEvents/record(tenant:pipeline:key:_:)`` makes them).
    func record(key: String, _ steps: [PipelineEvents.Step]) {
        self.continuation.yield((key, steps))
    }

    /// Sends what is queued, then ends.
    func finish() async {
        self.continuation.finish()
        await self.sender.value
    }
}

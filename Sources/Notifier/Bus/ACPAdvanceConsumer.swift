import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import SwiftProtobuf

/// Takes the ACP events of every tenant from the ACP stream ingest keeps them in, through the
/// notifier's durable consumer `notifier_acp`, and makes each thread's silent pushes
/// (``JobStore/enqueue(_:)``) before acknowledging a batch: a failure leaves the batch to be
/// delivered again, which makes no second job. Advances of one thread within one span of
/// `notifier.acp-push-interval-seconds` are one push per device, so each span's first advance
/// is the only one that asks the database.
struct ACPAdvanceConsumer: Service {
    static let consumerName = "notifier_acp"
    /// Messages taken per fetch; a fetch also answers when it expires (a silent push waits for
    /// the end of its span anyway).
    static let batch = 256
    /// Spans already made, remembered to spare the database (forgotten all at once past this).
    static let maxRemembered = 10_000

    let jobs: JobStore
    let sender: PushSender
    let jetStream: JetStream
    let subjects: Subjects
    let settings: NotifierSettings
    let logger: Logger

    func run() async throws {
        // Ingest creates the stream; until it has, there is nothing to take.
        await consumeUntilShutdown(logger: self.logger, waiting: "waiting for the \(self.subjects.acpStreamName) stream") {
            try await self.consume()
        }
    }

    private func consume() async throws {
        let stream = self.subjects.acpStreamName
        let configuration = ConsumerConfiguration(durableName: Self.consumerName, ackWait: .seconds(30))
        try await self.jetStream.createOrUpdateConsumer(stream: stream, configuration)
        let consumer = self.jetStream.consumer(stream: stream, name: Self.consumerName)
        let span = Int64(self.settings.acpPushIntervalSeconds) * 1000
        var made = Set<SpanKey>()
        while !Task.isCancelled {
            let messages = try await consumer.fetch(batch: Self.batch, expires: .seconds(1))
            if messages.isEmpty { continue }
            let now = Date().milliseconds
            var jobsMade = 0
            for message in messages {
                guard let envelope = try? BusEventEnvelope(serializedBytes: message.payload),
                    let advance = ACPAdvance(envelope, subject: message.subject, subjects: self.subjects)
                else {
                    self.logger.warning("an ACP event that does not read; dropped", metadata: ["subject": "\(message.subject)"])
                    continue
                }
                NotifierMetrics.acpAdvances.increment()
                if now - advance.committedAt > Int64(self.settings.maxNoticeAgeSeconds) * 1000 { continue }
                let key = SpanKey(tenant: advance.tenant, thread: advance.thread, span: advance.committedAt / span)
                guard !made.contains(key) else { continue }
                jobsMade += try await self.jobs.enqueue(advance)
                if made.count >= Self.maxRemembered { made.removeAll(keepingCapacity: true) }
                made.insert(key)
            }
            NotifierMetrics.jobsMade.increment(by: jobsMade)
            // Acknowledged once every job of the batch is made (each message alone: nats.c
            // acknowledges one at a time).
            for message in messages { try message.ack() }
            if jobsMade > 0 { self.sender.kick() }
        }
    }

    private struct SpanKey: Hashable {
        var tenant: String
        var thread: String
        var span: Int64
    }
}

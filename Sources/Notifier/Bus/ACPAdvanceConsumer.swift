import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Takes every tenant's ACP threads' advances from the ACP stream ingest keeps them in, through
/// the notifier's durable consumer `notifier_acp` (created to deliver what is published from
/// then on: a first deployment pushes no old advances), and makes each thread's silent pushes
/// (``JobStore/enqueue(_:)``) before acknowledging a batch: a failure leaves the batch to be
/// delivered again, which makes no second job. A device gets one push per span of
/// `notifier.acp-push-interval-seconds`, so only a span's first advance and its first advance of
/// another thread ask the database.
struct ACPAdvanceConsumer: Service {
    static let consumerName = "notifier_acp"
    /// Messages taken per fetch; a fetch also answers when it expires (a silent push waits for
    /// the end of its span anyway).
    static let batch = 256
    /// Tenants' spans already made, remembered to spare the database (forgotten all at once
    /// past this).
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
        var configuration = ConsumerConfiguration(durableName: Self.consumerName, ackWait: .seconds(30))
        configuration.deliverPolicy = "new"
        try await self.jetStream.createOrUpdateConsumer(stream: stream, configuration)
        let consumer = self.jetStream.consumer(stream: stream, name: Self.consumerName)
        let span = Int64(self.settings.acpPushIntervalSeconds) * 1000
        /// Per tenant and span: the one thread its jobs name, or nil once they name none.
        var made: [SpanKey: String?] = [:]
        while !Task.isCancelled {
            let messages = try await consumer.fetch(batch: Self.batch, expires: .seconds(1))
            if messages.isEmpty { continue }
            let now = Date().milliseconds
            var jobsMade = 0
            for message in messages {
                guard let notice = try? JSONDecoder().decode(ACPAdvanceNotice.self, from: Data(message.payload)),
                    let advance = ACPAdvance(notice, subject: message.subject, subjects: self.subjects)
                else {
                    self.logger.warning("an ACP advance that does not read; dropped", metadata: ["subject": "\(message.subject)"])
                    continue
                }
                NotifierMetrics.acpAdvances.increment()
                if now - advance.committedAt > Int64(self.settings.maxNoticeAgeSeconds) * 1000 { continue }
                let key = SpanKey(tenant: advance.tenant, span: advance.committedAt / span)
                if let named = made[key], named == nil || named == advance.thread { continue }
                jobsMade += try await self.jobs.enqueue(advance)
                // The span's first thread, or none once a second one advanced.
                let named: String? = made[key] == nil ? advance.thread : nil
                if made.count >= Self.maxRemembered { made.removeAll(keepingCapacity: true) }
                made[key] = .some(named)
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
        var span: Int64
    }
}

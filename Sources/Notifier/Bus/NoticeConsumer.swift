import Contracts
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Takes the notices the notifier pushes from their JetStream streams through durable
/// consumers of its own: incident changes from health-monitor (`notifier_incidents`) and gate
/// openings from approvals (`notifier_gates`). Each notice becomes its push jobs in one
/// transaction (``JobStore/enqueue(_:now:)``) before it is acknowledged; a failure leaves it to
/// be delivered again, and a notice delivered twice makes its jobs once.
struct NoticeConsumer: Service {
    /// Which stream and how its notices read.
    enum Source: String, Sendable {
        case incidents
        case gates

        var consumerName: String { "notifier_" + self.rawValue }

        /// The stream its notices are taken from.
        func streamName(_ subjects: Subjects) -> String {
            switch self {
            case .incidents: subjects.incidentStreamName
            case .gates: subjects.gateStreamName
            }
        }
    }

    let source: Source
    let jobs: JobStore
    let sender: PushSender
    let jetStream: JetStream
    let subjects: Subjects
    let settings: NotifierSettings
    let logger: Logger

    private var streamName: String {
        self.source.streamName(self.subjects)
    }

    func run() async throws {
        // The publishing service creates the stream; until it has, there is nothing to take.
        await consumeUntilShutdown(logger: self.logger, waiting: "waiting for the \(self.streamName) stream") { try await self.consume() }
    }

    private func consume() async throws {
        let configuration = ConsumerConfiguration(durableName: self.source.consumerName, ackWait: .seconds(30))
        try await self.jetStream.createOrUpdateConsumer(stream: self.streamName, configuration)
        let consumer = self.jetStream.consumer(stream: self.streamName, name: self.source.consumerName)
        while !Task.isCancelled {
            var made = false
            // One at a time: a fetch answers when its batch is full or it expires, and a notice
            // must not wait for others (the budget from commit to push is a second).
            for message in try await consumer.fetch(batch: 1, expires: .seconds(5)) {
                guard let notice = self.notice(message) else {
                    self.logger.warning("a notice that does not read; dropped", metadata: ["subject": "\(message.subject)"])
                    try? message.term()
                    continue
                }
                NotifierMetrics.notices.increment()
                let now = Date()
                if now.milliseconds - notice.at > Int64(self.settings.maxNoticeAgeSeconds) * 1000 {
                    try message.ack()
                    continue
                }
                let enqueued = try await self.jobs.enqueue(notice, now: now)
                NotifierMetrics.jobsMade.increment(by: enqueued.jobs)
                NotifierMetrics.folded.increment(by: enqueued.folded)
                made = made || enqueued.jobs > 0
                try message.ack()
            }
            if made { self.sender.kick() }
        }
    }

    /// The notice in `message`, if it reads and names the tenant of its subject.
    private func notice(_ message: JetStreamMessage) -> PushNotice? {
        let data = Data(message.payload)
        switch self.source {
        case .incidents:
            guard let notice = try? JSONDecoder().decode(IncidentNotice.self, from: data),
                message.subject == self.subjects.incidentChanged(tenant: notice.tenant)
            else { return nil }
            return PushNotice(incident: notice)
        case .gates:
            guard let notice = try? JSONDecoder().decode(GateNotice.self, from: data),
                message.subject == self.subjects.gateOpened(tenant: notice.tenant)
            else { return nil }
            return PushNotice(gate: notice)
        }
    }
}

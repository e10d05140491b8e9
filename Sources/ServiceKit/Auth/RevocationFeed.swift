public import Contracts
import Foundation
public import Logging
public import ServiceLifecycle

/// Keeps a replica's ``RevocationList`` current: reads the revocations stream
/// (``Subjects/revocationStreamName``, kept as long as an access token lives) from its start
/// through a consumer of the replica's own, then follows it. Every service runs one
/// (`ServiceMain` adds it), so a replica started after a revocation knows it too.
public struct RevocationFeed: Service {
    let jetStream: JetStream
    let subjects: Subjects
    let list: RevocationList
    let logger: Logger

    public init(jetStream: JetStream, subjects: Subjects, list: RevocationList, logger: Logger) {
        self.jetStream = jetStream
        self.subjects = subjects
        self.list = list
        self.logger = logger
    }

    /// Creates the stream if it is missing (control-api, which publishes, does the same).
    public static func prepareStream(_ jetStream: JetStream, subjects: Subjects, retention: Duration) async throws {
        _ = try await jetStream.createOrUpdateStream(
            StreamConfiguration(
                name: subjects.revocationStreamName,
                subjects: [subjects.allRevocations],
                maxAge: retention,
                duplicateWindow: .seconds(600)
            )
        )
    }

    public func run() async throws {
        let name = "revocations-" + randomHex(bytes: 8)
        await cancelWhenGracefulShutdown {
            var consumer: JetStreamConsumer?
            while !Task.isCancelled {
                do {
                    if consumer == nil {
                        try await Self.prepareStream(self.jetStream, subjects: self.subjects, retention: .seconds(Int64(self.list.retention)))
                        // This replica's own; the server deletes it a while after the replica is gone.
                        try await self.jetStream.createOrUpdateConsumer(
                            stream: self.subjects.revocationStreamName,
                            ConsumerConfiguration(durableName: name, ackWait: .seconds(30), inactiveThreshold: .seconds(600))
                        )
                        consumer = try self.jetStream.consumer(stream: self.subjects.revocationStreamName, name: name)
                    }
                    // A pull answers when it expires (or is full): its expiry is the delay of a revocation.
                    let messages = try await consumer!.fetch(batch: 256, expires: .milliseconds(500))
                    for message in messages {
                        if let notice = try? JSONDecoder().decode(RevocationNotice.self, from: Data(message.payload)) {
                            self.list.revoke(
                                tenant: notice.tenant,
                                subject: notice.subject,
                                at: Date(timeIntervalSince1970: TimeInterval(notice.revokedAt) / 1000)
                            )
                        }
                        try? message.ack()
                    }
                    if messages.count < 256 { self.list.markLoaded() }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("revocation feed interrupted; retrying", metadata: ["error": "\(String(reflecting: error))"])
                    consumer = nil
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}

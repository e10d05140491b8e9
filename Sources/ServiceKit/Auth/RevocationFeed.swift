public import Contracts
import Foundation
public import Logging
public import ServiceLifecycle

/// Keeps a replica's ``RevocationList`` current. It subscribes to the revocations subject
/// (plain NATS: control-api's JetStream publishes reach it as they are stored), then reads
/// what the revocations stream (``Subjects/revocationStreamName``, kept as long as an access
/// token lives) already holds, so a replica started after a revocation knows it too. Every
/// service runs one (`ServiceMain` adds it); it costs no polling. If NATS reconnects, it reads
/// the stream again.
public struct RevocationFeed: Service {
    let connection: NATSConnection
    let jetStream: JetStream
    let subjects: Subjects
    let list: RevocationList
    let logger: Logger

    public init(connection: NATSConnection, subjects: Subjects, list: RevocationList, logger: Logger) {
        self.connection = connection
        self.jetStream = JetStream(connection: connection)
        self.subjects = subjects
        self.list = list
        self.logger = logger
    }

    /// Creates the stream if it is missing (control-api, which publishes, does so before it
    /// serves).
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
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let subscription = try self.connection.subscribe(to: self.subjects.allRevocations)
                    try await self.connection.flush()
                    try await self.catchUp()
                    self.list.markLoaded()
                    for await message in subscription { self.apply(message.payload) }
                    if Task.isCancelled { return }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("revocation feed interrupted; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reads every revocation the stream holds (none when it does not exist yet).
    private func catchUp() async throws {
        let info: StreamInfo
        do {
            info = try await self.jetStream.streamInfo(self.subjects.revocationStreamName)
        } catch let error as ServiceKitError where error.jetStreamErrorCode == 10059 {
            return  // no stream: nothing was ever revoked
        }
        guard info.state.messages > 0 else { return }
        for sequence in info.state.firstSequence...info.state.lastSequence {
            if let payload = try await self.jetStream.message(stream: self.subjects.revocationStreamName, sequence: sequence) {
                self.apply(payload)
            }
        }
    }

    private func apply(_ payload: [UInt8]) {
        guard let notice = try? JSONDecoder().decode(RevocationNotice.self, from: Data(payload)) else { return }
        self.list.revoke(tenant: notice.tenant, subject: notice.subject, at: Date(timeIntervalSince1970: TimeInterval(notice.revokedAt) / 1000))
    }
}

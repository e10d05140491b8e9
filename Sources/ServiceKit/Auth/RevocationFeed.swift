public import Contracts
import Foundation
public import Logging
public import ServiceLifecycle
import Synchronization

/// Keeps a replica's ``RevocationList`` current. It subscribes to the revocations subject
/// (plain NATS: control-api's JetStream publishes reach it as they are stored), then reads
/// what the revocations stream (``Subjects/revocationStreamName``, kept as long as an access
/// token lives) already holds, so a replica started after a revocation knows it too. Every
/// service runs one (`ServiceMain` adds it); it costs no polling. After every NATS reconnect it
/// reads what the stream stored since its last read (a publish during the disconnect never
/// reached the subscription).
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
    /// serves), within the handle's ``JetStream/noticeStreamMaxBytes`` (at the default 256 MiB,
    /// over a million notices, far past what the per-tenant sign-in and session limits let in
    /// within its retention). Full, it refuses a new notice rather than drop an old one: a
    /// dropped revocation would let its token in again, a refused one fails the request that
    /// needed it (503).
    public static func prepareStream(_ jetStream: JetStream, subjects: Subjects, retention: Duration) async throws {
        _ = try await jetStream.createOrUpdateStream(
            StreamConfiguration(
                name: subjects.revocationStreamName,
                subjects: [subjects.allRevocations],
                maxBytes: jetStream.noticeStreamMaxBytes,
                maxAge: retention,
                duplicateWindow: .seconds(600),
                maxMessageSize: 4096,
                discard: .new
            )
        )
    }

    public func run() async throws {
        let events = self.connection.connectionEvents()
        await cancelWhenGracefulShutdown {
            // The last stream sequence read (what the subscription delivers is applied too;
            // applying a revocation twice changes nothing).
            let read = ReadMark()
            while !Task.isCancelled {
                do {
                    let subscription = try await self.connection.subscribe(to: self.subjects.allRevocations)
                    try await self.connection.flush()
                    try await self.catchUp(after: read)
                    self.list.markLoaded()
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await message in subscription { self.apply(message.payload) }
                        }
                        group.addTask {
                            for await event in events where event == .reconnected {
                                try await self.catchUp(after: read)
                            }
                        }
                        // The subscription ended (the connection closed), or a catch-up failed.
                        try await group.next()
                        group.cancelAll()
                    }
                    if Task.isCancelled { return }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("revocation feed interrupted; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Reads the revocations the stream stored after sequence `read` (none when it does not
    /// exist yet), and advances `read`.
    private func catchUp(after read: ReadMark) async throws {
        let info: StreamInfo
        do {
            info = try await self.jetStream.streamInfo(self.subjects.revocationStreamName)
        } catch let error as ServiceKitError where error.jetStreamErrorCode == 10059 {
            return  // no stream: nothing was ever revoked
        }
        let first = max(info.state.firstSequence, read.value.withLock { $0 } + 1)
        guard info.state.messages > 0, first <= info.state.lastSequence else { return }
        for sequence in first...info.state.lastSequence {
            if let payload = try await self.jetStream.message(stream: self.subjects.revocationStreamName, sequence: sequence) {
                self.apply(payload)
            }
            read.value.withLock { $0 = max($0, sequence) }
        }
    }

    private func apply(_ payload: [UInt8]) {
        guard let notice = try? JSONDecoder().decode(RevocationNotice.self, from: Data(payload)) else { return }
        self.list.revoke(tenant: notice.tenant, subject: notice.subject, at: Date(timeIntervalSince1970: TimeInterval(notice.revokedAt) / 1000))
    }
}

/// The last stream sequence the feed has read.
private final class ReadMark: Sendable {
    let value = Mutex<UInt64>(0)
}

public import Contracts
public import Foundation
import SwiftProtobuf

/// Adds a service's events to a tenant's event log through ingest (the service lane,
/// ``Subjects/serviceEvents``): returns once ingest has committed them. A repeated msgId is
/// stored once, so a retry after a lost answer is safe. Sent while serving an HTTP request, the
/// batch carries the request's `x-request-id` and `traceparent` (``RequestScope/busHeaders``).
public struct ServiceEventSender: Sendable {
    public let connection: NATSConnection
    public let subjects: Subjects
    public let timeout: Duration

    /// Events ingest takes in one batch.
    public static let maxBatch = 100

    public init(connection: NATSConnection, subjects: Subjects, timeout: Duration = .seconds(5)) {
        self.connection = connection
        self.subjects = subjects
        self.timeout = timeout
    }

    /// Sends `events` (at most ``maxBatch``) for `tenant`; returns their seqs.
    /// - Throws: ``ServiceEventRefusal`` when ingest refused them (its reason, and whether a
    ///   retry may succeed); ``ServiceKitError`` `natsTimeout` or `natsNoResponders` when it
    ///   did not answer.
    /// `subject`: the lane, ``Subjects/serviceEvents`` unless named (stream-fanout's is
    /// ``Subjects/clientACPFrames``).
    @discardableResult
    public func send(tenant: String, _ events: [BusServiceEvent], on subject: String? = nil) async throws -> [Int64] {
        var batch = BusServiceEventBatch()
        batch.tenantID = tenant
        batch.events = events
        // Sent while serving a request: its correlation goes with it (ingest logs by it).
        let reply = try await self.connection.request(
            try batch.serializedBytes() as [UInt8],
            to: subject ?? self.subjects.serviceEvents,
            headers: RequestScope.current?.busHeaders ?? [:],
            timeout: self.timeout
        )
        let answer = try BusServiceEventReply(serializedBytes: reply.payload)
        guard answer.error.isEmpty, answer.seqs.count == events.count else {
            throw ServiceEventRefusal(
                message: "ingest refused \(events.count) service events: \(answer.error.isEmpty ? "no seqs" : answer.error)",
                retryable: answer.retryable
            )
        }
        return answer.seqs
    }
}

/// Ingest's refusal of a batch of service events.
public struct ServiceEventRefusal: Error, CustomStringConvertible {
    public let message: String
    /// Whether sending them again may succeed (ingest was overloaded or Postgres failed); false
    /// for a batch ingest will never take (a malformed event, an unknown tenant).
    public let retryable: Bool
    public var description: String { self.message }
}

extension BusServiceEvent {
    /// The `frame_tail` of a frame: `frame` encoded as a JSON object (keys sorted), its opening
    /// brace turned into the comma that continues `{"seq":N,"eventId":"N"`.
    public static func frameTail(_ frame: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let object = try encoder.encode(frame)
        return Data([UInt8(ascii: ",")] + object.dropFirst())
    }
}

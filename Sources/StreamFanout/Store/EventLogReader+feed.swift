import EventLog
import NIOCore

extension EventLogReader {
    /// The events with `after < seq <= through` that `filter` matches, in seq order, at most
    /// `limit` and `maxBytes` of frames (at least one), as feed events. The filter runs in SQL.
    func events(tenant: String, after: Int64, through: Int64, filter: StreamFilter, limit: Int, maxBytes: Int) async throws -> [FeedEvent] {
        try await self.events(
            tenant: tenant,
            after: after,
            through: through,
            kinds: filter.kinds,
            minimumSeverity: filter.minimumSeverity,
            swarmIDs: filter.swarmIDs,
            agentIDs: filter.agentIDs,
            renderedTools: filter.tools,
            limit: limit,
            maxBytes: maxBytes
        ).map(FeedEvent.init)
    }
}

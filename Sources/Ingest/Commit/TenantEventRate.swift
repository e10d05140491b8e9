import Contracts
import Hummingbird
import Metrics
import ServiceKit

/// Each tenant's share of this replica's commit throughput: `ingest.tenant-events-per-second`
/// events on average through the bulk lane, `ingest.tenant-events-burst` at once above it; and,
/// apart, `ingest.tenant-state-events-per-second` through the priority lane.
///
/// A request is admitted whole while its tenant's bucket is out of debt and then charged its
/// events, which may put the bucket in debt; until the refill has paid it back the tenant's
/// bulk requests get 429 with `Retry-After`. Large requests are refused before their body is
/// read, and answered after a quarter of a second at most (a client that ignores `Retry-After`
/// cannot spin on refusals), so a tenant over its rate costs the others little more than
/// reading its headers.
/// The priority lane (a few state events: connectors' state changes, control
/// acknowledgements) has a bucket of its own, so a tenant's flood never holds back its own
/// agents' acknowledgements, and state events cannot carry a flood past the bulk rate either.
/// Services' events (ingest's service lane) are not charged.
final class TenantEventRate: Sendable {
    let buckets: KeyedTokenBuckets
    private let refusedEarly: Counter
    private let refusedParsed: Counter

    /// Bodies up to this many bytes are parsed even while their tenant is in debt, so that a
    /// request that may take the priority lane is never refused for its size alone.
    static let smallBodyBytes = 16 << 10

    /// How long a refusal before reading waits (at most the time until the tenant is out of
    /// debt).
    static let refusalDelay = Duration.milliseconds(250)

    /// The bulk lane's rate.
    convenience init(settings: IngestSettings) {
        self.init(perSecond: settings.tenantEventsPerSecond, burst: settings.tenantEventsBurst, lane: "bulk")
    }

    /// The priority lane's rate.
    static func stateEvents(settings: IngestSettings) -> TenantEventRate {
        TenantEventRate(perSecond: settings.tenantStateEventsPerSecond, burst: settings.tenantStateEventsBurst, lane: "priority")
    }

    init(perSecond: Int, burst: Int, lane: String) {
        self.buckets = KeyedTokenBuckets(capacity: Double(burst), perSecond: Double(perSecond))
        self.refusedEarly = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "tenant_rate_unread"), ("lane", lane)])
        self.refusedParsed = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "tenant_rate"), ("lane", lane)])
    }

    /// Throws 429 if `tenant` is over its rate; charges nothing.
    func check(tenant: String) throws {
        if let wait = self.buckets.debt(tenant) {
            self.refusedParsed.increment()
            throw Self.refusal(wait)
        }
    }

    /// Charges `events` admitted for `tenant`.
    func spend(tenant: String, events: Int) {
        self.buckets.spend(tenant, cost: Double(events))
    }

    /// Refuses a large request of a tenant over its rate before its body is read.
    var middleware: Middleware { Middleware(rate: self) }

    private static func refusal(_ wait: Duration) -> APIError {
        APIError(
            .rateLimited,
            "this tenant is over its ingest rate (ingest.tenant-events-per-second); retry after the Retry-After seconds",
            retryAfterSeconds: wait.retryAfterSeconds
        )
    }

    /// See ``TenantEventRate/middleware``: goes after the agent's authentication.
    struct Middleware: RouterMiddleware {
        typealias Context = ServiceRequestContext
        let rate: TenantEventRate

        func handle(
            _ request: Request,
            context: ServiceRequestContext,
            next: (Request, ServiceRequestContext) async throws -> Response
        ) async throws -> Response {
            if let tenant = context.agentTenant, !Self.isSmall(request), let wait = self.rate.buckets.debt(tenant) {
                self.rate.refusedEarly.increment()
                // A client that ignores Retry-After and asks again at once gets its answers at
                // most this often per connection: its refusals cost ingest a sleeping task, not
                // a busy loop.
                try? await Task.sleep(for: min(wait, TenantEventRate.refusalDelay))
                throw TenantEventRate.refusal(wait)
            }
            return try await next(request, context)
        }

        /// A body declared small and not compressed.
        static func isSmall(_ request: Request) -> Bool {
            let encoding = request.headers[.contentEncoding]?.lowercased()
            guard encoding == nil || encoding == "" || encoding == "identity" else { return false }
            guard let length = request.headers[.contentLength].flatMap({ Int($0) }) else { return false }
            return length <= TenantEventRate.smallBodyBytes
        }
    }
}

import Contracts
import EventLog
import Hummingbird
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import Synchronization

/// Each tenant's ingest rate, held across the replicas: `ingest.tenant-events-per-second` events
/// on average through the bulk lane, `ingest.tenant-events-burst` at once above it; and, apart,
/// `ingest.tenant-state-events-per-second` through the priority lane.
///
/// The buckets are in Postgres (``EventLog/EventLogRateBuckets``), one per tenant and lane, shared
/// by every replica; each replica takes tokens from its tenant's bucket a chunk at a time (a tenth
/// of a second's worth, at most the burst) and spends them on the events it admits
/// (``RateLease``), so a tenant costs a replica one `UPDATE` a chunk, not one a request. A request
/// is admitted whole while its tenant's lease holds a token and then charged its events, which
/// may put the lease in debt; until the shared bucket has paid it back the tenant's bulk requests
/// get 429 with `Retry-After`. Large requests are refused before their body is read, and answered
/// after a quarter of a second at most (a client that ignores `Retry-After` cannot spin on
/// refusals), so a tenant over its rate costs the others little more than reading its headers.
/// The priority lane (a few state events: connectors' state changes, control acknowledgements)
/// has a bucket of its own, so a tenant's flood never holds back its own agents'
/// acknowledgements, and state events cannot carry a flood past the bulk rate either. Services'
/// events (ingest's service lane) are not charged.
final class TenantEventRate: Sendable {
    private let shared: PostgresTokenBuckets
    /// How long a refill may take (`ingest.commit-timeout-seconds`): past it the tenant's
    /// requests answer 503, and the next one tries again.
    let refillTimeout: Duration
    let perSecond: Double
    /// The tokens a refill takes beyond the debt.
    let chunk: Double
    private let leases = Mutex<[String: Entry]>([:])
    /// When the leases idle past their debt were last forgotten.
    private let swept = Mutex(ContinuousClock.now)
    private let refusedEarly: Counter
    private let refusedParsed: Counter

    private struct Entry {
        var lease = RateLease()
        /// The refill under way, which the tenant's other requests wait for.
        var refilling: Task<Void, any Error>?
        var touched: ContinuousClock.Instant
    }

    /// Tenants whose leases a replica keeps before it forgets those idle for a minute.
    static let maxTenants = 10_000

    /// Bodies up to this many bytes are parsed even while their tenant is in debt, so that a
    /// request that may take the priority lane is never refused for its size alone.
    static let smallBodyBytes = 16 << 10

    /// How long a refusal before reading waits (at most the time until the tenant is out of
    /// debt).
    static let refusalDelay = Duration.milliseconds(250)

    /// The bulk lane's rate.
    convenience init(settings: IngestSettings, client: PostgresClient, logger: Logger) {
        self.init(
            perSecond: settings.tenantEventsPerSecond,
            burst: settings.tenantEventsBurst,
            lane: "bulk",
            refillTimeout: .seconds(settings.commitTimeoutSeconds),
            client: client,
            logger: logger
        )
    }

    /// The priority lane's rate.
    static func stateEvents(settings: IngestSettings, client: PostgresClient, logger: Logger) -> TenantEventRate {
        TenantEventRate(
            perSecond: settings.tenantStateEventsPerSecond,
            burst: settings.tenantStateEventsBurst,
            lane: "priority",
            refillTimeout: .seconds(settings.commitTimeoutSeconds),
            client: client,
            logger: logger
        )
    }

    init(perSecond: Int, burst: Int, lane: String, refillTimeout: Duration, client: PostgresClient, logger: Logger) {
        self.refillTimeout = refillTimeout
        self.shared = EventLogRateBuckets.lane(
            lane,
            client: client,
            capacity: Double(burst),
            perSecond: Double(perSecond),
            logger: logger
        )
        self.perSecond = Double(perSecond)
        self.chunk = max(1, min(Double(burst), Double(perSecond) / 10))
        self.refusedEarly = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "tenant_rate_unread"), ("lane", lane)])
        self.refusedParsed = Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "tenant_rate"), ("lane", lane)])
    }

    /// Throws 429 if `tenant` is over its rate; charges nothing.
    func check(tenant: String) async throws {
        if let wait = try await self.wait(tenant: tenant) {
            self.refusedParsed.increment()
            throw Self.refusal(wait)
        }
    }

    /// Charges `events` admitted for `tenant`.
    func spend(tenant: String, events: Int) {
        self.leases.withLock { leases in
            leases[tenant, default: Entry(touched: .now)].lease.spend(events)
            leases[tenant]?.touched = .now
        }
    }

    /// Nil when `tenant` may send now, else how long until it may: its lease is asked, and
    /// refilled from the shared bucket when empty (one refill at a time per tenant).
    func wait(tenant: String) async throws -> Duration? {
        while true {
            let now = ContinuousClock.now
            let sweep = self.swept.withLock { swept in
                guard now - swept >= .seconds(10) else { return false }
                swept = now
                return true
            }
            let next: (step: RateLease.Step, refill: Task<Void, any Error>?) = self.leases.withLock { leases in
                if sweep, leases.count >= Self.maxTenants { Self.forgetIdle(&leases, now: now, perSecond: self.perSecond) }
                var entry = leases[tenant] ?? Entry(touched: now)
                entry.touched = now
                defer { leases[tenant] = entry }
                if let refilling = entry.refilling { return (.refill(wanted: 0), refilling) }
                let step = entry.lease.step(now: now, chunk: self.chunk)
                if case .refill(let wanted) = step {
                    entry.refilling = Task { try await self.refill(tenant: tenant, wanted: wanted) }
                    return (step, entry.refilling)
                }
                return (step, nil)
            }
            switch next.step {
            case .admit: return nil
            case .refuse(let wait): return wait
            case .refill:
                do {
                    try await next.refill?.value
                } catch let error as APIError {
                    throw error
                } catch {
                    throw APIError(.serviceUnavailable, "the tenant's rate cannot be read now; retry shortly", retryAfterSeconds: 1)
                }
            }
        }
    }

    private func refill(tenant: String, wanted: Double) async throws {
        do {
            let shared = self.shared
            let (granted, wait) = try await withDeadline(
                self.refillTimeout,
                orThrow: APIError(.serviceUnavailable, "the tenant's rate cannot be read now; retry shortly", retryAfterSeconds: 1)
            ) {
                try await shared.grant(tenant, upTo: wanted)
            }
            self.leases.withLock { leases in
                leases[tenant]?.lease.refilled(granted, wait: wait, now: .now, perSecond: self.perSecond)
                leases[tenant]?.refilling = nil
            }
        } catch {
            self.leases.withLock { $0[tenant]?.refilling = nil }
            throw error
        }
    }

    /// Past ``maxTenants`` (looked at every ten seconds at most), forgets the leases idle for a
    /// minute whose debt the refill has paid meanwhile (what they held goes with them; a debt is
    /// never forgiven).
    private static func forgetIdle(_ leases: inout [String: Entry], now: ContinuousClock.Instant, perSecond: Double) {
        leases = leases.filter { _, entry in
            let idle = now - entry.touched
            let seconds = Double(idle.components.seconds) + Double(idle.components.attoseconds) / 1e18
            return entry.refilling != nil || idle < .seconds(60) || entry.lease.held + perSecond * seconds < 0
        }
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
            if let tenant = context.agentTenant, !Self.isSmall(request), let wait = try await self.rate.wait(tenant: tenant) {
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

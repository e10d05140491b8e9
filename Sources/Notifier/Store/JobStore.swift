import APNs
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// The push jobs: made from a notice in one transaction (before the notice is acknowledged),
/// claimed by senders with a lease, finished with APNs' outcome.
struct JobStore: Sendable {
    let client: PostgresClient
    let settings: NotifierSettings
    let logger: Logger

    /// How long a claimed job is a sender's before another may take it (a crashed sender's):
    /// twice the APNs deadline and five seconds more, so a live sender always finishes first.
    var leaseSeconds: Int { 2 * self.settings.apnsTimeoutMilliseconds / 1000 + 5 }

    /// What ``enqueue(_:now:)`` did.
    struct Enqueued: Sendable, Hashable {
        var jobs = 0
        var folded = 0
        /// The notice was taken before (a redelivery): nothing was made.
        var repeated = false
    }

    /// Makes the notice's push jobs, one per device of its tenant that wants it, in one
    /// transaction with the mark that it was taken: a notice delivered twice makes its jobs once.
    /// Past a device's rate, the push folds into that device's summary job.
    func enqueue(_ notice: PushNotice, now: Date) async throws -> Enqueued {
        try await self.client.transaction(logger: self.logger) { connection in
            let taken = try await connection.query(
                "INSERT INTO notices (tenant_id, key, taken_at) VALUES (\(notice.tenant), \(notice.key), \(now)) ON CONFLICT DO NOTHING RETURNING 1",
                logger: self.logger
            )
            var fresh = false
            for try await _ in taken.decode(Int.self) { fresh = true }
            guard fresh else { return Enqueued(repeated: true) }
            let rows = try await connection.query(
                """
                SELECT d.device_id, d.window_start, d.window_count, p.document FROM devices d
                LEFT JOIN preferences p ON p.tenant_id = d.tenant_id AND p.device_id = d.device_id
                WHERE d.tenant_id = \(notice.tenant) AND NOT d.invalid_environment
                ORDER BY d.device_id FOR UPDATE OF d
                """,
                logger: self.logger
            )
            var targets: [(device: String, window: DeviceWindow, delivery: PushDelivery)] = []
            for try await (device, start, count, document) in rows.decode((String, Int64?, Int, String?).self) {
                let preferences = document.flatMap { try? JSONDecoder().decode(NotificationPreferences.self, from: Data($0.utf8)) } ?? .defaults
                guard let delivery = preferences.delivery(of: notice, at: now) else { continue }
                targets.append((device, DeviceWindow(start: start, count: count), delivery))
            }
            var result = Enqueued()
            let nowMilliseconds = now.milliseconds
            let expires = now.addingTimeInterval(Double(self.settings.expirationSeconds))
            for target in targets {
                switch target.window.decide(
                    now: nowMilliseconds,
                    limit: self.settings.devicePushLimit,
                    length: Int64(self.settings.deviceWindowSeconds) * 1000
                ) {
                case .send(let window):
                    try await connection.query(
                        """
                        UPDATE devices SET window_start = \(window.start), window_count = \(window.count)
                        WHERE tenant_id = \(notice.tenant) AND device_id = \(target.device)
                        """,
                        logger: self.logger
                    )
                    let payload = String(decoding: PushPayload.render(notice, delivery: target.delivery), as: UTF8.self)
                    try await connection.query(
                        """
                        INSERT INTO jobs (job_id, tenant_id, device_id, key, kind, collapse_id, push_type, priority, payload, swarm_id, silent,
                            state, not_before, expires_at, created_at)
                        VALUES (\(UUID()), \(notice.tenant), \(target.device), \(notice.key), 'push', \(notice.collapseID), 'alert', 10, \(payload),
                            \(notice.swarmID), \(target.delivery == .silent), 'pending', \(now), \(expires), \(now))
                        ON CONFLICT (tenant_id, device_id, key) DO NOTHING
                        """,
                        logger: self.logger
                    )
                    result.jobs += 1
                case .fold(let at):
                    let sendAt = Date(timeIntervalSince1970: Double(at) / 1000)
                    try await connection.query(
                        """
                        INSERT INTO jobs (job_id, tenant_id, device_id, key, kind, collapse_id, push_type, priority, payload, swarm_id, folded,
                            silent, state, not_before, expires_at, created_at)
                        VALUES (\(UUID()), \(notice.tenant), \(target.device), \("summary-\(at)"), 'summary', 'summary', 'alert', 10, '',
                            \(notice.swarmID), 1, \(target.delivery == .silent), 'pending', \(sendAt), \(sendAt.addingTimeInterval(Double(self.settings.expirationSeconds))), \(now))
                        ON CONFLICT (tenant_id, device_id, key) DO UPDATE SET folded = jobs.folded + 1,
                            swarm_id = CASE WHEN jobs.swarm_id = EXCLUDED.swarm_id THEN jobs.swarm_id END,
                            silent = jobs.silent AND EXCLUDED.silent
                        """,
                        logger: self.logger
                    )
                    result.folded += 1
                }
            }
            return result
        }
    }

    /// Makes the silent pushes of an ACP thread's advance: one job per device of the tenant that
    /// wants them and span of `notifier.acp-push-interval-seconds` the advance committed in, due
    /// at the span's end, so a device gets at most one such push per span however many threads
    /// advance (and however often one is delivered). The job names the span's first thread;
    /// once another thread advances in the span it names none (``PushPayload/renderACP(_:)``
    /// without a thread: the app fetches its inbox), and is sent even to a device following
    /// one of them live. Whether the device follows the named thread live is asked when the
    /// job is due. Answers how many jobs were made or changed. Two statements whatever the
    /// number of devices.
    func enqueue(_ advance: ACPAdvance) async throws -> Int {
        let span = Int64(self.settings.acpPushIntervalSeconds) * 1000
        let bucket = advance.committedAt / span
        let due = Date(timeIntervalSince1970: Double((bucket + 1) * span) / 1000)
        let expires = due.addingTimeInterval(Double(self.settings.expirationSeconds))
        let rows = try await self.client.query(
            """
            SELECT d.device_id, p.document FROM devices d
            LEFT JOIN preferences p ON p.tenant_id = d.tenant_id AND p.device_id = d.device_id
            WHERE d.tenant_id = \(advance.tenant) AND NOT d.invalid_environment
            """,
            logger: self.logger
        )
        var devices: [String] = []
        for try await (device, document) in rows.decode((String, String?).self) {
            let preferences = document.flatMap { try? JSONDecoder().decode(NotificationPreferences.self, from: Data($0.utf8)) } ?? .defaults
            if preferences.wants(advance) { devices.append(device) }
        }
        guard !devices.isEmpty else { return 0 }
        let payload = String(decoding: PushPayload.renderACP(advance), as: UTF8.self)
        let inbox = String(decoding: PushPayload.renderACP(advance, thread: false), as: UTF8.self)
        let changed = try await self.client.write(
            """
            INSERT INTO jobs (job_id, tenant_id, device_id, key, kind, collapse_id, push_type, priority, payload, swarm_id, silent,
                thread_id, state, not_before, expires_at, created_at)
            SELECT gen_random_uuid(), \(advance.tenant), device, \("acp-\(bucket)"), 'acp', 'acp', 'background', 5, \(payload),
                \(advance.swarm), true, \(advance.thread), 'pending', \(due), \(expires), now()
            FROM unnest(\(devices)::text[]) AS device
            ON CONFLICT (tenant_id, device_id, key) DO UPDATE SET thread_id = NULL, swarm_id = NULL, payload = \(inbox)
                WHERE jobs.state = 'pending' AND NOT jobs.in_flight AND jobs.thread_id IS DISTINCT FROM EXCLUDED.thread_id
                  AND jobs.thread_id IS NOT NULL
            RETURNING 1
            """,
            logger: self.logger
        )
        return changed.count
    }

    /// A job claimed for sending, with its device's registration as it is now.
    struct Claimed: Sendable {
        var jobID: UUID
        var tenant: String
        var device: String
        var kind: String
        var collapseID: String
        /// `alert`, or `background` for an ACP thread's silent push.
        var pushType: String
        /// The ACP thread of a silent push.
        var threadID: String?
        var payload: String
        var swarmID: String?
        var folded: Int
        var silent: Bool
        var attempts: Int
        var expiresAt: Date
        /// The previous attempt's outcome was never recorded.
        var unsure: Bool
        /// The device's registration now; nil when it has none any more.
        var registration: Registration?
    }

    /// A device's registration as a claim reads it.
    struct Registration: Sendable, Decodable {
        var token: String
        var environment: String
        var topic: String
        /// Milliseconds since the epoch.
        var registeredAt: Int64
    }

    /// Up to `limit` due jobs, leased to this sender. A job whose device is throttled waits.
    func claim(limit: Int) async throws -> [Claimed] {
        let rows = try await self.client.write(
            """
            WITH due AS (
                SELECT j.job_id, j.in_flight FROM jobs j
                WHERE j.state = 'pending' AND j.not_before <= now() AND (j.lease_until IS NULL OR j.lease_until < now())
                  AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.tenant_id = j.tenant_id AND d.device_id = j.device_id AND d.throttled_until > now())
                ORDER BY j.priority DESC, j.not_before LIMIT \(limit) FOR UPDATE OF j SKIP LOCKED
            )
            UPDATE jobs j SET attempts = j.attempts + 1, in_flight = true, lease_until = now() + make_interval(secs => \(self.leaseSeconds)),
                unsure_resends = j.unsure_resends + CASE WHEN due.in_flight THEN 1 ELSE 0 END
            FROM due WHERE j.job_id = due.job_id
            RETURNING j.job_id, j.tenant_id, j.device_id, j.kind, j.collapse_id, j.push_type, j.thread_id, j.payload, j.swarm_id, j.folded,
                j.silent, j.attempts, j.expires_at, due.in_flight,
                (SELECT json_build_object('token', d.apns_token, 'environment', d.environment, 'topic', d.topic,
                    'registeredAt', (extract(epoch FROM d.registered_at) * 1000)::bigint)::text
                 FROM devices d WHERE d.tenant_id = j.tenant_id AND d.device_id = j.device_id)
            """,
            logger: self.logger
        )
        var claimed: [Claimed] = []
        for row in rows {
            let (id, tenant, device, kind, collapse, pushType, thread, payload, swarm, folded, silent, attempts, expires, unsure, registration) =
                try row.decode((UUID, String, String, String, String, String, String?, String, String?, Int, Bool, Int, Date, Bool, String?).self)
            let current = registration.flatMap { try? JSONDecoder().decode(Registration.self, from: Data($0.utf8)) }
            claimed.append(
                Claimed(
                    jobID: id,
                    tenant: tenant,
                    device: device,
                    kind: kind,
                    collapseID: collapse,
                    pushType: pushType,
                    threadID: thread,
                    payload: payload,
                    swarmID: swarm,
                    folded: folded,
                    silent: silent,
                    attempts: attempts,
                    expiresAt: expires,
                    unsure: unsure,
                    registration: current
                )
            )
        }
        return claimed
    }

    /// How a job ended, or when it is tried again.
    enum Finish: Sendable {
        case sent(status: Int)
        /// Tried again at `at`. `unsure`: the attempt got no answer, so APNs may have delivered
        /// it, and the retry counts as an unsure resend (as a lease taken over after a crash).
        case retry(at: Date, status: Int?, reason: String, unsure: Bool = false)
        case failed(status: Int?, reason: String)
        case dropped(reason: String)
    }

    func finish(_ job: UUID, _ finish: Finish) async throws {
        switch finish {
        case .sent(let status):
            try await self.client.write(
                """
                UPDATE jobs SET state = 'sent', in_flight = false, lease_until = NULL, finished_at = now(), last_status = \(status), last_reason = NULL
                WHERE job_id = \(job)
                """,
                logger: self.logger
            )
        case .retry(let at, let status, let reason, let unsure):
            try await self.client.write(
                """
                UPDATE jobs SET in_flight = false, lease_until = NULL, not_before = \(at), last_status = \(status), last_reason = \(reason),
                    unsure_resends = unsure_resends + \(unsure ? 1 : 0)
                WHERE job_id = \(job)
                """,
                logger: self.logger
            )
        case .failed(let status, let reason):
            try await self.client.write(
                """
                UPDATE jobs SET state = 'failed', in_flight = false, lease_until = NULL, finished_at = now(), last_status = \(status),
                    last_reason = \(reason)
                WHERE job_id = \(job)
                """,
                logger: self.logger
            )
        case .dropped(let reason):
            try await self.client.write(
                """
                UPDATE jobs SET state = 'dropped', in_flight = false, lease_until = NULL, finished_at = now(), last_reason = \(reason)
                WHERE job_id = \(job)
                """,
                logger: self.logger
            )
        }
    }

    /// APNs answered 410 for `token` at `since`: the registration goes, unless the device
    /// registered again after that. Answers whether it went.
    func removeUnregistered(tenant: String, device: String, token: String, since: Date?) async throws -> Bool {
        try await self.client.transaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM devices WHERE tenant_id = \(tenant) AND device_id = \(device) AND apns_token = \(token)
                  AND (\(since)::timestamptz IS NULL OR registered_at <= \(since))
                RETURNING 1
                """,
                logger: self.logger
            ).collect()
            guard !rows.isEmpty else { return false }
            try await connection.query(
                """
                UPDATE jobs SET state = 'dropped', finished_at = now(), last_reason = 'the token is unregistered'
                WHERE tenant_id = \(tenant) AND device_id = \(device) AND state = 'pending' AND NOT in_flight
                """,
                logger: self.logger
            )
            return true
        }
    }

    /// APNs answered BadDeviceToken: the token is not of the environment it was registered for.
    func markWrongEnvironment(tenant: String, device: String, token: String) async throws {
        try await self.client.write(
            "UPDATE devices SET invalid_environment = true WHERE tenant_id = \(tenant) AND device_id = \(device) AND apns_token = \(token)",
            logger: self.logger
        )
    }

    /// APNs answered 429 for this device: nothing goes to it before `until`.
    func throttle(tenant: String, device: String, until: Date) async throws {
        try await self.client.write(
            "UPDATE devices SET throttled_until = \(until) WHERE tenant_id = \(tenant) AND device_id = \(device)",
            logger: self.logger
        )
    }

    /// Removes a revoked device's registration and preferences; its pending pushes are dropped.
    func forget(tenant: String, device: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            try await connection.query("DELETE FROM devices WHERE tenant_id = \(tenant) AND device_id = \(device)", logger: self.logger)
            try await connection.query("DELETE FROM preferences WHERE tenant_id = \(tenant) AND device_id = \(device)", logger: self.logger)
            try await connection.query(
                """
                UPDATE jobs SET state = 'dropped', finished_at = now(), last_reason = 'the device is revoked'
                WHERE tenant_id = \(tenant) AND device_id = \(device) AND state = 'pending'
                """,
                logger: self.logger
            )
        }
    }

    /// Pending jobs, and the age of the oldest due one (seconds), for the metrics.
    func depth() async throws -> (pending: Int, oldestSeconds: Double) {
        let rows = try await self.client.query(
            """
            SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(not_before) FILTER (WHERE not_before <= now())), 0)::float8
            FROM jobs WHERE state = 'pending'
            """,
            logger: self.logger
        )
        for try await (count, oldest) in rows.decode((Int, Double).self) { return (count, oldest) }
        return (0, 0)
    }

    /// Deletes finished jobs and taken notices older than the retention.
    func prune() async throws {
        let before = Date().addingTimeInterval(-Double(self.settings.jobRetentionHours) * 3600)
        // ACP threads' silent pushes are many and worth nothing once old (an advance older than
        // max-notice-age makes no job): they go sooner.
        let acpBefore = Date().addingTimeInterval(-Double(self.settings.maxNoticeAgeSeconds))
        // Each on its own: one that times out on a large backlog does not undo the others.
        try await self.client.write("DELETE FROM jobs WHERE state <> 'pending' AND finished_at < \(before)", logger: self.logger)
        try await self.client.write("DELETE FROM jobs WHERE kind = 'acp' AND state <> 'pending' AND finished_at < \(acpBefore)", logger: self.logger)
        try await self.client.write("DELETE FROM notices WHERE taken_at < \(before)", logger: self.logger)
    }
}

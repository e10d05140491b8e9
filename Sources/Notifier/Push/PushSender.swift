import APNs
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Sends the due push jobs: claims a batch (leased, so replicas share the queue and a crashed
/// sender's jobs come back), sends each through the APNs client as concurrent streams, and
/// records each outcome. Runs at once when jobs are made (``kick()``) and every half second.
final class PushSender: Service, Sendable {
    let jobs: JobStore
    let apns: APNsClient
    let revocations: RevocationList
    /// Which devices follow which ACP threads live (their threads' silent pushes are dropped).
    let presence: ACPPresenceMap
    let settings: NotifierSettings
    let logger: Logger
    private let wakeUps = WakeUps(every: .milliseconds(500))
    private let lastPrune = Mutex(ContinuousClock.now)
    /// When the queue's depth was last measured (the gauges), busy or idle.
    private let lastDepth = Mutex(ContinuousClock.now - .seconds(60))

    init(jobs: JobStore, apns: APNsClient, revocations: RevocationList, presence: ACPPresenceMap, settings: NotifierSettings, logger: Logger) {
        self.jobs = jobs
        self.apns = apns
        self.revocations = revocations
        self.presence = presence
        self.settings = settings
        self.logger = logger
    }

    /// New jobs are due.
    func kick() { self.wakeUps.kick() }

    func run() async throws {
        // Ends at graceful shutdown; a job in flight then is claimed again after its lease.
        await self.wakeUps.run {
            do {
                let full = try await self.round() >= self.settings.sendConcurrency
                if self.lastPrune.withLock({ ContinuousClock.now - $0 > .seconds(3600) }) {
                    self.lastPrune.withLock { $0 = ContinuousClock.now }
                    try await self.jobs.prune()
                }
                return full
            } catch  where !Task.isCancelled {
                self.logger.warning("push round failed", metadata: ["error": "\(String(reflecting: error))"])
            } catch {}
            return false
        }
    }

    /// Claims and sends one batch; answers how many were claimed.
    private func round() async throws -> Int {
        // The gauges follow a backlog too: measured once a second whether the round is busy.
        let now = ContinuousClock.now
        if self.lastDepth.withLock({ last in
            guard now - last >= .seconds(1) else { return false }
            last = now
            return true
        }) {
            let (pending, oldest) = try await self.jobs.depth()
            NotifierMetrics.queueDepth.set(pending)
            NotifierMetrics.oldestSeconds.set(oldest)
        }
        let claimed = try await self.jobs.claim(limit: self.settings.sendConcurrency)
        guard !claimed.isEmpty else { return 0 }
        await withTaskGroup(of: Void.self) { group in
            for job in claimed {
                group.addTask {
                    do {
                        try await self.send(job)
                    } catch {
                        // The lease runs out and the job is claimed again (an unsure resend).
                        self.logger.warning("push outcome not recorded", metadata: ["job": "\(job.jobID)", "error": "\(String(reflecting: error))"])
                    }
                }
            }
        }
        return claimed.count
    }

    private func send(_ job: JobStore.Claimed) async throws {
        if job.unsure { NotifierMetrics.unsureResends.increment() }
        guard let registration = job.registration, let environment = APNsEnvironment(rawValue: registration.environment) else {
            try await self.jobs.finish(job.jobID, .dropped(reason: "the device has no push registration"))
            return
        }
        if self.revocations.isRevoked(tenant: job.tenant, subject: job.device) {
            try await self.jobs.forget(tenant: job.tenant, device: job.device)
            return
        }
        let background = job.pushType == APNsNotification.PushType.background.rawValue
        if background, let thread = job.threadID, self.presence.isLive(tenant: job.tenant, device: job.device, thread: thread) {
            NotifierMetrics.pushes(kind: job.kind, status: nil, reason: "Live").increment()
            try await self.jobs.finish(job.jobID, .dropped(reason: "the device follows the thread live"))
            return
        }
        let payload =
            job.kind == "summary"
            ? PushPayload.renderSummary(count: job.folded, swarm: job.swarmID, delivery: job.silent ? .silent : .normal)
            : Data(job.payload.utf8)
        let notification = APNsNotification(
            deviceToken: registration.token,
            environment: environment,
            topic: registration.topic,
            pushType: background ? .background : .alert,
            priority: job.silent ? .powerAware : .immediate,
            expiration: Int64(job.expiresAt.timeIntervalSince1970),
            collapseID: job.collapseID,
            apnsID: job.jobID,
            payload: payload
        )
        let started = ContinuousClock.now
        var response: APNsResponse?
        do {
            response = try await self.apns.send(notification)
        } catch let error where error.code == .invalidNotification {
            NotifierMetrics.pushes(kind: job.kind, status: nil, reason: "Invalid").increment()
            try await self.jobs.finish(job.jobID, .failed(status: nil, reason: error.message))
            return
        } catch {
            response = nil
        }
        NotifierMetrics.sendLatency.recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        NotifierMetrics.pushes(kind: job.kind, status: response?.status, reason: response?.reason).increment()
        var generator = SystemRandomNumberGenerator()
        let now = Date()
        let decision = PushDecision.decide(
            response,
            attempts: job.attempts,
            maxAttempts: self.settings.maxAttempts,
            now: now.milliseconds,
            expiresAt: job.expiresAt.milliseconds,
            backoff: APNsBackoff(
                baseMilliseconds: Int64(self.settings.backoffBaseMilliseconds),
                capMilliseconds: Int64(self.settings.backoffCapMilliseconds)
            ),
            using: &generator
        )
        switch decision {
        case .sent:
            try await self.jobs.finish(job.jobID, .sent(status: 200))
        case .retry(let wait):
            // No answer: APNs may have delivered it, so the resend is an unsure one.
            let unsure = response == nil
            if unsure { NotifierMetrics.unsureResends.increment() }
            try await self.jobs.finish(
                job.jobID,
                .retry(
                    at: now.addingTimeInterval(Double(wait) / 1000),
                    status: response?.status,
                    reason: response?.reason ?? "no answer",
                    unsure: unsure
                )
            )
        case .throttle(let wait):
            let until = now.addingTimeInterval(Double(wait) / 1000)
            try await self.jobs.throttle(tenant: job.tenant, device: job.device, until: until)
            try await self.jobs.finish(job.jobID, .retry(at: until, status: response?.status, reason: response?.reason ?? "throttled"))
        case .unregistered(let since):
            let removed = try await self.jobs.removeUnregistered(
                tenant: job.tenant,
                device: job.device,
                token: registration.token,
                since: since.map { Date(timeIntervalSince1970: Double($0) / 1000) }
            )
            if removed {
                try await self.jobs.finish(job.jobID, .dropped(reason: "410 \(response?.reason ?? "Unregistered")"))
            } else {
                // Registered again since the token went: send to the new registration.
                try await self.jobs.finish(job.jobID, .retry(at: now, status: 410, reason: "registered again after the 410"))
            }
        case .wrongEnvironment:
            try await self.jobs.markWrongEnvironment(tenant: job.tenant, device: job.device, token: registration.token)
            try await self.jobs.finish(job.jobID, .failed(status: response?.status, reason: "BadDeviceToken: not a \(environment.rawValue) token"))
        case .fail(let reason):
            try await self.jobs.finish(job.jobID, .failed(status: response?.status, reason: reason))
        }
    }
}

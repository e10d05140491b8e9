import APNs

/// What to do with a job after one attempt, from APNs' answer (or the failure to get one), as
/// Apple's documentation says.
enum PushDecision: Sendable, Hashable {
    /// Delivered to APNs.
    case sent
    /// Try again after this many milliseconds.
    case retry(afterMilliseconds: Int64)
    /// APNs throttles this device (429): nothing goes to it for this many milliseconds; this job
    /// is tried again then.
    case throttle(milliseconds: Int64)
    /// 410: remove the registration unless it is newer than `since`; drop the job.
    case unregistered(since: Int64?)
    /// 400 BadDeviceToken: the registration's environment is wrong; fail the job.
    case wrongEnvironment
    /// Never retried.
    case fail(String)

    /// - Parameters:
    ///   - response: APNs' answer, or nil when none came (a timeout, a lost connection).
    ///   - attempts: attempts made, this one included.
    ///   - expiresAt: after this (milliseconds) the push is not worth sending.
    static func decide(
        _ response: APNsResponse?,
        attempts: Int,
        maxAttempts: Int,
        now: Int64,
        expiresAt: Int64,
        backoff: APNsBackoff,
        using generator: inout some RandomNumberGenerator
    ) -> PushDecision {
        let wait = backoff.delay(afterAttempt: attempts, using: &generator)
        func retry(_ reason: String) -> PushDecision {
            guard attempts < maxAttempts else { return .fail("gave up after \(attempts) attempts: \(reason)") }
            guard now + wait < expiresAt else { return .fail("expired: \(reason)") }
            return .retry(afterMilliseconds: wait)
        }
        guard let response else { return retry("no answer from APNs") }
        switch response.outcome {
        case .delivered: return .sent
        case .unregistered(let since): return .unregistered(since: since)
        case .wrongEnvironment: return .wrongEnvironment
        case .deviceThrottled:
            guard attempts < maxAttempts, now + wait < expiresAt else { return .fail("throttled by APNs until it expired") }
            return .throttle(milliseconds: wait)
        case .retryLater, .providerTokenRejected: return retry("\(response.status) \(response.reason ?? "")")
        case .rejected: return .fail("\(response.status) \(response.reason ?? "")")
        }
    }
}

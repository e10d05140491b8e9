import Metrics

/// The notifier's metrics (on `/metrics`).
enum NotifierMetrics {
    /// Notices taken from the streams, and the jobs and folds they made.
    static let notices = Counter(label: "notifier_notices_total")
    static let jobsMade = Counter(label: "notifier_jobs_made_total")
    /// ACP messages taken from the ACP stream (each thread's advances).
    static let acpAdvances = Counter(label: "notifier_acp_advances_total")
    static let folded = Counter(label: "notifier_pushes_folded_total")
    /// Pushes by push kind, APNs status and reason.
    static func pushes(kind: String, status: Int?, reason: String?) -> Counter {
        Counter(
            label: "notifier_pushes_total",
            dimensions: [("kind", kind), ("status", status.map(String.init) ?? "none"), ("reason", reason ?? "")]
        )
    }
    /// Sends after an attempt whose outcome was never recorded: the device may have it twice.
    static let unsureResends = Counter(label: "notifier_unsure_resends_total")
    /// Pending jobs, and the age of the oldest due one.
    static let queueDepth = Meter(label: "notifier_queue_depth")
    static let oldestSeconds = Meter(label: "notifier_oldest_job_seconds")
    /// From the claim to APNs' answer.
    static let sendLatency = Timer(label: "notifier_send_seconds")
}

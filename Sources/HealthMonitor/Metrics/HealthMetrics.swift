import Metrics

/// Health-monitor's metrics (on `/metrics`).
enum HealthMetrics {
    /// Events applied to the windows (live and from the log).
    static let applied = Counter(label: "health_events_applied_total")
    /// Events read from the log to fill a gap in the live feed.
    static let gapFilled = Counter(label: "health_gap_events_total")
    /// Gap reads that failed (the log did not answer): the tenant is read again within a second.
    static let gapReadFailed = Counter(label: "health_gap_read_failures_total")
    /// Events of tenants past `health.max-tenants`, ignored.
    static let ignored = Counter(label: "health_events_ignored_total")
    /// Sessions, skills, agents or swarms dropped at a tenant's bound.
    static let evicted = Counter(label: "health_windows_evicted_total")
    static let incidentsFired = Counter(label: "health_incidents_fired_total")
    static let incidentsResolved = Counter(label: "health_incidents_resolved_total")
    /// What the windows hold now.
    static let tenants = Meter(label: "health_tenants")
    static let sessions = Meter(label: "health_sessions")
    static let skills = Meter(label: "health_skills")
    static let agents = Meter(label: "health_agents")
    /// Event partitions this replica follows, and those of them still being rebuilt.
    static let partitions = Meter(label: "health_partitions")
    static let partitionsRebuilding = Meter(label: "health_partitions_rebuilding")
    /// The newest event applied, in committed milliseconds since the epoch: its distance to
    /// now is the lag.
    static let lagMilliseconds = Meter(label: "health_lag_milliseconds")
}

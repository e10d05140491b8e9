import Foundation

/// What one device wants pushed (stored as JSON per device).
struct NotificationPreferences: Sendable, Hashable, Codable {
    var types: Set<PushCategory>
    /// Only these swarms; every swarm when empty.
    var swarms: Set<String>
    /// Whether resolutions are pushed.
    var resolutions: Bool
    var quietHours: QuietHours?

    /// Every type, every swarm, resolutions, no quiet hours.
    static let defaults = NotificationPreferences(types: Set(PushCategory.allCases), swarms: [], resolutions: true, quietHours: nil)

    /// How `notice` reaches this device at `now`: nil when the device does not want it, else
    /// whether it arrives silently (quiet hours).
    func delivery(of notice: PushNotice, at now: Date) -> PushDelivery? {
        guard self.types.contains(notice.category) else { return nil }
        if let swarm = notice.swarmID, !self.swarms.isEmpty, !self.swarms.contains(swarm) { return nil }
        if notice.isResolution, !self.resolutions { return nil }
        guard let quiet = self.quietHours, quiet.contains(now) else { return .normal }
        if notice.category == .criticalError, !quiet.includeCritical { return .normal }
        return .silent
    }
}

/// How a push is delivered.
enum PushDelivery: String, Sendable, Hashable {
    /// As the push type asks (sound, time-sensitive for critical errors and gates).
    case normal
    /// `interruption-level` passive, no sound (quiet hours).
    case silent
}

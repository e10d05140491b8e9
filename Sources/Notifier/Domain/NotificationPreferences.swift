import Foundation

/// What one device wants pushed (stored as JSON per device).
struct NotificationPreferences: Sendable, Hashable, Codable {
    var types: Set<PushCategory>
    /// Only these swarms; every swarm when empty.
    var swarms: Set<String>
    /// Whether resolutions are pushed.
    var resolutions: Bool
    var quietHours: QuietHours?
    /// Whether an ACP thread's advances reach this device as silent pushes (when it does not
    /// follow the thread live).
    var acpThreads: Bool

    /// Every type, every swarm, resolutions, no quiet hours, ACP threads' silent pushes.
    static let defaults = NotificationPreferences(types: Set(PushCategory.allCases), swarms: [], resolutions: true, quietHours: nil, acpThreads: true)

    init(types: Set<PushCategory>, swarms: Set<String>, resolutions: Bool, quietHours: QuietHours?, acpThreads: Bool = true) {
        self.types = types
        self.swarms = swarms
        self.resolutions = resolutions
        self.quietHours = quietHours
        self.acpThreads = acpThreads
    }

    enum CodingKeys: String, CodingKey {
        case types, swarms, resolutions, quietHours, acpThreads
    }

    /// A document stored before `acpThreads` existed reads with it on.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.types = try container.decode(Set<PushCategory>.self, forKey: .types)
        self.swarms = try container.decode(Set<String>.self, forKey: .swarms)
        self.resolutions = try container.decode(Bool.self, forKey: .resolutions)
        self.quietHours = try container.decodeIfPresent(QuietHours.self, forKey: .quietHours)
        self.acpThreads = try container.decodeIfPresent(Bool.self, forKey: .acpThreads) ?? true
    }

    /// Whether this device wants `advance`'s silent push (quiet hours do not matter: nothing is
    /// shown).
    func wants(_ advance: ACPAdvance) -> Bool {
        self.acpThreads && (self.swarms.isEmpty || self.swarms.contains(advance.swarm))
    }

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

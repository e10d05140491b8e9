/// The lifecycle of one alert (a rule on one subject), as alerting rules have it: inactive →
/// pending (the condition holds, its `for` time not yet) → firing → resolved, where a firing
/// alert whose condition clears keeps firing for the hold-off (`keep_firing_for`) and resolves
/// only if it stays clear that long; if the condition returns meanwhile it is the same incident.
struct AlertLifecycle: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        case inactive
        /// Since (milliseconds since the epoch).
        case pending(since: Int64)
        /// The condition holds.
        case firing
        /// The condition cleared at this time; it resolves after the hold-off.
        case clearing(since: Int64)
    }

    enum Transition: Sendable, Equatable {
        case fire
        case resolve
    }

    private(set) var phase: Phase = .inactive

    /// A lifecycle that is firing (an incident loaded at start).
    static var firing: AlertLifecycle {
        var lifecycle = AlertLifecycle()
        lifecycle.phase = .firing
        return lifecycle
    }

    var isFiring: Bool {
        switch self.phase {
        case .firing, .clearing: true
        case .inactive, .pending: false
        }
    }

    /// Evaluates the condition at `now`; answers the transition, if any.
    mutating func evaluate(_ condition: Bool, now: Int64, forMilliseconds: Int64, holdMilliseconds: Int64) -> Transition? {
        switch (self.phase, condition) {
        case (.inactive, true):
            if forMilliseconds <= 0 {
                self.phase = .firing
                return .fire
            }
            self.phase = .pending(since: now)
        case (.pending(let since), true):
            if now - since >= forMilliseconds {
                self.phase = .firing
                return .fire
            }
        case (.pending, false):
            self.phase = .inactive
        case (.firing, false):
            if holdMilliseconds <= 0 {
                self.phase = .inactive
                return .resolve
            }
            self.phase = .clearing(since: now)
        case (.clearing(let since), false):
            if now - since >= holdMilliseconds {
                self.phase = .inactive
                return .resolve
            }
        case (.clearing, true):
            self.phase = .firing
        case (.inactive, false), (.firing, true):
            break
        }
        return nil
    }
}

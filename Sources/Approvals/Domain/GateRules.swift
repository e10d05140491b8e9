import ServiceKit

/// The rules a decision is held to, apart from storage: what a person's decision settles a
/// gate to, whether a decision repeats the one that won, and what expiry and cancellation
/// settle a gate to.
enum GateRules {
    enum Verdict: String, Sendable {
        case approve, reject
    }

    /// A person's decision as sent.
    struct Decision: Sendable, Equatable {
        var verdict: Verdict
        var reason: String?
        var optionID: String?
        var decisionID: String?
    }

    /// What a settlement changes on the gate.
    struct Outcome: Sendable, Equatable {
        var status: GateStatus
        var allow: Bool
        var optionID: String?
        var reason: String?
    }

    /// The outcome `decision` gives a pending gate offering `options`.
    /// - Throws: `InvalidRequest` for a rejection without a reason of `minRejectReason`
    ///   characters, an option that was not offered, an approval without an allowing option on a
    ///   gate that offers options, or an option of the wrong kind. An unoffered option never
    ///   counts as approval.
    static func outcome(of decision: Decision, options: [GateOption], minRejectReason: Int) throws(APIError) -> Outcome {
        try Self.checkReason(decision, minRejectReason: minRejectReason)
        let reason = decision.reason?.trimmingWhitespace
        var chosen: GateOption?
        if let optionID = decision.optionID {
            guard let option = options.first(where: { $0.optionId == optionID }) else {
                throw APIError(.invalidRequest, "option \(optionID) was not offered", details: ["optionId": "not offered"])
            }
            guard option.kind.allows == (decision.verdict == .approve) else {
                throw APIError(
                    .invalidRequest,
                    "option \(optionID) is a \(option.kind.rawValue) option; it cannot \(decision.verdict.rawValue)",
                    details: ["optionId": "wrong kind"]
                )
            }
            chosen = option
        } else if decision.verdict == .approve, !options.isEmpty {
            throw APIError(.invalidRequest, "this gate offers options: approve with the optionId of one", details: ["optionId": "required"])
        } else if decision.verdict == .reject {
            // A rejection names the first reject option offered, if there is one (ACP's answer).
            chosen = options.first { !$0.kind.allows }
        }
        return Outcome(
            status: decision.verdict == .approve ? .approved : .rejected,
            allow: decision.verdict == .approve,
            optionID: chosen?.optionId,
            reason: reason.flatMap { $0.isEmpty ? nil : $0 }
        )
    }

    /// A rejection's reason: at least `minRejectReason` characters, not counting the whitespace
    /// around it.
    static func checkReason(_ decision: Decision, minRejectReason: Int) throws(APIError) {
        if decision.verdict == .reject, (decision.reason?.trimmingWhitespace.count ?? 0) < minRejectReason {
            throw APIError(.invalidRequest, "a rejection needs a reason of at least \(minRejectReason) characters", details: ["reason": "required"])
        }
    }

    /// Whether `decision` is the one that settled `gate`, sent again: the same decision id and
    /// the same verdict, option and reason.
    static func isRepeat(_ decision: Decision, of gate: Gate) -> Bool {
        guard let settlement = gate.settlement, let id = decision.decisionID, settlement.decisionID == id else { return false }
        let verdict: Verdict? =
            switch gate.status {
            case .approved: .approve
            case .rejected: .reject
            default: nil
            }
        // The option it settled with: the one sent, or the one a rejection picked.
        let option = decision.optionID ?? (decision.verdict == .reject ? gate.options.first { !$0.kind.allows }?.optionId : nil)
        return verdict == decision.verdict && settlement.optionID == option
            && settlement.reason == decision.reason?.trimmingWhitespace.nilIfEmpty
    }

    /// What a person's answer in the ACP thread (sent on `/v1/acp`, checked there for
    /// `tool:run`) settles a gate to: an offered option by its kind, anything else (cancelled,
    /// an option not offered) cancelled, never an approval.
    static func threadAnswerOutcome(optionID: String?, options: [GateOption], device: String) -> Outcome {
        guard let optionID, let option = options.first(where: { $0.optionId == optionID }) else {
            return Outcome(status: .cancelled, allow: false, optionID: nil, reason: "answered cancelled in the ACP thread by \(device)")
        }
        return Outcome(
            status: option.kind.allows ? .approved : .rejected,
            allow: option.kind.allows,
            optionID: option.optionId,
            reason: "answered in the ACP thread by \(device)"
        )
    }

    /// What expiry settles a gate to: the configured outcome (`allow` false fails closed); a
    /// gate that offers options (ACP) is answered `cancelled` by ACP's rules, so it never allows.
    static func expiryOutcome(allow: Bool, options: [GateOption], after seconds: Int) -> Outcome {
        Outcome(status: .expired, allow: allow && options.isEmpty, optionID: nil, reason: "nobody decided within \(seconds) seconds")
    }
}

extension String {
    var nilIfEmpty: String? { self.isEmpty ? nil : self }
}

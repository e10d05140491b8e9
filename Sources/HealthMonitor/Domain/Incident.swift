import Foundation
import ServiceKit

/// One incident as stored: a rule that fired on a subject, until it resolved.
struct Incident: Sendable, Equatable {
    enum Status: String, Sendable, CaseIterable {
        case firing
        case resolved
    }

    var tenant: String
    var id: String
    var fingerprint: String
    var rule: String
    var status: Status
    var severity: String
    var summary: String
    var swarmID: String?
    var agentID: String?
    var sessionID: String?
    var skillID: String?
    var firedAt: Date
    var resolvedAt: Date?
    var acknowledgedAt: Date?
    var acknowledgedBy: String?
    var acknowledgeReason: String?

    /// A new firing incident for `subject`.
    init(tenant: String, id: String, subject: AlertSubject, summary: String, firedAt: Date) {
        self.tenant = tenant
        self.id = id
        self.fingerprint = subject.fingerprint
        self.rule = subject.rule.rawValue
        self.status = .firing
        self.severity = subject.rule.severity
        self.summary = summary
        self.swarmID = subject.swarmID
        self.agentID = subject.agentID
        self.sessionID = subject.sessionID
        self.skillID = subject.skillID
        self.firedAt = firedAt
    }

    init(
        tenant: String,
        id: String,
        fingerprint: String,
        rule: String,
        status: Status,
        severity: String,
        summary: String,
        swarmID: String?,
        agentID: String?,
        sessionID: String?,
        skillID: String?,
        firedAt: Date,
        resolvedAt: Date?,
        acknowledgedAt: Date?,
        acknowledgedBy: String?,
        acknowledgeReason: String?
    ) {
        self.tenant = tenant
        self.id = id
        self.fingerprint = fingerprint
        self.rule = rule
        self.status = status
        self.severity = severity
        self.summary = summary
        self.swarmID = swarmID
        self.agentID = agentID
        self.sessionID = sessionID
        self.skillID = skillID
        self.firedAt = firedAt
        self.resolvedAt = resolvedAt
        self.acknowledgedAt = acknowledgedAt
        self.acknowledgedBy = acknowledgedBy
        self.acknowledgeReason = acknowledgeReason
    }

    /// The subject it is about (to take it back at start); nil for a rule this build no longer has.
    var subject: AlertSubject? {
        guard let rule = HealthRule(rawValue: self.rule), let bar = self.fingerprint.firstIndex(of: "|") else { return nil }
        return AlertSubject(
            rule: rule,
            key: String(self.fingerprint[self.fingerprint.index(after: bar)...]),
            swarmID: self.swarmID,
            agentID: self.agentID,
            sessionID: self.sessionID,
            skillID: self.skillID
        )
    }

    /// A new incident id: `inc_` and 20 random hex digits.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<10).map { _ in UInt8.random(in: 0...255, using: &generator) }.lowercaseHex
        return "inc_" + hex
    }
}

import Foundation
import ServiceKit
import Testing

@testable import Approvals

@Suite("Gate rules, tool input redaction and cursors (pure)")
struct GateRulesTests {
    typealias Decision = GateRules.Decision
    static let options = [
        GateOption(optionId: "allow-once", name: "Allow once", kind: .allowOnce),
        GateOption(optionId: "reject-once", name: "Reject", kind: .rejectOnce),
    ]

    @Test("approve and reject without options; a rejection needs min-reject-reason characters, trimmed")
    func plain() throws {
        let approved = try GateRules.outcome(of: Decision(verdict: .approve), options: [], minRejectReason: 10)
        #expect(approved == GateRules.Outcome(status: .approved, allow: true, optionID: nil, reason: nil))
        #expect(throws: APIError.self) {
            try GateRules.outcome(of: Decision(verdict: .reject, reason: "   short   "), options: [], minRejectReason: 10)
        }
        #expect(throws: APIError.self) { try GateRules.outcome(of: Decision(verdict: .reject), options: [], minRejectReason: 1) }
        let rejected = try GateRules.outcome(of: Decision(verdict: .reject, reason: "  not on a Friday  "), options: [], minRejectReason: 10)
        #expect(rejected == GateRules.Outcome(status: .rejected, allow: false, optionID: nil, reason: "not on a Friday"))
    }

    @Test("an option that was not offered, or of the wrong kind, is refused; approving an options gate needs an allow option")
    func options() throws {
        #expect(throws: APIError.self) {
            try GateRules.outcome(of: Decision(verdict: .approve, optionID: "allow-always"), options: Self.options, minRejectReason: 0)
        }
        #expect(throws: APIError.self) {
            try GateRules.outcome(of: Decision(verdict: .approve, optionID: "reject-once"), options: Self.options, minRejectReason: 0)
        }
        #expect(throws: APIError.self) {
            try GateRules.outcome(of: Decision(verdict: .reject, reason: "no", optionID: "allow-once"), options: Self.options, minRejectReason: 0)
        }
        #expect(throws: APIError.self) { try GateRules.outcome(of: Decision(verdict: .approve), options: Self.options, minRejectReason: 0) }
        // An option id on a gate without options is not offered either.
        #expect(throws: APIError.self) {
            try GateRules.outcome(of: Decision(verdict: .approve, optionID: "allow-once"), options: [], minRejectReason: 0)
        }
        let chosen = try GateRules.outcome(of: Decision(verdict: .approve, optionID: "allow-once"), options: Self.options, minRejectReason: 0)
        #expect(chosen.allow && chosen.optionID == "allow-once")
        let rejected = try GateRules.outcome(
            of: Decision(verdict: .reject, reason: "no", optionID: "reject-once"),
            options: Self.options,
            minRejectReason: 0
        )
        #expect(!rejected.allow && rejected.optionID == "reject-once")
        // A rejection without an option names the first reject option (ACP answers with it).
        let named = try GateRules.outcome(of: Decision(verdict: .reject, reason: "no"), options: Self.options, minRejectReason: 0)
        #expect(named.optionID == "reject-once")
    }

    @Test("a repeat is the same decision id with the same verdict, option and reason")
    func repeats() throws {
        var gate = Gate(
            tenant: "t",
            id: "g_1",
            swarm: "s",
            agent: "a",
            idempotencyKey: "k",
            source: "api",
            summary: "s",
            risk: "low",
            toolInputTruncated: false,
            maskedValues: 0,
            options: [],
            status: .rejected,
            requestedAt: Date(),
            expiresAt: Date()
        )
        gate.settlement = Gate.Settlement(receiptID: "r", decidedAt: Date(), decidedBy: "p", reason: "too risky now", allow: false, decisionID: "d1")
        #expect(GateRules.isRepeat(Decision(verdict: .reject, reason: " too risky now ", decisionID: "d1"), of: gate))
        #expect(!GateRules.isRepeat(Decision(verdict: .reject, reason: "too risky now", decisionID: "d2"), of: gate))
        #expect(!GateRules.isRepeat(Decision(verdict: .reject, reason: "other reason!", decisionID: "d1"), of: gate))
        #expect(!GateRules.isRepeat(Decision(verdict: .approve, decisionID: "d1"), of: gate))
        #expect(!GateRules.isRepeat(Decision(verdict: .reject, reason: "too risky now"), of: gate))
    }

    @Test("expiry fails closed unless configured otherwise; a gate with options never allows on expiry")
    func expiry() {
        #expect(!GateRules.expiryOutcome(allow: false, options: [], after: 60).allow)
        #expect(GateRules.expiryOutcome(allow: true, options: [], after: 60).allow)
        #expect(!GateRules.expiryOutcome(allow: true, options: Self.options, after: 60).allow)
        #expect(GateRules.expiryOutcome(allow: true, options: Self.options, after: 60).status == .expired)
    }

    @Test("secrets are redacted by key and by shape, the rest kept; size, depth and breadth are bounded")
    func redaction() throws {
        let redactor = ToolInputRedactor(maxBytes: 16_384)
        let input: [String: Any] = [
            "command": "curl -H 'Authorization: Bearer abc.def.ghi' https://api.example.com && export GH=ghp_0123456789abcdefghij",
            "env": ["API_TOKEN": "hunter2", "HOME": "/root"],
            "password": "p",
            "jwt": "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
            "key": "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "note": "password=letmein please",
            "count": 3,
        ]
        let redacted = redactor.redact(input)
        let json = redacted.json
        #expect(!redacted.truncated)
        // The bearer token, the GitHub token, the API token, the password, the JWT, the key's
        // body and the password in the note.
        #expect(redacted.masked == 7, "\(redacted.masked) masked: \(json)")
        for secret in ["hunter2", "abc.def", "ghp_0123456789", "eyJhbGciOiJFUzI1NiJ9", "AAAA", "letmein", "\"p\""] {
            #expect(!json.contains(secret), "\(secret) leaked: \(json)")
        }
        for kept in ["curl", "https://api.example.com", "/root", "\"count\":3", "please", "&& export GH=", "-----BEGIN OPENSSH PRIVATE KEY-----"] {
            #expect(json.contains(kept), "\(kept) lost: \(json)")
        }
        let big = ToolInputRedactor(maxBytes: 1024).redact(["content": String(repeating: "x", count: 100_000)])
        #expect(big.truncated && big.json.utf8.count <= 1024)
        var deep: [String: Any] = ["leaf": 1]
        for _ in 0..<20 { deep = ["next": deep] }
        #expect(ToolInputRedactor(maxBytes: 16_384).redact(deep).truncated)
        let wide = ToolInputRedactor(maxBytes: 1 << 20).redact(["items": Array(0..<1000)])
        #expect(wide.truncated)
    }

    @Test("a cursor reads back as written; anything else is refused")
    func cursors() {
        let cursor = PageCursor(at: Date(timeIntervalSince1970: 1_795_467_121.414), id: "g_abc")
        #expect(PageCursor(cursor.text) == cursor)
        for bad in ["", "c1", "c1_x_g", "c2_1_g", "c1_-5_g", "c1_5_"] { #expect(PageCursor(bad) == nil, "\(bad)") }
    }
}

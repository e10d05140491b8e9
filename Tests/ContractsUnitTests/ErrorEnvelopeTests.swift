import Contracts
import Foundation
import Testing

@Suite("Error envelope")
struct ErrorEnvelopeTests {
    @Test("encodes the seed's code, the seed 004 class and the request id")
    func shape() throws {
        let envelope = ErrorEnvelope(code: .authExpired, message: "token expired", requestId: "req-1")
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(envelope)) as? [String: Any]
        let error = try #require(json?["error"] as? [String: Any])
        #expect(error["code"] as? String == "AuthExpired")
        #expect(error["class"] as? String == "auth")
        #expect(error["requestId"] as? String == "req-1")
        #expect(error["retryable"] as? Bool == false)
        #expect(try JSONDecoder().decode(ErrorEnvelope.self, from: JSONEncoder().encode(envelope)) == envelope)
    }

    @Test("every seed 000 §13 code exists")
    func seedTaxonomy() {
        let seed = [
            "NetworkUnavailable", "AuthExpired", "PermissionDenied", "RateLimited", "ServerError", "ProtocolMismatch",
            "SSHAuthFailed", "SSHHostUnreachable", "SSHHostKeyMismatch", "TmuxSessionNotFound", "TerminalInitFailed",
        ]
        for code in seed { #expect(ErrorCode(rawValue: code) != nil, "\(code)") }
    }

    @Test("statuses and classes agree: 4xx are never retryable except 429, 5xx from dependencies are")
    func statusesAndClasses() {
        for code in ErrorCode.allCases {
            let status = code.httpStatus
            #expect((400...599).contains(status))
            if status == 401 { #expect(code.errorClass == .auth) }
            if status == 403 { #expect(code.errorClass == .forbidden) }
            if (400...499).contains(status) && status != 429 { #expect(!code.isRetryable, "\(code)") }
        }
        #expect(ErrorCode.rateLimited.isRetryable)
        #expect(ErrorCode.serviceUnavailable.isRetryable)
    }
}

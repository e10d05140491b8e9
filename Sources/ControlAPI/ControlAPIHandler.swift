import Contracts
import ControlAPIContract
import EventLog
import Foundation
import Hummingbird
import Logging
import ServiceKit

/// Control-api's operations (the `APIProtocol` generated from openapi/control-api.yaml). The
/// operations are in `ControlAPIHandler+<area>.swift`; this file holds what they share:
/// authentication and the checks the document states but the generated types do not enforce.
struct ControlAPIHandler: Sendable {
    let settings: ControlSettings
    let signer: AccessTokenSigner
    let ingestKeys: IngestKeyVerifier
    let devices: DeviceAuthority
    let revocations: RevocationBus
    let fleet: FleetIndex
    let store: ControlStore
    let bus: CommandBus
    let limiter: KeyedTokenBuckets
    /// Registrations and refreshes per source address.
    let authLimiter: KeyedTokenBuckets
    /// When each agent session's poll was last recorded.
    let sessionsSeen: SessionTouches
    /// Agent sessions opened per tenant per minute (each supersede or end is a revocation
    /// every replica of every service keeps for a day).
    let sessionOpens: KeyedTokenBuckets
    let logger: Logger

    /// What each operation asks of its caller (``OperationAuthenticationMiddleware`` checks it
    /// before the request is decoded; the handlers read ``Caller/current``).
    static let credentials: [String: OperationCredential] = [
        Operations.GetJWKS.id: .none,
        Operations.RegisterDevice.id: .none,
        Operations.RefreshToken.id: .none,
        Operations.CreateEnrolmentCodes.id: .accessToken(anyOf: [.admin]),
        Operations.RevokeEnrolmentCodes.id: .accessToken(anyOf: [.admin]),
        Operations.ListDevices.id: .accessToken(anyOf: [.admin]),
        Operations.RevokeDevice.id: .accessToken(anyOf: [.admin]),
        Operations.GetOverview.id: .accessToken(anyOf: [.streamRead]),
        Operations.ListSwarms.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetSwarm.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetAgent.id: .accessToken(anyOf: [.streamRead]),
        Operations.ListWorkers.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetWorker.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetControl.id: .accessToken(anyOf: [.streamRead]),
        Operations.ControlSwarm.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ControlAgent.id: .accessToken(anyOf: [.agentsControl]),
        Operations.RequestWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.StopWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ListAudit.id: .accessToken(anyOf: [.agentsControl, .admin]),
        Operations.OpenAgentSession.id: .ingestKey,
        Operations.EndAgentSession.id: .agentSession,
        Operations.PollCommands.id: .agentSession,
        Operations.AckCommand.id: .agentSession,
    ]

    /// The correlation id of the request being served.
    var requestID: String? { RequestScope.current?.requestID }

    // MARK: Input checks

    /// A swarm or agent id: the rule ingest accepts them by (`Contracts.EntityID`).
    static func checkID(_ id: String, _ field: String) throws(APIError) {
        if let problem = EntityID.problem(id, field: field) { throw APIError(.invalidRequest, problem) }
    }

    /// A request id: 1–128 of `[A-Za-z0-9._:-]`.
    static func checkRequestID(_ id: String) throws(APIError) {
        guard (1...128).contains(id.utf8.count),
            id.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F || $0 == 0x3A
                    || $0 == 0x2D
            })
        else {
            throw APIError(.invalidRequest, "requestId must be 1 to 128 of A-Z a-z 0-9 . _ : -")
        }
    }

    /// A bounded string field, counted in code points as JSON Schema's `maxLength` is (Postgres
    /// text cannot hold NUL, so no field may).
    static func checkText(_ text: String, _ field: String, max: Int, required: Bool = true) throws(APIError) {
        if required && text.allSatisfy(\.isWhitespace) {
            throw APIError(.invalidRequest, "\(field) must not be empty")
        }
        guard text.unicodeScalars.count <= max else {
            throw APIError(.invalidRequest, "\(field) must be at most \(max) characters")
        }
        guard !text.unicodeScalars.contains("\u{0}") else {
            throw APIError(.invalidRequest, "\(field) must not contain NUL characters")
        }
    }

    /// An integer query parameter's range.
    static func checkRange(_ value: Int?, _ field: String, _ range: ClosedRange<Int>) throws(APIError) {
        if let value, !range.contains(value) {
            throw APIError(.invalidRequest, "\(field) must be between \(range.lowerBound) and \(range.upperBound)")
        }
    }
}

extension ControlAPIHandler: APIProtocol {}

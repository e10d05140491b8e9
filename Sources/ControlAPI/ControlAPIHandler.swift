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
    /// Sign-in through an OpenID Connect provider; nil when not configured.
    let oidc: OIDCSignIn?
    let revocations: RevocationBus
    let fleet: FleetIndex
    /// Ingest's event log, read for an agent's newest events.
    let eventLog: EventLogReader
    let store: ControlStore
    let bus: CommandBus
    /// What health-monitor knows, for the overview and agent detail.
    let health: HealthSummaries
    let limiter: KeyedTokenBuckets
    /// Control requests per tenant, all its actors together.
    let tenantLimiter: KeyedTokenBuckets
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
        Operations.GetOIDCSignIn.id: .none,
        Operations.StartOIDCSignIn.id: .none,
        Operations.FinishOIDCSignIn.id: .none,
        Operations.ExchangeOIDCCode.id: .none,
        Operations.CreateEnrolmentCodes.id: .accessToken(anyOf: [.admin]),
        Operations.RevokeEnrolmentCodes.id: .accessToken(anyOf: [.admin]),
        Operations.ListDevices.id: .accessToken(anyOf: [.admin]),
        Operations.RevokeDevice.id: .accessToken(anyOf: [.admin]),
        Operations.GetOverview.id: .accessToken(anyOf: [.streamRead]),
        Operations.ListSwarms.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetSwarm.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetAgent.id: .accessToken(anyOf: [.streamRead]),
        Operations.ListAgentEvents.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetTrace.id: .accessToken(anyOf: [.streamRead]),
        Operations.ListWorkers.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetWorker.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetControl.id: .accessToken(anyOf: [.streamRead]),
        Operations.ControlSwarm.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ControlAgent.id: .accessToken(anyOf: [.agentsControl]),
        Operations.RequestWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.StopWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ListRuntimeWorkers.id: .accessToken(anyOf: [.streamRead]),
        Operations.GetRuntimeWorker.id: .accessToken(anyOf: [.streamRead]),
        Operations.RegisterRuntimeWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ReleaseRuntimeWorker.id: .accessToken(anyOf: [.agentsControl, .admin]),
        Operations.RequestRuntimeWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.StopRuntimeWorker.id: .accessToken(anyOf: [.agentsControl]),
        Operations.ListAudit.id: .accessToken(anyOf: [.agentsControl, .admin]),
        Operations.OpenAgentSession.id: .ingestKey,
        Operations.EndAgentSession.id: .agentSession,
        Operations.PollCommands.id: .agentSession,
        Operations.AckCommand.id: .agentSession,
    ]

    /// The correlation id of the request being served.
    var requestID: String? { RequestScope.current?.requestID }
}

extension ControlAPIHandler: APIProtocol {}

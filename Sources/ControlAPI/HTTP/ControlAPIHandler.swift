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

    /// The correlation id of the request being served.
    var requestID: String? { RequestScope.current?.requestID }
}

extension ControlAPIHandler: APIProtocol {}

import ApprovalsContract
import Contracts
import Foundation
import ServiceKit

/// Approvals' operations (the `APIProtocol` generated from openapi/approvals.yaml): the
/// phone's in `ApprovalsHandler+gates.swift`, the agents' in `ApprovalsHandler+agent.swift`.
struct ApprovalsHandler: Sendable {
    let settings: ApprovalsSettings
    let store: GateStore
    let outbox: GateOutbox
    let messages: GateMessages
    /// Gates opened per tenant per minute.
    let opens: KeyedTokenBuckets
    /// Gates asked about again (the same key) per tenant per minute: ten times the openings.
    let reasks: KeyedTokenBuckets
    /// Decisions per person per minute.
    let decisions: KeyedTokenBuckets
}

extension ApprovalsHandler: APIProtocol {}

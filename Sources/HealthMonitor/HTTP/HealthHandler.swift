import Contracts
import Foundation
import HealthMonitorContract
import ServiceKit

/// Health-monitor's operations (the `APIProtocol` generated from openapi/health-monitor.yaml):
/// reads of the rollups in `HealthHandler+health.swift`, incidents in
/// `HealthHandler+incidents.swift`, thresholds in `HealthHandler+thresholds.swift`.
struct HealthHandler: Sendable {
    let settings: HealthSettings
    let rollups: RollupStore
    let incidents: IncidentStore
    let thresholds: ThresholdStore
    let messages: IncidentMessages
    let notices: ThresholdNotices
    /// Threshold changes per tenant per minute.
    let thresholdWrites: KeyedTokenBuckets

    static func decode<Value: Decodable>(_ type: Value.Type, _ doc: Data) throws -> Value {
        try HealthRollup.decoder.decode(type, from: doc)
    }
}

extension HealthHandler: APIProtocol {}

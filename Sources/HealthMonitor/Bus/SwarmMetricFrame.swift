import Contracts
import Foundation
import ServiceKit

/// A swarm's health metric as the stream shows it (seed 000 §7.2):
/// `{"type":"metric","scope":"swarm","swarmId":…,"name":"error_rate","value":0.12}`, an event of
/// the swarm (no agent) added to the tenant's log through ingest's service lane.
struct SwarmMetricFrame: Encodable {
    var type = "metric"
    var ts: Int64
    var scope = "swarm"
    var swarmId: String
    var name: String
    var value: Double
    var source = "health-monitor"

    static func event(swarm: String, name: String, value: Double, at: Int64) throws -> BusServiceEvent {
        var event = BusServiceEvent()
        let key = ToolSignature.fnv1a(Array(swarm.utf8) + [0] + Array(name.utf8))
        event.msgID = "health-\(String(key, radix: 16))-\(at)"
        event.swarmID = swarm
        event.agentID = ""
        event.kind = .metric
        event.severity = .info
        event.occurredUnixNano = at * 1_000_000
        event.frameTail = try BusServiceEvent.frameTail(SwarmMetricFrame(ts: at, swarmId: swarm, name: name, value: value))
        return event
    }
}

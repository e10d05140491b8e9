import Approvals
import ControlAPI
import HealthMonitor
import Ingest
import Notifier
import PipelineRunner
public import ServiceKit
import StreamFanout
import TerminalBroker

/// Every service the project builds, in one list: `swarmdeckd` runs them, `swarmdeckd config`
/// describes their keys, `swarmdeckd deploy write` writes what deployment reads from them
/// (``DeploymentFiles``), and the docs' tests check their pages. A new service is its library
/// (its `SwarmdeckService` declares its routes at the edge and its NATS permissions), one line
/// here and its page; `swarmdeckd deploy write` then writes what deployment needs, its first
/// block in docker-compose.yml included (see docs/adding-a-service.md).
public enum ServiceRegistry {
    /// The services, in the order `deploy/local/services` lists them.
    public static let all: [any SwarmdeckService.Type] = [
        IngestService.self,
        StreamFanoutService.self,
        ControlAPIService.self,
        ApprovalsService.self,
        HealthMonitorService.self,
        NotifierService.self,
        TerminalBrokerService.self,
        PipelineRunnerService.self,
    ]
}

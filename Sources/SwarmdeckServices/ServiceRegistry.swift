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
/// describes their keys, and the docs' tests check their pages. A new service is its library
/// and one line here (see docs/adding-a-service.md).
public enum ServiceRegistry {
    /// The services, in the order of `deploy/local/services`.
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

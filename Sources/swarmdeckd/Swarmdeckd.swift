import ServiceKit
import SwarmdeckServices

/// `swarmdeckd <service>`: every service in one executable, as Temporal's `server start
/// --service`; `swarmdeckd list` names them, `swarmdeckd config` and `swarmdeckd deploy`
/// describe them.
@main struct Swarmdeckd {
    static func main() async throws {
        try await ServiceMain.main(services: ServiceRegistry.all, tools: SwarmdeckdTools.all)
    }
}

import ServiceKit
import SwarmdeckServices

/// `swarmdeckd <service>`: every service in one executable, as Temporal's `server start
/// --service`; `swarmdeckd list` names them.
@main struct Swarmdeckd {
    static func main() async throws {
        try await ServiceMain.main(services: ServiceRegistry.all)
    }
}

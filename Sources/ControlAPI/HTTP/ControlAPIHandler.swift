import ControlAPIContract

/// The operators' document (openapi/control-api.yaml) served by its three surfaces, each a
/// handler with only its own dependencies: ``AuthHandler`` (sign-in, devices, tokens),
/// ``FleetHandler`` (what the fleet is doing) and ``ControlsHandler`` (steering it, workers
/// included). The agents' channel is a document and handler of its own (``AgentChannelHandler``).
struct ControlAPIHandler: APIProtocol {
    let auth: AuthHandler
    let fleet: FleetHandler
    let controls: ControlsHandler

    // MARK: Auth

    func getJWKS(_ input: Operations.GetJWKS.Input) async throws -> Operations.GetJWKS.Output { try await self.auth.getJWKS(input) }
    func createEnrolmentCodes(_ input: Operations.CreateEnrolmentCodes.Input) async throws -> Operations.CreateEnrolmentCodes.Output {
        try await self.auth.createEnrolmentCodes(input)
    }
    func revokeEnrolmentCodes(_ input: Operations.RevokeEnrolmentCodes.Input) async throws -> Operations.RevokeEnrolmentCodes.Output {
        try await self.auth.revokeEnrolmentCodes(input)
    }
    func listDevices(_ input: Operations.ListDevices.Input) async throws -> Operations.ListDevices.Output { try await self.auth.listDevices(input) }
    func revokeDevice(_ input: Operations.RevokeDevice.Input) async throws -> Operations.RevokeDevice.Output {
        try await self.auth.revokeDevice(input)
    }
    func registerDevice(_ input: Operations.RegisterDevice.Input) async throws -> Operations.RegisterDevice.Output {
        try await self.auth.registerDevice(input)
    }
    func refreshToken(_ input: Operations.RefreshToken.Input) async throws -> Operations.RefreshToken.Output {
        try await self.auth.refreshToken(input)
    }
    func getOIDCSignIn(_ input: Operations.GetOIDCSignIn.Input) async throws -> Operations.GetOIDCSignIn.Output {
        try await self.auth.getOIDCSignIn(input)
    }
    func startOIDCSignIn(_ input: Operations.StartOIDCSignIn.Input) async throws -> Operations.StartOIDCSignIn.Output {
        try await self.auth.startOIDCSignIn(input)
    }
    func finishOIDCSignIn(_ input: Operations.FinishOIDCSignIn.Input) async throws -> Operations.FinishOIDCSignIn.Output {
        try await self.auth.finishOIDCSignIn(input)
    }
    func exchangeOIDCCode(_ input: Operations.ExchangeOIDCCode.Input) async throws -> Operations.ExchangeOIDCCode.Output {
        try await self.auth.exchangeOIDCCode(input)
    }

    // MARK: Fleet

    func getOverview(_ input: Operations.GetOverview.Input) async throws -> Operations.GetOverview.Output { try await self.fleet.getOverview(input) }
    func listSwarms(_ input: Operations.ListSwarms.Input) async throws -> Operations.ListSwarms.Output { try await self.fleet.listSwarms(input) }
    func getSwarm(_ input: Operations.GetSwarm.Input) async throws -> Operations.GetSwarm.Output { try await self.fleet.getSwarm(input) }
    func getAgent(_ input: Operations.GetAgent.Input) async throws -> Operations.GetAgent.Output { try await self.fleet.getAgent(input) }
    func listAgentEvents(_ input: Operations.ListAgentEvents.Input) async throws -> Operations.ListAgentEvents.Output {
        try await self.fleet.listAgentEvents(input)
    }
    func getTrace(_ input: Operations.GetTrace.Input) async throws -> Operations.GetTrace.Output { try await self.fleet.getTrace(input) }

    // MARK: Controls

    func controlSwarm(_ input: Operations.ControlSwarm.Input) async throws -> Operations.ControlSwarm.Output {
        try await self.controls.controlSwarm(input)
    }
    func controlAgent(_ input: Operations.ControlAgent.Input) async throws -> Operations.ControlAgent.Output {
        try await self.controls.controlAgent(input)
    }
    func listWorkers(_ input: Operations.ListWorkers.Input) async throws -> Operations.ListWorkers.Output {
        try await self.controls.listWorkers(input)
    }
    func getWorker(_ input: Operations.GetWorker.Input) async throws -> Operations.GetWorker.Output { try await self.controls.getWorker(input) }
    func requestWorker(_ input: Operations.RequestWorker.Input) async throws -> Operations.RequestWorker.Output {
        try await self.controls.requestWorker(input)
    }
    func stopWorker(_ input: Operations.StopWorker.Input) async throws -> Operations.StopWorker.Output { try await self.controls.stopWorker(input) }
    func listRuntimeWorkers(_ input: Operations.ListRuntimeWorkers.Input) async throws -> Operations.ListRuntimeWorkers.Output {
        try await self.controls.listRuntimeWorkers(input)
    }
    func registerRuntimeWorker(_ input: Operations.RegisterRuntimeWorker.Input) async throws -> Operations.RegisterRuntimeWorker.Output {
        try await self.controls.registerRuntimeWorker(input)
    }
    func getRuntimeWorker(_ input: Operations.GetRuntimeWorker.Input) async throws -> Operations.GetRuntimeWorker.Output {
        try await self.controls.getRuntimeWorker(input)
    }
    func releaseRuntimeWorker(_ input: Operations.ReleaseRuntimeWorker.Input) async throws -> Operations.ReleaseRuntimeWorker.Output {
        try await self.controls.releaseRuntimeWorker(input)
    }
    func requestRuntimeWorker(_ input: Operations.RequestRuntimeWorker.Input) async throws -> Operations.RequestRuntimeWorker.Output {
        try await self.controls.requestRuntimeWorker(input)
    }
    func stopRuntimeWorker(_ input: Operations.StopRuntimeWorker.Input) async throws -> Operations.StopRuntimeWorker.Output {
        try await self.controls.stopRuntimeWorker(input)
    }
    func getControl(_ input: Operations.GetControl.Input) async throws -> Operations.GetControl.Output { try await self.controls.getControl(input) }
    func listAudit(_ input: Operations.ListAudit.Input) async throws -> Operations.ListAudit.Output { try await self.controls.listAudit(input) }
}

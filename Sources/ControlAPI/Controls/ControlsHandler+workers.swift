import Contracts
import ControlAPIContract
import EventLog
import Foundation
import ServiceKit

/// Workers (seed 004's Codex workers): agents whose connector runs with `--worker` and takes
/// requests, one line on the process's standard input each.
extension ControlsHandler {
    func listWorkers(_ input: Operations.ListWorkers.Input) async throws -> Operations.ListWorkers.Output {
        let identity = try Caller.person()
        let now = Date()
        let fleetWorkers = try await self.fleet.agents(tenant: identity.tenant).filter(\.acceptsRequests)
        let registrations = try await self.store.registrations(tenant: identity.tenant, workers: fleetWorkers.map(\.agentID))
        let owners = Dictionary(registrations.map { ($0.workerID, $0.owner) }) { first, _ in first }
        let admin = identity.scopes.contains(.admin)
        let workers =
            fleetWorkers
            .filter { WorkerOwnership.permits(owner: owners[$0.agentID], caller: identity.subject, admin: admin) }
            .sorted(by: FleetAgent.mostRecentFirst)
            .map { self.views.worker($0, owner: owners[$0.agentID], now: now) }
        return .ok(.init(body: .json(.init(workers: workers))))
    }

    func getWorker(_ input: Operations.GetWorker.Input) async throws -> Operations.GetWorker.Output {
        let identity = try Caller.person()
        let (record, registration) = try await self.workerRecord(identity, input.path.workerId)
        let requests = try await self.store.requests(tenant: identity.tenant, agentID: record.agentID, limit: 20)
        return .ok(
            .init(
                body: .json(
                    .init(
                        worker: self.views.worker(record, owner: registration?.owner, now: Date()),
                        requests: requests.map(Components.Schemas.CommandStatus.init)
                    )
                )
            )
        )
    }

    func requestWorker(_ input: Operations.RequestWorker.Input) async throws -> Operations.RequestWorker.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.id(input.path.workerId, "workerId")
        try InputCheck.text(body.input, "input", max: 16_000)
        guard !body.input.contains(where: \.isNewline) else {
            throw APIError(.invalidRequest, "input must be one line (no line breaks)")
        }
        // The worker is looked up once the request id is known to be new: a retry gets the
        // first answer whatever became of the worker since.
        let (receipt, _) = try await self.issue(
            identity,
            .request,
            target: .worker,
            id: input.path.workerId,
            reason: "request",
            input: body.input,
            requestID: body.requestId
        ) { now in
            try await self.liveWorker(identity, try await self.workerRecord(identity, input.path.workerId).record, everySession: false)
        }
        return .accepted(.init(body: .json(.init(receipt))))
    }

    func stopWorker(_ input: Operations.StopWorker.Input) async throws -> Operations.StopWorker.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.id(input.path.workerId, "workerId")
        let (receipt, _) = try await self.issue(
            identity,
            .terminate,
            target: .worker,
            id: input.path.workerId,
            reason: body.reason,
            requestID: body.requestId
        ) { now in
            try await self.liveWorker(identity, try await self.workerRecord(identity, input.path.workerId).record, everySession: true)
        }
        return .accepted(.init(body: .json(.init(receipt))))
    }

    // MARK: Helpers

    /// A worker of the caller's tenant that the caller may act on, with its registration: 404
    /// for an unknown id, an agent that takes no requests, or another tenant's; 403 for one
    /// registered to another principal (unless the caller holds `admin`).
    private func workerRecord(
        _ identity: AccessIdentity,
        _ id: String
    ) async throws -> (record: FleetAgent, registration: ControlStore.WorkerRegistration?) {
        try InputCheck.id(id, "workerId")
        guard let record = try await self.fleet.agent(tenant: identity.tenant, id: id), record.acceptsRequests else {
            throw APIError(.notFound, "no worker \(id)")
        }
        // By the id as the fleet holds it (its lookup takes any Unicode spelling of the id).
        let registration = try await self.store.registration(tenant: identity.tenant, worker: record.agentID)
        try Self.checkOwner(identity, registration, id)
        return (record, registration)
    }

    /// 403 unless `identity` may act on a worker registered as `registration` says.
    static func checkOwner(_ identity: AccessIdentity, _ registration: ControlStore.WorkerRegistration?, _ id: String) throws(APIError) {
        guard WorkerOwnership.permits(owner: registration?.owner, caller: identity.subject, admin: identity.scopes.contains(.admin)) else {
            throw APIError(.permissionDenied, "worker \(id) is registered to another principal")
        }
    }

    /// Where a worker's command goes: the swarm of its connector's open session, not the swarm
    /// its last event named (any ingest-key event can name another). A stop goes to every open
    /// session (`everySession`); a request, whose input only the worker may read, to one: with
    /// sessions open in several swarms, the one the fleet saw it in, else 409. With none open,
    /// the fleet's swarm (the command waits for a session). Once its connector said its process
    /// is gone (not when it reported a state: the process under control could), `stopped` throws:
    /// 409 `Conflict` unless the caller answers otherwise.
    func liveWorker(
        _ identity: AccessIdentity,
        _ record: FleetAgent,
        everySession: Bool,
        stopped: (String) throws -> Never = { throw APIError(.conflict, "worker \($0) has stopped") }
    ) async throws -> [(swarm: String, agent: String)] {
        let id = record.agentID
        let open = try await self.store.openSwarms(tenant: identity.tenant, agent: id)
        if open.isEmpty {
            if try await self.store.sessions(tenant: identity.tenant, swarm: record.swarmID).gone.contains(id) { try stopped(id) }
            return [(record.swarmID, id)]
        }
        if everySession {
            guard open.count <= self.settings.maxSwarmTargets else {
                throw APIError(.conflict, "worker \(id) has sessions open in \(open.count) swarms (control.max-swarm-targets)")
            }
            return open.map { ($0, id) }
        }
        if open.count == 1 { return [(open[0], id)] }
        guard open.contains(record.swarmID) else {
            throw APIError(.conflict, "worker \(id) has sessions open in \(open.count) swarms; stop the ones that are not it")
        }
        return [(record.swarmID, id)]
    }
}

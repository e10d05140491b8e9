import ControlAPIContract
import EventLog
import Foundation
import OpenAPIRuntime
import ServiceKit

/// Seed 004's Codex worker admin at the paths and in the snake-case shapes its client uses
/// (`/api/runtime/codex/workers…`): the same workers and commands as `/v1/workers`, with
/// ownership per principal (a worker registered to one is its, and an `admin`'s).
extension ControlsHandler {
    func listRuntimeWorkers(_ input: Operations.ListRuntimeWorkers.Input) async throws -> Operations.ListRuntimeWorkers.Output {
        let identity = try Caller.person()
        let limit = input.query.limit ?? 100
        guard (1...200).contains(limit) else { throw APIError(.invalidRequest, "limit must be 1 to 200", details: ["limit": "1 to 200"]) }
        let now = Date()
        let workers = try await self.fleet.agents(tenant: identity.tenant).filter(\.acceptsRequests)
        let admin = identity.scopes.contains(.admin)
        // The registrations the answer can show: of the fleet's workers, and the caller's own
        // (every one, for an admin).
        let registrations =
            admin
            ? try await self.store.registrations(tenant: identity.tenant)
            : try await self.store.registrations(tenant: identity.tenant, workers: workers.map(\.agentID), ownedBy: identity.subject)
        let entries = WorkerOwnership.visible(
            workers: workers,
            registrations: registrations,
            caller: identity.subject,
            admin: admin,
            only: input.query.status?.rawValue,
            status: { self.runtimeStatus($0, now: now) },
            limit: limit
        )
        return .ok(.init(body: .json(.init(data: entries.map { self.runtimeWorker($0, now: now) }))))
    }

    func registerRuntimeWorker(_ input: Operations.RegisterRuntimeWorker.Input) async throws -> Operations.RegisterRuntimeWorker.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.id(body.workerId, "worker_id")
        // One spelling per worker: the fleet's when it knows the worker, else the id in Unicode
        // NFC (another spelling would be another row for the same worker). Compared as bytes:
        // Swift's `==` holds two spellings equal.
        let known = try await self.fleet.agent(tenant: identity.tenant, id: body.workerId)?.agentID
        guard known != nil || body.workerId.precomposedStringWithCanonicalMapping.utf8.elementsEqual(body.workerId.utf8) else {
            throw APIError(.invalidRequest, "worker_id must be in Unicode NFC", details: ["worker_id": "Unicode NFC"])
        }
        let workerID = known ?? body.workerId
        for (field, value, max) in [
            ("workspace_ref", body.workspaceRef, 255), ("codex_home_ref", body.codexHomeRef, 255), ("adapter", body.adapter, 120),
        ] {
            if let value { try InputCheck.text(value, field, max: max, required: field == "adapter") }
        }
        let change = ControlStore.WorkerRegistrationChange(
            workerID: workerID,
            workspaceRef: body.workspaceRef,
            codexHomeRef: body.codexHomeRef,
            adapter: body.adapter,
            metadata: try WorkerRequestLine.metadata(body.metadata?.additionalProperties)
        )
        let (registration, created) = try await self.store.register(
            tenant: identity.tenant,
            change,
            caller: identity.subject,
            admin: identity.scopes.contains(.admin),
            max: self.settings.maxRegisteredWorkers,
            maxPerPrincipal: self.settings.maxRegisteredWorkersPerPrincipal
        )
        let record = try await self.fleet.agent(tenant: identity.tenant, id: workerID).flatMap { $0.acceptsRequests ? $0 : nil }
        let answer = Components.Schemas.RuntimeWorkerAnswer(
            data: self.runtimeWorker(.init(workerID: workerID, record: record, registration: registration), now: Date())
        )
        return created ? .created(.init(body: .json(answer))) : .ok(.init(body: .json(answer)))
    }

    func getRuntimeWorker(_ input: Operations.GetRuntimeWorker.Input) async throws -> Operations.GetRuntimeWorker.Output {
        let identity = try Caller.person()
        let entry = try await self.runtimeEntry(identity, input.path.workerId)
        return .ok(.init(body: .json(.init(data: self.runtimeWorker(entry, now: Date())))))
    }

    func releaseRuntimeWorker(_ input: Operations.ReleaseRuntimeWorker.Input) async throws -> Operations.ReleaseRuntimeWorker.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.workerId, "workerId")
        try await self.store.release(
            tenant: identity.tenant,
            worker: input.path.workerId,
            caller: identity.subject,
            admin: identity.scopes.contains(.admin)
        )
        return .noContent(.init())
    }

    func requestRuntimeWorker(_ input: Operations.RequestRuntimeWorker.Input) async throws -> Operations.RequestRuntimeWorker.Output {
        let identity = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let request = body.request
        try InputCheck.key(request.requestId, "request.request_id")
        let line = try WorkerRequestLine.render(
            requestID: request.requestId,
            method: request.method.rawValue,
            params: request.params?.additionalProperties
        )
        try InputCheck.id(input.path.workerId, "workerId")
        // The worker is looked up once the request id is known to be new: a retry gets the
        // first answer whatever became of the worker since.
        let (receipt, replayed) = try await self.issue(
            identity,
            .request,
            target: .worker,
            id: input.path.workerId,
            reason: "request",
            input: line,
            requestID: request.requestId
        ) { now in
            try await self.liveWorker(identity, try await self.startedWorker(identity, input.path.workerId), everySession: false)
        }
        return .accepted(
            .init(
                body: .json(
                    .init(
                        data: .init(
                            workerId: input.path.workerId,
                            requestId: receipt.requestID,
                            ok: true,
                            method: request.method.rawValue,
                            status: .queued,
                            idempotentReplay: replayed,
                            commandId: receipt.commands.first?.commandID
                        )
                    )
                )
            )
        )
    }

    func stopRuntimeWorker(_ input: Operations.StopRuntimeWorker.Input) async throws -> Operations.StopRuntimeWorker.Output {
        let identity = try Caller.person()
        var reason = "stop"
        switch input.body {
        case .json(let body):
            if let given = body.reason, !given.allSatisfy(\.isWhitespace) {
                try InputCheck.text(given, "reason", max: 255)
                reason = given
            }
        case nil:
            break
        }
        try InputCheck.id(input.path.workerId, "workerId")
        // The request's correlation id is the stop's idempotency key: a retry of one request is
        // the same stop. One that is not a valid key (or none: the edge made one) is a new stop.
        let requestID = (RequestScope.current?.requestID).flatMap { (try? InputCheck.key($0, "x-request-id")) == nil ? nil : $0 } ?? UUID().uuidString
        let issued: (receipt: ControlReceipt, replayed: Bool)
        do {
            // The worker is looked up once the request id is known to be new (a retry gets its
            // first answer); one that has stopped answers as done, with no new command.
            issued = try await self.issue(
                identity,
                .terminate,
                target: .worker,
                id: input.path.workerId,
                reason: reason,
                requestID: requestID
            ) { now in
                try await self.liveWorker(identity, try await self.startedWorker(identity, input.path.workerId), everySession: true) { _ in
                    throw AlreadyStopped()
                }
            }
        } catch is AlreadyStopped {
            return .ok(.init(body: .json(.init(data: .init(workerId: input.path.workerId, status: .stopped, idempotentReplay: true)))))
        }
        return .accepted(
            .init(
                body: .json(
                    .init(
                        data: .init(
                            workerId: input.path.workerId,
                            status: .stopping,
                            idempotentReplay: issued.replayed,
                            requestId: issued.receipt.requestID
                        )
                    )
                )
            )
        )
    }

    // MARK: Helpers

    /// The worker of a stop had stopped already: nothing to issue.
    private struct AlreadyStopped: Error {}

    /// A worker the caller may see: 404 when it is neither a worker the fleet knows nor a
    /// registered id (or is another tenant's), 403 when another principal holds it.
    private func runtimeEntry(_ identity: AccessIdentity, _ id: String) async throws -> WorkerOwnership.Entry {
        try InputCheck.id(id, "workerId")
        let record = try await self.fleet.agent(tenant: identity.tenant, id: id).flatMap { $0.acceptsRequests ? $0 : nil }
        // By the id as the fleet holds it: the fleet's lookup takes any Unicode spelling of it
        // (Swift compares canonically), the table its bytes.
        let key = record?.agentID ?? id
        let registration = try await self.store.registration(tenant: identity.tenant, worker: key)
        guard record != nil || registration != nil else { throw APIError(.notFound, "no worker \(id)") }
        try Self.checkOwner(identity, registration, id)
        return WorkerOwnership.Entry(workerID: key, record: record, registration: registration)
    }

    /// A worker the caller may act on that has been seen: 409 for one registered and not seen yet.
    private func startedWorker(_ identity: AccessIdentity, _ id: String) async throws -> FleetAgent {
        let entry = try await self.runtimeEntry(identity, id)
        guard let record = entry.record else {
            throw APIError(.conflict, "worker \(id) is registered but has not started (no connector with --worker has reported it)")
        }
        return record
    }

    /// The agent state of a seen worker, `registered` for one not seen yet.
    private func runtimeStatus(_ entry: WorkerOwnership.Entry, now: Date) -> String {
        entry.record.map { self.views.state(of: $0, now: now).rawValue } ?? "registered"
    }

    private func runtimeWorker(_ entry: WorkerOwnership.Entry, now: Date) -> Components.Schemas.RuntimeWorker {
        let metadata = entry.registration.flatMap { try? JSONDecoder().decode(OpenAPIObjectContainer.self, from: Data($0.metadata.utf8)) }
        let record = entry.record
        return Components.Schemas.RuntimeWorker(
            workerId: entry.workerID,
            status: self.runtimeStatus(entry, now: now),
            latestSeq: record?.lastSeq ?? 0,
            swarmId: record?.swarmID,
            workspaceRef: entry.registration?.workspaceRef,
            codexHomeRef: entry.registration?.codexHomeRef,
            adapter: entry.registration?.adapter ?? "swarmdeck-connector",
            heartbeatState: record.map {
                now.timeIntervalSince($0.lastSeenAt) > self.views.offlineAfter ? .stale : .fresh
            },
            lastHeartbeatAt: record?.lastSeenAt,
            owner: entry.registration?.owner,
            metadata: .init(additionalProperties: metadata ?? OpenAPIObjectContainer()),
            webUrl: record.map { self.views.webURL("workers", $0.agentID) }
        )
    }
}

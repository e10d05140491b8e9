import Foundation
import PostgresNIO
import ServiceKit

extension ControlStore {
    /// Seed 004's registration of a worker to a principal (`worker_owners`).
    struct WorkerRegistration: Sendable, Equatable {
        var workerID: String
        /// The token subject it is registered to.
        var owner: String
        var workspaceRef: String?
        var codexHomeRef: String?
        var adapter: String?
        /// A JSON object, as stored.
        var metadata: String
        var registeredAt: Date
        var updatedAt: Date
    }

    /// What a registration asks to set; a nil field keeps what is stored.
    struct WorkerRegistrationChange: Sendable {
        var workerID: String
        var workspaceRef: String?
        var codexHomeRef: String?
        var adapter: String?
        /// A JSON object.
        var metadata: String?
    }

    private static let registrationColumns =
        "worker_id, owner, workspace_ref, codex_home_ref, adapter, metadata::text, registered_at, updated_at"

    private static func registrations(_ rows: PostgresRowSequence) async throws -> [WorkerRegistration] {
        var registrations: [WorkerRegistration] = []
        for try await (worker, owner, workspace, home, adapter, metadata, registered, updated) in rows.decode(
            (String, String, String?, String?, String?, String, Date, Date).self
        ) {
            registrations.append(
                WorkerRegistration(
                    workerID: worker,
                    owner: owner,
                    workspaceRef: workspace,
                    codexHomeRef: home,
                    adapter: adapter,
                    metadata: metadata,
                    registeredAt: registered,
                    updatedAt: updated
                )
            )
        }
        return registrations
    }

    /// The registration of one worker of `tenant`, or nil when nobody registered it.
    func registration(tenant: String, worker: String) async throws -> WorkerRegistration? {
        try await Self.registrations(
            try await self.client.query(
                "SELECT \(unescaped: Self.registrationColumns) FROM worker_owners WHERE tenant_id = \(tenant) AND worker_id = \(worker)",
                logger: self.logger
            )
        ).first
    }

    /// The registrations of `tenant` of the given workers, and those of `owner`.
    func registrations(tenant: String, workers: [String], ownedBy owner: String? = nil) async throws -> [WorkerRegistration] {
        try await Self.registrations(
            try await self.client.query(
                """
                SELECT \(unescaped: Self.registrationColumns) FROM worker_owners
                WHERE tenant_id = \(tenant) AND (worker_id = ANY(\(workers)) OR owner = \(owner))
                """,
                logger: self.logger
            )
        )
    }

    /// Every registration of `tenant` (at most `control.max-registered-workers` exist).
    func registrations(tenant: String) async throws -> [WorkerRegistration] {
        try await Self.registrations(
            try await self.client.query(
                "SELECT \(unescaped: Self.registrationColumns) FROM worker_owners WHERE tenant_id = \(tenant)",
                logger: self.logger
            )
        )
    }

    /// Registers a worker to `caller`, or updates its registration: 403 when another principal
    /// holds it (unless `admin`, whose update keeps the owner), 409 when the tenant already has
    /// `max` registrations or the caller `maxPerPrincipal`. Serialized per tenant, so the caps
    /// hold across replicas. Answers the registration and whether it is new.
    func register(
        tenant: String,
        _ change: WorkerRegistrationChange,
        caller: String,
        admin: Bool,
        max: Int,
        maxPerPrincipal: Int
    ) async throws -> (registration: WorkerRegistration, created: Bool) {
        try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('worker-owners'), hashtext(\(tenant)))", logger: self.logger)
            let existing = try await Self.registrations(
                try await connection.query(
                    "SELECT \(unescaped: Self.registrationColumns) FROM worker_owners WHERE tenant_id = \(tenant) AND worker_id = \(change.workerID)",
                    logger: self.logger
                )
            ).first
            if let existing {
                guard WorkerOwnership.permits(owner: existing.owner, caller: caller, admin: admin) else {
                    throw APIError(.permissionDenied, "worker \(change.workerID) is registered to another principal")
                }
                let updated = try await Self.registrations(
                    try await connection.query(
                        """
                        UPDATE worker_owners SET
                            workspace_ref = COALESCE(\(change.workspaceRef), workspace_ref),
                            codex_home_ref = COALESCE(\(change.codexHomeRef), codex_home_ref),
                            adapter = COALESCE(\(change.adapter), adapter),
                            metadata = COALESCE(\(change.metadata)::jsonb, metadata),
                            updated_at = now()
                        WHERE tenant_id = \(tenant) AND worker_id = \(change.workerID)
                        RETURNING \(unescaped: Self.registrationColumns)
                        """,
                        logger: self.logger
                    )
                )
                guard let registration = updated.first else { throw APIError(.serverError, "the registration vanished under its lock") }
                return (registration, false)
            }
            var (count, mine) = (0, 0)
            for try await rows in try await connection.query(
                "SELECT count(*), count(*) FILTER (WHERE owner = \(caller)) FROM worker_owners WHERE tenant_id = \(tenant)",
                logger: self.logger
            ).decode((Int, Int).self) {
                (count, mine) = rows
            }
            guard count < max else {
                throw APIError(
                    .conflict,
                    "this tenant has \(count) registered workers, the most it may have (control.max-registered-workers); release one first"
                )
            }
            guard mine < maxPerPrincipal else {
                throw APIError(
                    .conflict,
                    "\(caller) has \(mine) registered workers, the most one principal may have (control.max-registered-workers-per-principal); release one first"
                )
            }
            let inserted = try await Self.registrations(
                try await connection.query(
                    """
                    INSERT INTO worker_owners (tenant_id, worker_id, owner, workspace_ref, codex_home_ref, adapter, metadata)
                    VALUES (\(tenant), \(change.workerID), \(caller), \(change.workspaceRef), \(change.codexHomeRef), \(change.adapter),
                            COALESCE(\(change.metadata)::jsonb, '{}'))
                    RETURNING \(unescaped: Self.registrationColumns)
                    """,
                    logger: self.logger
                )
            )
            guard let registration = inserted.first else { throw APIError(.serverError, "the registration was not stored") }
            return (registration, true)
        }
    }

    /// Releases a worker's registration: 404 when nobody registered it, 403 when another
    /// principal holds it (unless `admin`).
    func release(tenant: String, worker: String, caller: String, admin: Bool) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            var owner: String?
            for try await holder in try await connection.query(
                "SELECT owner FROM worker_owners WHERE tenant_id = \(tenant) AND worker_id = \(worker) FOR UPDATE",
                logger: self.logger
            ).decode(String.self) {
                owner = holder
            }
            guard let owner else { throw APIError(.notFound, "worker \(worker) is not registered") }
            guard WorkerOwnership.permits(owner: owner, caller: caller, admin: admin) else {
                throw APIError(.permissionDenied, "worker \(worker) is registered to another principal")
            }
            try await connection.query("DELETE FROM worker_owners WHERE tenant_id = \(tenant) AND worker_id = \(worker)", logger: self.logger)
        }
    }
}

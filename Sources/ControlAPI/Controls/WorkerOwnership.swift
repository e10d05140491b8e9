import EventLog
import Foundation

/// Who may see and act on a worker (seed 004: ownership is checked by the server, per
/// principal). A worker nobody registered is the tenant's: every operator with the scope may;
/// one registered to a principal (a token subject) is that principal's, and an `admin`'s.
enum WorkerOwnership {
    /// Whether `caller` may see and act on a worker registered to `owner` (nil: nobody).
    static func permits(owner: String?, caller: String, admin: Bool) -> Bool {
        owner == nil || owner == caller || admin
    }

    /// One worker on seed 004's surface: its fleet record once it has been seen as a worker, its
    /// registration once someone registered it; at least one of the two.
    struct Entry: Sendable {
        var workerID: String
        var record: FleetAgent?
        var registration: ControlStore.WorkerRegistration?
    }

    /// The workers `caller` may see: the fleet's workers and the registered ids, each once, the
    /// most recently seen first and those not seen yet after them (the latest registered
    /// first); then only those whose status `status` gives as `only` (when set), at most
    /// `limit`. A registered id whose agent is not a worker counts as not seen yet.
    static func visible(
        workers: [FleetAgent],
        registrations: [ControlStore.WorkerRegistration],
        caller: String,
        admin: Bool,
        only: String? = nil,
        status: (Entry) -> String,
        limit: Int
    ) -> [Entry] {
        var owners: [String: ControlStore.WorkerRegistration] = [:]
        for registration in registrations { owners[registration.workerID] = registration }
        var entries: [Entry] = []
        var seen: Set<String> = []
        for record in workers.sorted(by: FleetAgent.mostRecentFirst) where record.acceptsRequests {
            seen.insert(record.agentID)
            entries.append(Entry(workerID: record.agentID, record: record, registration: owners[record.agentID]))
        }
        for registration in registrations.sorted(by: { ($0.registeredAt, $1.workerID) > ($1.registeredAt, $0.workerID) })
        where !seen.contains(registration.workerID) {
            entries.append(Entry(workerID: registration.workerID, record: nil, registration: registration))
        }
        var visible: [Entry] = []
        for entry in entries where visible.count < limit && self.permits(owner: entry.registration?.owner, caller: caller, admin: admin) {
            if let only, status(entry) != only { continue }
            visible.append(entry)
        }
        return visible
    }
}

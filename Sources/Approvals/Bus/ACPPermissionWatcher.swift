import Contracts
import Crypto
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Opens a gate for every ACP `session/request_permission` an agent appends to a thread: reads
/// the live feed's ACP events (`<prefix>.ev.*.*.*.acp`, replicas share them as queue group
/// `approvals`), and for a request from the agent opens a gate (title and tool call as the
/// summary and tool, its options as the options, keyed by thread and JSON-RPC id so a repeat
/// finds the same gate). Its settlement is appended to the thread as the JSON-RPC result
/// (``GateMessages/acpAnswer(_:)``).
///
/// The live feed is core NATS: a request published while no replica listens (or dropped past
/// 10,000 waiting) opens no gate, and its ACP client gets no answer from here.
struct ACPPermissionWatcher: Service {
    let store: GateStore
    let outbox: GateOutbox
    let connection: NATSConnection
    let subjects: Subjects
    let settings: ApprovalsSettings
    /// Gates opened per tenant per minute, shared with the agents' operation.
    let opens: KeyedTokenBuckets
    let logger: Logger

    func run() async throws {
        let subscription = try self.connection.subscribe(
            to: self.subjects.allEvents(of: .acp),
            queue: "approvals",
            buffering: .dropNewest(maxMessages: 10_000)
        )
        await withTaskCancellationOrGracefulShutdownHandler {
            for await message in subscription {
                guard let envelope = try? BusEventEnvelope(serializedBytes: message.payload), let gate = self.gate(envelope) else { continue }
                await self.open(gate)
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }

    /// The gate an ACP event asks for, or nil when it is not an agent's permission request.
    func gate(_ envelope: BusEventEnvelope, now: Date = Date.nowMilliseconds) -> Gate? {
        guard envelope.kind == .acp, !envelope.threadID.isEmpty,
            let frame = try? JSONSerialization.jsonObject(with: envelope.frame) as? [String: Any],
            let acp = frame["envelope"] as? [String: Any], acp["direction"] as? String == "agent_to_client", acp["kind"] as? String == "request",
            let body = acp["body"] as? [String: Any], let request = ACPPermission.request(from: body)
        else { return nil }
        var toolInput: (json: String, truncated: Bool)?
        if let input = request.rawInput { toolInput = ToolInputRedactor(maxBytes: self.settings.maxInputBytes).redact(input) }
        let key = SHA256.hash(data: Array("\(envelope.threadID)\u{0}\(request.id)".utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return Gate(
            tenant: envelope.tenantID,
            id: "g_" + randomHex(bytes: 12),
            swarm: envelope.swarmID,
            agent: envelope.agentID,
            idempotencyKey: "acp-" + key,
            source: "acp",
            summary: ToolInputRedactor.redactWords(in: request.title),
            risk: "medium",
            tool: request.kind,
            toolInput: toolInput?.json,
            toolInputTruncated: toolInput?.truncated ?? false,
            options: request.options,
            status: .pending,
            requestedAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(self.settings.defaultExpirySeconds)),
            acp: Gate.ACPOrigin(threadID: envelope.threadID, sessionID: request.sessionID ?? (acp["session_id"] as? String), requestID: request.id)
        )
    }

    private func open(_ gate: Gate) async {
        if self.opens.take(gate.tenant) != nil {
            self.logger.warning(
                "ACP permission request not turned into a gate: the tenant's opens-per-minute is spent",
                metadata: ["tenant": "\(gate.tenant)"]
            )
            return
        }
        do {
            if case .created = try await self.store.open(
                gate,
                maxPerAgent: self.settings.maxPendingPerAgent,
                maxPerTenant: self.settings.maxPendingPerTenant
            ) {
                self.outbox.kick()
            }
        } catch {
            self.logger.warning(
                "ACP permission request not turned into a gate",
                metadata: ["tenant": "\(gate.tenant)", "thread": "\(gate.acp?.threadID ?? "")", "error": "\(String(reflecting: error))"]
            )
        }
    }
}

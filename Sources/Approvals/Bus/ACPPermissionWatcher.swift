import Contracts
import Crypto
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle

/// Opens a gate for every ACP `session/request_permission` an agent appends to a thread: reads
/// the live feed's ACP events (`<prefix>.ev.*.*.*.*.acp`, replicas share them as queue group
/// `approvals`), and for a request from the agent opens a gate (title and tool call as the
/// summary and tool, its options as the options, keyed by thread and JSON-RPC id so a repeat
/// finds the same gate). Its settlement is appended to the thread as the JSON-RPC result
/// (``GateMessages/acpAnswer(_:)``).
///
/// A request no gate can take (no option of a known kind, a rate limit, a cap, a failure) is
/// answered `cancelled` at once; a `session/cancel` on the thread cancels its pending gates.
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
        let subscription = try await self.connection.subscribe(
            to: self.subjects.allACPEvents,
            queue: "approvals",
            buffering: .dropNewest(maxMessages: 10_000)
        )
        await withTaskCancellationOrGracefulShutdownHandler {
            for await message in subscription {
                guard let envelope = try? BusEventEnvelope(serializedBytes: message.payload) else { continue }
                switch self.read(envelope) {
                case .permission(let gate): await self.open(gate)
                case .unanswerable(let gate): await self.answerCancelled(gate, because: "it offers no option of a known kind")
                case .cancel(let thread, let session):
                    await self.cancel(tenant: envelope.tenantID, thread: thread, session: session)
                case .answered(let thread, let requestID, let requestSeq, let optionID, let device):
                    await self.answered(
                        tenant: envelope.tenantID,
                        thread: thread,
                        requestID: requestID,
                        requestSeq: requestSeq,
                        optionID: optionID,
                        device: device
                    )
                case nil: continue
                }
            }
        } onCancelOrGracefulShutdown: {
            subscription.unsubscribe()
        }
    }

    /// What a frame holds when its body may be a method approvals reads.
    static let markers = [#"permission""#, #"cancel""#, #"\u"#, #""origin":"client""#].map { Data($0.utf8) }

    /// What an ACP event means for approvals.
    enum Reading {
        /// An agent's permission request: the gate to open.
        case permission(Gate)
        /// A permission request no gate can decide (no option of a known kind): answered
        /// `cancelled` at once.
        case unanswerable(Gate)
        /// `session/cancel` on a thread: its pending permission requests are answered `cancelled`.
        case cancel(thread: String, session: String?)
        /// A person answered a request in the thread (on `/v1/acp`): its gate settles so.
        case answered(thread: String, requestID: String, requestSeq: Int64?, optionID: String?, device: String)
    }

    /// What `envelope` means for approvals, or nil when nothing.
    func read(_ envelope: BusEventEnvelope, now: Date = Date.nowMilliseconds) -> Reading? {
        // Most ACP traffic is neither: a byte search spares it the JSON parse. A method name's
        // bytes differ from it only through `\/` (the markers hold no slash) or `\u` escapes.
        guard envelope.kind == .acp, !envelope.threadID.isEmpty,
            Self.markers.contains(where: { envelope.frame.range(of: $0) != nil }),
            let frame = try? JSONSerialization.jsonObject(with: envelope.frame) as? [String: Any],
            let acp = frame["envelope"] as? [String: Any], let body = acp["body"] as? [String: Any]
        else { return nil }
        // A session id fit to be stored and sent back (else the thread's, else none).
        let sessionID = [(body["params"] as? [String: Any])?["sessionId"] as? String, acp["session_id"] as? String]
            .compactMap { $0 }.first { EntityID.problem($0, field: "sessionId") == nil }
        if body["method"] as? String == ACPPermission.cancelMethod {
            return .cancel(thread: envelope.threadID, session: sessionID)
        }
        if acp["origin"] as? String == "client", acp["direction"] as? String == "client_to_agent", acp["kind"] as? String == "result",
            let requestID = JSONRPCID.text(body["id"]), let device = acp["device"] as? String
        {
            let optionID = ACPMethods.selectedOption(in: body)
            let requestSeq = (acp["answers_seq"] as? NSNumber)?.int64Value
            return .answered(thread: envelope.threadID, requestID: requestID, requestSeq: requestSeq, optionID: optionID, device: device)
        }
        guard acp["direction"] as? String == "agent_to_client", acp["kind"] as? String == "request",
            let request = ACPPermission.request(from: body)
        else { return nil }
        let toolInput = request.rawInput.map { ToolInputRedactor(maxBytes: self.settings.maxInputBytes).redact($0) }
        let summary = CredentialMask(request.title)
        // Ids restart with each connection: the session, the tool call and the request's seq in
        // the thread count too.
        let requestSeq = (acp["seq"] as? NSNumber)?.int64Value
        let identity = [envelope.threadID, sessionID ?? "", request.id, request.toolCallID ?? "", requestSeq.map(String.init) ?? ""]
            .joined(separator: "\u{0}")
        let key = SHA256.hash(data: Array(identity.utf8)).prefix(16).lowercaseHex
        let gate = Gate(
            tenant: envelope.tenantID,
            id: "g_" + randomHex(bytes: 12),
            swarm: envelope.swarmID,
            agent: envelope.agentID,
            idempotencyKey: "acp-" + key,
            source: "acp",
            summary: summary.text,
            risk: "medium",
            tool: request.kind,
            toolInput: toolInput?.json,
            toolInputTruncated: toolInput?.truncated ?? false,
            maskedValues: summary.count + (toolInput?.masked ?? 0),
            options: request.options,
            status: .pending,
            requestedAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(self.settings.defaultExpirySeconds)),
            acp: Gate.ACPOrigin(
                threadID: envelope.threadID,
                sessionID: sessionID,
                requestID: request.id,
                requestSeq: requestSeq
            )
        )
        return request.options.isEmpty ? .unanswerable(gate) : .permission(gate)
    }

    private func open(_ gate: Gate) async {
        if self.opens.take(gate.tenant) != nil {
            await self.answerCancelled(gate, because: "the tenant's opens-per-minute is spent")
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
            await self.answerCancelled(gate, because: "\(error)")
        }
    }

    /// A request no gate decides is answered `cancelled` at once (ACP has no timeout on it, so
    /// an unanswered request would hold its agent for good).
    private func answerCancelled(_ gate: Gate, because reason: String) async {
        self.logger.warning(
            "ACP permission request answered cancelled without a gate",
            metadata: ["tenant": "\(gate.tenant)", "thread": "\(gate.acp?.threadID ?? "")", "reason": "\(reason)"]
        )
        guard let origin = gate.acp else { return }
        let answer = GateMessages.acpAnswer(
            origin,
            swarm: gate.swarm,
            agent: gate.agent,
            msgID: "gate-\(gate.idempotencyKey)-refused",
            optionID: nil,
            at: gate.requestedAt
        )
        do {
            try await ServiceEventSender(connection: self.connection, subjects: self.subjects).send(tenant: gate.tenant, [answer])
        } catch {
            self.logger.warning("ACP cancelled answer not sent", metadata: ["tenant": "\(gate.tenant)", "error": "\(String(reflecting: error))"])
        }
    }

    /// A person's answer in the thread settles the request's gate (the agent already has it:
    /// the connector delivers the first answer).
    private func answered(tenant: String, thread: String, requestID: String, requestSeq: Int64?, optionID: String?, device: String) async {
        do {
            let settled = try await self.store.answerACP(
                tenant: tenant,
                thread: thread,
                requestID: requestID,
                requestSeq: requestSeq,
                optionID: optionID,
                device: device,
                now: Date.nowMilliseconds
            )
            if !settled.isEmpty { self.outbox.kick() }
        } catch {
            self.logger.warning(
                "ACP gate not settled from its thread",
                metadata: ["tenant": "\(tenant)", "thread": "\(thread)", "error": "\(String(reflecting: error))"]
            )
        }
    }

    /// After `session/cancel`, every pending permission request of the thread (and session) is
    /// answered `cancelled` (ACP requires it): their gates are cancelled.
    private func cancel(tenant: String, thread: String, session: String?) async {
        do {
            let cancelled = try await self.store.cancelACP(tenant: tenant, thread: thread, session: session, now: Date.nowMilliseconds)
            if !cancelled.isEmpty { self.outbox.kick() }
        } catch {
            self.logger.warning(
                "ACP gates not cancelled",
                metadata: ["tenant": "\(tenant)", "thread": "\(thread)", "error": "\(String(reflecting: error))"]
            )
        }
    }
}

import Contracts
import Crypto
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Control commands on JetStream: one stream (``Subjects/controlStreamName``) holds every
/// command on `<prefix>.ctl.<tenant>.<swarm>.<agent>`, with the command id as `Nats-Msg-Id`.
/// Each agent session pulls from its agent's durable consumer (its queue), created when the
/// session opens (only registered agents have one), and acknowledges through control-api with
/// the opaque ``AckHandle`` it got with the command. Polls wait on the connection's one pull
/// inbox; each session has at most one poll at a time (a new one ends the earlier), and a
/// replica serves at most `maxPollsPerTenant` at once per tenant.
struct CommandBus: Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    let logger: Logger
    let handles: AckHandle
    let maxPollsPerTenant: Int
    /// The stream's bounds: bytes in all, and commands per agent (-1: none).
    let maxBytes: Int
    let maxPerAgent: Int
    private let consumers = ConsumerRegistry()
    private let polls = PollRegistry()

    /// The largest command the stream takes: a worker request's input is at most 16 000
    /// characters (64 000 bytes of UTF-8), the rest of a command a few hundred bytes.
    static let maxCommandBytes: Int64 = 131_072

    /// How long a delivered command may go unacknowledged before it is delivered again.
    static let ackWait = Duration.seconds(30)

    init(
        jetStream: JetStream,
        subjects: Subjects,
        handles: AckHandle,
        maxPollsPerTenant: Int,
        maxBytes: Int = -1,
        maxPerAgent: Int = -1,
        logger: Logger
    ) {
        self.maxBytes = maxBytes
        self.maxPerAgent = maxPerAgent
        self.jetStream = jetStream
        self.subjects = subjects
        self.handles = handles
        self.maxPollsPerTenant = maxPollsPerTenant
        self.logger = logger
    }

    /// Creates (or updates) the stream; commands are kept a day, within its bounds.
    func prepare() async throws {
        _ = try await self.jetStream.createOrUpdateStream(
            StreamConfiguration(
                name: self.subjects.controlStreamName,
                subjects: [self.subjects.allControlCommands],
                maxBytes: Int64(self.maxBytes),
                maxMessagesPerSubject: Int64(self.maxPerAgent),
                maxAge: .seconds(86_400),
                duplicateWindow: .seconds(600),
                maxMessageSize: Self.maxCommandBytes
            )
        )
    }

    /// Publishes commands and waits until JetStream stored each (a repeat of a stored one is
    /// stored once, and answered with its first sequence). Returns the ids stored and their
    /// stream sequences. `headers`: the request's correlation (``RequestScope/busHeaders``:
    /// `x-request-id`, `traceparent`), none for the dispatcher's retries.
    func publish(_ commands: [ControlStore.IssuedCommand], headers: NATSHeaders) async -> [(commandID: String, sequence: UInt64)] {
        var stored: [(commandID: String, sequence: UInt64)] = []
        for command in commands {
            var message = BusControlCommand()
            message.commandID = command.commandID
            message.tenantID = command.tenant
            message.requestID = command.requestID
            message.swarmID = command.swarmID
            message.agentID = command.agentID
            message.action = command.action.bus
            message.reason = command.reason
            message.input = command.input ?? ""
            message.actor = command.actor
            message.issuedUnixNano = Int64(command.issuedAt.timeIntervalSince1970 * 1e9)
            message.expiresUnixNano = Int64(command.expiresAt.timeIntervalSince1970 * 1e9)
            do {
                let payload: [UInt8] = try message.serializedBytes()
                let ack = try await self.jetStream.publish(
                    payload,
                    to: self.subjects.controlCommand(tenant: command.tenant, swarm: command.swarmID, agent: command.agentID),
                    messageID: command.commandID,
                    headers: headers
                )
                stored.append((command.commandID, ack.sequence))
            } catch {
                self.logger.warning(
                    "command not published yet; the dispatcher retries",
                    metadata: ["command": "\(command.commandID)", "error": "\(String(reflecting: error))"]
                )
            }
        }
        return stored
    }

    /// The durable consumer name of one agent: a digest, since ids may hold any character.
    func consumerName(tenant: String, swarm: String, agent: String) -> String {
        let digest = SHA256.hash(data: Array([tenant, swarm, agent].joined(separator: "\u{0}").utf8))
        return "agent_" + digest.prefix(16).map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
    }

    /// Creates the agent's queue (its durable consumer), or keeps the one it has.
    func openQueue(tenant: String, swarm: String, agent: String) async throws {
        let name = self.consumerName(tenant: tenant, swarm: swarm, agent: agent)
        try await self.jetStream.createOrUpdateConsumer(
            stream: self.subjects.controlStreamName,
            ConsumerConfiguration(
                durableName: name,
                filterSubject: self.subjects.controlCommand(tenant: tenant, swarm: swarm, agent: agent),
                ackWait: Self.ackWait,
                maxAckPending: 64,
                // Outlives the idle session that owns it (control.agent-session-idle-hours ends
                // that), in case its end was never recorded.
                inactiveThreshold: .seconds(30 * 86_400)
            )
        )
        self.consumers.insert(name)
    }

    /// Deletes the agent's queue (its session ended and it has no other).
    func deleteQueue(tenant: String, swarm: String, agent: String) async {
        let name = self.consumerName(tenant: tenant, swarm: swarm, agent: agent)
        self.consumers.remove(name)
        do {
            try await self.jetStream.deleteConsumer(stream: self.subjects.controlStreamName, name: name)
        } catch {
            self.logger.debug("agent queue not deleted", metadata: ["consumer": "\(name)", "error": "\(String(reflecting: error))"])
        }
    }

    /// The next commands for a session's agent, waiting up to `wait` for one; an earlier poll
    /// of the same session on this replica ends with none.
    /// - Throws: `RateLimited` when the tenant already has `maxPollsPerTenant` polls waiting here.
    func next(_ session: AgentSessionIdentity, wait: Duration) async throws -> [(BusControlCommand, handle: String, sequence: UInt64?)] {
        let name = self.consumerName(tenant: session.tenant, swarm: session.swarm, agent: session.agent)
        if !self.consumers.contains(name) {
            // Another replica opened the session, or the stream was recreated.
            try await self.openQueue(tenant: session.tenant, swarm: session.swarm, agent: session.agent)
        }
        let consumer = self.jetStream.consumer(stream: self.subjects.controlStreamName, name: name)
        let poll = Poll()
        try self.polls.begin(poll, session: session, maxPerTenant: self.maxPollsPerTenant)
        defer { self.polls.end(poll, session: session) }
        let messages: [JetStreamMessage]
        do {
            messages = try await poll.run { try await consumer.fetch(batch: 1, expires: max(wait, .milliseconds(100))) }
        } catch {
            // The consumer may be gone (the stream was recreated, or an ended session's queue
            // was deleted under a new one): create it again at the next poll.
            self.consumers.remove(name)
            self.logger.warning("poll failed", metadata: ["consumer": "\(name)", "error": "\(String(reflecting: error))"])
            throw APIError(.serviceUnavailable, "the command queue is being restored; poll again", retryAfterSeconds: 1)
        }
        var commands: [(BusControlCommand, String, UInt64?)] = []
        for message in messages {
            guard let subject = message.replySubject, let command = try? BusControlCommand(serializedBytes: message.payload),
                command.tenantID == session.tenant, command.swarmID == session.swarm, command.agentID == session.agent,
                let handle = try? self.handles.seal(
                    subject,
                    tenant: session.tenant,
                    swarm: session.swarm,
                    agent: session.agent,
                    command: command.commandID
                )
            else {
                try? message.term()
                continue
            }
            commands.append((command, handle, JetStreamMessage.parse(subject)?.streamSequence))
        }
        return commands
    }

    /// Drops a delivered message for good (`+TERM`): one control-api did not issue.
    func discard(handle: String, session: AgentSessionIdentity, command: String) {
        guard let subject = try? self.deliverySubject(handle, session: session, command: command, sequence: nil) else { return }
        try? self.jetStream.connection.publish(Array("+TERM".utf8), to: subject)
    }

    /// Acknowledges a delivered command on JetStream, given the handle it was delivered with
    /// (checked first, see ``deliverySubject(_:session:command:sequence:)``).
    func acknowledge(handle: String, session: AgentSessionIdentity, command: String, sequence: UInt64?) throws {
        let subject = try self.deliverySubject(handle, session: session, command: command, sequence: sequence)
        try self.jetStream.connection.publish(Array("+ACK".utf8), to: subject)
    }

    /// The acknowledgement subject sealed in `handle`; `InvalidRequest` unless the handle was
    /// sealed for this session's agent and this command, and holds exactly an acknowledgement
    /// subject of that agent's consumer for the message at `sequence` (any message when nil:
    /// commands control-api did not record, such as approval gate outcomes).
    func deliverySubject(_ handle: String, session: AgentSessionIdentity, command: String, sequence: UInt64?) throws(APIError) -> String {
        let consumer = self.consumerName(tenant: session.tenant, swarm: session.swarm, agent: session.agent)
        guard let subject = self.handles.open(handle, tenant: session.tenant, swarm: session.swarm, agent: session.agent, command: command),
            Self.isDelivery(subject, stream: self.subjects.controlStreamName, consumer: consumer, sequence: sequence)
        else {
            throw APIError(.invalidRequest, "ackToken is not the handle this command was delivered with")
        }
        return subject
    }

    /// Whether `ackToken` is exactly an acknowledgement subject of `consumer` on `stream` for
    /// the message at stream sequence `sequence` (any, when nil):
    /// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`,
    /// five decimal numbers and nothing else (no token, wildcard, space or second line).
    static func isDelivery(_ ackToken: String, stream: String, consumer: String, sequence: UInt64?) -> Bool {
        let prefix = "$JS.ACK.\(stream).\(consumer)."
        guard ackToken.hasPrefix(prefix) else { return false }
        let numbers = ackToken.dropFirst(prefix.utf8.count).split(separator: ".", omittingEmptySubsequences: false)
        return numbers.count == 5
            && numbers.allSatisfy { !$0.isEmpty && $0.utf8.count <= 20 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
            && JetStreamMessage.parse(ackToken).map { sequence == nil || $0.streamSequence == sequence } == true
    }
}

/// One long poll: its fetch runs in a task of its own, so that graceful shutdown or a newer
/// poll of the same session ends the wait at once (and cancels the pull: a command the server
/// delivers to it afterwards is handed back for redelivery).
final class Poll: Sendable {
    private let race = FirstAnswer<[JetStreamMessage]>()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// What `fetch` returns, or nothing once ``end()`` is called or graceful shutdown begins.
    func run(_ fetch: @escaping @Sendable () async throws -> [JetStreamMessage]) async throws -> [JetStreamMessage] {
        // The request's task carries the server's graceful shutdown (task locals), which comes
        // before the server waits for requests in flight.
        try await withGracefulShutdownHandler {
            try await withCheckedThrowingContinuation { continuation in
                self.race.arm(continuation)
                let race = self.race
                let task = Task {
                    do {
                        let messages = try await fetch()
                        if !race.answer(.success(messages)) {
                            // Nobody waits for them any more: delivered again at once.
                            for message in messages { try? message.nak() }
                        }
                    } catch {
                        race.answer(.failure(error))
                    }
                }
                self.task.withLock { $0 = task }
                // Ended before its task was stored: nothing cancelled it.
                if race.isAnswered { task.cancel() }
            }
        } onGracefulShutdown: {
            self.end()
        }
    }

    /// Ends the poll with no commands.
    func end() {
        self.race.answer(.success([]))
        self.task.withLock { $0 }?.cancel()
    }
}

/// The polls waiting on this replica: one per session, a bounded number per tenant.
private final class PollRegistry: Sendable {
    private struct State {
        var bySession: [String: Poll] = [:]
        var perTenant: [String: Int] = [:]
    }

    private let state = Mutex(State())

    private static func key(_ session: AgentSessionIdentity) -> String { session.tenant + "\u{0}" + session.session }

    /// Registers `poll`, ending the session's earlier poll.
    func begin(_ poll: Poll, session: AgentSessionIdentity, maxPerTenant: Int) throws(APIError) {
        let earlier: Poll? = try self.state.withLock { (state) throws(APIError) -> Poll? in
            let earlier = state.bySession[Self.key(session)]
            if earlier == nil {
                guard state.perTenant[session.tenant, default: 0] < maxPerTenant else {
                    throw APIError(.rateLimited, "this tenant has \(maxPerTenant) polls waiting here already", retryAfterSeconds: 5)
                }
                state.perTenant[session.tenant, default: 0] += 1
            }
            state.bySession[Self.key(session)] = poll
            return earlier
        }
        earlier?.end()
    }

    func end(_ poll: Poll, session: AgentSessionIdentity) {
        self.state.withLock { state in
            guard state.bySession[Self.key(session)] === poll else { return }
            state.bySession[Self.key(session)] = nil
            state.perTenant[session.tenant, default: 1] -= 1
            if state.perTenant[session.tenant] == 0 { state.perTenant[session.tenant] = nil }
        }
    }
}

/// The consumers this replica knows exist.
private final class ConsumerRegistry: Sendable {
    private let names = Mutex<Set<String>>([])

    func contains(_ name: String) -> Bool { self.names.withLock { $0.contains(name) } }
    func insert(_ name: String) { self.names.withLock { _ = $0.insert(name) } }
    func remove(_ name: String) { self.names.withLock { _ = $0.remove(name) } }
}

import Contracts
import Crypto
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Control commands on JetStream: one stream (``Subjects/controlStreamName``) holds every
/// command on `<prefix>.ctl.<tenant>.<swarm>.<agent>`, with the command id as `Nats-Msg-Id`.
/// Each agent with an open session has a queue: a cursor over its subject kept in Postgres
/// (``AgentQueues``), not a consumer on the server, so the stream's consumers do not grow with
/// the agents. A poll reads the agent's commands from the cursor by subject and claims the next
/// one; the agent acknowledges it through control-api with the opaque ``AckHandle`` it got with
/// it, and a command not acknowledged within ``ackWait`` is delivered again. Each session has at
/// most one poll at a time (a new one ends the earlier), and a replica serves at most
/// `maxPollsPerTenant` at once per tenant.
struct CommandBus: Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    let queues: AgentQueues
    let logger: Logger
    let handles: AckHandle
    let maxPollsPerTenant: Int
    /// The stream's bounds: bytes in all, and commands per agent (-1: none).
    let maxBytes: Int
    let maxPerAgent: Int
    private let polls = PollRegistry()
    private let wakes: CommandWakes
    private let streamEpoch = StreamEpoch()

    /// The largest command the stream takes: a worker request's input is at most 16 000
    /// characters (64 000 bytes of UTF-8), the rest of a command a few hundred bytes.
    static let maxCommandBytes: Int64 = 131_072

    /// How long a delivered command may go unacknowledged before it is delivered again.
    static let ackWait = Duration.seconds(30)

    /// Commands an agent may hold delivered and unacknowledged at once.
    static let maxInFlight = 64

    init(
        jetStream: JetStream,
        subjects: Subjects,
        queues: AgentQueues,
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
        self.queues = queues
        self.wakes = CommandWakes(connection: jetStream.connection, subject: subjects.allControlCommands)
        self.handles = handles
        self.maxPollsPerTenant = maxPollsPerTenant
        self.logger = logger
    }

    /// Creates (or updates) the stream; commands are kept a day, within its bounds.
    func prepare() async throws {
        let info = try await self.jetStream.createOrUpdateStream(
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
        self.streamEpoch.set(info.created ?? "")
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

    /// Makes the agent's queue (its cursor over the stream), or keeps the one it has; its
    /// session must be open.
    func openQueue(tenant: String, swarm: String, agent: String) async throws {
        guard try await self.queues.make(tenant: tenant, swarm: swarm, agent: agent, epoch: try await self.epoch(), newSession: true) else {
            throw APIError(.conflict, "the agent session ended while it opened; open a new one")
        }
    }

    /// Releases the agent's queue (its session ended and it has no other; kept a day for its
    /// next), and forgets the tenant's released queues past their day or past
    /// `maxPollsPerTenant` (the tenant's open sessions cap) of them.
    func releaseQueue(tenant: String, swarm: String, agent: String) async {
        do {
            try await self.queues.release(tenant: tenant, swarm: swarm, agent: agent)
        } catch {
            self.logger.warning("agent queue not released", metadata: ["agent": "\(agent)", "error": "\(String(reflecting: error))"])
        }
        await self.queues.forgetReleased(tenant: tenant, maxReleased: self.maxPollsPerTenant)
    }

    /// The next command for a session's agent, waiting up to `wait` for one; an earlier poll of
    /// the same session on this replica ends with none.
    ///
    /// The walk reads the agent's stored commands from its queue's floor (JetStream's message
    /// get by subject, no consumer), skips those done or in flight, and claims the first that is
    /// new or due again. With none, it waits for a command on the agent's subject (registered
    /// before the walk, so one stored meanwhile wakes it: ``CommandWakes``), until the first
    /// command in flight is due again, or to the end.
    ///
    /// A command `accept` refuses (one control-api did not issue), or one not for this agent as
    /// stored, is done at once and never delivered, and the walk goes on within the wait: whoever
    /// can publish on the bus cannot make the agent spend a poll on each command they forge.
    /// - Throws: `RateLimited` when the tenant already has `maxPollsPerTenant` polls waiting here.
    func next(
        _ session: AgentSessionIdentity,
        wait: Duration,
        accept: @escaping @Sendable (BusControlCommand, _ sequence: UInt64) async throws -> Bool
    ) async throws -> [(BusControlCommand, handle: String, sequence: UInt64?)] {
        let poll = Poll()
        try self.polls.begin(poll, session: session, maxPerTenant: self.maxPollsPerTenant)
        defer { self.polls.end(poll, session: session) }
        let deadline = ContinuousClock.now + max(wait, .milliseconds(100))
        let claims: [Claim]
        do {
            claims = try await poll.run {
                while true {
                    var kept: [Claim] = []
                    let walked = try await self.walk(session, until: deadline)
                    for message in walked {
                        do {
                            if let command = Self.command(message, for: session), try await accept(command, message.sequence) {
                                kept.append(Claim(message: message, command: command))
                            } else {
                                try await self.queues.complete(tenant: session.tenant, swarm: session.swarm, agent: session.agent, [message.sequence])
                            }
                        } catch {
                            // Claimed, and neither kept nor done (the check failed, or the poll
                            // was ended meanwhile): handed back at once, not when it falls due.
                            await self.handBack([message], session: session)
                            throw error
                        }
                    }
                    if !kept.isEmpty || walked.isEmpty || ContinuousClock.now >= deadline { return kept }
                }
            } abandon: { claimed in
                await self.handBack(claimed.map { $0.message }, session: session)
            }
        } catch let error as APIError {
            throw error
        } catch {
            self.logger.warning("poll failed", metadata: ["agent": "\(session.agent)", "error": "\(String(reflecting: error))"])
            throw APIError(.serviceUnavailable, "the command queue cannot be read now; poll again", retryAfterSeconds: 1)
        }
        var commands: [(BusControlCommand, String, UInt64?)] = []
        let epoch = claims.isEmpty ? "" : try await self.epoch()
        for claim in claims {
            guard
                let handle = try? self.handles.seal(
                    Self.deliveryToken(claim.message.sequence),
                    tenant: session.tenant,
                    swarm: session.swarm,
                    agent: session.agent,
                    command: Self.handleBinding(claim.command.commandID, epoch: epoch)
                )
            else {
                // Not sealed: never delivered.
                try? await self.queues.complete(tenant: session.tenant, swarm: session.swarm, agent: session.agent, [claim.message.sequence])
                continue
            }
            commands.append((claim.command, handle, claim.message.sequence))
        }
        return commands
    }

    /// Releases commands a poll claimed and will not deliver, and wakes the agent's polls: the
    /// poll that ended this one (or the session's next) takes them at once. The release runs in a
    /// task of its own, because the poll's is cancelled when it is ended, and the pool refuses a
    /// cancelled task a connection.
    private func handBack(_ claimed: [StoredMessage], session: AgentSessionIdentity) async {
        guard !claimed.isEmpty else { return }
        await Task {
            for message in claimed {
                do {
                    try await self.queues.release(tenant: session.tenant, swarm: session.swarm, agent: session.agent, sequence: message.sequence)
                } catch {
                    self.logger.warning(
                        "a claimed command not handed back; it falls due again",
                        metadata: ["agent": "\(session.agent)", "sequence": "\(message.sequence)", "error": "\(String(reflecting: error))"]
                    )
                }
            }
        }.value
        self.wakes.signal(self.subjects.controlCommand(tenant: session.tenant, swarm: session.swarm, agent: session.agent))
    }

    /// A command a poll claimed and will deliver, as stored and as read.
    struct Claim: Sendable {
        var message: StoredMessage
        var command: BusControlCommand
    }

    /// The command `message` stores, if it is one for the session's agent.
    private static func command(_ message: StoredMessage, for session: AgentSessionIdentity) -> BusControlCommand? {
        guard let command = try? BusControlCommand(serializedBytes: message.payload),
            command.tenantID == session.tenant, command.swarmID == session.swarm, command.agentID == session.agent
        else { return nil }
        return command
    }

    /// How long a walk woken by a command waits before it reads the stream again, when the
    /// command was not there yet: the wake comes from the publish itself, which the stream stores
    /// a moment later (later still with replicas, once they agree).
    static let storeBackoff: [Duration] = [.milliseconds(20), .milliseconds(100), .milliseconds(400)]

    /// Claims the agent's next deliverable command, waiting for one until `deadline`.
    private func walk(_ session: AgentSessionIdentity, until deadline: ContinuousClock.Instant) async throws -> [StoredMessage] {
        let (tenant, swarm, agent) = (session.tenant, session.swarm, session.agent)
        let subject = self.subjects.controlCommand(tenant: tenant, swarm: swarm, agent: agent)
        // Registered before the walk, so a command stored meanwhile wakes the wait after it.
        let wake = try await self.wakes.register(subject)
        defer { self.wakes.unregister(wake) }
        // After a wake, the reads left before the walk waits again (see storeBackoff).
        var retries = 0
        var fresh = false
        var attempts = 0
        // Claims lost to other polls in this walk (each read again).
        var claims = 0
        while true {
            let epoch = try await self.epoch(fresh: fresh)
            var queue: AgentQueue
            switch try await self.queues.load(tenant: tenant, swarm: swarm, agent: agent, epoch: epoch) {
            case .queue(let found):
                queue = found
                fresh = false
            case .missing:
                // The session ended under the poll (its next poll is refused), or its queue was
                // released or never made: made (or taken up) now, while the session is open,
                // then read again.
                attempts += 1
                guard attempts <= 3, try await self.queues.make(tenant: tenant, swarm: swarm, agent: agent, epoch: epoch, newSession: false)
                else { return [] }
                continue
            case .otherStream(let walked):
                // Another stream than this replica knows: ask the server which is current, and
                // start the queue again only if its stream is not that one.
                attempts += 1
                guard attempts <= 3 else { throw APIError(.serviceUnavailable, "the command stream is changing; poll again", retryAfterSeconds: 1) }
                if fresh {
                    try await self.queues.reset(tenant: tenant, swarm: swarm, agent: agent, from: walked, to: epoch)
                }
                fresh = true
                continue
            }
            var from = queue.floor + 1
            var gone: [UInt64] = []
            var claimed: StoredMessage?
            var lost = false
            walking: while true {
                let message = try await self.jetStream.nextMessage(stream: self.subjects.controlStreamName, subject: subject, from: from)
                gone += queue.gone(in: from..<(message?.sequence ?? .max))
                guard let message else { break }
                switch queue.step(at: message.sequence, maxInFlight: Self.maxInFlight) {
                case .skip:
                    from = message.sequence + 1
                case .full:
                    break walking
                case .deliver:
                    if try await self.queues.claim(
                        tenant: tenant,
                        swarm: swarm,
                        agent: agent,
                        session: session.session,
                        epoch: epoch,
                        sequence: message.sequence
                    ) {
                        claimed = message
                        break walking
                    }
                    // Taken by another poll, or the queue changed under this walk (its floor
                    // moved, it was released), or the session ended: never skip a command the
                    // queue may not have seen delivered; read the queue again.
                    lost = true
                    break walking
                }
            }
            if !gone.isEmpty {
                try await self.queues.complete(tenant: tenant, swarm: swarm, agent: agent, gone)
                queue.complete(gone)
            }
            if let claimed { return [claimed] }
            if lost {
                // A poll its connector left behind (the session ended) takes nothing more.
                guard try await self.queues.isOpen(tenant: tenant, session: session.session) else { return [] }
                claims += 1
                if claims <= Self.maxInFlight * 2 { continue }
                // Lost too often to other polls: wait for a command or the end, then read again.
                _ = await wake.wait(until: deadline)
                try Task.checkCancellation()
                claims = 0
                continue
            }
            guard ContinuousClock.now < deadline else { return [] }
            if retries > 0 {
                // Woken, and the command not there yet: read again shortly.
                let pause = Self.storeBackoff[Self.storeBackoff.count - retries]
                retries -= 1
                try await Task.sleep(for: min(pause, deadline - .now))
                continue
            }
            let until = queue.nextDue.map { min(deadline, .now + $0) } ?? deadline
            if await wake.wait(until: until) { retries = Self.storeBackoff.count }
            try Task.checkCancellation()
            if ContinuousClock.now >= deadline { return [] }
        }
    }

    /// Marks a delivered command done in the agent's queue, given the handle it was delivered
    /// with (checked first, see ``deliveredSequence(_:session:command:sequence:)``).
    func acknowledge(handle: String, session: AgentSessionIdentity, command: String, sequence: UInt64?) async throws {
        let delivered = try await self.deliveredSequence(handle, session: session, command: command, sequence: sequence)
        try await self.queues.complete(tenant: session.tenant, swarm: session.swarm, agent: session.agent, [delivered])
    }

    /// The stream sequence sealed in `handle`; `InvalidRequest` unless the handle was sealed for
    /// this session's agent and this command, over the stream as it is now (a handle given out
    /// before the stream was made again names a sequence of another stream), and holds a
    /// delivery at `sequence` (any, when nil: commands control-api did not record, such as
    /// approval gate outcomes).
    func deliveredSequence(_ handle: String, session: AgentSessionIdentity, command: String, sequence: UInt64?) async throws -> UInt64 {
        let epoch = try await self.epoch()
        guard
            let token = self.handles.open(
                handle,
                tenant: session.tenant,
                swarm: session.swarm,
                agent: session.agent,
                command: Self.handleBinding(command, epoch: epoch)
            ),
            let delivered = Self.deliveredSequence(token), sequence == nil || delivered == sequence
        else {
            throw APIError(.invalidRequest, "ackToken is not the handle this command was delivered with")
        }
        return delivered
    }

    /// What a handle is bound to besides the tenant, swarm and agent: the command and the stream.
    static func handleBinding(_ command: String, epoch: String) -> String { command + "\u{0}" + epoch }

    /// What a handle seals: the delivered command's stream sequence.
    static func deliveryToken(_ sequence: UInt64) -> String { "q1.\(sequence)" }

    /// The stream sequence in a delivery token: `q1.` and one to twenty digits, nothing else.
    static func deliveredSequence(_ token: String) -> UInt64? {
        guard token.hasPrefix("q1.") else { return nil }
        let digits = token.utf8.dropFirst(3)
        guard !digits.isEmpty, digits.count <= 20, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }

    /// The control stream's creation time (see ``AgentQueues``), read again once a minute (or
    /// now, `fresh`), so a stream made again under running replicas is noticed.
    func epoch(fresh: Bool = false) async throws -> String {
        if !fresh, let known = self.streamEpoch.current(maxAge: .seconds(60)) { return known }
        let info = try await self.jetStream.streamInfo(self.subjects.controlStreamName)
        return self.streamEpoch.set(info.created ?? "")
    }
}

/// One long poll: its walk runs in a task of its own, so that graceful shutdown or a newer poll
/// of the same session ends the wait at once (a command claimed for it afterwards is handed back
/// for delivery at once).
final class Poll: Sendable {
    private let race = FirstAnswer<[CommandBus.Claim]>()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// What `walk` returns, or nothing once ``end()`` is called or graceful shutdown begins;
    /// `abandon` gets what the walk claimed when nobody waits for it any more.
    func run(
        _ walk: @escaping @Sendable () async throws -> [CommandBus.Claim],
        abandon: @escaping @Sendable ([CommandBus.Claim]) async -> Void
    ) async throws -> [CommandBus.Claim] {
        // The request's task carries the server's graceful shutdown (task locals), which comes
        // before the server waits for requests in flight.
        try await withGracefulShutdownHandler {
            try await withCheckedThrowingContinuation { continuation in
                self.race.arm(continuation)
                let race = self.race
                let task = Task {
                    do {
                        let messages = try await walk()
                        if !race.answer(.success(messages)) { await abandon(messages) }
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

/// The control stream's creation time as last read, and when.
final class StreamEpoch: Sendable {
    private let state = Mutex<(value: String, read: ContinuousClock.Instant)?>(nil)

    /// The value, if read within `maxAge`.
    func current(maxAge: Duration) -> String? {
        self.state.withLock { state in
            guard let state, ContinuousClock.now - state.read < maxAge else { return nil }
            return state.value
        }
    }

    @discardableResult
    func set(_ value: String) -> String {
        self.state.withLock { $0 = (value, .now) }
        return value
    }
}

import AgentChannelContract
import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import SwarmdeckTools
import TelemetryRelay

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs one command as a Swarmdeck agent: reports its state (at start, on every change and as
/// a heartbeat) and its output as log events through ingest, and obeys the commands it
/// long-polls from control-api on the real process group: pause → SIGSTOP, resume → SIGCONT,
/// terminate → SIGTERM, then SIGKILL after the grace period. Each command is answered with a
/// state event (msgId `ack-<commandId>`, so the phone sees it on its stream) and an
/// acknowledgement to control-api.
///
/// A line of output `@swarmdeck {json}` is sent as that event (a native event without msgId,
/// swarmId and agentId, which the connector adds): a script can report tool calls and token use,
/// but not its state (a `state` line becomes a warning). The command's environment holds no
/// ingest key.
///
/// Commands come through an agent session the connector opens with the ingest key
/// (`POST /v1/agent/sessions`): its token, bound to this one agent, polls and acknowledges; it
/// is never given to the command. When the command ends the connector ends the session with
/// its exit status, which is what takes the agent out of swarm controls.
actor AgentConnector {
    struct Options: Sendable {
        var ingestURL: String
        var controlURL: String
        var approvalsURL: String
        var key: String
        var swarm: String
        var agent: String
        var heartbeat: Duration
        var grace: Duration
        /// Takes requests on the command's standard input (and says so in its state events).
        var worker = false
        /// Puts the command line in the task summary (it may hold secrets, so off by default).
        var publishCommand = false
        /// The tmux session the connector runs in (`--tmux`), said in its state events with
        /// this host's name, so the agent's detail shows where its terminal is.
        var tmuxSession: String?
        /// Bridges an ACP agent (`--acp`): its stdio is ACP, not lines of output.
        var acp: ACPBridge.Options?
    }

    /// An open agent session: its id and the clients that carry its token.
    private struct Session {
        var id: String
        /// Its bearer token (for approvals: the gates the command asks for).
        var token: String
        /// For polls (a long wait).
        var poll: Client
        /// For acknowledgements and the end (short).
        var brief: Client
    }

    enum State: String {
        case running, paused, terminated
    }

    let options: Options
    let client: HTTPClient
    /// The agents' channel (control-api), with the ingest key: only to open sessions.
    let control: Client
    private var session: Session?
    /// The session being opened, for a caller that needs one meanwhile.
    private var opening: Task<Session, any Error>?
    let child: ChildProcess
    let command: String
    private var state = State.running
    private var taskSummary: String
    private let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    private var counter = 0
    /// Output and structured events waiting for the next post, bounded.
    private var pending: [IngestEvent] = []
    private var droppedLines = 0
    private var flushing = false
    /// The command being handled, in a task of its own: the end of the process (which cancels
    /// the loops) must not cut its acknowledgement short.
    private var inFlight: Task<Void, Never>?
    /// The command's gate requests waiting for their outcome, by gate id.
    private var gateWaiters: [String: [(id: Int, continuation: CheckedContinuation<GateRelayReply, Never>)]] = [:]
    /// Outcomes that came before anyone waited for them (the decision beat the registration).
    private var gateOutcomes: [String: GateRelayReply] = [:]
    private var gateWaiterCount = 0
    /// Commands already handled: a redelivery gets the same answer.
    private var answered: [String: (outcome: Components.Schemas.CommandAck.OutcomePayload, state: String, message: String?)] = [:]

    static let maxPending = 10_000
    /// What a command may report with `@swarmdeck` lines: not `state`, which is the connector's.
    static let commandKinds: Set<String> = ["log", "trace", "metric", "tool_call", "usage"]

    /// The command's OpenTelemetry endpoint, if it has one: its losses are reported as warnings.
    let telemetryRelay: TelemetryRelay?
    /// The relay's losses already reported.
    private var reportedRelayLosses = 0
    /// The ACP bridge, with `--acp`: the agent's standard output is its side of ACP.
    private var acp: ACPBridge?

    init(options: Options, client: HTTPClient, child: ChildProcess, command: String, telemetryRelay: TelemetryRelay? = nil) throws {
        self.options = options
        self.telemetryRelay = telemetryRelay
        self.client = client
        self.control = try Client.agentChannel(url: options.controlURL, credential: options.key, httpClient: client)
        self.child = child
        self.command = command
        self.taskSummary = "pid \(child.pid)" + (options.publishCommand ? ": \(command)" : "")
    }

    /// Runs until the command ends (by itself or terminated); returns its exit status.
    func run() async -> Int32 {
        await self.report(state: .running, msgID: self.nextID())
        if let options = self.options.acp {
            self.acp = ACPBridge(options: options, client: self.client, child: self.child) { [unowned self] in try await self.sessionToken() }
        }
        let exitCode = await withTaskGroup(of: Int32?.self) { group in
            if let acp = self.acp {
                group.addTask {
                    await acp.run()
                    return nil
                }
            }
            group.addTask {
                await self.forwardOutput()
                return nil
            }
            group.addTask {
                await self.flushLoop()
                return nil
            }
            group.addTask {
                await self.heartbeatLoop()
                return nil
            }
            group.addTask {
                await self.commandLoop()
                return nil
            }
            group.addTask {
                let status = await self.child.exit.value
                // Its last lines are often still unread when it exits.
                await self.child.outputEnded(within: .seconds(2))
                return status
            }
            var code: Int32 = 0
            for await result in group {
                if let result {
                    code = result
                    break
                }
            }
            group.cancelAll()
            return code
        }
        await self.inFlight?.value
        // What the command started ends with it.
        _ = await self.child.killEveryProcess(within: .seconds(5))
        // Its last exports (an SDK flushes at exit) go to ingest before the agent is gone.
        if let relay = self.telemetryRelay {
            await relay.close()
            self.reportRelayLosses()
            let statistics = relay.statistics
            Self.say(
                "telemetry relay: \(statistics.acceptedItems) items taken, \(statistics.forwardedItems) forwarded"
                    + (statistics.lossCount > 0 ? ", \(Self.describeLosses(statistics))" : "")
            )
        }
        // Before the last state: once the phone sees it, swarm controls no longer address us.
        await self.endSession(exitStatus: exitCode)
        await self.flush()
        if self.state != .terminated {
            self.state = .terminated
            self.taskSummary = "exited with status \(exitCode)" + (self.options.publishCommand ? ": \(self.command)" : "")
        }
        await self.report(state: .terminated, msgID: "exit-\(self.options.agent)-\(self.run)", attributes: ["exitStatus": .number(Double(exitCode))])
        return exitCode
    }

    // MARK: Output

    private func forwardOutput() async {
        for await (line, isError) in self.child.lines {
            if let acp = self.acp, !isError {
                await acp.fromAgent(line)
                continue
            }
            self.enqueue(line: line, isError: isError)
            if self.pending.count >= 200 { await self.flush() }
        }
        await self.acp?.agentEnded()
    }

    private func enqueue(line: String, isError: Bool) {
        var event: IngestEvent
        if line.hasPrefix("@swarmdeck "), let reported = try? JSONDecoder().decode(IngestEvent.self, from: Data(line.dropFirst(11).utf8)),
            let kind = reported.kind
        {
            if Self.commandKinds.contains(kind) {
                event = reported
            } else {
                // Only the connector reports the agent's state: the command cannot claim to be
                // paused or gone.
                event = IngestEvent(kind: "log")
                event.level = "warn"
                event.message = "refused a \(kind.prefix(32)) event from the command: only the connector reports state"
            }
        } else {
            event = IngestEvent(kind: "log")
            event.level = isError ? "warn" : "info"
            event.message = line
        }
        self.enqueue(event)
    }

    /// Queues `event` as this agent's, for the next post (the oldest dropped past ``maxPending``).
    private func enqueue(_ event: IngestEvent) {
        var event = event
        event.msgId = self.nextID()
        event.swarmId = self.options.swarm
        event.agentId = self.options.agent
        if self.pending.count >= Self.maxPending {
            self.pending.removeFirst()
            self.droppedLines += 1
        }
        self.pending.append(event)
    }

    private func flushLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(250))
            await self.flush()
        }
    }

    /// Posts what is pending, one flush at a time: the batch leaves the queue before the post
    /// and goes back to its front if the post fails (msgIds make the retry safe).
    private func flush() async {
        guard !self.flushing, !self.pending.isEmpty else { return }
        self.flushing = true
        defer { self.flushing = false }
        let batch = Array(self.pending.prefix(500))
        self.pending.removeFirst(batch.count)
        if !(await self.post(batch)) {
            self.pending.insert(contentsOf: batch, at: 0)
            let excess = self.pending.count - Self.maxPending
            if excess > 0 {
                self.pending.removeFirst(excess)
                self.droppedLines += excess
            }
            return
        }
        let dropped = self.droppedLines + self.child.droppedLines()
        if dropped > 0 {
            var notice = IngestEvent(kind: "log", msgId: self.nextID(), swarmId: self.options.swarm, agentId: self.options.agent)
            notice.level = "warn"
            notice.message = "connector dropped \(dropped) lines of output while ingest was unreachable or slow"
            if await self.post([notice]) {
                self.droppedLines -= min(self.droppedLines, dropped)
            } else {
                self.droppedLines = dropped
            }
        }
    }

    // MARK: State

    private func heartbeatLoop() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: self.options.heartbeat)
            self.reportRelayLosses()
            // Orphans the command left that have exited (the connector is their subreaper).
            self.child.reapAdopted()
            guard !Task.isCancelled, self.state != .terminated else { continue }
            // One attempt: a retried heartbeat could land after a newer state change.
            _ = await self.post([self.stateEvent(state: self.state, msgID: self.nextID())])
        }
    }

    /// A warning on the agent's log when the relay has refused or dropped more since the last.
    private func reportRelayLosses() {
        guard let statistics = self.telemetryRelay?.statistics, statistics.lossCount > self.reportedRelayLosses else { return }
        self.reportedRelayLosses = statistics.lossCount
        var event = IngestEvent(kind: "log")
        event.level = "warn"
        event.message = "telemetry relay: " + Self.describeLosses(statistics)
        event.attrs = [
            "relayRateRefusedItems": .number(Double(statistics.rateRefusedItems)),
            "relayFullRefusedExports": .number(Double(statistics.fullRefusedExports)),
            "relayDroppedItems": .number(Double(statistics.droppedItems)),
            "relayBadRequests": .number(Double(statistics.badRequests)),
        ]
        self.enqueue(event)
    }

    /// The relay's losses so far, in words.
    nonisolated static func describeLosses(_ statistics: TelemetryRelay.Statistics) -> String {
        "\(statistics.rateRefusedItems) items refused over the rate, \(statistics.fullRefusedExports) exports refused with the queue full, "
            + "\(statistics.droppedItems) items dropped, \(statistics.badRequests) bad requests"
    }

    private func stateEvent(state: State, msgID: String, attributes: [String: AttributeValue] = [:]) -> IngestEvent {
        var event = IngestEvent(kind: "state", msgId: msgID, swarmId: self.options.swarm, agentId: self.options.agent)
        event.state = state.rawValue
        event.taskSummary = self.taskSummary
        var attributes = attributes
        if self.options.worker { attributes["worker"] = true }
        if let session = self.options.tmuxSession {
            attributes["tmuxSession"] = .string(session)
            attributes["host"] = .string(ProcessInfo.processInfo.hostName)
        }
        if !attributes.isEmpty { event.attrs = attributes }
        return event
    }

    /// Posts a state change now, with retries (a state change must arrive); given up if the
    /// state changes again meanwhile (the newer one is reported by its own change).
    private func report(state: State, msgID: String, attributes: [String: AttributeValue] = [:]) async {
        let event = self.stateEvent(state: state, msgID: msgID, attributes: attributes)
        for attempt in 0..<5 {
            if await self.post([event]) { return }
            try? await Task.sleep(for: .milliseconds(200 << attempt))
            guard self.state == state else { return }
        }
    }

    private func post(_ events: [IngestEvent]) async -> Bool {
        guard let body = try? JSONEncoder().encode(IngestBatch(events: events)) else { return false }
        var request = HTTPClientRequest(url: self.options.ingestURL + "/v1/ingest/events")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(self.options.key)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await self.client.execute(request, timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 4 << 20)
            if response.status != .ok { Self.say("ingest answered \(response.status.code)") }
            return response.status == .ok
        } catch {
            Self.say("ingest unreachable: \(error)")
            return false
        }
    }

    // MARK: Commands

    private typealias Command = Components.Schemas.AgentCommand
    private typealias Answer = (outcome: Components.Schemas.CommandAck.OutcomePayload, state: String, message: String?)

    private func commandLoop() async {
        var failures = 0
        while !Task.isCancelled && self.state != .terminated {
            do {
                let session = try await self.openSessionIfNeeded()
                let commands: [Command]
                switch try await session.poll.pollCommands(query: .init(waitSeconds: 25)) {
                case .ok(let answer): commands = try answer.body.json.commands
                case .default(let status, let error):
                    if status == 401 {
                        // Expired or ended: the next turn opens a new one.
                        self.session = nil
                    }
                    throw ControlAPIClientError(status: status, error)
                }
                failures = 0
                for command in commands {
                    let handling = Task { await self.handle(command) }
                    self.inFlight = handling
                    await handling.value
                }
            } catch {
                if Task.isCancelled { return }
                failures += 1
                Self.say("command channel: \(error)")
                try? await Task.sleep(for: .seconds(min(failures, 5)))
            }
        }
    }

    /// The open session, or a new one opened with the ingest key (one opening at a time: the
    /// command loop and a gate request may both need it).
    private func openSessionIfNeeded() async throws -> Session {
        if let session = self.session { return session }
        if let opening = self.opening { return try await opening.value }
        let opening = Task { try await self.openSession() }
        self.opening = opening
        defer { self.opening = nil }
        let session = try await opening.value
        self.session = session
        return session
    }

    private func openSession() async throws -> Session {
        let opened: Components.Schemas.AgentSession
        switch try await self.control.openAgentSession(body: .json(.init(swarmId: self.options.swarm, agentId: self.options.agent))) {
        case .created(let answer): opened = try answer.body.json
        case .default(let status, let error): throw ControlAPIClientError(status: status, error)
        }
        Self.say("command channel open (session \(opened.sessionId))")
        return Session(
            id: opened.sessionId,
            token: opened.token,
            poll: try Client.agentChannel(url: self.options.controlURL, credential: opened.token, httpClient: self.client),
            brief: try Client.agentChannel(url: self.options.controlURL, credential: opened.token, httpClient: self.client, timeout: .seconds(10))
        )
    }

    /// Tells control-api the command has ended (a few tries; a session nobody ends ends after
    /// it idles).
    private func endSession(exitStatus: Int32) async {
        guard self.session != nil else { return }
        for attempt in 0..<3 {
            do {
                // A session whose token expired meanwhile is replaced, then ended.
                let session = try await self.openSessionIfNeeded()
                switch try await session.brief.endAgentSession(query: .init(exitStatus: Int(min(max(exitStatus, 0), 255)))) {
                case .noContent:
                    self.session = nil
                    return
                case .default(401, let error):
                    self.session = nil
                    throw ControlAPIClientError(status: 401, error)
                case .default(let status, let error): throw ControlAPIClientError(status: status, error)
                }
            } catch  where ControlAPIClientError.isRefusal(error) {
                Self.say("session end refused: \(error)")
                return
            } catch {
                try? await Task.sleep(for: .milliseconds(200 << attempt))
            }
        }
    }

    private func handle(_ command: Command) async {
        if let answer = self.answered[command.commandId] {
            await self.acknowledge(command, answer)
            return
        }
        if command.action == "gate", let gate = command.gate, command.swarmId == self.options.swarm, command.agentId == self.options.agent {
            // A gate the command asked for was settled: its answer, not a state change.
            self.settleGate(
                GateRelayReply(
                    gateId: gate.gateId,
                    status: gate.status.rawValue,
                    allow: gate.allow,
                    reason: gate.reason,
                    optionId: gate.optionId,
                    decidedBy: gate.decidedBy
                )
            )
            let answer: Answer = (.applied, self.state.rawValue, nil)
            self.answered[command.commandId] = answer
            await self.acknowledge(command, answer)
            return
        }
        let answer: Answer
        if command.swarmId != self.options.swarm || command.agentId != self.options.agent {
            answer = (.rejected, self.state.rawValue, "this connector runs \(self.options.agent) of swarm \(self.options.swarm)")
        } else if let expiresAt = command.expiresAt, expiresAt < Date() {
            answer = (.expired, self.state.rawValue, "arrived after \(expiresAt)")
        } else {
            answer = await self.apply(command.action, input: command.input)
        }
        self.answered[command.commandId] = answer
        Self.say("\(command.action.prefix(32)) from \(command.actor) (\(command.reason)): \(answer.outcome.rawValue), now \(answer.state)")
        await self.report(
            state: self.state,
            msgID: "ack-\(command.commandId)",
            attributes: [
                "commandId": .string(command.commandId), "requestId": .string(command.requestId),
                "action": .string(String(command.action.prefix(32))),
                "outcome": .string(answer.outcome.rawValue), "actor": .string(command.actor), "reason": .string(command.reason),
            ]
        )
        await self.acknowledge(command, answer)
    }

    private func apply(_ action: String, input: String?) async -> Answer {
        switch (action, self.state) {
        case (_, .terminated):
            return (action == "terminate" ? .noop : .rejected, State.terminated.rawValue, "the process has ended")
        case ("request", _):
            // Queued: a paused worker reads it once resumed; a full queue refuses it.
            do {
                try self.child.send(line: input ?? "")
                return (.applied, self.state.rawValue, nil)
            } catch {
                return (.rejected, self.state.rawValue, "\(error)")
            }
        case ("pause", .paused), ("resume", .running):
            return (.noop, self.state.rawValue, nil)
        case ("pause", .running):
            guard self.child.signal(SIGSTOP) else { return (.failed, self.state.rawValue, "SIGSTOP: \(String(cString: strerror(errno)))") }
            // Paused means every process stopped, what forks ahead of a pass included; one the
            // connector may not signal is said, not waited for.
            let (running, unsignallable) = await self.child.stopEveryProcess()
            // Its cgroup frozen too: what a signal did not reach is held all the same.
            let frozen = await self.child.cgroup?.freeze() ?? false
            self.state = .paused
            if self.child.cgroup != nil && !frozen {
                return (.failed, self.state.rawValue, "the command's cgroup did not freeze within 2 s")
            }
            let missed = (running + unsignallable).sorted().map(String.init).joined(separator: " ")
            if frozen {
                return (.applied, self.state.rawValue, missed.isEmpty ? nil : "processes \(missed) did not stop by signal; they are frozen")
            }
            guard running.isEmpty else {
                return (.failed, self.state.rawValue, "processes \(running.map(String.init).joined(separator: " ")) did not stop")
            }
            let note =
                unsignallable.isEmpty
                ? nil : "processes \(unsignallable.map(String.init).joined(separator: " ")) may not be signalled by the connector"
            return (.applied, self.state.rawValue, note)
        case ("resume", .paused):
            self.child.cgroup?.thaw()
            guard self.child.signal(SIGCONT) else { return (.failed, self.state.rawValue, "SIGCONT: \(String(cString: strerror(errno)))") }
            self.state = .running
            return (.applied, self.state.rawValue, nil)
        case ("terminate", _):
            self.child.cgroup?.thaw()  // a frozen process handles no signal
            self.child.signal(SIGTERM)
            self.child.signal(SIGCONT)  // a stopped process handles SIGTERM once continued
            let exit = self.child.exit
            let ended = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    _ = await exit.value
                    return true
                }
                group.addTask { [grace = self.options.grace] in
                    try? await Task.sleep(for: grace)
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            var message = "SIGTERM"
            if !ended {
                message = "SIGTERM, then SIGKILL after \(self.options.grace)"
            }
            // The rest (a script's children, what left its group) ends with its leader; the
            // command is terminated only once none of its processes is left.
            self.child.signal(SIGKILL)
            _ = await exit.value
            let left = await self.child.killEveryProcess()
            guard left.isEmpty else {
                return (.failed, self.state.rawValue, "\(message); processes \(left.map(String.init).joined(separator: " ")) outlived SIGKILL")
            }
            self.state = .terminated
            self.taskSummary = "terminated" + (self.options.publishCommand ? ": \(self.command)" : "")
            return (.applied, self.state.rawValue, message)
        default:
            return (.rejected, self.state.rawValue, "unknown action \(action)")
        }
    }

    private func acknowledge(_ command: Command, _ answer: Answer) async {
        let ack = Components.Schemas.CommandAck(
            commandId: command.commandId,
            ackToken: command.ackToken,
            outcome: answer.outcome,
            state: answer.state,
            message: answer.message
        )
        for attempt in 0..<5 {
            do {
                guard let session = self.session else { return }
                switch try await session.brief.ackCommand(body: .json(ack)) {
                case .noContent: return
                case .default(let status, let error): throw ControlAPIClientError(status: status, error)
                }
            } catch  where ControlAPIClientError.isRefusal(error) {
                // A 4xx will not get better.
                Self.say("acknowledgement refused: \(error)")
                return
            } catch {
                try? await Task.sleep(for: .milliseconds(200 << attempt))
            }
        }
    }

    // MARK: Gates

    /// The open session's token, opening one if needed.
    func sessionToken() async throws -> String {
        try await self.openSessionIfNeeded().token
    }

    /// The session's token was refused: the next use opens a new session.
    func sessionRefused() {
        self.session = nil
    }

    /// Waits for the outcome of gate `id` (delivered on the command channel), or answers an
    /// error at `deadline`.
    func waitForGate(_ id: String, until deadline: Date) async -> GateRelayReply {
        if let outcome = self.gateOutcomes[id] { return outcome }
        self.gateWaiterCount += 1
        let waiter = self.gateWaiterCount
        let timeout = Task {
            try await Task.sleep(for: .seconds(max(0, deadline.timeIntervalSinceNow)))
            self.gateWaitEnded(id, waiter: waiter, .failure("no outcome for gate \(id) by \(deadline)"))
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            self.gateWaiters[id, default: []].append((waiter, continuation))
        }
    }

    private func gateWaitEnded(_ id: String, waiter: Int, _ reply: GateRelayReply) {
        guard let index = self.gateWaiters[id]?.firstIndex(where: { $0.id == waiter }) else { return }
        let continuation = self.gateWaiters[id]!.remove(at: index).continuation
        if self.gateWaiters[id]!.isEmpty { self.gateWaiters[id] = nil }
        continuation.resume(returning: reply)
    }

    /// Forgets an outcome of gate `id` that approvals did not confirm.
    func forgetGateOutcome(_ id: String) {
        self.gateOutcomes[id] = nil
    }

    private func settleGate(_ reply: GateRelayReply) {
        guard let id = reply.gateId else { return }
        if self.gateOutcomes.count >= 1000 { self.gateOutcomes.removeAll() }
        self.gateOutcomes[id] = reply
        for waiter in self.gateWaiters.removeValue(forKey: id) ?? [] { waiter.continuation.resume(returning: reply) }
    }

    private func nextID() -> String {
        self.counter += 1
        return "\(self.options.agent)-\(self.run)-\(self.counter)"
    }

    /// A line on stderr (stdout may be the child's log in a pipeline).
    nonisolated static func say(_ line: String) {
        // A terminal in raw mode (the command's, under --terminal) returns no carriage itself.
        let text = "agent: " + line + "\n"
        let raw = ChildTerminal.isRaw.load(ordering: .relaxed)
        FileHandle.standardError.write(Data((raw ? text.replacingOccurrences(of: "\n", with: "\r\n") : text).utf8))
    }
}

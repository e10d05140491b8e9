import Contracts
import ControlAPIContract
import Crypto
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Control commands on JetStream: one stream (``Subjects/controlStreamName``) holds every
/// command on `<prefix>.ctl.<tenant>.<agent>`, with the command id as `Nats-Msg-Id`; each
/// agent pulls from its own durable consumer, created the first time it polls, and
/// acknowledges through control-api with the token it got with the command.
struct CommandBus: Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    let logger: Logger
    private let consumers = ConsumerRegistry()

    /// How long a delivered command may go unacknowledged before it is delivered again.
    static let ackWait = Duration.seconds(30)

    init(jetStream: JetStream, subjects: Subjects, logger: Logger) {
        self.jetStream = jetStream
        self.subjects = subjects
        self.logger = logger
    }

    /// Creates (or updates) the stream; commands are kept a day.
    func prepare() async throws {
        _ = try await self.jetStream.createOrUpdateStream(
            StreamConfiguration(
                name: self.subjects.controlStreamName,
                subjects: [self.subjects.allControlCommands],
                maxAge: .seconds(86_400),
                duplicateWindow: .seconds(600)
            )
        )
    }

    /// Publishes commands and waits until JetStream stored each (a repeat of a stored one is
    /// stored once, and answered with its first sequence). Returns the ids stored and their
    /// stream sequences.
    func publish(_ commands: [ControlStore.IssuedCommand], requestID: String?) async -> [(commandID: String, sequence: UInt64)] {
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
            var headers: NATSHeaders = [:]
            if let requestID { headers[HeaderName.requestID] = requestID }
            do {
                let payload: [UInt8] = try message.serializedBytes()
                let ack = try await self.jetStream.publish(
                    payload,
                    to: self.subjects.controlCommand(tenant: command.tenant, agent: command.agentID),
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
    func consumerName(tenant: String, agent: String) -> String {
        let digest = SHA256.hash(data: Array((tenant + "\u{0}" + agent).utf8))
        return "agent_" + digest.prefix(16).map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined()
    }

    /// The next command for an agent, waiting up to `wait` for one.
    func next(tenant: String, agent: String, wait: Duration) async throws -> [(BusControlCommand, ackToken: String)] {
        let name = self.consumerName(tenant: tenant, agent: agent)
        if !self.consumers.contains(name) {
            try await self.jetStream.createOrUpdateConsumer(
                stream: self.subjects.controlStreamName,
                ConsumerConfiguration(
                    durableName: name,
                    filterSubject: self.subjects.controlCommand(tenant: tenant, agent: agent),
                    ackWait: Self.ackWait,
                    maxAckPending: 64,
                    // An agent gone for a day loses its consumer; a new one starts from what the
                    // stream still holds (a day of commands, by then expired).
                    inactiveThreshold: .seconds(86_400)
                )
            )
            self.consumers.insert(name)
        }
        let consumer = try self.jetStream.consumer(stream: self.subjects.controlStreamName, name: name)
        let messages: [JetStreamMessage]
        do {
            messages = try await self.untilShutdown {
                try await consumer.fetch(batch: 1, expires: max(wait, .milliseconds(100)))
            }
        } catch {
            // The consumer may be gone (the stream was recreated): create it again next time.
            self.consumers.remove(name)
            throw error
        }
        var commands: [(BusControlCommand, String)] = []
        for message in messages {
            guard let token = message.replySubject, let command = try? BusControlCommand(serializedBytes: message.payload),
                command.tenantID == tenant, command.agentID == agent
            else {
                try? message.term()
                continue
            }
            commands.append((command, token))
        }
        return commands
    }

    /// What `fetch` returns, or nothing as soon as graceful shutdown begins: the fetch then ends
    /// on its own, and a command it gets is not acknowledged, so JetStream delivers it again.
    private func untilShutdown(_ fetch: @escaping @Sendable () async throws -> [JetStreamMessage]) async throws -> [JetStreamMessage] {
        let race = FirstAnswer<[JetStreamMessage]>()
        // The request's task carries the server's graceful shutdown (task locals), which comes
        // before the server waits for requests in flight.
        return try await withGracefulShutdownHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.arm(continuation)
                Task {
                    do { race.answer(.success(try await fetch())) } catch { race.answer(.failure(error)) }
                }
            }
        } onGracefulShutdown: {
            race.answer(.success([]))
        }
    }

    /// Acknowledges a delivered command on JetStream, given the token it was delivered with
    /// (checked first, see ``checkAckToken(_:tenant:agent:sequence:)``).
    func acknowledge(ackToken: String, tenant: String, agent: String, sequence: UInt64) throws {
        try self.checkAckToken(ackToken, tenant: tenant, agent: agent, sequence: sequence)
        try self.jetStream.connection.publish(Array("+ACK".utf8), to: ackToken)
    }

    /// Throws `InvalidRequest` unless `ackToken` is exactly an acknowledgement subject of that
    /// agent's consumer for the message at `sequence` (the command's own delivery): nothing
    /// else may reach the NATS connection as a subject.
    func checkAckToken(_ ackToken: String, tenant: String, agent: String, sequence: UInt64) throws(APIError) {
        let consumer = self.consumerName(tenant: tenant, agent: agent)
        guard Self.isDelivery(ackToken, stream: self.subjects.controlStreamName, consumer: consumer, sequence: sequence) else {
            throw APIError(.invalidRequest, "ackToken is not the token this command was delivered with")
        }
    }

    /// Whether `ackToken` is exactly an acknowledgement subject of `consumer` on `stream` for
    /// the message at stream sequence `sequence`:
    /// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`,
    /// five decimal numbers and nothing else (no token, wildcard, space or second line).
    static func isDelivery(_ ackToken: String, stream: String, consumer: String, sequence: UInt64) -> Bool {
        let prefix = "$JS.ACK.\(stream).\(consumer)."
        guard ackToken.hasPrefix(prefix) else { return false }
        let numbers = ackToken.dropFirst(prefix.utf8.count).split(separator: ".", omittingEmptySubsequences: false)
        return numbers.count == 5
            && numbers.allSatisfy { !$0.isEmpty && $0.utf8.count <= 20 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
            && JetStreamMessage.parse(ackToken)?.streamSequence == sequence
    }
}

/// The first of several answers, for one waiter that may arrive before or after it.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private enum State {
        case waiting
        case armed(CheckedContinuation<Value, any Error>)
        case answered(Result<Value, any Error>)
        case done
    }

    private let state = Mutex(State.waiting)

    func arm(_ continuation: CheckedContinuation<Value, any Error>) {
        let ready: Result<Value, any Error>? = self.state.withLock { state in
            guard case .answered(let result) = state else {
                state = .armed(continuation)
                return nil
            }
            state = .done
            return result
        }
        if let ready { continuation.resume(with: ready) }
    }

    func answer(_ result: Result<Value, any Error>) {
        let waiter: CheckedContinuation<Value, any Error>? = self.state.withLock { state in
            switch state {
            case .waiting:
                state = .answered(result)
                return nil
            case .armed(let continuation):
                state = .done
                return continuation
            case .answered, .done:
                return nil
            }
        }
        waiter?.resume(with: result)
    }
}

/// The consumers this replica knows exist.
private final class ConsumerRegistry: Sendable {
    private let names = Mutex<Set<String>>([])

    func contains(_ name: String) -> Bool { self.names.withLock { $0.contains(name) } }
    func insert(_ name: String) { self.names.withLock { _ = $0.insert(name) } }
    func remove(_ name: String) { self.names.withLock { _ = $0.remove(name) } }
}

extension Components.Schemas.CommandAction {
    /// The bus contract's action.
    var bus: BusControlAction {
        switch self {
        case .pause: .pause
        case .resume: .resume
        case .terminate: .terminate
        case .request: .request
        }
    }

    init?(_ bus: BusControlAction) {
        switch bus {
        case .pause: self = .pause
        case .resume: self = .resume
        case .terminate: self = .terminate
        case .request: self = .request
        default: return nil
        }
    }
}

extension Components.Schemas.ControlAction {
    /// The command an operator's control action becomes.
    var command: Components.Schemas.CommandAction {
        switch self {
        case .pause: .pause
        case .resume: .resume
        case .terminate: .terminate
        }
    }
}

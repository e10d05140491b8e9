import ArgumentParser
import AsyncHTTPClient
import CProcessControl
import Contracts
import Foundation
import SwarmdeckTools
import Synchronization
import TelemetryRelay

/// `swarmdeck agent run`: runs a command as a Swarmdeck agent (see ``AgentConnector``).
struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Run a command as a Swarmdeck agent that reports to ingest and obeys controls.",
        subcommands: [Run.self]
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start COMMAND; report its state and output; pause, resume or terminate it when told.",
            discussion: """
                Output lines become log events (stderr as warnings); a line `@swarmdeck {json}` is sent as that \
                native event (e.g. {"kind":"tool_call","tool":"bash","ok":true}). Exits with the command's status.
                """
        )

        @Option(help: "Base URL of the edge (ingest and control-api); default $SWARMDECK_URL or http://127.0.0.1:8080.")
        var url: String?

        @Option(help: "Base URL of ingest, if not the edge.")
        var ingestURL: String?

        @Option(help: "Base URL of control-api, if not the edge.")
        var controlURL: String?

        @Option(help: "Base URL of approvals, if not the edge.")
        var approvalsURL: String?

        @Option(help: "Base URL of stream-fanout (the ACP cache, with --acp), if not the edge.")
        var streamURL: String?

        @Flag(
            help: """
                The command is an ACP agent (Agent Client Protocol on its stdio): the connector is its client, opens its \
                session, mirrors every frame into the session's thread and delivers what people send to the thread.
                """
        )
        var acp = false

        @Option(
            help: """
                With --acp: the file that keeps the agent's session and the thread's cursor, so a restart goes on with the \
                same session (default: $XDG_STATE_HOME or ~/.local/state, swarmdeck/acp/<swarm>/<name>.json).
                """
        )
        var acpState: String?

        @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY; prefer it: a command line is visible to every process on the host).")
        var key: String?

        @Option(help: "The swarm the agent belongs to.")
        var swarm = "default"

        @Option(help: "The agent id (unique in the tenant).")
        var name: String

        @Option(help: "Seconds between heartbeats.")
        var heartbeatSeconds = 5.0

        @Option(help: "Seconds a terminated command has to exit after SIGTERM before SIGKILL.")
        var graceSeconds = 5.0

        @Flag(help: "Run as a worker: requests (POST /v1/workers/{id}/requests) reach the command as lines on its standard input.")
        var worker = false

        @Flag(help: "Publish the command line as the agent's task summary (off: it may hold secrets; the summary is then the pid).")
        var publishCommand = false

        @Option(
            help: """
                Run the command as this user (name or uid; the connector must run as root). Then the command cannot \
                signal the connector or read its memory at all.
                """
        )
        var user: String?

        @Flag(
            help: """
                Give the command this terminal, as script(1) does: it runs on a pseudo-terminal whose output is copied \
                here unchanged (and read as plain lines), and what is typed here reaches it.
                """
        )
        var terminal = false

        @Option(
            help: """
                Run the connector, with --terminal, in a new detached tmux session of this name, marked with the agent and \
                swarm, so terminal-broker shows it; this process waits until the session ends.
                """
        )
        var tmux: String?

        @Option(help: "With --tmux: the tmux server's socket name (tmux -L); default: the user's default server.")
        var tmuxSocket: String?

        @Flag(
            help: """
                Serve the command no telemetry relay: its OTEL_* variables stay as they are (less any holding the key), \
                so its OpenTelemetry export goes wherever they say, or nowhere.
                """
        )
        var noTelemetryRelay = false

        /// Given by ``TmuxLauncher`` to the connector it starts in the session: where it takes
        /// its key and its command's environment.
        @Option(help: .hidden)
        var keySocket: String?

        /// Given by ``TmuxLauncher`` to the connector it starts in the session.
        @Option(help: .hidden)
        var inTmux: String?

        @Argument(parsing: .postTerminator, help: "The command, after --.")
        var command: [String] = []

        func validate() throws {
            guard !self.command.isEmpty else { throw ValidationError("give the command after --, e.g. swarmdeck agent run --name a1 -- sleep 1000") }
            for (value, field) in [(self.name, "--name"), (self.swarm, "--swarm")] {
                if let problem = EntityID.problem(value, field: field) { throw ValidationError(problem) }
            }
            guard (0.1...3600).contains(self.heartbeatSeconds), (0...600).contains(self.graceSeconds) else {
                throw ValidationError("--heartbeat-seconds 0.1…3600, --grace-seconds 0…600")
            }
            if let session = self.tmux, let problem = TmuxNames.problem(session: session) { throw ValidationError("--tmux: \(problem)") }
            if let socket = self.tmuxSocket, let problem = TmuxNames.problem(socket: socket) {
                throw ValidationError("--tmux-socket: \(problem)")
            }
            if self.tmuxSocket != nil && self.tmux == nil { throw ValidationError("--tmux-socket goes with --tmux") }
            if self.tmux != nil && self.user != nil {
                throw ValidationError("--tmux runs the command as this user, in this user's tmux server: leave out --user")
            }
            if self.acp && (self.worker || self.terminal || self.tmux != nil) {
                throw ValidationError("--acp speaks ACP on the command's standard input and output: leave out --worker, --terminal and --tmux")
            }
            if self.acpState != nil && !self.acp { throw ValidationError("--acp-state goes with --acp") }
            if self.worker && (self.terminal || self.tmux != nil) {
                throw ValidationError(
                    "--worker takes requests on the command's standard input, which --terminal and --tmux give to the terminal: use one or the other"
                )
            }
        }

        /// The options of the connector ``TmuxLauncher`` starts in the session: these, less
        /// the tmux options and the key, plus `--terminal`.
        var connectorOptions: [String] {
            var arguments = ["agent", "run", "--url", self.baseURL]
            for (option, value) in [("--ingest-url", self.ingestURL), ("--control-url", self.controlURL), ("--approvals-url", self.approvalsURL)] {
                if let value { arguments += [option, value] }
            }
            arguments += [
                "--swarm", self.swarm, "--name", self.name, "--heartbeat-seconds", String(self.heartbeatSeconds), "--grace-seconds",
                String(self.graceSeconds), "--terminal", "--in-tmux", self.tmux ?? "",
            ]
            if self.publishCommand { arguments.append("--publish-command") }
            if self.noTelemetryRelay { arguments.append("--no-telemetry-relay") }
            return arguments
        }

        /// The ACP bridge's options: the key comes from the connector's.
        func acpOptions(base: String) throws -> ACPBridge.Options {
            let environment = ProcessInfo.processInfo.environment
            let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.local/state")
            return ACPBridge.Options(
                ingestURL: self.ingestURL ?? base,
                streamURL: self.streamURL ?? base,
                key: try IngestTargetOptions.ingestKey(self.key),
                swarm: self.swarm,
                agent: self.name,
                workingDirectory: FileManager.default.currentDirectoryPath,
                stateFile: self.acpState ?? "\(stateHome)/swarmdeck/acp/\(self.swarm)/\(self.name).json"
            )
        }

        /// `--url`, else `$SWARMDECK_URL`, else the local stack's edge.
        var baseURL: String {
            self.url ?? ProcessInfo.processInfo.environment["SWARMDECK_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8080"
        }

        func run() async throws {
            // Writing to a worker that has closed its input, or to a socket whose reader went,
            // must fail, not kill the connector.
            signal(SIGPIPE, SIG_IGN)
            // Neither the command nor anything else running as this user may read the
            // connector's (or the tmux launcher's) memory or environment (/proc/<pid>/environ,
            // ptrace): the key is there. First, before the key is read from anywhere.
            if swarmdeck_forbid_inspection() != 0 {
                AgentConnector.say("warning: cannot forbid inspection of the connector (prctl): \(String(cString: strerror(errno)))")
            }
            if let session = self.tmux {
                let launcher = TmuxLauncher(
                    session: session,
                    socket: self.tmuxSocket,
                    agent: self.name,
                    swarm: self.swarm,
                    key: try IngestTargetOptions.ingestKey(self.key),
                    connectorOptions: self.connectorOptions,
                    command: self.command,
                    grace: .milliseconds(Int(self.graceSeconds * 1000))
                )
                throw ExitCode(try launcher.run())
            }
            let received = try self.keySocket.map(HandoverSocket.receive(from:))
            let handover = received?.handover
            let base = self.baseURL
            let options = AgentConnector.Options(
                ingestURL: self.ingestURL ?? base,
                controlURL: self.controlURL ?? base,
                approvalsURL: self.approvalsURL ?? base,
                key: try handover?.key ?? IngestTargetOptions.ingestKey(self.key),
                swarm: self.swarm,
                agent: self.name,
                heartbeat: .milliseconds(Int(self.heartbeatSeconds * 1000)),
                grace: .milliseconds(Int(self.graceSeconds * 1000)),
                worker: self.worker,
                publishCommand: self.publishCommand,
                tmuxSession: self.inTmux,
                acp: self.acp ? try self.acpOptions(base: base) : nil
            )
            for url in [options.ingestURL, options.controlURL, options.approvalsURL, options.acp?.streamURL ?? base]
            where URL(string: url)?.host == nil {
                throw ValidationError("\(url) is not a base URL such as http://127.0.0.1:8080")
            }
            let user = try self.user.map(ChildProcess.User.init)
            if user != nil && geteuid() != 0 {
                throw ValidationError("--user needs the connector to run as root (it switches to that user for the command)")
            }
            // The command asks for approval through the connector (`swarmdeck approve hook`), on a
            // socket only it and the connector can open.
            let connectorRef = ConnectorReference()
            let relay = try await GateRelay.start(owner: user.map { ($0.uid, $0.gid) }) { request in
                await connectorRef.connector().requestGate(request)
            }
            let client = ClientTrust.httpClient()
            // The command's OpenTelemetry export goes to a relay of ours on loopback, which
            // forwards it to ingest with the key, stamped with this agent.
            var telemetry: (relay: TelemetryRelay, environment: RelayEnvironment)?
            let child: ChildProcess
            do {
                if !self.noTelemetryRelay {
                    let stamp = RelayStamp(swarm: self.swarm, agent: self.name)
                    let relay = try await TelemetryRelay.start(ingestURL: options.ingestURL, key: options.key, stamp: stamp, client: client)
                    telemetry = (relay, RelayEnvironment(endpoint: relay.endpoint, secret: relay.secret, stamp: stamp))
                }
                // The command never sees the key: it could otherwise post, poll or acknowledge as
                // the connector does.
                child = try ChildProcess(
                    telemetry?.environment.command(self.command) ?? self.command,
                    acceptsInput: self.worker || self.acp,
                    inputLimit: self.acp ? ACPBridge.maxInputBytes : 1 << 20,
                    environment: handover?.environment,
                    hiding: Set(["SWARMDECK_INGEST_KEY"]).union(telemetry?.environment.hiding ?? []),
                    secrets: [options.key],
                    adding: ["SWARMDECK_GATE_SOCKET=\(relay.path)", "SWARMDECK_SWARM=\(self.swarm)", "SWARMDECK_AGENT=\(self.name)"]
                        + (telemetry?.environment.adding ?? []),
                    user: user,
                    terminal: self.terminal,
                    // An ACP frame is a line: as long as ingest takes one (a tool call with its diff).
                    maxLineBytes: self.acp ? 1 << 20 : 64 << 10
                )
            } catch {
                // Nothing started: what was opened is closed before the error is said.
                await telemetry?.relay.close()
                await relay.close()
                try? await client.shutdown()
                throw error
            }
            // Stopping the connector ends the command too.
            let signals = ChildSignalForwarder(child: child, grace: self.graceSeconds)
            // The command line only when it may be published (in --tmux it shows in the pane).
            AgentConnector.say(
                "\(self.name) in swarm \(self.swarm): started pid \(child.pid)"
                    + (self.publishCommand ? ": \(self.command.joined(separator: " "))" : "")
            )
            // Which kill switch this host gives it (docs/control-api.md).
            AgentConnector.say(
                child.cgroup.map { "kill switch: the cgroup \($0.path) and the subreaper" }
                    ?? "kill switch: the subreaper (no cgroup2 here that the connector may write)"
            )
            let connector = try AgentConnector(
                options: options,
                client: client,
                child: child,
                command: self.command.joined(separator: " "),
                telemetryRelay: telemetry?.relay
            )
            connectorRef.set(connector)
            let status = await connector.run()
            signals.cancel()
            child.cgroup?.remove()
            await relay.close()
            try await client.shutdown()
            AgentConnector.say("\(self.name): command exited with status \(status)")
            if let connection = received?.connection { HandoverSocket.report(status: status, on: connection) }
            throw ExitCode(status)
        }
    }
}

/// The connector, for the gate relay that starts before it (the command may ask at once).
final class ConnectorReference: Sendable {
    private enum State {
        case waiting([CheckedContinuation<AgentConnector, Never>])
        case set(AgentConnector)
    }

    private let state = Mutex(State.waiting([]))

    /// The connector, once ``set(_:)``.
    func connector() async -> AgentConnector {
        await withCheckedContinuation { continuation in
            let ready: AgentConnector? = self.state.withLock { state in
                switch state {
                case .set(let connector): return connector
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func set(_ connector: AgentConnector) {
        let waiters: [CheckedContinuation<AgentConnector, Never>] = self.state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .set(connector)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: connector) }
    }
}

/// Ends the command when the connector is told to stop (SIGINT, SIGTERM, SIGHUP): SIGTERM to
/// its process group (and SIGCONT, in case it is paused), SIGKILL after the grace period or at a
/// second signal.
final class ChildSignalForwarder {
    private let sources: [any DispatchSourceSignal]

    init(child: ChildProcess, grace: Double) {
        let received = DispatchQueue(label: "swarmdeck.agent.signals")
        var count = 0
        self.sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: received)
            source.setEventHandler {
                count += 1
                guard count == 1 else {
                    child.signal(SIGKILL)
                    return
                }
                child.cgroup?.thaw()  // a frozen process handles no signal
                child.signal(SIGTERM)
                child.signal(SIGCONT)
                received.asyncAfter(deadline: .now() + grace) { child.signal(SIGKILL) }
            }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in self.sources { source.cancel() }
    }
}

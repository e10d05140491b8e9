import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import SwarmdeckTools
import Synchronization
import TestSupport
import Testing

@Suite("Control end to end: a real process under the connector, steered through control-api, seen on /v1/stream")
struct ControlEndToEndTests {
    typealias H = ControlHarness

    /// The `swarmdeck` executable built beside the test bundle.
    static var swarmdeck: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("swarmdeck")
    }

    /// The scheduler state of a process (`R`, `S`, `T`, `Z`…) from /proc, or nil once it is gone.
    static func processState(_ pid: Int32) -> Character? {
        ProcessTree.state(of: pid)
    }

    /// Waits until control-api lists `agent` running; answers the record and the process id
    /// its task summary names (`pid N`).
    static func runningAgent(_ control: any TestClientProtocol, _ agent: String, token: String) async throws -> (record: [String: Any], pid: Int32) {
        var record: [String: Any] = [:]
        let running = try await eventually(timeout: .seconds(20)) {
            record = try await H.call(control, .get, "/v1/agents/\(agent)", token: token).1
            return record["status"] as? String == "running"
        }
        try #require(running, "\(agent) never ran: \(record)")
        let summary = record["taskSummary"] as? String ?? ""
        return (record, try #require(Int32(summary.dropFirst(4).prefix { $0.isNumber }), "no pid in \(summary)"))
    }

    /// Waits for the connector to exit; a connector still running after 60 s fails the test
    /// (and is killed by ``stop(_:)``) instead of hanging the run, with what the connector
    /// said. Its way out retries ingest and control-api (up to five 10-s attempts for a state
    /// change or an acknowledgement, three for the session's end), so on a loaded host a few of
    /// those add up.
    static func waitForExit(_ connector: Process) async throws {
        let log = Self.connectorLog(connector.processIdentifier)
        defer { try? FileManager.default.removeItem(at: log) }
        let exited = await eventually(timeout: .seconds(60)) { !connector.isRunning }
        let said = exited ? "" : String(decoding: ((try? Data(contentsOf: log)) ?? Data()).suffix(4096), as: UTF8.self)
        try #require(exited, "the connector (pid \(connector.processIdentifier)) did not exit within 60 s; it said:\n\(said)")
        try await offPool { connector.waitUntilExit() }
    }

    /// Where the connector of process `pid` writes what it says (its standard error).
    static func connectorLog(_ pid: Int32) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-connector-\(pid).log")
    }

    /// At a test's end (`defer`): the connector killed if it still runs, what it said removed.
    static func stop(_ connector: Process) {
        if connector.isRunning { kill(connector.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: Self.connectorLog(connector.processIdentifier))
    }

    /// `swarmdeck agent run` against the in-process services.
    /// With `keyInEnvironment`, the key is in `$SWARMDECK_INGEST_KEY`, as the README advises,
    /// rather than on the command line.
    static func connector(
        ingestPort: Int,
        controlPort: Int,
        key: String,
        agent: String,
        worker: Bool = false,
        keyInEnvironment: Bool = false,
        user: String? = nil,
        heartbeatSeconds: Int = 1,
        _ command: [String]
    ) throws -> Process {
        let connector = Process()
        connector.executableURL = Self.swarmdeck
        connector.arguments =
            [
                "agent", "run", "--ingest-url", "http://127.0.0.1:\(ingestPort)", "--control-url", "http://127.0.0.1:\(controlPort)",
                "--swarm", "e2e", "--name", agent, "--heartbeat-seconds", "\(heartbeatSeconds)", "--grace-seconds", "2",
            ] + (keyInEnvironment ? [] : ["--key", key]) + (worker ? ["--worker"] : []) + (user.map { ["--user", $0] } ?? []) + ["--"] + command
        if keyInEnvironment {
            connector.environment = ProcessInfo.processInfo.environment.merging(["SWARMDECK_INGEST_KEY": key]) { $1 }
        }
        connector.standardOutput = FileHandle.nullDevice
        // What it says is kept for a failure's message (waitForExit), named by its pid once
        // it has one; only this user may read it.
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-connector-\(UUID().uuidString).log")
        let descriptor = open(log.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var moved = false
        defer { if !moved { try? FileManager.default.removeItem(at: log) } }
        let said = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        defer { try? said.close() }
        connector.standardError = said
        try connector.run()
        let named = Self.connectorLog(connector.processIdentifier)
        do {
            try? FileManager.default.removeItem(at: named)  // an earlier process's of that pid
            try FileManager.default.moveItem(at: log, to: named)
            moved = true
        } catch {
            kill(connector.processIdentifier, SIGKILL)
            throw error
        }
        return connector
    }

    final class Seen: Sendable {
        let subscribed = Mutex(false)
        /// State events answering commands: (command id, state, outcome).
        let states = Mutex<[(command: String, state: String, outcome: String)]>([])
    }

    @Test("sleep 1000 under the connector: pause → T, resume → S, terminate ends it; each step is an event on the stream")
    func pauseResumeTerminate() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, controlAPI, fanout in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                ["sleep", "1000"]
            )
            defer { Self.stop(connector) }

            // The agent appears, running, with its process id in its task summary.
            let (record, pid) = try await Self.runningAgent(controlAPI, agent, token: token)
            let summary = try #require(record["taskSummary"] as? String)
            // The command line is not published unless asked (it may hold secrets).
            #expect(!summary.contains("sleep"), "\(summary)")
            #expect(Self.processState(pid) == "S")

            let seen = Seen()
            let stream = StreamClient(port: try #require(fanout.port), token: token)
            async let frames = stream.run(
                sending: [subscribe(filters: ["agentIds": [agent], "include": ["states"]])],
                timeout: .seconds(60)
            ) { frame in
                if frame["type"] as? String == "subscribed" { seen.subscribed.withLock { $0 = true } }
                guard frame["seq"] != nil, let attrs = frame["attrs"] as? [String: Any], let command = attrs["commandId"] as? String else {
                    return false
                }
                let entry = (command, frame["state"] as? String ?? "", attrs["outcome"] as? String ?? "")
                seen.states.withLock { $0.append(entry) }
                return frame["state"] as? String == "terminated"
            }
            #expect(await eventually { seen.subscribed.withLock { $0 } })

            let control = controlAPI
            func steer(_ action: String, _ requestID: String) async throws -> String {
                var body: [String: Any] = ["action": action, "reason": "e2e \(action)", "requestId": requestID]
                if action == "terminate" { body["confirm"] = "TERMINATE" }
                let (status, receipt) = try await H.call(control, .post, "/v1/agents/\(agent)/control", token: token, json: body)
                #expect(status == .accepted)
                return try #require((receipt["commands"] as? [[String: Any]])?.first?["commandId"] as? String)
            }
            func stateEvent(_ commandID: String) async -> (state: String, outcome: String)? {
                _ = await eventually(timeout: .seconds(10)) {
                    seen.states.withLock { $0.contains { $0.command == commandID } }
                }
                return seen.states.withLock { $0.first { $0.command == commandID }.map { ($0.state, $0.outcome) } }
            }

            let pause = try await steer("pause", "e2e-pause")
            #expect(await eventually { Self.processState(pid) == "T" })
            let paused = await stateEvent(pause)
            #expect(paused?.state == "paused" && paused?.outcome == "applied")

            let resume = try await steer("resume", "e2e-resume")
            #expect(await eventually { Self.processState(pid) == "S" })
            #expect(await stateEvent(resume)?.state == "running")

            let terminate = try await steer("terminate", "e2e-terminate")
            #expect(await eventually { Self.processState(pid) == nil })
            #expect(await stateEvent(terminate)?.state == "terminated")
            _ = try await frames
            try await Self.waitForExit(connector)
            #expect(connector.terminationStatus == 128 + SIGTERM)

            // What the connector acknowledged is what control-api reports, and the fleet
            // shows the agent terminated.
            for (requestID, state) in [("e2e-pause", "paused"), ("e2e-resume", "running"), ("e2e-terminate", "terminated")] {
                let (_, status) = try await H.call(control, .get, "/v1/controls/\(requestID)", token: token)
                let command = (status["commands"] as? [[String: Any]])?.first
                #expect(command?["state"] as? String == "applied" && command?["agentState"] as? String == state, "\(requestID)")
            }
            let terminated = try await eventually {
                try await H.call(control, .get, "/v1/agents/\(agent)", token: token).1["state"] as? String == "terminated"
            }
            #expect(terminated)
        }
    }

    /// The pids of the processes whose command line is `sleep <argument>`.
    static func sleeping(_ argument: String) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let pid = Int32(name), let line = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(name)/cmdline")) else { return nil }
            let arguments = line.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.count == 2 && arguments[0].hasSuffix("sleep") && arguments[1] == argument ? pid : nil
        }
    }

    @Test("a command forged on the bus with full NATS rights is not obeyed: control-api hands an agent only what it issued, as issued")
    func forgedCommand() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-forged-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, controlAPI, _ in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                ["sleep", "1000"]
            )
            defer { Self.stop(connector) }
            let (_, pid) = try await Self.runningAgent(controlAPI, agent, token: token)
            // A new pause, and a real command's id with another action: neither was issued.
            let (status, receipt) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "resume", "reason": "a real one", "requestId": "real-resume"]
            )
            #expect(status == .accepted)
            let realID = try #require((receipt["commands"] as? [[String: Any]])?.first?["commandId"] as? String)
            for (id, action) in [("forged-\(agent)", BusControlAction.pause), (realID + "-x", .terminate)] {
                try await harness.live.forge(id, swarm: "e2e", agent: agent, action: action)
            }
            // More gate outcomes under ids that are not their gates' than the queue holds
            // unacknowledged: dropped, they cannot block it.
            for index in 0..<70 {
                try await harness.live.forge("forged-gate-\(index)", swarm: "e2e", agent: agent, action: .gate) {
                    $0.gate = LiveHarness.approving("g_\(index)")
                }
            }
            try await Task.sleep(for: .seconds(3))
            #expect(Self.processState(pid) == "S", "a forged command was obeyed: \(String(describing: Self.processState(pid)))")
            // The real commands still work.
            let (paused, _) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "pause", "reason": "real", "requestId": "real-pause"]
            )
            #expect(paused == .accepted)
            // Behind the seventy forgeries in the agent's queue: each is read, checked and marked
            // done in turn (no poll of the agent's each), a few a second on a loaded machine.
            #expect(await eventually(timeout: .seconds(60)) { Self.processState(pid) == "T" })
        }
    }

    @Test("an event that moves an agent to another swarm does not move its controls: they follow its connector's open session")
    func controlsFollowTheSession() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-moved-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, controlAPI, _ in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                // The connector's heartbeat names its swarm and would move the agent back in the
                // fleet; none comes while the test looks for the move.
                heartbeatSeconds: 600,
                ["sleep", "1000"]
            )
            defer { Self.stop(connector) }
            let (_, pid) = try await Self.runningAgent(controlAPI, agent, token: token)
            // The connector reports the command running before its session is open; until it
            // is, a command goes to the swarm the fleet last saw.
            #expect(await eventually { (try? await harness.openSessionSwarms(agent: agent)) == ["e2e"] }, "the connector's session never opened")
            // Any holder of the ingest key reports the agent in another swarm.
            try await harness.post(ingest, key: key, [ControlHarness.state(agent: agent, swarm: "elsewhere", state: "running")])
            let moved = try await eventually {
                try await H.call(controlAPI, .get, "/v1/agents/\(agent)", token: token).1["swarmId"] as? String == "elsewhere"
            }
            #expect(moved, "the fleet did not see the move")
            let (status, _) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "pause", "reason": "moved", "requestId": "moved-pause-\(agent)"]
            )
            #expect(status == .accepted)
            #expect(await eventually { Self.processState(pid) == "T" }, "the pause went to the swarm the event named")
        }
    }

    @Test("what escapes the command's group is still paused and terminated: a setsid child, a double-forked orphan, a daemon that ignores SIGTERM")
    func escapedDescendants() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-escape-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let tag = String(UInt32.random(in: 100_000..<999_999))
        // Each sleep's argument names it: <tag>1 setsid, <tag>2 a setsid daemon ignoring SIGTERM,
        // <tag>3 an orphan (its parent exits at once), <tag>0 the command itself; and a chain of
        // subshells, each forking the next and exiting, always a generation ahead of a pass.
        let script = """
            chain() { ( sleep 0.05; chain ) & }; chain
            setsid sleep \(tag)1 &
            setsid sh -c 'trap "" TERM; exec sleep \(tag)2' &
            sh -c 'sleep \(tag)3 & exit 0'
            exec sleep \(tag)0
            """
        try await harness.runWithStream { ingest, controlAPI, _ in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                ["sh", "-c", script]
            )
            defer { Self.stop(connector) }
            _ = try await Self.runningAgent(controlAPI, agent, token: token)
            var pids: [Int32] = []
            let started = await eventually(timeout: .seconds(10)) {
                pids = (0...3).flatMap { Self.sleeping("\(tag)\($0)") }
                return pids.count == 4
            }
            try #require(started, "found \(pids)")
            // Where the host has cgroup2 and the connector may write below its cgroup (this test's,
            // as root in CI), all of them are in the command's cgroup, wherever they went in the
            // process tree.
            let cgroupExpected = geteuid() == 0 && CgroupFiles.unifiedFolder(of: getpid()).map { access($0, W_OK) == 0 } == true
            let cgroup = cgroupExpected ? CgroupFiles.unifiedFolder(of: pids[0]) : nil
            if cgroupExpected {
                let paths = Set(pids.map { CgroupFiles.unifiedPath(of: $0) ?? "none" })
                #expect(paths.count == 1, "\(paths)")
                #expect(cgroup?.contains("/swarmdeck-command-\(connector.processIdentifier)-") == true, "\(String(describing: cgroup))")
            }
            // What the kernel says (cgroup.events), not what was asked.
            func frozen() -> String? {
                cgroup.flatMap { CgroupFiles.event("frozen", in: $0) }
            }
            // None of them is in the command's process group but the command itself.
            func steer(_ action: String) async throws {
                var body: [String: Any] = ["action": action, "reason": "escape \(action)", "requestId": "escape-\(action)-\(tag)"]
                if action == "terminate" { body["confirm"] = "TERMINATE" }
                #expect(try await H.call(controlAPI, .post, "/v1/agents/\(agent)/control", token: token, json: body).0 == .accepted)
            }
            try await steer("pause")
            #expect(await eventually { pids.allSatisfy { Self.processState($0) == "T" } }, "\(pids.map { Self.processState($0) })")
            if cgroup != nil { #expect(await eventually { frozen() == "1" }, "cgroup.freeze: \(String(describing: frozen()))") }
            try await steer("resume")
            #expect(await eventually { pids.allSatisfy { Self.processState($0) == "S" } }, "\(pids.map { Self.processState($0) })")
            if cgroup != nil { #expect(frozen() == "0") }
            try await steer("terminate")
            // Terminated means none left (a zombie counts as gone).
            #expect(
                await eventually(timeout: .seconds(20)) { pids.allSatisfy { Self.processState($0) == nil || Self.processState($0) == "Z" } },
                "\(pids.map { Self.processState($0) })"
            )
            try await Self.waitForExit(connector)
            #expect(pids.allSatisfy { Self.processState($0) == nil }, "left: \(pids.map { Self.processState($0) })")
            // The command's cgroup goes with it.
            if let cgroup { #expect(!FileManager.default.fileExists(atPath: cgroup), "\(cgroup) is left") }
            // Nothing of the chain either: its subshells hold the script, and so the tag, in
            // their command line.
            let chain = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { name in
                guard Int32(name) != nil, let line = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(name)/cmdline")) else { return false }
                return String(decoding: line, as: UTF8.self).contains("sleep \(tag)0")
            }
            #expect(chain.isEmpty, "the chain lives on: \(chain)")
        }
    }

    @Test(
        "the kill switch holds against the command: it cannot read the key (its environment, the connector's), poll its commands, report a forged state or kill its connector, and is still paused and terminated"
    )
    func hostileCommand() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-hostile-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        // As root (CI), the command runs as nobody (--user), as an operator should run it.
        let asRoot = geteuid() == 0
        let script = """
            echo "key:${SWARMDECK_INGEST_KEY:-none} found:$(env | grep -c sdi_)"
            echo "proc:$(cat /proc/$PPID/environ /proc/$PPID/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -cE 'sdi[_][0-9a-f]{16}')"
            echo "poll:$(curl -s -o /dev/null -w '%{http_code}' "$CONTROL/v1/agent/commands?waitSeconds=0" 2>/dev/null || echo none)"
            kill -9 $PPID 2>/dev/null && echo "kill:done" || echo "kill:refused"
            echo '@swarmdeck {"kind":"state","state":"terminated","taskSummary":"gone"}'
            exec sleep 1000
            """
        try await harness.runWithStream { ingest, controlAPI, fanout in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                keyInEnvironment: true,
                user: asRoot ? "nobody" : nil,
                ["env", "CONTROL=http://127.0.0.1:\(try #require(controlAPI.port))", "sh", "-c", script]
            )
            defer { Self.stop(connector) }

            let messages = Mutex<[String]>([])
            let states = Mutex<[String]>([])
            let stream = StreamClient(port: try #require(fanout.port), token: token)
            async let frames = stream.run(
                sending: [subscribe(lastEventId: 0, filters: ["agentIds": [agent], "include": ["states", "logs"]])],
                timeout: .seconds(60)
            ) { frame in
                if let message = frame["message"] as? String { messages.withLock { $0.append(message) } }
                if let state = frame["state"] as? String { states.withLock { $0.append(state) } }
                return frame["state"] as? String == "terminated" && (frame["attrs"] as? [String: Any])?["commandId"] != nil
            }
            // The command saw no key, and its forged state became a warning.
            #expect(await eventually(timeout: .seconds(20)) { messages.withLock { $0.contains { $0.hasPrefix("refused a state event") } } })
            #expect(messages.withLock { $0.contains("key:none found:0") }, "\(messages.withLock { $0 })")
            // Nothing of the key in the connector's /proc files (the pattern does not match itself
            // in the command line, which holds this script).
            #expect(messages.withLock { $0.contains("proc:0") }, "\(messages.withLock { $0 })")
            // Without a credential its own poll is refused (or it has no curl at all).
            #expect(messages.withLock { $0.contains("poll:401") || $0.contains("poll:none") }, "\(messages.withLock { $0 })")
            if asRoot { #expect(messages.withLock { $0.contains("kill:refused") }, "\(messages.withLock { $0 })") }
            #expect(connector.isRunning)
            #expect(!states.withLock { $0.contains("terminated") })
            let (_, pid) = try await Self.runningAgent(controlAPI, agent, token: token)

            // Still steered by the phone.
            let (paused, _) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "pause", "reason": "hostile", "requestId": "hostile-pause"]
            )
            #expect(paused == .accepted)
            #expect(await eventually { Self.processState(pid) == "T" })
            let (terminated, _) = try await H.call(
                controlAPI,
                .post,
                "/v1/agents/\(agent)/control",
                token: token,
                json: ["action": "terminate", "reason": "hostile", "requestId": "hostile-terminate", "confirm": "TERMINATE"]
            )
            #expect(terminated == .accepted)
            #expect(await eventually { Self.processState(pid) == nil })
            _ = try await frames
            try await Self.waitForExit(connector)
        }
    }

    @Test("a worker: listed, takes a request on its standard input (its answer is a log event on the stream), stops; then 409; others see 404")
    func worker() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let worker = "w-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, control, fanout in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(control.port),
                key: key,
                agent: worker,
                worker: true,
                ["sh", "-c", "while read line; do echo \"worker got: $line\"; done"]
            )
            defer { Self.stop(connector) }
            try await harness.announce(ingest, control, key: key, agent: "plain", swarm: "e2e")

            let listed = try await eventually(timeout: .seconds(20)) {
                let (_, list) = try await H.call(control, .get, "/v1/workers", token: token)
                return (list["workers"] as? [[String: Any]])?.map { $0["id"] as? String } == [worker]
            }
            #expect(listed)
            #expect(try await H.call(control, .get, "/v1/agents/\(worker)", token: token).1["acceptsRequests"] as? Bool == true)
            // An agent that is not a worker is no worker.
            #expect(try await H.call(control, .get, "/v1/workers/plain", token: token).0 == .notFound)
            #expect(
                try await H.call(control, .post, "/v1/workers/plain/requests", token: token, json: ["requestId": "q0", "input": "x"]).0 == .notFound
            )
            let (multiline, body) = try await H.call(
                control,
                .post,
                "/v1/workers/\(worker)/requests",
                token: token,
                json: ["requestId": "q0", "input": "a\nb"]
            )
            #expect(multiline == .badRequest && body.errorCode == "InvalidRequest")
            // Another tenant sees nothing.
            let theirs = try await harness.token(tenant: "other-" + harness.tenant)
            #expect(try await H.call(control, .get, "/v1/workers/\(worker)", token: theirs).0 == .notFound)
            #expect(
                try await H.call(control, .post, "/v1/workers/\(worker)/requests", token: theirs, json: ["requestId": "q1", "input": "x"]).0
                    == .notFound
            )
            #expect(
                try await H.call(control, .post, "/v1/workers/\(worker)/stop", token: theirs, json: ["requestId": "q2", "reason": "x"]).0 == .notFound
            )
            #expect((try await H.call(control, .get, "/v1/workers", token: theirs).1["workers"] as? [Any])?.isEmpty == true)

            let answered = Seen()
            let stream = StreamClient(port: try #require(fanout.port), token: token)
            async let frames = stream.run(
                sending: [subscribe(filters: ["agentIds": [worker], "include": ["logs"]])],
                timeout: .seconds(60)
            ) { frame in
                if frame["type"] as? String == "subscribed" { answered.subscribed.withLock { $0 = true } }
                return frame["message"] as? String == "worker got: hello worker"
            }
            #expect(await eventually { answered.subscribed.withLock { $0 } })
            let (accepted, receipt) = try await H.call(
                control,
                .post,
                "/v1/workers/\(worker)/requests",
                token: token,
                json: ["requestId": "q3", "input": "hello worker"]
            )
            #expect(accepted == .accepted && receipt["action"] as? String == "request" && receipt["target"] as? String == "worker")
            let lines = try await frames.frames
            #expect(lines.contains { $0["message"] as? String == "worker got: hello worker" })
            let applied = try await eventually {
                let (_, snapshot) = try await H.call(control, .get, "/v1/workers/\(worker)", token: token)
                return (snapshot["requests"] as? [[String: Any]])?.first?["state"] as? String == "applied"
            }
            #expect(applied)

            #expect(
                try await H.call(control, .post, "/v1/workers/\(worker)/stop", token: token, json: ["requestId": "q4", "reason": "done"]).0
                    == .accepted
            )
            try await Self.waitForExit(connector)
            let stopped = try await eventually {
                try await H.call(control, .get, "/v1/workers/\(worker)", token: token).1["worker"].flatMap {
                    ($0 as? [String: Any])?["state"] as? String
                } == "terminated"
            }
            #expect(stopped)
            let (conflict, conflictBody) = try await H.call(
                control,
                .post,
                "/v1/workers/\(worker)/requests",
                token: token,
                json: ["requestId": "q5", "input": "late"]
            )
            #expect(conflict == .conflict && conflictBody.errorCode == "Conflict")
            #expect((conflictBody["error"] as? [String: Any])?["class"] as? String == "conflict")
        }
    }

    @Test("if the connector dies, however it dies, its command dies with it")
    func commandDiesWithConnector() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let agent = "e2e-orphan-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, controlAPI, _ in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(controlAPI.port),
                key: key,
                agent: agent,
                ["sleep", "1000"]
            )
            defer { Self.stop(connector) }
            let (_, pid) = try await Self.runningAgent(controlAPI, agent, token: token)
            #expect(Self.processState(pid) == "S")
            kill(connector.processIdentifier, SIGKILL)
            // Gone, or a zombie its new parent has not reaped yet.
            #expect(await eventually { Self.processState(pid).map { $0 == "Z" } ?? true })
        }
    }

    @Test("a paused worker with 1 MiB of requests queued refuses more with a clear error; resume and terminate still act at once")
    func pausedWorkerQueue() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30", "CONTROL_CONTROLS_PER_MINUTE": "10000"])
        let worker = "w-full-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        try await harness.runWithStream { ingest, control, _ in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            let connector = try Self.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(control.port),
                key: key,
                agent: worker,
                worker: true,
                ["sh", "-c", "while read line; do echo \"got ${#line}\"; done"]
            )
            defer { Self.stop(connector) }
            let listed = try await eventually(timeout: .seconds(20)) {
                try await H.call(control, .get, "/v1/workers/\(worker)", token: token).0 == .ok
            }
            #expect(listed)
            let clock = ContinuousClock()
            /// Sends one command and waits for its acknowledgement: (state, message, round trip).
            func roundTrip(_ path: String, _ body: [String: Any]) async throws -> (String?, String?, Duration) {
                let started = clock.now
                let requestID = try #require(body["requestId"] as? String)
                let (status, receipt) = try await H.call(control, .post, path, token: token, json: body)
                #expect(status == .accepted, "\(receipt)")
                var command: [String: Any]?
                _ = try await eventually(timeout: .seconds(30)) {
                    command = (try await H.call(control, .get, "/v1/controls/\(requestID)", token: token).1["commands"] as? [[String: Any]])?.first
                    return command?["state"] as? String != "pending"
                }
                return (command?["state"] as? String, command?["message"] as? String, clock.now - started)
            }
            let (paused, _, pauseTime) = try await roundTrip(
                "/v1/agents/\(worker)/control",
                ["action": "pause", "reason": "fill", "requestId": "fill-pause"]
            )
            #expect(paused == "applied")
            // 16,000-character requests until the queue (1 MiB, plus what the pipe holds) refuses one.
            let line = String(repeating: "x", count: 16_000)
            var sent = 0
            var refusal: String?
            while refusal == nil && sent < 200 {
                let (state, message, _) = try await roundTrip("/v1/workers/\(worker)/requests", ["requestId": "fill-\(sent)", "input": line])
                if state == "rejected" { refusal = message } else { #expect(state == "applied") }
                sent += 1
            }
            let queued = (sent - 1) * 16_001
            #expect(queued >= 1 << 20, "refused after \(queued) bytes")
            #expect(refusal?.contains("queue is full") == true, "\(refusal ?? "never refused")")
            let (resumed, _, resumeTime) = try await roundTrip(
                "/v1/agents/\(worker)/control",
                ["action": "resume", "reason": "drain", "requestId": "fill-resume"]
            )
            #expect(resumed == "applied")
            let (paused2, _, _) = try await roundTrip(
                "/v1/agents/\(worker)/control",
                ["action": "pause", "reason": "again", "requestId": "fill-pause-2"]
            )
            #expect(paused2 == "applied")
            let (terminated, _, terminateTime) = try await roundTrip(
                "/v1/agents/\(worker)/control",
                ["action": "terminate", "reason": "done", "requestId": "fill-terminate", "confirm": "TERMINATE"]
            )
            #expect(terminated == "applied")
            try await Self.waitForExit(connector)
            print("paused worker with \(queued) bytes queued: pause \(pauseTime) (empty queue), resume \(resumeTime), terminate \(terminateTime)")
        }
    }
}

import ArgumentParser
import Foundation
import MCP

extension ApproveCommand {
    /// `swarmdeck approve mcp`: the permission-prompt tool of headless Claude Code.
    struct MCPServer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mcp",
            abstract: "A stdio MCP server with the permission-prompt tool for `claude -p --permission-prompt-tool`.",
            discussion: """
                Serves one tool, `approve` (so `--permission-prompt-tool mcp__swarmdeck__approve` with the server named \
                swarmdeck). Each call ({tool_name, input, tool_use_id}) opens an approval gate through the connector \
                (SWARMDECK_GATE_SOCKET) and answers {"behavior":"allow","updatedInput":…} once a person approves, \
                {"behavior":"deny","message":…} otherwise: on a rejection, an expiry, and any failure.
                """
        )

        @Option(help: "Seconds a call waits for a decision (the gate expires 5 s before).")
        var deadlineSeconds = 590

        @Option(help: "The gate's risk shown on the phone: low, medium, high or critical.")
        var risk = "medium"

        static let toolName = "approve"

        func run() async throws {
            signal(SIGPIPE, SIG_IGN)
            guard (5...86_400).contains(self.deadlineSeconds), ["low", "medium", "high", "critical"].contains(self.risk) else {
                throw ValidationError("--deadline-seconds 5…86400, --risk low, medium, high or critical")
            }
            let server = Server(name: "swarmdeck", version: "1.0.0", capabilities: .init(tools: .init(listChanged: false)))
            let tool = Tool(
                name: Self.toolName,
                description: "Ask a person (on the Swarmdeck phone app) whether a tool call may run.",
                inputSchema: .object([
                    "type": .string("object"),
                    "properties": .object([
                        "tool_name": .object(["type": .string("string")]),
                        "input": .object(["type": .string("object")]),
                        "tool_use_id": .object(["type": .string("string")]),
                    ]),
                    "required": .array([.string("tool_name"), .string("input")]),
                ])
            )
            await server.withMethodHandler(ListTools.self) { _ in ListTools.Result(tools: [tool]) }
            let deadline = self.deadlineSeconds
            let risk = self.risk
            await server.withMethodHandler(CallTool.self) { params in
                guard params.name == Self.toolName else {
                    return CallTool.Result(content: [.text(text: "unknown tool \(params.name)", annotations: nil, _meta: nil)], isError: true)
                }
                let answer = await Self.decide(params.arguments ?? [:], deadlineSeconds: deadline, risk: risk)
                return CallTool.Result(content: [.text(text: answer, annotations: nil, _meta: nil)])
            }
            try await server.start(transport: StdioTransport())
            await server.waitUntilCompleted()
        }

        /// The tool's answer (text content, as `--permission-prompt-tool` reads it).
        static func decide(_ arguments: [String: Value], deadlineSeconds: Int, risk: String) async -> String {
            let input = arguments["input"] ?? .object([:])
            let inputJSON = (try? JSONEncoder().encode(input)) ?? Data("{}".utf8)
            var toolUseID: String?
            if case .string(let id) = arguments["tool_use_id"] ?? .null { toolUseID = id }
            var tool: String?
            if case .string(let name) = arguments["tool_name"] ?? .null { tool = name }
            // The socket blocks for as long as the person takes: on a thread of Dispatch's, not
            // on the Swift concurrency pool (two waiting calls would hold both its threads here).
            let work: @Sendable () -> String = { [tool, toolUseID] in
                let answer: [String: Any]
                do {
                    guard let tool, let object = try JSONSerialization.jsonObject(with: inputJSON) as? [String: Any] else {
                        throw HookFailure("the call needs tool_name and an input object")
                    }
                    let (allow, reason) = try PermissionAsk.ask(
                        tool: tool,
                        input: object,
                        toolUseID: toolUseID,
                        risk: risk,
                        deadlineSeconds: deadlineSeconds,
                        source: "mcp"
                    )
                    answer = allow ? ["behavior": "allow", "updatedInput": object] : ["behavior": "deny", "message": reason]
                } catch {
                    answer = ["behavior": "deny", "message": "not approved: \(error)"]
                }
                let data =
                    (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys]))
                    ?? Data(#"{"behavior":"deny","message":"internal error"}"#.utf8)
                return String(decoding: data, as: UTF8.self)
            }
            return await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: work()) }
            }
        }
    }
}

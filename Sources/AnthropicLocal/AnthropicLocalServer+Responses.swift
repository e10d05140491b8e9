import Contracts
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

/// The OpenAI Responses API as the Codex CLI speaks it, on the same server: `POST /v1/responses`
/// (what a Codex `model_providers` entry with `wire_api = "responses"` and
/// `base_url = "<server>/v1"` posts), streamed as server-sent events, answered from the
/// conversation's `<local-script>` (``AnthropicLocalScript``) with the same faults.
///
/// - Authentication: `Authorization: Bearer <key>`, one of the server's keys (any non-empty one
///   when it has none), or 401.
/// - A script's tool step calls a tool the request offers by name (Codex's shell tool is
///   `exec_command`, `{"cmd": "…"}`) as a `function_call` item; a text step answers a message.
///   The step is the one after the function calls and assistant messages the input holds.
/// - Usage: `input_tokens` is ⌈the input's UTF-8 bytes / 4⌉ unless the step says otherwise,
///   `input_tokens_details.cached_tokens` the step's `cache_read_input_tokens`.
extension AnthropicLocalServer {
    /// The request's fields that are read.
    struct ResponsesRequest: Decodable {
        var model: String?
        var input: [Item]?
        var tools: [ToolDefinition]?
        var stream: Bool?

        struct ToolDefinition: Decodable {
            var type: String?
            var name: String?
        }

        struct Item: Decodable {
            var type: String?
            var role: String?
            var content: Content?
            var output: Content?
        }

        /// A string, or parts whose `text` is joined.
        struct Content: Decodable {
            var text: String

            struct Part: Decodable {
                var text: String?
            }

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let text = try? container.decode(String.self) {
                    self.text = text
                } else {
                    self.text = try container.decode([Part].self).compactMap(\.text).joined()
                }
            }
        }
    }

    func responses(_ request: Request, context: AnthropicLocalRequestContext) async throws -> Response {
        try await self.recorded(request) { requestID, record in
            try await self.answerResponses(request, context: context, requestID: requestID, record: &record)
        }
    }

    private func answerResponses(
        _ request: Request,
        context: AnthropicLocalRequestContext,
        requestID: String,
        record: inout RecordedRequest
    ) async throws -> Response {
        let bearer = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        guard !bearer.isEmpty, self.apiKeys.isEmpty || self.apiKeys.contains(bearer) else {
            return Self.openAIError(401, "invalid_api_key", "Incorrect API key provided.", requestID: requestID)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maximumRequestBytes)
        } catch {
            return Self.openAIError(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", requestID: requestID)
        }
        let parsed: ResponsesRequest
        do {
            parsed = try JSONDecoder().decode(ResponsesRequest.self, from: Data(buffer: body))
        } catch {
            record.refusal = "\(error)"
            return Self.openAIError(400, "invalid_request_error", "The request body is not valid: \(error)", requestID: requestID)
        }
        guard let model = parsed.model, !model.isEmpty else {
            return Self.openAIError(400, "invalid_request_error", "model: required", requestID: requestID)
        }
        guard let input = parsed.input, !input.isEmpty else {
            return Self.openAIError(400, "invalid_request_error", "input: required", requestID: requestID)
        }
        let userTexts = input.filter { $0.type == "message" && $0.role == "user" }.compactMap { $0.content?.text }
        let turns = input.count { $0.type == "function_call" || ($0.type == "message" && $0.role == "assistant") }
        let lastTurn = input.lastIndex { $0.type == "function_call" || ($0.type == "message" && $0.role == "assistant") }
        record.model = model
        record.stream = parsed.stream ?? false
        record.messageCount = input.count
        record.userText = userTexts.last
        record.toolResults = input[((lastTurn ?? -1) + 1)...].filter { $0.type == "function_call_output" }.compactMap { $0.output?.text }

        let fault = self.state.takeFault() ?? userTexts.last.flatMap(Self.markerFault)
        record.fault = fault
        switch fault {
        case .status(let status, let retryAfter):
            var response = Self.openAIError(
                status,
                AnthropicLocalFault.errorType(status),
                AnthropicLocalFault.errorMessage(status),
                requestID: requestID
            )
            if let retryAfter { response.headers[AnthropicLocalHeader.retryAfter] = String(retryAfter) }
            return response
        case .dropConnection:
            context.channel.close(mode: .all, promise: nil)
            return Response(status: .internalServerError)
        case .slowFirstByte(let delay):
            try await Task.sleep(for: delay)
        default:
            break
        }

        var step: AnthropicLocalScript.Step?
        do throws(AnthropicLocalScript.ScriptError) {
            for text in userTexts {
                if let script = try AnthropicLocalScript.find(in: text) {
                    step = script.step(after: turns)
                    record.scriptStep = turns
                    break
                }
            }
        } catch {
            return Self.openAIError(400, "invalid_request_error", "\(AnthropicLocalScript.openTag): \(error.message)", requestID: requestID)
        }
        let offered = Set(parsed.tools?.compactMap(\.name) ?? [])
        var item: [String: Any]
        switch step?.action {
        case .tool(let name, let arguments)? where offered.contains(name):
            record.toolUse = name
            item = [
                "type": "function_call", "id": "fc_local_\(record.index)", "call_id": "call_local_\(record.index)", "name": name,
                "arguments": AnthropicLocalScript.text(of: arguments), "status": "completed",
            ]
        case .tool(let name, _)?:
            item = Self.message("The script calls \(name), which this request does not offer.", index: record.index)
        case .text(let text)?:
            item = Self.message(text, index: record.index)
        case nil:
            item = Self.message(AnthropicLocalAnswer.text(system: nil, lastUserMessage: userTexts.last ?? ""), index: record.index)
        }
        let inputTokens = (body.readableBytes + 3) / 4
        let usage: [String: Any] = [
            "input_tokens": step?.usage?.inputTokens ?? inputTokens,
            "input_tokens_details": ["cached_tokens": step?.usage?.cacheReadInputTokens ?? 0],
            "output_tokens": step?.usage?.outputTokens ?? 10, "output_tokens_details": ["reasoning_tokens": 0],
            "total_tokens": (step?.usage?.inputTokens ?? inputTokens) + (step?.usage?.outputTokens ?? 10),
        ]
        let id = "resp_local_\(record.index)"
        let completed: [String: Any] = ["id": id, "object": "response", "status": "completed", "model": model, "output": [item], "usage": usage]
        guard parsed.stream ?? false else {
            return Response(
                status: .ok,
                headers: Self.headers(contentType: "application/json", requestID: requestID),
                body: .init(byteBuffer: ByteBuffer(data: try JSONSerialization.data(withJSONObject: completed)))
            )
        }
        var events: [[String: Any]] = [
            ["type": "response.created", "response": ["id": id, "object": "response", "status": "in_progress", "model": model]]
        ]
        if item["type"] as? String == "message" {
            var added = item
            added["status"] = "in_progress"
            added["content"] = [[String: Any]]()
            events.append(["type": "response.output_item.added", "output_index": 0, "item": added])
            let text = ((item["content"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
            for chunk in AnthropicLocalAnswer.chunks(text, wordsPerChunk: Self.wordsPerDelta) {
                events.append(["type": "response.output_text.delta", "item_id": item["id"]!, "output_index": 0, "content_index": 0, "delta": chunk])
            }
        }
        events.append(["type": "response.output_item.done", "output_index": 0, "item": item])
        switch fault {
        case .errorMidStream:
            events.append([
                "type": "response.failed", "response": ["id": id, "status": "failed", "error": ["code": "server_error", "message": "Overloaded"]],
            ])
        case .truncatedStream:
            break
        default:
            events.append(["type": "response.completed", "response": completed])
        }
        var frames: [UInt8] = []
        for event in events {
            frames += Array("event: \(event["type"] as? String ?? "")\ndata: ".utf8)
            frames += Array(try JSONSerialization.data(withJSONObject: event, options: [.sortedKeys]))
            frames += Array("\n\n".utf8)
        }
        var headers = Self.headers(contentType: "text/event-stream; charset=utf-8", requestID: requestID)
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: frames)))
    }

    /// An assistant message item holding `text`.
    static func message(_ text: String, index: Int) -> [String: Any] {
        [
            "type": "message", "id": "msg_local_\(index)", "role": "assistant", "status": "completed",
            "content": [["type": "output_text", "text": text, "annotations": [Any]()]],
        ]
    }

    /// OpenAI's error answer: `{"error":{"message","type","code"}}`.
    static func openAIError(_ status: Int, _ type: String, _ message: String, requestID: String?) -> Response {
        let body: [String: Any] = ["error": ["message": message, "type": type, "code": type, "param": NSNull()]]
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: Self.headers(contentType: "application/json", requestID: requestID),
            body: .init(byteBuffer: ByteBuffer(data: (try? JSONSerialization.data(withJSONObject: body)) ?? Data("{}".utf8)))
        )
    }
}

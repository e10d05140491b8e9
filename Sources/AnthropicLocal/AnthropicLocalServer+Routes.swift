import Contracts
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat

extension AnthropicLocalServer {
    /// The largest request body read: 32 MiB, as the API's limit for Messages.
    static let maximumRequestBytes = 32 << 20
    /// The longest per-delta delay `[delay-ms:N]` may ask for: 1 s.
    static let maximumDeltaDelayMilliseconds = 1000
    /// Words per `content_block_delta`.
    static let wordsPerDelta = 5

    /// The routes: `/v1/messages` and the control paths.
    func router() -> Router<AnthropicLocalRequestContext> {
        let router = Router(context: AnthropicLocalRequestContext.self)
        router.post("/v1/messages") { request, context in
            try await self.messages(request, context: context)
        }
        router.post("/v1/responses") { request, context in
            try await self.responses(request, context: context)
        }
        router.post("/v1/messages/count_tokens") { request, _ in
            try await self.countTokens(request)
        }
        router.post("/_local/faults") { request, _ in
            try await self.addFaults(request)
        }
        router.delete("/_local/faults") { _, _ in
            self.clearFaults()
            return Response(status: .noContent)
        }
        router.get("/_local/requests") { _, _ in
            Self.json(status: 200, ["requests": self.requests()], requestID: nil)
        }
        return router
    }

    // MARK: /v1/messages

    private func messages(_ request: Request, context: AnthropicLocalRequestContext) async throws -> Response {
        try await self.recorded(request) { requestID, record in
            try await self.answer(request, context: context, requestID: requestID, record: &record)
        }
    }

    /// Numbers a request, answers it with `answer` (given its request id and its record to
    /// fill in), and records it with the status answered.
    func recorded(
        _ request: Request,
        answer: (String, inout RecordedRequest) async throws -> Response
    ) async throws -> Response {
        let index = self.state.nextIndex()
        let requestID = "req_local_\(index)"
        var record = RecordedRequest(
            index: index,
            requestID: requestID,
            headers: Self.recordedHeaders(request.headers),
            messageCount: 0,
            stream: false,
            status: 200
        )
        let response = try await answer(requestID, &record)
        record.status = response.status.code
        self.state.record(record)
        return response
    }

    private func answer(
        _ request: Request,
        context: AnthropicLocalRequestContext,
        requestID: String,
        record: inout RecordedRequest
    ) async throws -> Response {
        let key = request.headers[AnthropicLocalHeader.apiKey] ?? ""
        guard !key.isEmpty else { return Self.error(401, "authentication_error", "x-api-key header is required", requestID: requestID) }
        guard self.apiKeys.isEmpty || self.apiKeys.contains(key) else {
            return Self.error(401, "authentication_error", "invalid x-api-key", requestID: requestID)
        }
        guard let version = request.headers[AnthropicLocalHeader.anthropicVersion], !version.isEmpty else {
            return Self.error(400, "invalid_request_error", "anthropic-version: header is required", requestID: requestID)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maximumRequestBytes)
        } catch {
            return Self.error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", requestID: requestID)
        }
        let validated: AnthropicLocalWire.Validated
        let betas = request.headers[AnthropicLocalHeader.anthropicBeta] ?? ""
        switch AnthropicLocalWire.validate(Data(buffer: body), systemMessages: betas.contains(AnthropicLocalWire.perTurnControlBeta)) {
        case .failure(let error):
            record.refusal = error.message
            return Self.error(400, "invalid_request_error", error.message, requestID: requestID)
        case .success(let value): validated = value
        }
        let lastUserMessage = validated.lastUserMessage
        record.model = validated.model
        record.maxTokens = validated.maxTokens
        record.system = validated.system
        record.userText = lastUserMessage
        record.messageCount = validated.messages.count
        record.stream = validated.stream

        // A queued fault first, else a marker's (in the last user message, else the system prompt:
        // a pipeline's role prompt can make that role's calls fail).
        let fault = self.state.takeFault() ?? Self.markerFault(lastUserMessage) ?? validated.system.flatMap(Self.markerFault)
        record.fault = fault
        switch fault {
        case .status(let status, let retryAfter):
            return Self.error(
                status,
                AnthropicLocalFault.errorType(status),
                AnthropicLocalFault.errorMessage(status),
                requestID: requestID,
                retryAfter: retryAfter
            )
        case .dropConnection:
            context.channel.close(mode: .all, promise: nil)
            return Response(status: .internalServerError)
        case .slowFirstByte(let delay):
            try await Task.sleep(for: delay)
        case .errorMidStream where !validated.stream:
            return Self.error(529, "overloaded_error", "Overloaded", requestID: requestID)
        default:
            break
        }

        // A conversation with a script (a coding agent's, say) is answered by its next step.
        var step: AnthropicLocalScript.Step?
        do throws(AnthropicLocalScript.ScriptError) {
            for message in validated.messages where message.role == "user" {
                if let script = try AnthropicLocalScript.find(in: message.content) {
                    step = script.step(after: validated.assistantTurns)
                    record.scriptStep = validated.assistantTurns
                    break
                }
            }
        } catch {
            return Self.error(400, "invalid_request_error", "\(AnthropicLocalScript.openTag): \(error.message)", requestID: requestID)
        }
        record.toolResults = validated.lastToolResults

        var text = AnthropicLocalAnswer.text(system: validated.system, lastUserMessage: lastUserMessage)
        var toolUse: AnthropicLocalWire.ToolUseBlock?
        var stopReason = "end_turn"
        switch step?.action {
        case .tool(let name, let input)? where validated.toolNames.contains(name):
            toolUse = .init(id: "toolu_local_\(record.index)", name: name, input: input)
            stopReason = "tool_use"
            record.toolUse = name
        case .tool(let name, _)?:
            text = "The script calls \(name), which this request does not offer."
        case .text(let scripted)?:
            text = scripted
        case nil:
            break
        }
        if toolUse == nil {
            let cut = AnthropicLocalAnswer.truncated(text, words: validated.maxTokens)
            if cut.cut {
                text = cut.text
                stopReason = "max_tokens"
            }
        }
        let id = "msg_local_\(record.index)"
        let inputText = toolUse.map { AnthropicLocalScript.text(of: $0.input) }
        var usage = AnthropicLocalWire.Usage(
            inputTokens: AnthropicLocalAnswer.inputTokens(system: validated.system, messages: validated.messages.map(\.content)),
            outputTokens: AnthropicLocalAnswer.outputTokens(inputText ?? text)
        )
        if let scripted = step?.usage {
            usage.inputTokens = scripted.inputTokens ?? usage.inputTokens
            usage.outputTokens = scripted.outputTokens ?? usage.outputTokens
            usage.cacheReadInputTokens = scripted.cacheReadInputTokens ?? 0
            usage.cacheCreationInputTokens = scripted.cacheCreationInputTokens ?? 0
        }
        let outputTokens = usage.outputTokens

        guard validated.stream else {
            let message = AnthropicLocalWire.AnswerMessage(
                id: id,
                model: validated.model,
                text: text,
                stopReason: stopReason,
                usage: usage,
                toolUse: toolUse
            )
            var json = Array(try AnthropicLocalWire.encoder.encode(message))
            if case .truncatedStream = fault { json.removeLast(json.count - json.count / 2) }
            return Response(
                status: .ok,
                headers: Self.headers(contentType: "application/json", requestID: requestID),
                body: .init(byteBuffer: ByteBuffer(bytes: json))
            )
        }

        var startUsage = usage
        startUsage.outputTokens = 1
        let start = AnthropicLocalWire.AnswerMessage(id: id, model: validated.model, text: nil, stopReason: nil, usage: startUsage)
        let delay =
            AnthropicLocalAnswer.marker("delay-ms", in: lastUserMessage).map {
                Duration.milliseconds(min($0, Self.maximumDeltaDelayMilliseconds))
            } ?? self.deltaDelay
        // A tool's input comes in three parts, as the API streams it; text five words a delta.
        let blockStart: AnthropicLocalWire.StreamEvent
        let deltas: [AnthropicLocalWire.StreamEvent]
        if let toolUse, let inputText {
            blockStart = .toolUseStart(id: toolUse.id, name: toolUse.name)
            deltas = AnthropicLocalAnswer.pieces(inputText, count: 3).map { .inputJSONDelta($0) }
        } else {
            blockStart = .contentBlockStart
            deltas = AnthropicLocalAnswer.chunks(text, wordsPerChunk: Self.wordsPerDelta).map { .textDelta($0) }
        }
        var headers = Self.headers(contentType: "text/event-stream; charset=utf-8", requestID: requestID)
        headers[.cacheControl] = "no-cache"
        let ending: StreamEnding =
            switch fault {
            case .errorMidStream: .error
            case .truncatedStream: .truncated
            default: .complete(stopReason: stopReason, outputTokens: outputTokens)
            }
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: try AnthropicLocalWire.StreamEvent.messageStart(start).frame()))
                try await writer.write(ByteBuffer(bytes: try blockStart.frame()))
                try await writer.write(ByteBuffer(bytes: try AnthropicLocalWire.StreamEvent.ping.frame()))
                // A failing stream stops halfway (after one delta at least).
                let sent = if case .complete = ending { deltas.count } else { max(1, deltas.count / 2) }
                for delta in deltas.prefix(sent) {
                    if delay > .zero { try await Task.sleep(for: delay) }
                    try await writer.write(ByteBuffer(bytes: try delta.frame()))
                }
                switch ending {
                case .error:
                    let error = AnthropicLocalWire.StreamEvent.error(type: "overloaded_error", message: "Overloaded")
                    try await writer.write(ByteBuffer(bytes: try error.frame()))
                case .truncated:
                    break
                case .complete(let stopReason, let outputTokens):
                    var tail = try AnthropicLocalWire.StreamEvent.contentBlockStop.frame()
                    tail += try AnthropicLocalWire.StreamEvent.messageDelta(stopReason: stopReason, outputTokens: outputTokens).frame()
                    tail += try AnthropicLocalWire.StreamEvent.messageStop.frame()
                    try await writer.write(ByteBuffer(bytes: tail))
                }
                try await writer.finish(nil)
            }
        )
    }

    /// `POST /v1/messages/count_tokens`: `{"input_tokens": N}`, counted as answers count them.
    private func countTokens(_ request: Request) async throws -> Response {
        let key = request.headers[AnthropicLocalHeader.apiKey] ?? ""
        guard !key.isEmpty, self.apiKeys.isEmpty || self.apiKeys.contains(key) else {
            return Self.error(401, "authentication_error", "invalid x-api-key", requestID: nil)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maximumRequestBytes)
        } catch {
            return Self.error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", requestID: nil)
        }
        // The same checks as a message, but for max_tokens, which counting does not take.
        var object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
        object["max_tokens"] = object["max_tokens"] ?? 1
        let completed = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
        let betas = request.headers[AnthropicLocalHeader.anthropicBeta] ?? ""
        switch AnthropicLocalWire.validate(completed, systemMessages: betas.contains(AnthropicLocalWire.perTurnControlBeta)) {
        case .failure(let error): return Self.error(400, "invalid_request_error", error.message, requestID: nil)
        case .success(let validated):
            let tokens = AnthropicLocalAnswer.inputTokens(system: validated.system, messages: validated.messages.map(\.content))
            return Self.json(status: 200, ["input_tokens": tokens], requestID: nil)
        }
    }

    /// How a stream ends.
    private enum StreamEnding {
        case complete(stopReason: String, outputTokens: Int)
        case error
        case truncated
    }

    /// The fault a marker in the last user message asks for.
    static func markerFault(_ message: String) -> AnthropicLocalFault? {
        guard message.contains("[fault:") else { return nil }
        if message.contains("[fault:429]") { return .status(429, retryAfterSeconds: 1) }
        if message.contains("[fault:529]") { return .status(529, retryAfterSeconds: nil) }
        if message.contains("[fault:midstream]") { return .errorMidStream }
        if message.contains("[fault:truncate]") { return .truncatedStream }
        if let milliseconds = AnthropicLocalAnswer.marker("fault:slow-first-byte-ms", in: message) {
            return .slowFirstByte(min(.milliseconds(milliseconds), AnthropicLocalFault.maximumSlowFirstByte))
        }
        return nil
    }

    // MARK: Control

    private struct FaultList: Codable {
        var faults: [AnthropicLocalFault]
    }

    private func addFaults(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let list: FaultList
        do {
            list = try JSONDecoder().decode(FaultList.self, from: Data(buffer: body))
        } catch {
            return Self.error(400, "invalid_request_error", "faults: \(error)", requestID: nil)
        }
        guard self.state.enqueue(list.faults) else {
            return Self.error(429, "rate_limit_error", "at most \(AnthropicLocalState.maximumFaults) faults may be queued", requestID: nil)
        }
        self.logger.info("faults queued", metadata: ["count": "\(list.faults.count)"])
        return Self.json(status: 201, ["queued": list.faults.count, "pending": self.pendingFaults], requestID: nil)
    }

    // MARK: Answers

    static func headers(contentType: String, requestID: String?) -> HTTPFields {
        var headers: HTTPFields = [.contentType: contentType]
        if let requestID { headers[AnthropicLocalHeader.requestID] = requestID }
        return headers
    }

    /// The API's error answer: `{"type":"error","error":{"type","message"},"request_id"}`.
    static func error(_ status: Int, _ type: String, _ message: String, requestID: String?, retryAfter: Int? = nil) -> Response {
        var response = Self.json(
            status: status,
            AnthropicLocalWire.ErrorBody(error: .init(type: type, message: message), requestID: requestID),
            requestID: requestID
        )
        if let retryAfter { response.headers[AnthropicLocalHeader.retryAfter] = String(retryAfter) }
        return response
    }

    static func json(status: Int, _ value: some Encodable, requestID: String?) -> Response {
        // The values encoded here are plain structs, strings and numbers: encoding cannot fail.
        let body = (try? AnthropicLocalWire.encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: Self.headers(contentType: "application/json", requestID: requestID),
            body: .init(byteBuffer: ByteBuffer(data: body))
        )
    }

    /// A request's headers for the record: lowercased names, without the credentials.
    static func recordedHeaders(_ fields: HTTPFields) -> [String: String] {
        var headers: [String: String] = [:]
        for field in fields {
            let name = field.name.canonicalName
            guard name != "x-api-key", name != "authorization" else { continue }
            headers[name] = headers[name].map { $0 + ", " + field.value } ?? field.value
        }
        return headers
    }
}

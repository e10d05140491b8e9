import Contracts
import Foundation
import Logging
import NIOCore
import ServiceKit

/// The terminal protocol (version 1, `docs/terminal-protocol.md`) on one WebSocket: the hello,
/// then screens and numbered output from the shared attachment; from the client, input when
/// this attach enabled it.
final class TerminalSession: WebSocketProtocolHandler {
    static let protocolVersion = "1"

    let viewer: TerminalViewer
    let attachment: TerminalAttachment
    private let logger: Logger

    init(viewer: TerminalViewer, attachment: TerminalAttachment, logger: Logger) {
        self.viewer = viewer
        self.attachment = attachment
        self.logger = logger
    }

    /// A client message: `{"type":"input","data":"…"}` (UTF-8 text as typed).
    struct ClientMessage: Decodable {
        var type: String
        var data: String?
    }

    func received(_ message: WebSocketClientMessage, on connection: WebSocketConnection) async -> Bool {
        guard case .text(let text) = message, let decoded = try? JSONDecoder().decode(ClientMessage.self, from: Data(text.utf8)) else {
            self.viewer.push(.notice(code: .invalidRequest, message: #"messages are JSON text: {"type":"input","data":"…"}"#))
            return false
        }
        switch decoded.type {
        case "input":
            guard self.viewer.inputEnabled else {
                // Read-only: input never reaches tmux.
                self.viewer.push(
                    .notice(
                        code: .permissionDenied,
                        message: "input is not enabled on this attach (attach with ?input=true and the terminal:write scope)"
                    )
                )
                return false
            }
            guard let data = decoded.data else {
                self.viewer.push(.notice(code: .invalidRequest, message: "input needs data"))
                return false
            }
            do {
                try await self.attachment.input(Array(data.utf8))
            } catch {
                let failure = error as? APIError ?? APIError(.terminalInitFailed, "\(error)")
                self.viewer.push(.notice(code: failure.code, message: failure.message))
            }
            return true
        case "ping":
            return true
        default:
            self.viewer.push(.notice(code: .invalidRequest, message: "unknown message type \(decoded.type.prefix(40))"))
            return false
        }
    }

    func write(to writer: WebSocketFrameWriter) async throws {
        while true {
            switch await self.viewer.next() {
            case .frames(let frames):
                for frame in frames {
                    if case .ping = frame {
                        try await writer.ping()
                    } else {
                        try await writer.send(Self.encode(frame))
                    }
                }
                writer.endBatch()
            case .needScreen:
                do {
                    try await self.attachment.sendScreen(to: self.viewer)
                } catch {
                    self.viewer.end(error as? APIError ?? APIError(.terminalInitFailed, "\(error)"))
                }
            case .ended(let error):
                if error.code != .serviceUnavailable || error.message != Self.leaving {
                    try? await writer.send(Self.encode(end: error))
                    writer.endBatch()
                }
                return
            }
        }
    }

    static let leaving = "the viewer left"

    func stop() {
        self.viewer.end(APIError(.serviceUnavailable, Self.leaving))
    }

    func ping() {
        self.viewer.push(.ping)
    }

    func finish() async {
        self.attachment.remove(self.viewer)
    }

    // MARK: Frames

    static func hello(session: TerminalSessionID, attachment: String, input: Bool, recorded: Bool) -> ByteBuffer {
        Self.json([
            "type": "hello", "protocol": 1, "sessionId": session.description, "tmuxSessionName": session.name, "input": input,
            "attachment": attachment, "recorded": recorded,
        ])
    }

    static func encode(_ frame: TerminalFrame) -> ByteBuffer {
        switch frame {
        case .screen(let seq, let cols, let rows, let data):
            Self.json(["type": "screen", "seq": seq, "cols": cols, "rows": rows, "data": data])
        case .output(let seq, let data):
            Self.json(["type": "output", "seq": seq, "data": data])
        case .notice(let code, let message):
            Self.json(["type": "error", "error": ["code": code.rawValue, "message": message]])
        case .ping:
            Self.json(["type": "ping"])
        }
    }

    /// The last message: the error envelope's body, as every HTTP answer carries it.
    static func encode(end error: APIError) -> ByteBuffer {
        struct End: Encodable {
            var type = "end"
            var error: ErrorEnvelope.Body
        }
        let body = ErrorEnvelopeMiddleware.envelope(for: error, requestID: nil).1
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ByteBuffer(bytes: (try? encoder.encode(End(error: body))) ?? Data(#"{"type":"end"}"#.utf8))
    }

    private static func json(_ object: [String: Any]) -> ByteBuffer {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return ByteBuffer(bytes: data)
    }
}

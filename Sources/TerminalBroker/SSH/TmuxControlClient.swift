import Contracts
import Logging
import NIOConcurrencyHelpers
import ServiceKit

/// A tmux control-mode client (`tmux -C attach-session -f ignore-size`) on an SSH channel: it
/// never resizes the session's windows, reports every pane's output as it happens, and runs
/// commands whose replies come back in order.
final class TmuxControlClient: Sendable {
    /// What the reader reports besides command replies.
    enum Event: Sendable {
        /// Output of a pane.
        case output(pane: String, data: [UInt8])
        /// A notification (`window-pane-changed`, `layout-change`, …).
        case notification(name: String, arguments: String)
    }

    private struct State {
        /// Commands sent and not answered yet, oldest first.
        var waiting: [(id: Int, continuation: CheckedContinuation<(TmuxReply, UInt64), any Error>, onReply: (@Sendable (TmuxReply) -> UInt64)?)] =
            []
        var nextID = 0
        var ended: APIError?
    }

    private let stream: SSHCommandStream
    private let state = NIOLockedValueBox(State())
    private let session: String
    /// How long tmux may take to answer a command (or the attach) before the client is ended.
    static let answerTimeout: Duration = .seconds(10)

    private init(stream: SSHCommandStream, session: String) {
        self.stream = stream
        self.session = session
    }

    /// Attaches to `session` and waits for tmux to accept the attach; then `onEvent` receives
    /// every output and notification, in order, on the reader task, until `onEnd` is called
    /// once (with why). Each command's reply is stamped with `stamp()` taken on the reader
    /// when the reply arrives (where in the output stream it came).
    static func attach(
        on connection: SSHConnection,
        socket: String?,
        session: String,
        stamp: @escaping @Sendable () -> UInt64,
        onEvent: @escaping @Sendable (Event) -> Void,
        onEnd: @escaping @Sendable (APIError) -> Void
    ) async throws -> TmuxControlClient {
        let stream = try await connection.open(try TmuxCommandLine.controlAttach(socket: socket, session: session))
        let client = TmuxControlClient(stream: stream, session: session)
        let attached = AsyncStream<Result<Void, APIError>>.makeStream()
        Task {
            var parser = TmuxControlParser()
            var stderr: [UInt8] = []
            var first = true
            var end = APIError(.terminalInitFailed, "the tmux client of \(session) ended")
            do {
                loop: for try await chunk in stream.output {
                    let bytes: [UInt8]
                    switch chunk {
                    case .stdout(let data): bytes = data
                    case .stderr(let data):
                        if stderr.count < 4096 { stderr += data.prefix(4096 - stderr.count) }
                        continue
                    }
                    for event in parser.feed(bytes) {
                        switch event {
                        case .reply(let reply):
                            if first {
                                // The attach answers first: no command is sent before it.
                                first = false
                                if reply.isError {
                                    end = Self.attachError(reply.lines.joined(separator: " "), session: session)
                                    break loop
                                }
                                attached.continuation.yield(.success(()))
                            } else {
                                client.resolve(reply, stamp: stamp)
                            }
                        case .output(let pane, let data):
                            onEvent(.output(pane: pane, data: data))
                        case .notification(let name, let arguments):
                            onEvent(.notification(name: name, arguments: arguments))
                        case .exit(let reason):
                            end = APIError(.tmuxSessionNotFound, "the tmux session \(session) ended\(reason.map { ": \($0)" } ?? "")")
                            break loop
                        case .overflow:
                            end = APIError(.terminalInitFailed, "tmux sent a line or reply beyond the broker's bounds")
                            break loop
                        }
                    }
                }
            } catch {
                end = APIError(.sshHostUnreachable, "the SSH channel of \(session) failed: \(error)", retryAfterSeconds: 1)
            }
            if first {
                let text = String(decoding: stderr, as: UTF8.self)
                if !text.isEmpty { end = Self.attachError(text, session: session) }
            }
            stream.close()
            client.finish(end)
            attached.continuation.yield(.failure(end))
            attached.continuation.finish()
            onEnd(end)
        }
        // A tmux that never answers the attach: the channel is closed, which ends the reader.
        let timer = Task {
            try await Task.sleep(for: Self.answerTimeout)
            stream.close()
        }
        defer { timer.cancel() }
        for await result in attached.stream {
            switch result {
            case .success: return client
            case .failure(let error): throw error
            }
        }
        throw APIError(.terminalInitFailed, "the tmux client of \(session) ended before attaching")
    }

    /// The error a refused attach means to a user.
    static func attachError(_ text: String, session: String) -> APIError {
        if text.contains("can't find session") || text.contains("no server running") || text.contains("error connecting") {
            return APIError(.tmuxSessionNotFound, "no tmux session \(session) on this host")
        }
        if text.contains("not found") {
            return APIError(.terminalInitFailed, "tmux is not installed on this host")
        }
        return APIError(.terminalInitFailed, "tmux refused the attach to \(session): \(text.prefix(300))")
    }

    /// Runs one tmux command (a line of tmux's command language) and returns its reply and its
    /// stamp; a `%error` reply throws `TerminalInitFailed` with tmux's message. `onReply`, when
    /// given, runs on the reader as the reply arrives (in order with the output around it) and
    /// its result is the stamp.
    func command(_ line: String, onReply: (@Sendable (TmuxReply) -> UInt64)? = nil) async throws -> (reply: TmuxReply, stamp: UInt64) {
        let (reply, stamp): (TmuxReply, UInt64) = try await withCheckedThrowingContinuation { continuation in
            // Queued and written under one lock, so replies (which come in the order commands
            // were written) resolve the right waiter.
            let ended: APIError? = self.state.withLockedValue { state in
                if let ended = state.ended { return ended }
                state.nextID += 1
                let id = state.nextID
                state.waiting.append((id, continuation, onReply))
                Task {
                    // A command tmux never answers ends the client (and the attachment with it).
                    try await Task.sleep(for: Self.answerTimeout)
                    guard self.state.withLockedValue({ $0.waiting.contains { $0.id == id } }) else { return }
                    self.finish(APIError(.terminalInitFailed, "tmux did not answer a command in \(Self.answerTimeout)"))
                    self.close()
                }
                self.stream.send(Array((line + "\n").utf8)).whenFailure { error in
                    self.finish(APIError(.sshHostUnreachable, "the SSH channel of \(self.session) failed: \(error)", retryAfterSeconds: 1))
                }
                return nil
            }
            if let ended { continuation.resume(throwing: ended) }
        }
        if reply.isError {
            throw APIError(.terminalInitFailed, "tmux: \(reply.lines.joined(separator: " ").prefix(300))")
        }
        return (reply, stamp)
    }

    /// Detaches (the session goes on).
    func close() {
        self.stream.close()
    }

    private func resolve(_ reply: TmuxReply, stamp: @Sendable () -> UInt64) {
        guard let waiter = self.state.withLockedValue({ state in state.waiting.isEmpty ? nil : state.waiting.removeFirst() }) else { return }
        let value = !reply.isError ? waiter.onReply?(reply) ?? stamp() : stamp()
        waiter.continuation.resume(returning: (reply, value))
    }

    private func finish(_ error: APIError) {
        let waiting = self.state.withLockedValue { state in
            if state.ended == nil { state.ended = error }
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.continuation.resume(throwing: error) }
    }
}

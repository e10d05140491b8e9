import Contracts
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceKit

/// One tmux session attached once on behalf of every phone watching it: a control-mode client
/// that never resizes the session, the pane's output numbered and kept (bounded) for viewers
/// that reconnect, and the viewers themselves.
final class TerminalAttachment: Sendable {
    private struct State {
        var log: TerminalOutputLog
        var decoder = UTF8ChunkDecoder()
        var pane: String?
        var viewers: [Int: TerminalViewer] = [:]
        var ended: APIError?
    }

    let id: TerminalSessionID
    let tenant: String
    private let state: NIOLockedValueBox<State>
    private let client = NIOLockedValueBox<TmuxControlClient?>(nil)
    private let onEnd: @Sendable (TerminalAttachment) -> Void
    private let logger: Logger

    private init(id: TerminalSessionID, tenant: String, replayBytes: Int, logger: Logger, onEnd: @escaping @Sendable (TerminalAttachment) -> Void) {
        self.id = id
        self.tenant = tenant
        self.state = NIOLockedValueBox(State(log: TerminalOutputLog(maxBytes: replayBytes)))
        self.logger = logger
        self.onEnd = onEnd
    }

    /// Attaches to the session over `connection`.
    /// - Throws: `TmuxSessionNotFound`, `TerminalInitFailed` or the connection's errors.
    static func open(
        _ id: TerminalSessionID,
        tenant: String,
        host: TerminalHost,
        connection: SSHConnection,
        replayBytes: Int,
        logger: Logger,
        onEnd: @escaping @Sendable (TerminalAttachment) -> Void
    ) async throws -> TerminalAttachment {
        let attachment = TerminalAttachment(id: id, tenant: tenant, replayBytes: replayBytes, logger: logger, onEnd: onEnd)
        let client = try await TmuxControlClient.attach(
            on: connection,
            socket: host.tmuxSocket,
            session: id.name,
            stamp: { [weak attachment] in attachment?.state.withLockedValue { $0.log.lastSeq } ?? 0 },
            onEvent: { [weak attachment] event in attachment?.handle(event) },
            onEnd: { [weak attachment] error in attachment?.end(error) }
        )
        attachment.client.withLockedValue { $0 = client }
        do {
            let (pane, _) = try await attachment.paneAndScreen()
            attachment.state.withLockedValue { $0.pane = pane }
        } catch {
            client.close()
            throw error
        }
        return attachment
    }

    var viewerCount: Int { self.state.withLockedValue { $0.viewers.count } }

    /// Adds a viewer: with `after`, the output it missed since that seq when still kept, else
    /// (or without `after`) a fresh screen first.
    func add(_ viewer: TerminalViewer, after: UInt64?) async throws {
        let caughtUp: Bool = try self.state.withLockedValue { state in
            if let ended = state.ended { throw ended }
            state.viewers[viewer.id] = viewer
            guard let after, let missed = state.log.chunks(after: after) else { return false }
            for chunk in missed { viewer.push(.output(seq: chunk.seq, data: String(decoding: chunk.data, as: UTF8.self))) }
            return true
        }
        if !caughtUp { try await self.sendScreen(to: viewer) }
    }

    /// Removes a viewer; the last one to leave detaches the session.
    func remove(_ viewer: TerminalViewer) {
        let last = self.state.withLockedValue { state in
            state.viewers[viewer.id] = nil
            return state.viewers.isEmpty && state.ended == nil
        }
        if last { self.close(APIError(.serviceUnavailable, "no viewer left")) }
    }

    /// A fresh screen for `viewer` (first paint, or after it fell behind).
    func sendScreen(to viewer: TerminalViewer) async throws {
        let (_, frame) = try await self.paneAndScreen()
        viewer.deliver(screen: frame)
    }

    /// Types `bytes` into the session's active pane, exactly (`send-keys -H`).
    func input(_ bytes: [UInt8]) async throws {
        guard !bytes.isEmpty else { return }
        guard let client = self.client.withLockedValue({ $0 }), let pane = self.state.withLockedValue({ $0.pane }) else {
            throw APIError(.terminalInitFailed, "the session is not attached")
        }
        _ = try await client.command("send-keys -t \(pane) -H \(TmuxControlParser.hexKeys(bytes))")
    }

    /// Detaches and ends every viewer with `error`.
    func close(_ error: APIError) {
        self.client.withLockedValue { $0 }?.close()
        self.end(error)
    }

    private func paneAndScreen() async throws -> (String, TerminalFrame) {
        guard let client = self.client.withLockedValue({ $0 }) else { throw APIError(.terminalInitFailed, "the session is not attached") }
        let target = TmuxControlParser.quote("=" + self.id.name + ":")
        let (described, _) = try await client.command("display-message -p -t \(target) \(TmuxControlParser.quote(TerminalScreen.paneFormat))")
        guard let line = described.lines.first, let pane = TerminalScreen.parsePane(line) else {
            throw APIError(.terminalInitFailed, "tmux did not describe the session's active pane")
        }
        let (captured, seq) = try await client.command("capture-pane -p -e -t \(pane.pane)")
        let screen = TerminalScreen(cols: pane.cols, rows: pane.rows, cursorX: pane.cursorX, cursorY: pane.cursorY, lines: captured.lines)
        self.state.withLockedValue { $0.pane = pane.pane }
        return (pane.pane, .screen(seq: seq, cols: pane.cols, rows: pane.rows, data: screen.painted))
    }

    private func handle(_ event: TmuxControlClient.Event) {
        switch event {
        case .output(let pane, let data):
            self.state.withLockedValue { state in
                guard pane == state.pane else { return }
                let text = state.decoder.decode(data)
                guard !text.isEmpty else { return }
                let seq = state.log.append(Array(text.utf8))
                for viewer in state.viewers.values { viewer.push(.output(seq: seq, data: text)) }
            }
        case .notification(let name, _):
            // The active pane or window changed: every viewer gets the new one's screen.
            guard name == "window-pane-changed" || name == "session-window-changed" else { return }
            Task {
                guard let (_, frame) = try? await self.paneAndScreen() else { return }
                for viewer in self.state.withLockedValue({ Array($0.viewers.values) }) { viewer.deliver(screen: frame) }
            }
        }
    }

    private func end(_ error: APIError) {
        let viewers: [TerminalViewer]? = self.state.withLockedValue { state in
            guard state.ended == nil else { return nil }
            state.ended = error
            defer { state.viewers = [:] }
            return Array(state.viewers.values)
        }
        guard let viewers else { return }
        for viewer in viewers { viewer.end(error) }
        self.onEnd(self)
    }
}

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
    /// Names this attachment: seqs are its own, so a viewer resumes with `after` only on the
    /// attachment it saw (`?attachment=`), and gets a fresh screen on any other.
    let attachmentID = randomHex(bytes: 8)
    private let state: NIOLockedValueBox<State>
    private let client = NIOLockedValueBox<TmuxControlClient?>(nil)
    private let recorder = NIOLockedValueBox<TerminalRecorder?>(nil)
    /// Why the attachment is not recorded (the recorder could not start), or nil when it is.
    let unrecorded = NIOLockedValueBox<String?>(nil)
    /// Its recording's reservation, released when it ends.
    private let reservation = NIOLockedValueBox<(file: URL, recordings: TerminalRecordings)?>(nil)
    /// Viewers it takes at once (`terminal.max-viewers-per-session`).
    private let maxViewers: Int
    private let onEnd: @Sendable (TerminalAttachment) -> Void
    private let logger: Logger

    private init(
        id: TerminalSessionID,
        tenant: String,
        replayBytes: Int,
        maxViewers: Int,
        logger: Logger,
        onEnd: @escaping @Sendable (TerminalAttachment) -> Void
    ) {
        self.maxViewers = maxViewers
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
        maxViewers: Int,
        recordings: TerminalRecordings,
        logger: Logger,
        onEnd: @escaping @Sendable (TerminalAttachment) -> Void
    ) async throws -> TerminalAttachment {
        let attachment = TerminalAttachment(
            id: id,
            tenant: tenant,
            replayBytes: replayBytes,
            maxViewers: maxViewers,
            logger: logger,
            onEnd: onEnd
        )
        let client = try await TmuxControlClient.attach(
            on: connection,
            socket: host.tmuxSocket,
            session: id.name,
            stamp: { [weak attachment] in attachment?.state.withLockedValue { $0.log.lastSeq } ?? 0 },
            onEvent: { [weak attachment] event in attachment?.handle(event) },
            onEnd: { [weak attachment] error in attachment?.end(error) }
        )
        attachment.client.withLockedValue { $0 = client }
        let pane: (pane: String, cols: Int, rows: Int, cursorX: Int, cursorY: Int)
        do {
            pane = try await attachment.describePane(client)
        } catch {
            client.close()
            throw error as? APIError ?? APIError(.terminalInitFailed, "the session's pane could not be read: \(error)")
        }
        attachment.state.withLockedValue { $0.pane = pane.pane }
        let header = AsciicastHeader(
            width: pane.cols,
            height: pane.rows,
            timestamp: Int(Date().timeIntervalSince1970),
            title: "\(id.name) on \(host.name)",
            env: ["TERM": "xterm-256color"]
        )
        // A recording that cannot start (a full disk, a folder it may not write) does not stop
        // the attach, for this tenant or any other: it goes on unrecorded, which the viewers'
        // hello says and the audit trail keeps.
        do {
            let file = try recordings.reserve(tenant: tenant, session: id)
            do {
                let recorder = try TerminalRecorder(file: file, header: header, maxBytes: recordings.maxBytes)
                attachment.recorder.withLockedValue { $0 = recorder }
                attachment.reservation.withLockedValue { $0 = (file, recordings) }
            } catch {
                recordings.finished(file, tenant: tenant)
                throw error
            }
        } catch {
            attachment.unrecorded.withLockedValue { $0 = "the recording could not be started: \(error)" }
            logger.warning("attach not recorded", metadata: ["session": "\(id)", "error": "\(error)"])
        }
        return attachment
    }

    var viewerCount: Int { self.state.withLockedValue { $0.viewers.count } }

    /// Whether the attachment has ended (its tmux client is gone).
    var isEnded: Bool { self.state.withLockedValue { $0.ended != nil } }

    /// Adds a viewer: with `after`, the output it missed since that seq when still kept, else
    /// (or without `after`) a fresh screen first.
    func add(_ viewer: TerminalViewer, after: UInt64?) async throws {
        let caughtUp: Bool = try self.state.withLockedValue { state in
            if let ended = state.ended { throw ended }
            guard state.viewers.count < self.maxViewers else {
                throw APIError(
                    .rateLimited,
                    "this session has \(self.maxViewers) viewers on this server (terminal.max-viewers-per-session)",
                    retryAfterSeconds: 5
                )
            }
            state.viewers[viewer.id] = viewer
            guard let after, let missed = state.log.chunks(after: after) else { return false }
            for chunk in missed { viewer.push(.output(seq: chunk.seq, data: String(decoding: chunk.data, as: UTF8.self))) }
            return true
        }
        guard !caughtUp else { return }
        do {
            try await self.sendScreen(to: viewer)
        } catch {
            self.remove(viewer)
            throw error
        }
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
        // Recorded as sent, before the echo it causes.
        self.recorder.withLockedValue { $0 }?.record(.input(String(decoding: bytes, as: UTF8.self)))
        _ = try await client.command("send-keys -t \(pane) -H \(TmuxControlParser.hexKeys(bytes))")
    }

    /// Detaches and ends every viewer with `error`.
    func close(_ error: APIError) {
        self.client.withLockedValue { $0 }?.close()
        self.end(error)
    }

    private func describePane(_ client: TmuxControlClient) async throws -> (pane: String, cols: Int, rows: Int, cursorX: Int, cursorY: Int) {
        let target = TmuxControlParser.quote("=" + self.id.name + ":")
        let (described, _) = try await client.command("display-message -p -t \(target) \(TmuxControlParser.quote(TerminalScreen.paneFormat))")
        guard let line = described.lines.first, let pane = TerminalScreen.parsePane(line) else {
            throw APIError(.terminalInitFailed, "tmux did not describe the session's active pane")
        }
        return pane
    }

    /// The active pane's screen. It is painted and recorded on the reader as tmux's answer
    /// arrives, so the recording has it in its place among the outputs.
    private func paneAndScreen() async throws -> (String, TerminalFrame) {
        guard let client = self.client.withLockedValue({ $0 }) else { throw APIError(.terminalInitFailed, "the session is not attached") }
        let pane = try await self.describePane(client)
        let painted = NIOLockedValueBox("")
        let (_, seq) = try await client.command("capture-pane -p -e -t \(pane.pane)") { [weak self] reply in
            let screen = TerminalScreen(cols: pane.cols, rows: pane.rows, cursorX: pane.cursorX, cursorY: pane.cursorY, lines: reply.lines)
            let text = screen.painted
            painted.withLockedValue { $0 = text }
            guard let self else { return 0 }
            return self.state.withLockedValue { state in
                if let recorder = self.recorder.withLockedValue({ $0 }) {
                    recorder.record(.marker("screen"))
                    recorder.record(.output(text))
                }
                return state.log.lastSeq
            }
        }
        self.state.withLockedValue { $0.pane = pane.pane }
        return (pane.pane, .screen(seq: seq, cols: pane.cols, rows: pane.rows, data: painted.withLockedValue { $0 }))
    }

    private func handle(_ event: TmuxControlClient.Event) {
        switch event {
        case .output(let pane, let data):
            self.state.withLockedValue { state in
                guard pane == state.pane else { return }
                let text = state.decoder.decode(data)
                guard !text.isEmpty else { return }
                let seq = state.log.append(Array(text.utf8))
                self.recorder.withLockedValue { $0 }?.record(.output(text))
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
        self.recorder.withLockedValue { $0 }?.close()
        if let reservation = self.reservation.withLockedValue({ $0 }) { reservation.recordings.finished(reservation.file, tenant: self.tenant) }
        for viewer in viewers { viewer.end(error) }
        self.onEnd(self)
    }
}

import Contracts
import NIOConcurrencyHelpers
import ServiceKit

/// What a viewer is sent, in order.
enum TerminalFrame: Sendable, Equatable {
    /// The whole screen, painted; it includes every output up to `seq`.
    case screen(seq: UInt64, cols: Int, rows: Int, data: String)
    /// Output after the previous frame.
    case output(seq: UInt64, data: String)
    /// A refusal of something the viewer sent (the attach goes on).
    case notice(code: ErrorCode, message: String)
    /// Time for a WebSocket ping frame.
    case ping

    var seq: UInt64 {
        switch self {
        case .screen(let seq, _, _, _), .output(let seq, _): seq
        case .notice, .ping: 0
        }
    }

    var bytes: Int {
        switch self {
        case .screen(_, _, _, let data), .output(_, let data): data.utf8.count + 64
        case .notice(_, let message): message.utf8.count + 64
        case .ping: 8
        }
    }
}

/// One phone's view of an attached session: a bounded mailbox the session's reader fills
/// without ever waiting, and the viewer's writer drains. A viewer that falls more than its
/// budget behind loses what waits and gets a fresh screen instead (it never slows the agent,
/// the reader or the other viewers).
final class TerminalViewer: Sendable {
    private struct Mailbox {
        var frames: [TerminalFrame] = []
        var bytes = 0
        /// Fell behind: what waited was dropped; the writer asks for a fresh screen.
        var lagging = false
        /// The highest seq dropped while lagging: a screen older than it leaves the viewer lagging.
        var droppedThrough: UInt64 = 0
        var ended: APIError?
        var waiter: CheckedContinuation<Void, Never>?
    }

    let id: Int
    let identity: AccessIdentity
    let inputEnabled: Bool
    private let budget: Int
    private let mailbox = NIOLockedValueBox(Mailbox())

    init(id: Int, identity: AccessIdentity, inputEnabled: Bool, budget: Int) {
        self.id = id
        self.identity = identity
        self.inputEnabled = inputEnabled
        self.budget = budget
    }

    /// Adds `frame` unless the viewer is lagging or ended; past the budget, drops what waits
    /// and marks the viewer lagging.
    func push(_ frame: TerminalFrame) {
        let waiter: CheckedContinuation<Void, Never>? = self.mailbox.withLockedValue { box in
            // While lagging, frames are still kept (within the budget): the fresh screen keeps
            // those that come after it.
            guard box.ended == nil else { return nil }
            if box.bytes + frame.bytes > self.budget {
                box.droppedThrough = max(box.droppedThrough, frame.seq, box.frames.map(\.seq).max() ?? 0)
                box.frames = []
                box.bytes = 0
                box.lagging = true
            } else {
                box.frames.append(frame)
                box.bytes += frame.bytes
            }
            defer { box.waiter = nil }
            return box.waiter
        }
        waiter?.resume()
    }

    /// A fresh screen: replaces whatever waits that it already includes, ends lagging.
    func deliver(screen: TerminalFrame) {
        let waiter: CheckedContinuation<Void, Never>? = self.mailbox.withLockedValue { box in
            guard box.ended == nil else { return nil }
            box.frames = [screen] + box.frames.filter { $0.seq > screen.seq || $0.seq == 0 }
            box.bytes = box.frames.reduce(0) { $0 + $1.bytes }
            // Output after the screen was dropped since it was taken: another screen is needed.
            box.lagging = box.droppedThrough > screen.seq
            defer { box.waiter = nil }
            return box.waiter
        }
        waiter?.resume()
    }

    /// Ends the viewer (the session ended, or the broker is stopping).
    func end(_ error: APIError) {
        let waiter: CheckedContinuation<Void, Never>? = self.mailbox.withLockedValue { box in
            if box.ended == nil { box.ended = error }
            defer { box.waiter = nil }
            return box.waiter
        }
        waiter?.resume()
    }

    /// What to do next, waiting until there is something.
    enum Next: Sendable {
        case frames([TerminalFrame])
        case needScreen
        case ended(APIError)
    }

    func next() async -> Next {
        while true {
            let taken: Next? = self.mailbox.withLockedValue { box in
                if let ended = box.ended { return .ended(ended) }
                if box.lagging { return .needScreen }
                guard !box.frames.isEmpty else { return nil }
                defer {
                    box.frames = []
                    box.bytes = 0
                }
                return .frames(box.frames)
            }
            if let taken { return taken }
            if Task.isCancelled { return .ended(APIError(.serviceUnavailable, "the viewer went away")) }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = self.mailbox.withLockedValue { box in
                        if box.ended != nil || box.lagging || !box.frames.isEmpty { return true }
                        box.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                self.end(APIError(.serviceUnavailable, "the viewer went away"))
            }
        }
    }
}

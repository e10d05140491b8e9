/// What a writer's run on the event loop (``WebSocketIdleWriter/writeAvailable(to:)``) got to.
public enum WebSocketWriteOutcome: Sendable {
    /// Everything ready was written: the writer may sleep.
    case idle
    /// Something ready needs a wait (the socket is full, a read of the log, a new
    /// subscription): ``WebSocketIdleWriter/writeReady(to:)`` goes on from there in a task.
    case blocked
    /// The protocol's queue ended.
    case ended
}

/// A protocol whose writer holds no task while it has nothing to write: the connection runs it
/// each time the protocol wakes it (``WebSocketConnection/start(on:handler:whenDone:)``), first
/// on the socket's event loop (``writeAvailable(to:)``), and in a short task only when it must
/// wait, so an idle connection is its objects and its socket, no task, and a live event costs
/// no task wake-up.
public protocol WebSocketIdleWriter: WebSocketProtocolHandler {
    /// Writes what is ready, then returns: true when nothing more is ready now, false when the
    /// protocol's queue ended. Its state is kept in the protocol between runs (one run at a
    /// time).
    func writeReady(to writer: WebSocketFrameWriter) async throws -> Bool
    /// On the socket's event loop: writes what is ready as long as nothing needs a wait (it asks
    /// `writer.isReady()` before each write and uses the `append` methods), and says where it
    /// stopped. ``writeReady(to:)`` goes on from there when it is ``WebSocketWriteOutcome/blocked``.
    /// By default, always blocked, and ``writesOnEventLoop`` is false.
    func writeAvailable(to writer: WebSocketFrameWriter) throws -> WebSocketWriteOutcome
    /// Whether ``writeAvailable(to:)`` writes anything: if not, every run is a task, started at
    /// once wherever the wake comes from.
    var writesOnEventLoop: Bool { get }
    /// Calls `wake` (once, from anywhere) when something is ready to write; returns false,
    /// without keeping `wake`, when something is ready already.
    func sleep(until wake: @escaping @Sendable () -> Void) -> Bool
}

extension WebSocketIdleWriter {
    public func writeAvailable(to writer: WebSocketFrameWriter) throws -> WebSocketWriteOutcome {
        .blocked
    }

    public var writesOnEventLoop: Bool { false }

    /// Writes until the queue ends, waiting in place while it is idle (``WebSocketConnection/run(on:handler:)``).
    public func write(to writer: WebSocketFrameWriter) async throws {
        while try await self.writeReady(to: writer) {
            writer.endBatch()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if !self.sleep(until: { continuation.resume() }) { continuation.resume() }
            }
        }
    }
}

/// The runs of an idle writer (``WebSocketConnection/start(on:handler:whenDone:)``), one at a
/// time: a wake starts a run on the socket's event loop; a run that must wait goes on in a
/// task; a run that finds nothing more ready arms the wake again (and the next run may start at
/// once: nothing touches the writer after that), and the one that finds the queue ended ends the
/// connection.
final class WebSocketWriterRuns<Handler: WebSocketIdleWriter>: @unchecked Sendable {
    private let connection: WebSocketConnection
    private let socket: UpgradedWebSocket
    private let handler: Handler
    /// Used by the current run only.
    private let writer: WebSocketFrameWriter
    private let whenDone: @Sendable () -> Void
    /// Made once (a closure per sleep would be an allocation per batch); set before the first
    /// run and let go by the last, which ends the cycle through the handler's queue.
    private var wakeUp: (@Sendable () -> Void)?

    init(
        connection: WebSocketConnection,
        socket: UpgradedWebSocket,
        handler: Handler,
        writer: WebSocketFrameWriter,
        whenDone: @escaping @Sendable () -> Void
    ) {
        self.connection = connection
        self.socket = socket
        self.handler = handler
        self.writer = writer
        self.whenDone = whenDone
        self.wakeUp = { [self] in self.wake() }
    }

    /// Starts a run: at once on the socket's event loop, else on it (or in a task, for a
    /// protocol that does not write on the event loop).
    func wake() {
        guard self.handler.writesOnEventLoop else {
            Task { await self.runInTask() }
            return
        }
        let eventLoop = self.socket.eventLoop
        if eventLoop.inEventLoop {
            self.runOnEventLoop()
        } else {
            eventLoop.execute { self.runOnEventLoop() }
        }
    }

    private func runOnEventLoop() {
        while true {
            let outcome: WebSocketWriteOutcome
            do {
                outcome = try self.handler.writeAvailable(to: self.writer)
            } catch {
                self.connection.writeFailed(error)
                Task { await self.end() }
                return
            }
            switch outcome {
            case .idle:
                self.writer.endBatch()
                if self.sleep() { return }
            case .blocked:
                self.writer.endBatch()
                Task { await self.runInTask() }
                return
            case .ended:
                Task { await self.end() }
                return
            }
        }
    }

    private func runInTask() async {
        while true {
            let idle: Bool
            do {
                idle = try await self.handler.writeReady(to: self.writer)
            } catch {
                self.connection.writeFailed(error)
                idle = false
            }
            guard idle else { break }
            self.writer.endBatch()
            if self.sleep() { return }
        }
        await self.end()
    }

    /// Arms the wake; false when something is ready already (the run goes on).
    private func sleep() -> Bool {
        self.handler.sleep(until: self.wakeUp!)
    }

    private func end() async {
        await self.connection.end(on: self.socket, handler: self.handler, writer: self.writer)
        self.wakeUp = nil
        self.whenDone()
    }
}

import NIOCore
import NIOWebSocket
import Synchronization
import Testing

@testable import ServiceKit

/// An idle writer over a queue of texts: "later:" texts need a wait (it writes them from
/// `writeReady`, after a sleep), the others are written on the event loop.
private final class QueueWriter: WebSocketIdleWriter, Sendable {
    private struct State {
        var queue: [String] = []
        var closed = false
        var wake: (@Sendable () -> Void)?
        var runsOnLoop = 0
        var runsOffLoop = 0
        var tasks = 0
    }

    private let state = Mutex(State())
    let eventLoop: any EventLoop
    var writesOnEventLoop: Bool { true }

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    var counts: (onLoop: Int, offLoop: Int, tasks: Int) {
        self.state.withLock { ($0.runsOnLoop, $0.runsOffLoop, $0.tasks) }
    }

    func push(_ texts: [String]) {
        self.change { $0.queue += texts }
    }

    func received(_ message: WebSocketClientMessage, on connection: WebSocketConnection) async -> Bool { true }
    func stop() { self.change { $0.closed = true } }
    func ping() {}

    func writeAvailable(to writer: WebSocketFrameWriter) throws -> WebSocketWriteOutcome {
        let onLoop = self.eventLoop.inEventLoop
        self.state.withLock { state in
            if onLoop {
                state.runsOnLoop += 1
            } else {
                state.runsOffLoop += 1
            }
        }
        while true {
            let next: String?? = self.state.withLock { state in
                if state.closed { return .some(nil) }
                return state.queue.first.map { .some($0) } ?? nil
            }
            guard let next else { return .idle }
            guard let text = next else { return .ended }
            guard !text.hasPrefix("later:"), try writer.isReady() else { return .blocked }
            try writer.append(ByteBuffer(string: text))
            self.state.withLock { _ = $0.queue.removeFirst() }
        }
    }

    func writeReady(to writer: WebSocketFrameWriter) async throws -> Bool {
        self.state.withLock { $0.tasks += 1 }
        while true {
            let next: String?? = self.state.withLock { state in
                if state.closed { return .some(nil) }
                guard !state.queue.isEmpty else { return nil }
                return .some(state.queue.removeFirst())
            }
            guard let next else { return true }
            guard let text = next else { return false }
            if text.hasPrefix("later:") {
                writer.endBatch()
                try await Task.sleep(for: .milliseconds(5))
            }
            try await writer.send(ByteBuffer(string: text))
        }
    }

    func sleep(until wake: @escaping @Sendable () -> Void) -> Bool {
        self.state.withLock { state in
            guard state.queue.isEmpty, !state.closed else { return false }
            state.wake = wake
            return true
        }
    }

    private func change(_ body: (inout State) -> Void) {
        let wake: (@Sendable () -> Void)? = self.state.withLock { state in
            body(&state)
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }
}

@Suite("An idle writer's runs: on the socket's event loop while nothing needs a wait, in a task when something does, in order")
struct WebSocketWriterRunsTests {
    @Test("texts written on the event loop and after waits arrive in order; the close ends the connection once")
    func runs() async throws {
        let loopback = try await LoopbackWebSocket.open()
        defer { loopback.close() }
        let (socket, collector) = (loopback.socket, loopback.collector)

        let connection = WebSocketConnection.forTests()
        let handler = QueueWriter(eventLoop: socket.eventLoop)
        let (done, ended) = AsyncStream<Void>.makeStream()
        connection.start(on: socket, handler: handler) { ended.yield() }

        let texts = (0..<40).map { $0 % 10 == 5 ? "later:\($0)" : "now:\($0)" }
        for start in stride(from: 0, to: texts.count, by: 4) {
            handler.push(Array(texts[start..<(start + 4)]))
            try await Task.sleep(for: .milliseconds(20))
        }
        // Pushed on the event loop: written there at once.
        try await socket.eventLoop.submit { handler.push(["loop:1", "loop:2"]) }.get()
        let expected = texts + ["loop:1", "loop:2"]
        let deadline = ContinuousClock.now + .seconds(10)
        while collector.frames.count < expected.count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(collector.frames.map(\.1) == expected)
        #expect(collector.frames.allSatisfy { $0.0 == 0x1 })

        let counts = handler.counts
        #expect(counts.offLoop == 0)  // every wake, from the test or the loop, runs on the loop
        // The first wake at least; how many more find the writer asleep depends on the machine.
        #expect(counts.onLoop >= 1)
        // A task only after a wait (four "later:" texts), not one per push (eleven).
        #expect((1...4).contains(counts.tasks))

        connection.close(.normalClosure, "bye")
        // whenDone, within the deadline.
        let finished = Task {
            var doneIterator = done.makeAsyncIterator()
            return await doneIterator.next() != nil
        }
        let watchdog = Task {
            try await Task.sleep(until: deadline)
            finished.cancel()
        }
        #expect(await finished.value)
        watchdog.cancel()
        while collector.frames.last?.0 != 0x8, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(collector.frames.last?.0 == 0x8)
    }
}

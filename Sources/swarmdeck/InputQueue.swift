import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes waiting for a process's standard input, at most `limit`, written in order by a
/// thread of its own with blocking writes: the caller never waits on the process reading.
/// Closing it (the process ended) makes the writer stop; a write the process refuses (it
/// closed its input) fails every later append.
final class InputQueue: Sendable {
    private struct State {
        var chunks: [[UInt8]] = []
        var queued = 0
        var failure: String?
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    /// The most bytes that may wait.
    let limit: Int

    /// Takes ownership of `fd` (closed when the writer stops).
    init(fd: Int32, limit: Int) {
        self.limit = limit
        Thread.detachNewThread { [self] in self.writeLoop(fd) }
    }

    /// Bytes waiting (the one being written included).
    var queued: Int { self.state.withLock { $0.queued } }

    /// Queues `bytes`.
    /// - Throws: when the queue would exceed its limit, or the process no longer reads.
    func append(_ bytes: [UInt8]) throws {
        try self.state.withLock { (state) throws(ChildProcessError) in
            if let failure = state.failure { throw ChildProcessError("writing to the command's input: \(failure)") }
            guard !state.closed else { throw ChildProcessError("the command has ended") }
            guard state.queued + bytes.count <= self.limit else {
                throw ChildProcessError(
                    "the command's input queue is full (\(state.queued) bytes waiting, at most \(self.limit)): it is not reading (paused?); resume it or wait"
                )
            }
            state.chunks.append(bytes)
            state.queued += bytes.count
        }
        self.wake.signal()
    }

    /// Stops the writer (the process has ended).
    func close() {
        self.state.withLock { $0.closed = true }
        self.wake.signal()
    }

    private func writeLoop(_ fd: Int32) {
        defer { Glibc.close(fd) }
        while true {
            self.wake.wait()
            while let chunk = self.state.withLock({ state -> [UInt8]? in state.closed ? nil : state.chunks.first }) {
                var offset = 0
                while offset < chunk.count {
                    let written = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                    if written < 0 {
                        if errno == EINTR { continue }
                        let failure = String(cString: strerror(errno))
                        self.state.withLock { state in
                            state.failure = failure
                            state.chunks = []
                            state.queued = 0
                        }
                        return
                    }
                    offset += written
                }
                self.state.withLock { state in
                    state.chunks.removeFirst()
                    state.queued -= chunk.count
                }
            }
            if self.state.withLock({ $0.closed }) { return }
        }
    }
}

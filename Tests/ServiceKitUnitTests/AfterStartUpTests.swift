import Logging
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@testable import ServiceKit

@Suite("A service's own services wait for its start-up work (AfterStartUp)")
struct AfterStartUpTests {
    /// Counts its runs, then waits for the group's shutdown.
    final class Counted: Service {
        let runs = Mutex(0)

        func run() async throws {
            self.runs.withLock { $0 += 1 }
            try? await gracefulShutdown()
        }
    }

    @Test("it runs once begun, not before")
    func runsOnceBegun() async throws {
        let inner = Counted()
        let wrapped = AfterStartUp(inner)
        let group = ServiceGroup(services: [wrapped], logger: Logger(label: "test"))
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(200))
            #expect(inner.runs.withLock { $0 } == 0)
            wrapped.begin()
            #expect(await eventually { inner.runs.withLock { $0 } == 1 })
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("asked to shut down before it began, it ends without running")
    func shutDownFirst() async throws {
        let inner = Counted()
        let wrapped = AfterStartUp(inner)
        let group = ServiceGroup(services: [wrapped], logger: Logger(label: "test"))
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(100))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        wrapped.begin()
        #expect(inner.runs.withLock { $0 } == 0)
    }

    @Test("cancelled before it began, it ends without running")
    func cancelledFirst() async throws {
        let inner = Counted()
        let wrapped = AfterStartUp(inner)
        let running = Task { try await wrapped.run() }
        try await Task.sleep(for: .milliseconds(100))
        running.cancel()
        try await running.value
        wrapped.begin()
        #expect(inner.runs.withLock { $0 } == 0)
    }
}

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

    struct NotEnded: Error {}

    @Test("asked to shut down before it began, it ends without running")
    func shutDownFirst() async throws {
        let inner = Counted()
        let wrapped = AfterStartUp(inner)
        let group = ServiceGroup(services: [wrapped], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        await group.triggerGracefulShutdown()
        // One that ignored the shutdown fails the test rather than hanging it.
        try await withDeadline(.seconds(10), orThrow: NotEnded()) { try await running.value }
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
        try await withDeadline(.seconds(10), orThrow: NotEnded()) { try await running.value }
        wrapped.begin()
        #expect(inner.runs.withLock { $0 } == 0)
    }

    /// Releases what it holds at shutdown.
    struct Releasing: ReleasingService {
        func run() async throws { try? await gracefulShutdown() }
    }

    @Test("a releasing service is not held back; the order stays (the group stops them in reverse)")
    func releasingServicesStartAtOnce() {
        let (services, waiting) = AfterStartUp.wrapping([Releasing(), Counted(), Counted()])
        #expect(services.count == 3)
        #expect(services[0] is Releasing)
        #expect(services.dropFirst().allSatisfy { $0 is AfterStartUp })
        #expect(waiting.count == 2 && waiting.map(ObjectIdentifier.init) == services.dropFirst().map { ObjectIdentifier($0 as! AfterStartUp) })
    }
}

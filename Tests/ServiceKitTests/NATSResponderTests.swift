import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

@Suite("NATS responder (live)")
struct NATSResponderTests {
    /// What the handler saw: how many ran at once, at most; and whether it may answer.
    final class Handling: Sendable {
        let running = Mutex((now: 0, most: 0))
        let released = Atomic(false)

        func handle(_ message: NATSMessage, on connection: NATSConnection) async {
            self.running.withLock { running in
                running.now += 1
                running.most = max(running.most, running.now)
            }
            while !self.released.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(10)) }
            self.running.withLock { $0.now -= 1 }
            if let reply = message.reply { try? connection.publish(Array("re:".utf8) + message.payload, to: reply) }
        }
    }

    /// The responder as a service of a group, as a service runs it.
    struct Serving: Service {
        let responder: NATSResponder
        let handling: Handling
        let connection: NATSConnection

        func run() async throws {
            try await self.responder.serve { await self.handling.handle($0, on: self.connection) }
        }
    }

    /// Sends requests `indexes` to `subject` at once: the answers.
    static func ask(_ connection: NATSConnection, _ subject: String, _ indexes: Range<Int>) -> Task<Set<String>, any Error> {
        Task {
            try await withThrowingTaskGroup(of: String.self) { group in
                for index in indexes {
                    group.addTask {
                        let answer = try await connection.request(Array("\(index)".utf8), to: subject, timeout: .seconds(60))
                        return String(decoding: answer.payload, as: UTF8.self)
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
        }
    }

    @Test(
        "ready once the server has the subscription, never more than maxConcurrent handled at once; a graceful shutdown answers what it holds, then not ready"
    )
    func readinessAndConcurrency() async throws {
        let serving = try await TestEnvironment.connect()
        let asking = try await TestEnvironment.connect(sendAsap: true)
        let subject = TestEnvironment.uniqueName("responder")
        let responder = NATSResponder(
            name: "echo",
            connection: serving,
            subject: subject,
            queue: "echo",
            buffering: .dropNewest(maxMessages: 100),
            maxConcurrent: 3,
            logger: Logger(label: "test")
        )
        #expect(!responder.isSubscribed)
        #expect(responder.readiness.name == "echo")
        let handling = Handling()
        var configuration = ServiceGroupConfiguration(
            services: [Serving(responder: responder, handling: handling, connection: serving)],
            logger: Logger(label: "test")
        )
        configuration.maximumGracefulShutdownDuration = .seconds(30)
        let group = ServiceGroup(configuration: configuration)
        let service = Task { try await group.run() }
        do {
            #expect(await eventually { responder.isSubscribed })

            // Requests sent from another connection once it is ready find it (no "no responders").
            let first = Self.ask(asking, subject, 0..<10)
            #expect(await eventually { handling.running.withLock { $0.now } == 3 })
            // The other seven wait in the subscription's buffer while three are handled.
            try await Task.sleep(for: .milliseconds(500))
            #expect(handling.running.withLock { $0.most } == 3)
            handling.released.store(true, ordering: .releasing)
            #expect(try await first.value == Set((0..<10).map { "re:\($0)" }))
            #expect(handling.running.withLock { $0.most } == 3)

            // A graceful shutdown while a request is handled: the request is still answered
            // before the service ends, and then it is not ready.
            handling.released.store(false, ordering: .releasing)
            let last = Self.ask(asking, subject, 10..<11)
            #expect(await eventually { handling.running.withLock { $0.now } == 1 })
            await group.triggerGracefulShutdown()
            try await Task.sleep(for: .milliseconds(200))
            handling.released.store(true, ordering: .releasing)
            #expect(try await last.value == ["re:10"])
            try await service.value
            #expect(!responder.isSubscribed)
        } catch {
            service.cancel()
            handling.released.store(true, ordering: .releasing)
            await asking.drain()
            await serving.drain()
            _ = try? await service.value
            throw error
        }
        await asking.drain()
        await serving.drain()
    }
}

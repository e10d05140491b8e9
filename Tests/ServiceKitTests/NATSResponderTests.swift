import Foundation
import ServiceKit
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

    @Test("ready once the server has the subscription, never more than maxConcurrent handled at once, not ready once it stops")
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
            maxConcurrent: 3
        )
        #expect(!responder.isSubscribed)
        #expect(responder.readiness.name == "echo")
        let handling = Handling()
        let service = Task { try await responder.serve { await handling.handle($0, on: serving) } }
        #expect(await eventually { responder.isSubscribed })

        // Requests sent from another connection once it is ready find it (no "no responders").
        let requests = Task {
            try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let answer = try await asking.request(Array("\(index)".utf8), to: subject, timeout: .seconds(60))
                        return String(decoding: answer.payload, as: UTF8.self)
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
        }
        #expect(await eventually { handling.running.withLock { $0.now } == 3 })
        // The other seven wait in the subscription's buffer while three are handled.
        try await Task.sleep(for: .milliseconds(500))
        #expect(handling.running.withLock { $0.most } == 3)
        handling.released.store(true, ordering: .releasing)
        #expect(try await requests.value == Set((0..<10).map { "re:\($0)" }))
        #expect(handling.running.withLock { $0.most } == 3)

        // Stopped (a task cancelled drains the subscription): no longer ready.
        service.cancel()
        try await service.value
        #expect(!responder.isSubscribed)
        await asking.drain()
        await serving.drain()
    }
}

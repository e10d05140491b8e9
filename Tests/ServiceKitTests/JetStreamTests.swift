import Foundation
import ServiceKit
import TestSupport
import Testing

@Suite("JetStream (live)")
struct JetStreamTests {
    /// A stream of its own for one test.
    private func makeStream(ackWait: Duration = .seconds(30)) async throws -> (NATSConnection, JetStream, String, JetStreamConsumer) {
        let connection = try await TestEnvironment.connect(sendAsap: true)
        let jetStream = JetStream(connection: connection)
        let name = TestEnvironment.uniqueName("S").uppercased()
        let subject = name.lowercased() + ".work"
        try await jetStream.createOrUpdateStream(StreamConfiguration(name: name, subjects: [subject], storage: .memory))
        try await jetStream.createOrUpdateConsumer(stream: name, ConsumerConfiguration(durableName: "worker", ackWait: ackWait))
        return (connection, jetStream, subject, jetStream.consumer(stream: name, name: "worker"))
    }

    @Test("a duplicate Nats-Msg-Id is refused and the message stored once")
    func duplicateRefused() async throws {
        let (connection, jetStream, subject, consumer) = try await self.makeStream()
        let first = try await jetStream.publish(Array("one".utf8), to: subject, messageID: "cmd-1")
        let again = try await jetStream.publish(Array("one again".utf8), to: subject, messageID: "cmd-1")
        let other = try await jetStream.publish(Array("two".utf8), to: subject, messageID: "cmd-2")
        #expect(!first.duplicate)
        #expect(again.duplicate)
        #expect(again.sequence == first.sequence)
        #expect(!other.duplicate)
        let info = try await jetStream.streamInfo(consumer.stream)
        #expect(info.state.messages == 2)
        let messages = try await consumer.fetch(batch: 10, expires: .milliseconds(500))
        #expect(messages.map { String(decoding: $0.payload, as: UTF8.self) } == ["one", "two"])
        for message in messages { try message.ack() }
        try await jetStream.deleteStream(consumer.stream)
        await connection.drain()
    }

    @Test("a nak'd message is redelivered")
    func nakRedelivers() async throws {
        let (connection, jetStream, subject, consumer) = try await self.makeStream()
        _ = try await jetStream.publish(Array("retry me".utf8), to: subject, messageID: "n-1")
        let first = try #require(try await consumer.fetch(batch: 1).first)
        #expect(first.metadata?.deliveryCount == 1)
        try first.nak()
        let second = try #require(try await consumer.fetch(batch: 1).first)
        #expect(String(decoding: second.payload, as: UTF8.self) == "retry me")
        #expect(second.metadata?.deliveryCount == 2)
        #expect(second.metadata?.streamSequence == first.metadata?.streamSequence)
        try second.ack()
        try await connection.flush()
        #expect(try await consumer.fetch(batch: 1, expires: .milliseconds(300)).isEmpty)
        try await jetStream.deleteStream(consumer.stream)
        await connection.drain()
    }

    @Test("an unacknowledged message is redelivered after the ack wait, a termed one never")
    func ackWaitRedelivers() async throws {
        let (connection, jetStream, subject, consumer) = try await self.makeStream(ackWait: .seconds(1))
        _ = try await jetStream.publish(Array("forgotten".utf8), to: subject, messageID: "u-1")
        _ = try await jetStream.publish(Array("poison".utf8), to: subject, messageID: "u-2")
        let delivered = try await consumer.fetch(batch: 2)
        #expect(delivered.count == 2)
        try delivered[1].term()
        // Nothing is acked; the first comes back once its ack wait ran out, the termed one never.
        let started = ContinuousClock.now
        let again = try #require(try await consumer.fetch(batch: 1, expires: .seconds(3)).first)
        #expect(String(decoding: again.payload, as: UTF8.self) == "forgotten")
        #expect(again.metadata?.deliveryCount == 2)
        #expect(ContinuousClock.now - started >= .milliseconds(500))
        try again.ack()
        try await connection.flush()
        #expect(try await consumer.fetch(batch: 1, expires: .milliseconds(1500)).isEmpty)
        try await jetStream.deleteStream(consumer.stream)
        await connection.drain()
    }

    @Test("a durable consumer survives its client and continues where it stopped")
    func durableSurvivesClient() async throws {
        let (connection, jetStream, subject, consumer) = try await self.makeStream()
        for index in 0..<4 {
            _ = try await jetStream.publish(Array("m\(index)".utf8), to: subject, messageID: "d-\(index)")
        }
        for message in try await consumer.fetch(batch: 2) { try message.ack() }
        try await connection.flush()
        await connection.drain()

        let other = try await TestEnvironment.connect(sendAsap: true)
        let resumed = JetStream(connection: other).consumer(stream: consumer.stream, name: "worker")
        let rest = try await resumed.fetch(batch: 10, expires: .milliseconds(500))
        #expect(rest.map { String(decoding: $0.payload, as: UTF8.self) } == ["m2", "m3"])
        for message in rest { try message.ack() }
        try await JetStream(connection: other).deleteStream(consumer.stream)
        await other.drain()
    }

    @Test(
        "300 pulls wait at once on 30 consumers through one inbox: each gets its consumer's messages, no thread per pull; a late message is redelivered at once"
    )
    func manyPullsOneInbox() async throws {
        let (connection, jetStream, subject, first) = try await self.makeStream()
        let names = (0..<30).map { "c\($0)" }
        try await jetStream.createOrUpdateStream(
            StreamConfiguration(name: first.stream, subjects: [subject, subject + ".>"], storage: .memory)
        )
        for name in names {
            try await jetStream.createOrUpdateConsumer(
                stream: first.stream,
                ConsumerConfiguration(durableName: name, filterSubject: subject + "." + name, ackWait: .seconds(30))
            )
        }
        let before = processThreads
        let (got, waiting) = try await withThrowingTaskGroup(of: (String, [String]).self) { group in
            for index in 0..<300 {
                let name = names[index % names.count]
                group.addTask {
                    let messages = try await jetStream.consumer(stream: first.stream, name: name).fetch(batch: 1, expires: .seconds(60))
                    for message in messages { try message.ack() }
                    return (name, messages.map { String(decoding: $0.payload, as: UTF8.self) })
                }
            }
            // Once they all wait, ten messages per consumer (the pulls wait a minute: a loaded
            // machine's 300 publishes must not outlast them).
            #expect(await eventually(timeout: .seconds(30)) { connection.waitingPulls == 300 })
            let waiting = processThreads
            for name in names {
                for index in 0..<10 {
                    _ = try await jetStream.publish(Array("\(name)-\(index)".utf8), to: subject + "." + name, messageID: "\(name)-\(index)")
                }
            }
            var got: [(String, [String])] = []
            for try await answer in group { got.append(answer) }
            return (got, waiting)
        }
        #expect(got.count == 300)
        #expect(
            got.allSatisfy { name, payloads in payloads.count == 1 && payloads[0].hasPrefix(name + "-") },
            "\(got.filter { $0.1.count != 1 }.prefix(5))"
        )
        #expect(Set(got.flatMap(\.1)).count == 300)
        #expect(waiting - before < 20, "threads grew from \(before) to \(waiting) while 300 pulls waited")

        // A message delivered after its pull gave up locally is handed back, not held for the ack wait.
        // The server still holds the abandoned pull request (for 20 s) when "late" arrives.
        let task = Task { try await jetStream.consumer(stream: first.stream, name: "c0").fetch(batch: 1, expires: .seconds(20)) }
        #expect(await eventually { connection.waitingPulls == 1 })
        task.cancel()
        #expect(try await task.value.isEmpty)
        _ = try await jetStream.publish(Array("late".utf8), to: subject + ".c0", messageID: "late")
        let redelivered = try await jetStream.consumer(stream: first.stream, name: "c0").fetch(batch: 1, expires: .seconds(5))
        #expect(redelivered.map { String(decoding: $0.payload, as: UTF8.self) } == ["late"])
        try await jetStream.deleteStream(first.stream)
        await connection.drain()
    }
}

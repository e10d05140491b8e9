import Foundation
import ServiceKit
import TestSupport
import Testing

@Suite("NATS connection (live)")
struct NATSConnectionTests {
    @Test("100k messages published arrive complete and in order on one subscription")
    func hundredThousandInOrder() async throws {
        let connection = try await TestEnvironment.connect()
        let subject = TestEnvironment.uniqueName("order")
        let subscription = try await connection.subscribe(to: subject)
        try await connection.flush()
        let count = 100_000

        let receiver = Task {
            var expected: UInt32 = 0
            for await message in subscription {
                let value = message.payload.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
                guard value == expected else { return (expected, false) }
                expected += 1
                if expected == count { return (expected, true) }
            }
            return (expected, false)
        }
        for index in 0..<UInt32(count) {
            try withUnsafeBytes(of: index) { try connection.publish($0, to: subject) }
        }
        try await connection.flush()
        let (received, inOrder) = await receiver.value
        #expect(received == count)
        #expect(inOrder)
        #expect(subscription.dropped == 0)
        await connection.drain()
    }

    @Test("a subject with whitespace or a control character is refused before it reaches the protocol line")
    func malformedSubjects() async throws {
        let connection = try await TestEnvironment.connect()
        let subject = TestEnvironment.uniqueName("inject")
        let subscription = try await connection.subscribe(to: subject + ".>")
        try await connection.flush()
        for bad in ["\(subject).a b", "\(subject).a\r\nPUB \(subject).x 0\r\n\r\nPUB y", "\(subject).a\tb", "", "\(subject).\u{7F}"] {
            #expect(throws: ServiceKitError.self) { try connection.publish([1], to: bad) }
            #expect(throws: ServiceKitError.self) { try connection.publish([1], to: subject + ".ok", reply: bad.isEmpty ? " " : bad) }
        }
        // The connection still works, and nothing was injected.
        try connection.publish([7], to: subject + ".ok")
        try await connection.flush()
        var iterator = subscription.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.subject == subject + ".ok" && first?.payload == [7])
        await connection.close()
    }

    @Test("a queue group spreads messages over its members, each message to one member")
    func queueGroup() async throws {
        let connection = try await TestEnvironment.connect()
        let subject = TestEnvironment.uniqueName("queue")
        let first = try await connection.subscribe(to: subject, queue: "workers")
        let second = try await connection.subscribe(to: subject, queue: "workers")
        try await connection.flush()
        let total = 2_000

        let counts = Counter()
        let readers = [first, second].enumerated().map { index, subscription in
            Task {
                for await message in subscription {
                    if counts.add(member: index, id: String(decoding: message.payload, as: UTF8.self)) == total { break }
                }
            }
        }
        for index in 0..<total {
            try connection.publish(Array(String(index).utf8), to: subject)
        }
        try await connection.flush()
        #expect(await eventually { counts.total == total })
        first.unsubscribe()
        second.unsubscribe()
        for reader in readers { await reader.value }
        let perMember = counts.perMember
        #expect(perMember[0, default: 0] > 0)
        #expect(perMember[1, default: 0] > 0)
        #expect(counts.distinct == total)
        await connection.drain()
    }

    @Test("request/reply answers; no responders and timeouts are reported as such")
    func requestReply() async throws {
        let connection = try await TestEnvironment.connect(sendAsap: true)
        let subject = TestEnvironment.uniqueName("rpc")
        let responder = try await connection.subscribe(to: subject)
        try await connection.flush()
        let serving = Task {
            for await request in responder {
                guard let reply = request.reply else { continue }
                try? connection.publish(Array("echo:".utf8) + request.payload, to: reply, headers: ["x-seen": request.headers["x-in"] ?? "-"])
            }
        }
        let answers = try await withThrowingTaskGroup(of: NATSMessage.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await connection.request(Array("\(index)".utf8), to: subject, headers: ["x-in": "h\(index)"])
                }
            }
            return try await group.reduce(into: [NATSMessage]()) { $0.append($1) }
        }
        #expect(answers.count == 50)
        #expect(Set(answers.map { String(decoding: $0.payload, as: UTF8.self) }) == Set((0..<50).map { "echo:\($0)" }))
        #expect(answers.allSatisfy { $0.headers["x-seen"]?.hasPrefix("h") == true })

        await #expect(throws: ServiceKitError.self) {
            do {
                _ = try await connection.request([], to: subject + "-nobody", timeout: .seconds(2))
            } catch let error as ServiceKitError {
                #expect(error.code == .natsNoResponders)
                throw error
            }
        }

        let silent = try await connection.subscribe(to: subject + "-silent")
        try await connection.flush()
        await #expect(throws: ServiceKitError.self) {
            do {
                _ = try await connection.request([], to: subject + "-silent", timeout: .milliseconds(200))
            } catch let error as ServiceKitError {
                #expect(error.code == .natsTimeout)
                throw error
            }
        }
        silent.unsubscribe()
        responder.unsubscribe()
        await serving.value
        await connection.drain()
    }

    @Test(
        "a stalled consumer keeps memory within its limits and accounts for every message",
        arguments: [NATSBufferingPolicy.backpressure(maxMessages: 500, maxBytes: 1 << 20), .dropNewest(maxMessages: 500, maxBytes: 1 << 20)]
    )
    func stalledConsumer(policy: NATSBufferingPolicy) async throws {
        let connection = try await TestEnvironment.connect()
        let subject = TestEnvironment.uniqueName("stall")
        let subscription = try await connection.subscribe(to: subject, buffering: policy)
        try await connection.flush()
        let published = 50_000
        let payload = [UInt8](repeating: 7, count: 64)
        for _ in 0..<published {
            try connection.publish(payload, to: subject)
        }
        try await connection.flush()
        // Nobody reads: what is held stays within the policy (buffer + nats.c's queue) ...
        #expect(await eventually { subscription.dropped > 0 })
        let pending = subscription.pending
        #expect(pending.messages <= 2 * policy.maxMessages)
        #expect(pending.bytes <= 2 * policy.maxBytes)
        // ... and once the consumer reads again, received + dropped accounts for every message.
        var received = 0
        let reader = Task {
            var count = 0
            for await _ in subscription { count += 1 }
            return count
        }
        #expect(await eventually { subscription.pending.messages == 0 })
        subscription.drain()
        received = await reader.value
        #expect(Int64(received) + subscription.dropped == Int64(published))
        #expect(received > 0)
        await connection.drain()
    }

    @Test("drain delivers what was received, then ends the subscription and closes")
    func drain() async throws {
        let connection = try await TestEnvironment.connect()
        let subject = TestEnvironment.uniqueName("drain")
        let subscription = try await connection.subscribe(to: subject)
        try await connection.flush()
        for index in 0..<1_000 { try connection.publish(Array("\(index)".utf8), to: subject) }
        try await connection.flush()
        let reader = Task {
            var count = 0
            for await _ in subscription { count += 1 }
            return count
        }
        await connection.drain()
        #expect(await reader.value == 1_000)
        #expect(connection.status == .closed)
    }

    @Test("a client started before its server connects once the server comes up")
    func connectBeforeServer() async throws {
        let server = try NATSServerProcess()
        let connection = try await NATSConnection.connect(
            NATSConfiguration(servers: [server.url], name: "early", reconnectWaitMilliseconds: 100, retryOnFailedConnect: true)
        )
        let events = connection.connectionEvents()
        #expect(connection.status != .connected)
        try await server.start()
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .connected)
        let subject = TestEnvironment.uniqueName("early")
        let subscription = try await connection.subscribe(to: subject)
        try await connection.flush()
        try connection.publish(Array("hello".utf8), to: subject)
        var messages = subscription.makeAsyncIterator()
        #expect(await messages.next().map { String(decoding: $0.payload, as: UTF8.self) } == "hello")
        await connection.drain()
    }

    @Test("the server killed and restarted mid-stream: the client reconnects, publishes and receives")
    func reconnect() async throws {
        let server = try NATSServerProcess()
        try await server.start()
        let connection = try await NATSConnection.connect(
            NATSConfiguration(servers: [server.url], name: "reconnect-test", reconnectWaitMilliseconds: 100)
        )
        let events = connection.connectionEvents()
        let subject = TestEnvironment.uniqueName("reconnect")
        let subscription = try await connection.subscribe(to: subject)
        try await connection.flush()

        let received = Counter()
        let reader = Task {
            for await message in subscription {
                _ = received.add(member: 0, id: String(decoding: message.payload, as: UTF8.self))
            }
        }
        for index in 0..<100 { try connection.publish(Array("before-\(index)".utf8), to: subject) }
        try await connection.flush()
        #expect(await eventually { received.total == 100 })

        await server.kill()
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .disconnected)
        // Published while the server is gone: buffered by the client and sent on reconnect.
        for index in 0..<100 { try connection.publish(Array("during-\(index)".utf8), to: subject) }

        try await server.start()
        #expect(await iterator.next() == .reconnected)
        for index in 0..<100 { try connection.publish(Array("after-\(index)".utf8), to: subject) }
        try await connection.flush()
        #expect(await eventually { received.total == 300 })
        #expect(received.distinct == 300)
        await connection.drain()
        await reader.value
    }

    @Test(
        "a reconnect attempt that hangs holds nats.c's lock: reading the status, subscribing and unsubscribing leave the Swift pool free",
        .timeLimit(.minutes(2))
    )
    func hungReconnectAttempt() async throws {
        let server = try NATSServerProcess()
        try await server.start()
        // Listening only once connected, so the first connect cannot pick it.
        let silent = try SilentListener()
        defer { silent.close() }
        let connection = try await NATSConnection.connect(
            NATSConfiguration(
                servers: [server.url, silent.url],
                name: "hung-attempt",
                reconnectWaitMilliseconds: 100,
                connectTimeoutMilliseconds: 60_000
            )
        )
        let events = connection.connectionEvents()
        var eventIterator = events.makeAsyncIterator()
        let subject = TestEnvironment.uniqueName("hung")
        let before = try await connection.subscribe(to: subject + ".before")
        try await connection.flush()
        try silent.listen()

        // The server gone, the pool's next server is the silent one: nats.c's reconnect thread
        // waits there for the INFO line, holding the connection's lock, for up to 60 s.
        await server.kill()
        #expect(await eventIterator.next() == .disconnected)
        #expect(await eventually { silent.acceptedCount == 1 })

        // The status is read without the lock (nats.c's would wait out the attempt). Then more
        // subscribers than the Swift pool has threads (one per core): each waits for the lock on
        // the connection's own threads, none can have finished, and this task still runs. On
        // Dispatch's threads (the Swift pool's, on Linux) the sleep below took 6.8 s with eight.
        // Eight of the sixteen, so that the other live tests of this process keep threads.
        let started = ContinuousClock.now
        #expect(connection.status == .reconnecting)
        let finished = Counter()
        let subscribers = (0..<8).map { index in
            Task {
                let subscription = try await connection.subscribe(to: subject + ".during.\(index)")
                _ = finished.add(member: 0, id: String(index))
                return subscription
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        before.unsubscribe()
        let waited = ContinuousClock.now - started
        #expect(finished.total == 0)
        #expect(waited < .seconds(5), "the Swift pool was held by calls waiting on nats.c's lock: \(waited)")

        // The server back and the silent attempt reset: the reconnection completes, and so do the
        // subscriptions made meanwhile and the unsubscribe.
        try await server.start()
        silent.close()
        #expect(await eventIterator.next() == .reconnected)
        #expect(connection.status == .connected)
        var beforeIterator = before.makeAsyncIterator()
        #expect(await beforeIterator.next() == nil)
        var subscriptions: [NATSSubscription] = []
        for subscriber in subscribers { subscriptions.append(try await subscriber.value) }
        try await connection.flush()
        try connection.publish(Array("hello".utf8), to: subject + ".during.7")
        var messages = subscriptions[7].makeAsyncIterator()
        #expect(await messages.next().map { String(decoding: $0.payload, as: UTF8.self) } == "hello")
        await connection.drain()
        #expect(connection.status == .closed)
    }
}

/// Counts messages per member, from several tasks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var members: [Int: Int] = [:]
    private var ids: Set<String> = []
    private var count = 0

    /// Records a message; returns the total so far.
    func add(member: Int, id: String) -> Int {
        self.lock.withLock {
            self.members[member, default: 0] += 1
            self.ids.insert(id)
            self.count += 1
            return self.count
        }
    }

    var total: Int { self.lock.withLock { self.count } }
    var distinct: Int { self.lock.withLock { self.ids.count } }
    var perMember: [Int: Int] { self.lock.withLock { self.members } }
}

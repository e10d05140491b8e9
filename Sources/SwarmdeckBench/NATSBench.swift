import ArgumentParser
import CNATS
import Foundation
import ServiceKit
import Synchronization

/// Publishes and receives N messages through the ServiceKit wrapper and through a plain nats.c
/// loop (C publish calls, a C callback that only counts), alternating rounds, and prints the
/// rates and the wrapper's ratio to the plain loop.
struct NATSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nats",
        abstract: "The NATS wrapper's publish and receive rates beside a plain nats.c loop."
    )

    @Option(help: "NATS server URL.")
    var url = "nats://127.0.0.1:4222"

    @Option(help: "Messages per round.")
    var count = 500_000

    @Option(help: "Payload bytes.")
    var payload = 16

    @Option(help: "Rounds of each (alternating); the median is reported.")
    var rounds = 3

    struct Round {
        var publishPerSecond: Double
        var receivePerSecond: Double
        var dropped: Int64
    }

    func validate() throws {
        guard self.count > 0, self.payload >= 0, self.rounds > 0 else { throw ValidationError("count and rounds must be positive") }
    }

    func run() async throws {
        print("nats bench: \(self.count) messages of \(self.payload) B per round, \(self.rounds) rounds, \(self.url)")
        var plain: [Round] = []
        var wrapped: [Round] = []
        for round in 1...self.rounds {
            plain.append(try await self.plainRound(subject: "bench.plain.\(round)"))
            wrapped.append(try await self.wrapperRound(subject: "bench.wrapper.\(round)"))
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let plainPublish = median(plain.map(\.publishPerSecond))
        let plainReceive = median(plain.map(\.receivePerSecond))
        let wrapperPublish = median(wrapped.map(\.publishPerSecond))
        let wrapperReceive = median(wrapped.map(\.receivePerSecond))
        print("")
        print("                  publish msg/s    receive msg/s   dropped")
        print(String(format: "plain nats.c   %16.0f %16.0f %9lld", plainPublish, plainReceive, plain.map(\.dropped).reduce(0, +)))
        print(String(format: "wrapper        %16.0f %16.0f %9lld", wrapperPublish, wrapperReceive, wrapped.map(\.dropped).reduce(0, +)))
        print(String(format: "ratio          %16.2f %16.2f", wrapperPublish / plainPublish, wrapperReceive / plainReceive))
    }

    /// Plain nats.c: publish in a loop, a C callback that only counts.
    private func plainRound(subject: String) async throws -> Round {
        let counter = PlainCounter()
        let box = Unmanaged.passRetained(counter)
        defer { box.release() }
        var connection: OpaquePointer?
        guard natsConnection_ConnectTo(&connection, self.url) == NATS_OK, let connection else {
            throw ValidationError("cannot connect to \(self.url)")
        }
        defer { natsConnection_Destroy(connection) }
        var subscription: OpaquePointer?
        let callback: natsMsgHandler = { _, _, message, closure in
            natsMsg_Destroy(message)
            Unmanaged<PlainCounter>.fromOpaque(closure!).takeUnretainedValue().value.add(1, ordering: .relaxed)
        }
        guard natsConnection_Subscribe(&subscription, connection, subject, callback, box.toOpaque()) == NATS_OK else {
            throw ValidationError("cannot subscribe")
        }
        defer { natsSubscription_Destroy(subscription) }
        natsSubscription_SetPendingLimits(subscription, -1, -1)
        natsConnection_Flush(connection)
        let payload = [UInt8](repeating: 0x61, count: self.payload)
        let start = ContinuousClock.now
        payload.withUnsafeBytes { bytes in
            for _ in 0..<self.count {
                natsConnection_Publish(connection, subject, bytes.baseAddress, Int32(bytes.count))
            }
        }
        let published = ContinuousClock.now
        natsConnection_FlushTimeout(connection, 60_000)
        while counter.value.load(ordering: .relaxed) < self.count, ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .milliseconds(1))
        }
        let received = ContinuousClock.now
        var dropped: Int64 = 0
        natsSubscription_GetDropped(subscription, &dropped)
        natsSubscription_Unsubscribe(subscription)
        return Round(
            publishPerSecond: Double(self.count) / (published - start).secondsDouble,
            receivePerSecond: Double(counter.value.load(ordering: .relaxed)) / (received - start).secondsDouble,
            dropped: dropped
        )
    }

    /// The wrapper: `publish` in a loop, an async-sequence consumer.
    private func wrapperRound(subject: String) async throws -> Round {
        let connection = try await NATSConnection.connect(NATSConfiguration(servers: [self.url], name: "bench"))
        let subscription = try await connection.subscribe(to: subject, buffering: .backpressure(maxMessages: 1 << 20, maxBytes: 1 << 30))
        try await connection.flush()
        let count = self.count
        let receiver = Task {
            var received = 0
            for await _ in subscription {
                received += 1
                if received == count { break }
            }
            return (received, ContinuousClock.now)
        }
        let payload = [UInt8](repeating: 0x61, count: self.payload)
        let start = ContinuousClock.now
        for _ in 0..<self.count {
            try connection.publish(payload, to: subject)
        }
        let published = ContinuousClock.now
        try await connection.flush(timeout: .seconds(60))
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            subscription.unsubscribe()
        }
        let (received, finished) = await receiver.value
        timeout.cancel()
        let dropped = subscription.dropped
        await connection.close()
        return Round(
            publishPerSecond: Double(self.count) / (published - start).secondsDouble,
            receivePerSecond: Double(received) / (finished - start).secondsDouble,
            dropped: dropped
        )
    }
}

/// The plain loop's counter, shared with its C callback.
final class PlainCounter: Sendable {
    let value = Atomic<Int>(0)
}

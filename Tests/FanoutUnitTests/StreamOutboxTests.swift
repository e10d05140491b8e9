import Contracts
import EventLog
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import StreamFanout

/// The connection's queue and the writer's decisions, without a socket (pure).
@Suite("Stream outbox, collapser and filter (unit)")
struct StreamOutboxTests {
    static func event(_ seq: Int64, agent: String = "a1", kind: BusEventKind = .log, message: String = "hello", bytes: Int = 0) -> FeedEvent {
        let frame =
            #"{"seq":\#(seq),"eventId":"\#(seq)","type":"log","swarmId":"s1","agentId":"\#(agent)","severity":"info","message":"\#(message)"\#(String(repeating: " ", count: bytes))}"#
        return FeedEvent(
            LoggedEvent(seq: seq, kind: kind, severity: .info, swarmID: "s1", agentID: agent, frame: ByteBuffer(string: frame))
        )
    }

    /// Everything ready (the writer's drain stops after a close or a catch-up: both repeat
    /// until acted on).
    static func drain(_ outbox: StreamOutbox) -> [OutboxItem] {
        var items: [OutboxItem] = []
        outbox.drain(into: &items, limit: .max)
        return items
    }

    /// The next item ready, if any.
    static func poll(_ outbox: StreamOutbox) -> OutboxItem? {
        var items: [OutboxItem] = []
        outbox.drain(into: &items, limit: 1)
        return items.first
    }

    @Test("events after the subscription's head, matching its filter, in order; each says what it follows")
    func queued() {
        let outbox = StreamOutbox(maxEvents: 10, maxBytes: 1 << 20)
        outbox.offer([Self.event(1)])  // before any subscription: dropped
        outbox.subscribe(StreamFilter(agentIDs: ["a1"]), head: 5, generation: 1)
        for seq in 4...8 { outbox.offer([Self.event(Int64(seq), agent: seq == 7 ? "a2" : "a1")]) }
        let events = Self.drain(outbox).compactMap { item -> String? in
            guard case .event(let event, let after, let generation) = item else { return nil }
            return "\(event.seq)/\(after)/\(generation)"
        }
        // 7 is another agent's: 8 follows 6, so a writer that sent 6 knows nothing is missing.
        #expect(events == ["6/5/1", "8/6/1"])
    }

    @Test("past its event or byte bound the queue stops and asks the writer to catch up from the log")
    func overflow() {
        for (maxEvents, maxBytes) in [(3, 1 << 20), (100, 500)] {
            let outbox = StreamOutbox(maxEvents: maxEvents, maxBytes: maxBytes)
            outbox.subscribe(.everything, head: 0, generation: 1)
            for seq in 1...20 { outbox.offer([Self.event(Int64(seq), bytes: 100)]) }
            let items = Self.drain(outbox)
            let queued = items.filter { if case .event = $0 { true } else { false } }.count
            #expect(queued < 20)
            guard case .catchUp(let generation)? = items.last else {
                Issue.record("no catch-up after overflow: \(items)")
                continue
            }
            #expect(generation == 1)
            #expect(outbox.caughtUp() == 20)
            outbox.offer([Self.event(21)])
            guard case .event(let event, let after, _)? = Self.poll(outbox) else {
                Issue.record("nothing queued after the catch-up")
                continue
            }
            #expect(event.seq == 21 && after == 20)
        }
    }

    @Test(
        "a batch is taken as its events one by one would be: copies at or below the last offered dropped, the bound crossed mid-batch; the writer's drain stops at the catch-up"
    )
    func batches() {
        let outbox = StreamOutbox(maxEvents: 5, maxBytes: 1 << 20)
        outbox.subscribe(.everything, head: 2, generation: 1)
        outbox.offer((1...4).map { Self.event(Int64($0)) })  // 1 and 2 are at or below the head
        outbox.offer((3...12).map { Self.event(Int64($0)) })  // 3 and 4 again; 5...7 fit, the rest overflow
        var items: [OutboxItem] = []
        outbox.drain(into: &items, limit: 100)
        let queued = items.compactMap { item -> String? in
            guard case .event(let event, let after, _) = item else { return nil }
            return "\(event.seq)/\(after)"
        }
        #expect(queued == ["3/2", "4/3", "5/4", "6/5", "7/6"])
        guard case .catchUp(1)? = items.last else {
            Issue.record("the drain did not end at the catch-up: \(items)")
            return
        }
        #expect(outbox.caughtUp() == 12)
        var limited: [OutboxItem] = []
        outbox.offer((13...20).map { Self.event(Int64($0)) })
        outbox.drain(into: &limited, limit: 3)
        #expect(limited.count == 3)
        outbox.close()
        var rest: [OutboxItem] = []
        outbox.drain(into: &rest, limit: 100)
        guard rest.count == 1, case .closed = rest[0] else {
            Issue.record("the drain did not end at the close: \(rest)")
            return
        }
    }

    @Test("gaps keep their place among events; control messages and pings go first; close ends everything")
    func ordering() {
        let outbox = StreamOutbox(maxEvents: 10, maxBytes: 1 << 20)
        outbox.subscribe(.everything, head: 0, generation: 2)
        outbox.offer([Self.event(1)])
        outbox.offerGap(from: 2, to: 4)
        outbox.offer([Self.event(5)])
        outbox.send(ByteBuffer(string: "ack"))
        outbox.ping()
        outbox.ping()
        let items = Self.drain(outbox).map { item -> String in
            switch item {
            case .control(let buffer): "control:\(String(buffer: buffer))"
            case .ping: "ping"
            case .event(let event, _, _): "event:\(event.seq)"
            case .gap(let from, let to, _): "gap:\(from)-\(to)"
            default: "\(item)"
            }
        }
        #expect(items == ["control:ack", "ping", "event:1", "gap:2-4", "event:5"])
        outbox.offer([Self.event(6)])
        outbox.close()
        guard case .closed? = Self.poll(outbox) else {
            Issue.record("a closed outbox must say so first")
            return
        }
    }

    @Test(
        "an idle writer sleeps only when nothing is ready; its wake is called once, by the first thing that becomes ready, filtered events not counting"
    )
    func idleWake() {
        let outbox = StreamOutbox(maxEvents: 10, maxBytes: 1 << 20)
        var errorsOnly = StreamFilter()
        errorsOnly.minimumSeverity = .error
        outbox.subscribe(errorsOnly, head: 0, generation: 1)
        outbox.send(ByteBuffer(string: "hello"))
        let wakes = Mutex(0)
        let wake: @Sendable () -> Void = { wakes.withLock { $0 += 1 } }
        #expect(!outbox.sleep(until: wake))  // something is ready
        var ready: [OutboxItem] = []
        outbox.drain(into: &ready, limit: 10)
        #expect(ready.count == 1)
        #expect(outbox.sleep(until: wake))
        outbox.offer([Self.event(1)])  // filtered out: nothing is ready
        #expect(wakes.withLock { $0 } == 0)
        outbox.ping()
        outbox.tick()
        outbox.close()
        #expect(wakes.withLock { $0 } == 1)
    }

    @Test("the collapser folds an agent's identical lines into one notice with their count and range")
    func collapser() throws {
        var collapser = Collapser(enabled: true)
        var sent: [Int64] = []
        var notices: [[String: Any]] = []
        for (seq, message) in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b")] as [(Int64, String)] {
            switch collapser.admit(Self.event(seq, message: message)) {
            case .suppress: continue
            case .send(let notice):
                if let notice { notices.append(try #require(try JSONSerialization.jsonObject(with: Data(buffer: notice)) as? [String: Any])) }
                sent.append(seq)
            }
        }
        #expect(sent == [1, 4])
        #expect(notices.count == 1)
        #expect(notices.first?["count"] as? Int == 2)
        #expect(notices.first?["fromSeq"] as? Int == 2 && notices.first?["toSeq"] as? Int == 3)
        #expect(collapser.hasPending)
        let flushed = collapser.flush(olderThan: .zero)
        #expect(flushed.count == 1)
        #expect(!collapser.hasPending)

        var other = Collapser(enabled: true)
        #expect({ if case .send = other.admit(Self.event(1, agent: "a1")) { true } else { false } }())
        #expect({ if case .send = other.admit(Self.event(2, agent: "a2")) { true } else { false } }())  // another agent's line is not a repeat
        var off = Collapser(enabled: false)
        for seq in 1...3 {
            #expect({ if case .send(nil) = off.admit(Self.event(Int64(seq))) { true } else { false } }())
        }
    }

    @Test("filters: kinds, severity, swarms, agents, threads; include names map to kinds")
    func filters() {
        let event = Self.event(1)
        #expect(StreamFilter.everything.matches(event))
        #expect(!StreamFilter(kinds: [.state]).matches(event))
        #expect(StreamFilter(swarmIDs: ["s1"], agentIDs: ["a1"], minimumSeverity: .info).matches(event))
        #expect(!StreamFilter(minimumSeverity: .error).matches(event))
        #expect(!StreamFilter(threadIDs: ["t1"]).matches(event))
        #expect(StreamFilter.kind(named: "approvals") == .approval)
        #expect(StreamFilter.kind(named: "logs") == .log)
        #expect(StreamFilter.kind(named: "nope") == nil)
    }
}

import NIOCore
import ServiceKit
import Testing

@Suite("Token buckets, message budgets, liveness and message assembly (pure)")
struct LimitsTests {
    let start = ContinuousClock.now

    @Test("a bucket admits its burst, then one token per 1/rate, never more than its capacity")
    func tokenBucket() {
        var bucket = TokenBucket(capacity: 3, perSecond: 2, now: self.start)
        #expect((0..<3).map { _ in bucket.take(now: self.start) } == [nil, nil, nil])
        let wait = bucket.take(now: self.start)
        #expect(wait == .milliseconds(500))
        #expect(bucket.take(now: self.start + .milliseconds(499)) != nil)
        #expect(bucket.take(now: self.start + .milliseconds(1000)) == nil)
        // A long idle time refills to the capacity, not beyond.
        let later = self.start + .seconds(3600)
        #expect((0..<3).map { _ in bucket.take(now: later) } == [nil, nil, nil])
        #expect(bucket.take(now: later) != nil)
        #expect(bucket.isFull(now: later + .seconds(2)))
    }

    @Test("a bucket's rate can change; time going backwards adds nothing")
    func tokenBucketRate() {
        var bucket = TokenBucket(capacity: 1, perSecond: 1, now: self.start)
        #expect(bucket.take(now: self.start) == nil)
        (bucket.capacity, bucket.perSecond) = (10, 10)
        #expect(bucket.take(now: self.start + .milliseconds(100)) == nil)
        #expect(bucket.take(now: self.start) != nil)
    }

    @Test("a charge passes whole while the bucket is out of debt, then nothing passes until the refill pays the debt back")
    func tokenBucketDebt() {
        var bucket = TokenBucket(capacity: 100, perSecond: 100, now: self.start)
        #expect(bucket.debt(now: self.start) == nil)
        // 250 events in one request: admitted whole, the bucket 150 in debt.
        #expect(bucket.charge(250, now: self.start) == nil)
        #expect(Self.near(bucket.debt(now: self.start), .milliseconds(1510)))
        #expect(bucket.charge(1, now: self.start + .milliseconds(1500)) != nil)
        #expect(bucket.charge(1, now: self.start + .milliseconds(1520)) == nil)
        // spend takes whatever the bucket holds, debt or not: 1 left, 99 spent, 98 owed.
        bucket.spend(99, now: self.start + .milliseconds(1520))
        #expect(Self.near(bucket.debt(now: self.start + .milliseconds(1520)), .milliseconds(990)))
        let buckets = KeyedTokenBuckets(capacity: 10, perSecond: 10)
        #expect(buckets.debt("a", now: self.start) == nil)
        buckets.spend("a", cost: 30, now: self.start)
        #expect(Self.near(buckets.debt("a", now: self.start), .milliseconds(2100)))
        #expect(buckets.charge("a", cost: 1, now: self.start + .seconds(2)) != nil)
        #expect(buckets.charge("b", cost: 1000, now: self.start) == nil)
        #expect(buckets.debt("b", now: self.start) != nil)
    }

    /// Whether `wait` is `expected` within a microsecond (the buckets count in floating point).
    static func near(_ wait: Duration?, _ expected: Duration) -> Bool {
        guard let wait else { return false }
        return abs((wait - expected).secondsDouble) < 1e-6
    }

    @Test("keyed buckets: each key its own; past maxKeys refilled ones are forgotten, else new keys wait")
    func keyedBuckets() {
        let buckets = KeyedTokenBuckets(capacity: 1, perSecond: 1, maxKeys: 2)
        #expect(buckets.take("a", now: self.start) == nil)
        #expect(buckets.take("a", now: self.start) != nil)
        #expect(buckets.take("b", now: self.start) == nil)
        // Full table, nothing refilled: a third key is refused, not admitted.
        #expect(buckets.take("c", now: self.start) != nil)
        // Once the others have refilled they are forgotten and the new key gets its bucket.
        #expect(buckets.take("c", now: self.start + .seconds(5)) == nil)
        #expect(KeyedTokenBuckets(perMinute: 60).perSecond == 1)
    }

    @Test("a retry-after is whole seconds, rounded up, at least one")
    func retryAfter() {
        #expect(Duration.milliseconds(1).retryAfterSeconds == 1)
        #expect(Duration.seconds(2).retryAfterSeconds == 2)
        #expect(Duration.milliseconds(2001).retryAfterSeconds == 3)
        #expect(Duration.zero.retryAfterSeconds == 1)
    }

    @Test("a message budget counts per 10 s window")
    func messageBudget() {
        var budget = MessageBudget(perTenSeconds: 2, now: self.start)
        #expect(budget.admit(at: self.start) == .accept)
        #expect(budget.admit(at: self.start + .seconds(1)) == .accept)
        #expect(budget.admit(at: self.start + .seconds(2)) == .tooMany)
        #expect(budget.admit(at: self.start + .seconds(13)) == .accept)
    }

    @Test("liveness: a ping per interval; two unanswered pings mean gone; any message answers")
    func livenessAnswers() {
        var liveness = ConnectionLiveness(pingInterval: .seconds(10), stalledAfter: .seconds(30), checksAnswers: true, now: self.start)
        #expect(liveness.tick(now: self.start + .seconds(5)) == .none)
        #expect(liveness.tick(now: self.start + .seconds(10)) == .ping)
        #expect(liveness.tick(now: self.start + .seconds(20)) == .ping)
        #expect(liveness.tick(now: self.start + .seconds(30)) == .gone)

        var answered = ConnectionLiveness(pingInterval: .seconds(10), stalledAfter: .seconds(30), checksAnswers: true, now: self.start)
        #expect(answered.tick(now: self.start + .seconds(10)) == .ping)
        #expect(answered.tick(now: self.start + .seconds(20)) == .ping)
        answered.heard(at: self.start + .seconds(21))
        #expect(answered.tick(now: self.start + .seconds(30)) == .ping)
    }

    @Test("liveness with ping frames never decides gone; a write waiting past the limit is a stall")
    func livenessFrames() {
        var liveness = ConnectionLiveness(pingInterval: .seconds(10), stalledAfter: .seconds(30), checksAnswers: false, now: self.start)
        for step in 1...10 {
            #expect(liveness.tick(now: self.start + .seconds(10 * step)) == .ping)
        }
        liveness.writing(since: self.start + .seconds(100))
        liveness.writing(since: self.start + .seconds(120))  // still the first write
        #expect(liveness.tick(now: self.start + .seconds(125)) == .ping)  // pings go on while a write waits
        #expect(liveness.tick(now: self.start + .seconds(131)) == .stalled)
        liveness.wrote()
        #expect(liveness.tick(now: self.start + .seconds(140)) == .ping)
    }

    @Test("assembly: fragments join; the budget counts the whole message; order and UTF-8 are checked")
    func assembler() {
        var assembler = WebSocketMessageAssembler(maxBytes: 10)
        #expect(assembler.add(opcode: .text, data: ByteBuffer(string: "caf"), fin: false) == .partial)
        #expect(assembler.add(opcode: .continuation, data: ByteBuffer(string: "é!"), fin: true) == .message(.text("café!")))
        #expect(assembler.add(opcode: .binary, data: ByteBuffer(bytes: [0xFF]), fin: true) == .message(.binary(ByteBuffer(bytes: [0xFF]))))

        #expect(assembler.add(opcode: .text, data: ByteBuffer(string: "123456"), fin: false) == .partial)
        #expect(assembler.add(opcode: .continuation, data: ByteBuffer(string: "12345"), fin: true) == .tooLarge)
        var single = WebSocketMessageAssembler(maxBytes: 10)
        #expect(single.add(opcode: .text, data: ByteBuffer(string: "12345678901"), fin: true) == .tooLarge)

        var order = WebSocketMessageAssembler(maxBytes: 10)
        #expect(order.add(opcode: .continuation, data: ByteBuffer(string: "x"), fin: true) == .outOfOrder)
        #expect(order.add(opcode: .text, data: ByteBuffer(string: "x"), fin: false) == .partial)
        #expect(order.add(opcode: .text, data: ByteBuffer(string: "y"), fin: true) == .outOfOrder)

        var utf8 = WebSocketMessageAssembler(maxBytes: 10)
        #expect(utf8.add(opcode: .text, data: ByteBuffer(bytes: [0x63, 0xC3]), fin: true) == .notUTF8)
    }

    @Test("session limits become the pool's startup parameters, in milliseconds")
    func postgresSession() {
        #expect(
            PostgresSession.owning("ctl").startupParameters.map { "\($0.0)=\($0.1)" } == [
                "search_path=ctl", "statement_timeout=5000", "lock_timeout=5000", "idle_in_transaction_session_timeout=10000",
            ]
        )
        let reader = PostgresSession(searchPath: nil, statementTimeout: .milliseconds(1500))
        #expect(reader.startupParameters.map { "\($0.0)=\($0.1)" } == ["statement_timeout=1500"])
    }
}

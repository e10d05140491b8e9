import Contracts
import EventLog
import NIOCore
import PostgresNIO
import ServiceKit
import Synchronization

extension StreamSession {
    // MARK: Writing

    /// Arms the outbox's wake: the writer holds no task while nothing is ready.
    func sleep(until wake: @escaping @Sendable () -> Void) -> Bool {
        self.outbox.sleep(until: wake)
    }

    /// On the event loop: writes what the outbox has ready while nothing needs a wait (the
    /// socket full, a read of the log, a new subscription), and says where it stopped.
    func writeAvailable(to writer: WebSocketFrameWriter) throws -> WebSocketWriteOutcome {
        try self.writerMemory.with { state in
            do {
                return try self.writeAvailable(&state, writer)
            } catch {
                self.countDelivered(&state)
                throw error
            }
        }
    }

    /// Writes what the outbox has ready to the socket: protocol messages first, then events;
    /// replays from the log where the live queue cannot account for a seq range; applies the
    /// rate cap. Returns true when nothing more is ready, false once the outbox is closed. What
    /// needs no wait is written by ``writeAvailable(to:)``'s steps; this waits where they stop.
    func writeReady(to writer: WebSocketFrameWriter) async throws -> Bool {
        var state = self.writerMemory.take()
        defer { self.writerMemory.put(state) }
        do {
            while true {
                switch try self.writeAvailable(&state, writer) {
                case .idle: return true
                case .ended: return false
                case .blocked: try await self.unblock(&state, writer)
                }
            }
        } catch {
            self.countDelivered(&state)
            throw error
        }
    }

    /// Writes items as long as each needs no wait: a waiting subscription, a full socket, or an
    /// item that needs the log stops it (``unblock(_:_:)`` does what it stopped at).
    private func writeAvailable(_ state: inout WriterState, _ writer: WebSocketFrameWriter) throws -> WebSocketWriteOutcome {
        while true {
            if self.resumeWaiting.load(ordering: .acquiring) { return .blocked }
            if state.next == state.ready.count {
                self.countDelivered(&state)
                if state.skipped != nil, self.outbox.isIdle {
                    // The end of a burst over the cap: say what was skipped now, not later.
                    guard try writer.isReady() else { return .blocked }
                    try self.writeSkipped(&state, writer)
                }
                state.ready.removeAll(keepingCapacity: true)
                state.next = 0
                self.outbox.drain(into: &state.ready, limit: Self.itemsPerBatch)
                if state.ready.isEmpty {
                    // An idle connection keeps no burst's capacity.
                    if state.ready.capacity > 8 { state.ready = [] }
                    try self.flush(&state, writer)  // nothing more to add: send what is batched
                    // Collapsed lines are counted until the agent says something else, or for
                    // a second at most (the heartbeat ticks the writer while some are pending).
                    let collapsePending = state.collapse.hasPending
                    self.state.withLock { $0.collapsePending = collapsePending }
                    return .idle
                }
                let rate = Double(self.state.withLock { $0.eventsPerSecond })
                (state.limiter.capacity, state.limiter.perSecond) = (rate, rate)
            }
            if case .closed = state.ready[state.next] {
                self.countDelivered(&state)
                return .ended
            }
            guard try writer.isReady(), try self.writeNow(state.ready[state.next], &state, writer) else { return .blocked }
            state.next += 1
        }
    }

    /// Writes `item` if that needs no wait and returns true; false when it needs
    /// ``unblock(_:_:)``.
    private func writeNow(_ item: OutboxItem, _ state: inout WriterState, _ writer: WebSocketFrameWriter) throws -> Bool {
        switch item {
        case .closed, .request:
            break  // the stream protocol handles its messages in the reader
        case .control(let message):
            if message.readableBytes > 0 { try self.write(message, &state, writer) }
        case .ping:
            try self.flush(&state, writer)
            try writer.appendPing()
        case .tick:
            for notice in state.collapse.flush(olderThan: .seconds(1)) { try self.write(notice, &state, writer) }
        case .catchUp:
            return false  // a read of the log
        case .gap(let from, let to, let generation):
            guard generation == state.generation else { return false }
            try self.writeGap(from: from, to: to, &state, writer)
        case .event(let event, let after, let generation):
            guard generation == state.generation else { return false }
            guard event.seq > state.cursor else { break }
            guard after <= state.cursor else { return false }  // a replay first
            try self.writeLive(event, &state, writer)
        }
        return true
    }

    /// Does what stopped ``writeAvailable(_:_:)``: starts a new subscription, waits for the
    /// socket, or writes the next item, reading the log or waiting as it needs.
    private func unblock(_ state: inout WriterState, _ writer: WebSocketFrameWriter) async throws {
        if let resume = self.takeResume() {
            try await self.apply(resume, &state, writer)
            return
        }
        guard try writer.isReady() else {
            try await writer.ready()
            return
        }
        guard state.next < state.ready.count else { return }
        let item = state.ready[state.next]
        state.next += 1
        switch item {
        case .catchUp(let generation):
            guard try await self.current(generation, &state, writer) else { return }
            FanoutMetrics.catchUps.increment()
            let through = self.outbox.caughtUp()
            if through - state.cursor > Int64(self.settings.maxCatchUpEvents) {
                FanoutMetrics.gapNotices.increment()
                try await writer.ready()
                try self.write(ServerMessage.gap(from: state.cursor + 1, to: through, reason: "slow_consumer"), &state, writer)
                state.cursor = through
            } else if through > state.cursor {
                state.cursor = try await self.replay(after: state.cursor, through: through, &state, writer)
            }
        case .gap(let from, let to, let generation):
            guard try await self.current(generation, &state, writer) else { return }
            try await writer.ready()
            try self.writeGap(from: from, to: to, &state, writer)
        case .event(let event, let after, let generation):
            guard try await self.current(generation, &state, writer), event.seq > state.cursor else { return }
            if after > state.cursor {
                state.cursor = try await self.replay(after: state.cursor, through: after, &state, writer)
            }
            try await writer.ready()
            try self.writeLive(event, &state, writer)
        default:
            _ = try self.writeNow(item, &state, writer)
        }
    }

    /// The subscription of the resume the writer has not started, if any (`wanted`: only if it
    /// is that generation's).
    private func takeResume(_ wanted: Int? = nil) -> Resume? {
        self.state.withLock { state in
            guard let resume = state.resume, wanted == nil || resume.generation == wanted else { return nil }
            state.resume = nil
            self.resumeWaiting.store(false, ordering: .releasing)
            return resume
        }
    }

    /// Starts a subscription: its acknowledgement, then its replay up to the head.
    private func apply(_ resume: Resume, _ state: inout WriterState, _ writer: WebSocketFrameWriter) async throws {
        try await writer.ready()
        // What the old subscription collapsed is announced before the new one starts.
        for notice in state.collapse.flush(olderThan: .zero) { try self.write(notice, &state, writer) }
        state.generation = resume.generation
        state.filter = resume.filter
        state.skipped = nil
        state.collapse = Collapser(enabled: resume.collapseRepeats)
        try self.flush(&state, writer)
        state.batch.enabled = resume.batchEvents
        state.limiter = TokenBucket(capacity: Double(resume.eventsPerSecond), perSecond: Double(resume.eventsPerSecond))
        try await writer.ready()
        try self.write(resume.acknowledgement, &state, writer)
        state.cursor = try await self.replay(after: resume.from, through: resume.head, &state, writer, checkRetention: true)
    }

    /// Whether an item of `generation` is the current subscription's (starting that
    /// subscription if it is the one waiting); false for an ended subscription's.
    private func current(_ generation: Int, _ state: inout WriterState, _ writer: WebSocketFrameWriter) async throws -> Bool {
        if generation == state.generation { return true }
        guard let resume = self.takeResume(generation) else { return false }
        try await self.apply(resume, &state, writer)
        return true
    }

    /// A live event of the current subscription, after everything before it: collapsed, capped
    /// or written.
    private func writeLive(_ event: FeedEvent, _ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        if state.collapse.isDue(.seconds(1)) {
            for notice in state.collapse.flush(olderThan: .seconds(1)) { try self.write(notice, &state, writer) }
        }
        switch state.collapse.admit(event) {
        case .suppress:
            state.cursor = event.seq
            return
        case .send(let notice):
            if let notice { try self.write(notice, &state, writer) }
        }
        if state.limiter.take() == nil {
            if state.skipped != nil { try self.writeSkipped(&state, writer) }
            try self.writeEvent(event, &state, writer)
            state.delivered += 1
            if let received = event.received, state.oldestReceived.map({ received < $0 }) ?? true { state.oldestReceived = received }
        } else {
            state.skipped = (state.skipped?.from ?? event.seq, event.seq)
        }
        state.cursor = event.seq
    }

    /// Seqs the feed could not deliver.
    private func writeGap(from: Int64, to: Int64, _ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        guard to > state.cursor else { return }
        FanoutMetrics.gapNotices.increment()
        try self.write(ServerMessage.gap(from: max(from, state.cursor + 1), to: to, reason: "unavailable"), &state, writer)
        state.cursor = to
    }

    /// Announces what the rate cap skipped.
    private func writeSkipped(_ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        guard let range = state.skipped else { return }
        FanoutMetrics.gapNotices.increment()
        try self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), &state, writer)
        state.skipped = nil
    }

    /// Counts the live events written since the last count, and the delay of the oldest.
    private func countDelivered(_ state: inout WriterState) {
        if state.delivered > 0 {
            FanoutMetrics.delivered.increment(by: state.delivered)
            state.delivered = 0
        }
        if let oldest = state.oldestReceived {
            FanoutMetrics.delivery.record(.nanoseconds((NIODeadline.now() - oldest).nanoseconds))
            state.oldestReceived = nil
        }
    }

    /// Sends the events of `(after, through]` from the log that match the subscription's
    /// filter, and returns `through`. The rate cap does not apply: the client asked for them.
    /// With `checkRetention`, seqs already dropped by the log's retention are announced as a
    /// gap.
    private func replay(
        after: Int64,
        through: Int64,
        _ state: inout WriterState,
        _ writer: WebSocketFrameWriter,
        checkRetention: Bool = false
    ) async throws -> Int64 {
        let filter = state.filter
        var cursor = after
        do {
            if checkRetention, after < through {
                writer.endBatch()  // what is written goes out before the log is read
                let tenant = self.tenant
                let oldest = try await inTaskOfItsOwn { try await self.reader.oldest(tenant: tenant) } ?? (through + 1)
                if oldest > after + 1 {
                    FanoutMetrics.gapNotices.increment()
                    try await writer.ready()
                    try self.write(ServerMessage.gap(from: after + 1, to: min(oldest - 1, through), reason: "expired"), &state, writer)
                    cursor = min(oldest - 1, through)
                }
            }
            // Each query looks at a window of seqs and reads a page bounded by rows and bytes;
            // scanning stops once `fanout.max-replay-scan` seqs went by without a match. While a
            // page is written the next one is read, when the two fit in one page's bytes (a
            // replaying connection holds at most ``pageBytes`` of the log).
            var fruitless: Int64 = 0
            var next: PageRead?
            defer { next?.task.cancel() }
            while cursor < through {
                // What is written goes out before the log is read.
                try self.flush(&state, writer)
                writer.endBatch()
                let read = next ?? self.readPage(after: cursor, through: through, filter: filter, maxBytes: Self.pageBytes)
                next = nil
                let page = try await withTaskCancellationHandler {
                    try await read.task.value
                } onCancel: {
                    read.task.cancel()
                }
                let bytes = page.reduce(0) { $0 + $1.frame.readableBytes }
                let pageEnd: Int64
                if page.count == Self.pageRows || bytes >= read.maxBytes, let last = page.last {
                    pageEnd = last.seq  // a full page: the window goes on after it
                    fruitless = 0
                } else {
                    fruitless = page.isEmpty ? fruitless + (read.windowEnd - cursor) : 0
                    pageEnd = read.windowEnd
                }
                let scanLimited = pageEnd < through && fruitless >= Int64(self.settings.maxReplayScan)
                if pageEnd < through && !scanLimited && bytes <= Self.pageBytes / 2 {
                    next = self.readPage(after: pageEnd, through: through, filter: filter, maxBytes: Self.pageBytes - bytes)
                }
                for event in page {
                    try await writer.ready()
                    try self.writeEvent(event, &state, writer)
                }
                FanoutMetrics.caughtUp.increment(by: page.count)
                cursor = pageEnd
                if scanLimited {
                    FanoutMetrics.gapNotices.increment()
                    try await writer.ready()
                    try self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "scan_limit"), &state, writer)
                    cursor = through
                }
            }
        } catch let error as PSQLError {
            self.logger.warning("replay from the event log failed", metadata: ["error": "\(String(reflecting: error))"])
            FanoutMetrics.gapNotices.increment()
            try await writer.ready()
            try self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "unavailable"), &state, writer)
        }
        return through
    }

    /// A page of the log being read: its window's end, its byte bound and the read.
    struct PageRead {
        var windowEnd: Int64
        var maxBytes: Int
        var task: Task<[FeedEvent], any Error>
    }

    /// Starts reading the page of the log after `after`: the events matching `filter` in the
    /// next window of seqs up to `through`, at most ``pageRows`` rows and `maxBytes` of frames
    /// (at least one event), under a replay permit.
    private func readPage(after: Int64, through: Int64, filter: StreamFilter, maxBytes: Int) -> PageRead {
        let windowEnd = after + min(through - after, Self.scanWindow, Int64(self.settings.maxReplayScan))
        let (tenant, reader, replays) = (self.tenant, self.reader, self.replays)
        let task = Task {
            try await replays.run {
                try await reader.events(
                    tenant: tenant,
                    after: after,
                    through: windowEnd,
                    filter: filter,
                    limit: Self.pageRows,
                    maxBytes: maxBytes
                )
            }
        }
        return PageRead(windowEnd: windowEnd, maxBytes: maxBytes, task: task)
    }

    /// Writes an event (a live one as the frame the feed made once), or adds it to the
    /// `batchEvents` batch (sent when full, when the writer has nothing more at hand, or before
    /// any other message, so the order is kept). Never waits.
    private func writeEvent(_ event: FeedEvent, _ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        guard state.batch.enabled else {
            if let wire = writer.compresses ? event.deflatedWire : event.wire {
                try writer.append(framed: wire)
            } else {
                try writer.append(event.frame)
            }
            return
        }
        state.batch.frames.append(event.frame)
        state.batch.bytes += event.frame.readableBytes
        if state.batch.frames.count >= 256 || state.batch.bytes >= 64 << 10 { try self.flush(&state, writer) }
    }

    /// Sends the batched events: one alone as itself, several as a JSON array. Never waits.
    private func flush(_ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        guard !state.batch.frames.isEmpty else { return }
        let frames = state.batch.frames
        state.batch.frames = []  // handed over: keeping its capacity would copy it
        state.batch.bytes = 0
        if frames.count == 1 {
            try writer.append(frames[0])
            return
        }
        var message = ByteBuffer()
        message.reserveCapacity(frames.reduce(frames.count + 1) { $0 + $1.readableBytes })
        message.writeString("[")
        for (index, frame) in frames.enumerated() {
            if index > 0 { message.writeString(",") }
            message.writeImmutableBuffer(frame)
        }
        message.writeString("]")
        try writer.append(message)
    }

    /// Writes a protocol message, after whatever events are batched. Never waits.
    private func write(_ buffer: ByteBuffer, _ state: inout WriterState, _ writer: WebSocketFrameWriter) throws {
        try self.flush(&state, writer)
        try writer.append(buffer)
    }
}

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

    /// Writes what the outbox has ready to the socket: protocol messages first, then events;
    /// replays from the log where the live queue cannot account for a seq range; applies the
    /// rate cap. Returns true when nothing more is ready, false once the outbox is closed.
    func writeReady(to writer: WebSocketFrameWriter) async throws -> Bool {
        // The writer's state lives in the session between runs (one run at a time).
        let memory = self.writerMemory
        var cursor = memory.cursor  // everything the client should have up to here was sent or announced
        var generation = memory.generation
        var filter = memory.filter
        var limiter = memory.limiter
        var skipped = memory.skipped
        var collapse = memory.collapse
        defer {
            memory.cursor = cursor
            memory.generation = generation
            memory.filter = filter
            memory.limiter = limiter
            memory.skipped = skipped
            memory.collapse = collapse
        }

        func takeResume(_ wanted: Int? = nil) -> Resume? {
            self.state.withLock { state in
                guard let resume = state.resume, wanted == nil || resume.generation == wanted else { return nil }
                state.resume = nil
                return resume
            }
        }
        func apply(_ resume: Resume) async throws {
            // What the old subscription collapsed is announced before the new one starts.
            for notice in collapse.flush(olderThan: .zero) { try await self.write(notice, writer) }
            generation = resume.generation
            filter = resume.filter
            skipped = nil
            collapse = Collapser(enabled: resume.collapseRepeats)
            try await self.flush(writer)
            self.batch.withLock { $0.enabled = resume.batchEvents }
            limiter = TokenBucket(capacity: Double(resume.eventsPerSecond), perSecond: Double(resume.eventsPerSecond))
            try await self.write(resume.acknowledgement, writer)
            cursor = try await self.replay(after: resume.from, through: resume.head, filter: filter, writer: writer, checkRetention: true)
        }
        func current(_ itemGeneration: Int) async throws -> Bool {
            if itemGeneration == generation { return true }
            guard let resume = takeResume(itemGeneration) else { return false }  // an ended subscription's
            try await apply(resume)
            return true
        }

        // What the outbox had ready, taken under one lock; written as one batch.
        var ready: [OutboxItem] = []
        var next = 0
        // Counted per batch, not per event.
        var delivered = 0
        // The oldest live event written in this batch, for `fanout_delivery_seconds`.
        var oldestReceived: NIODeadline?
        defer { if delivered > 0 { FanoutMetrics.delivered.increment(by: delivered) } }
        while true {
            if let resume = takeResume() {
                try await apply(resume)
                continue
            }
            if next == ready.count {
                if delivered > 0 { FanoutMetrics.delivered.increment(by: delivered) }
                delivered = 0
                if let oldest = oldestReceived {
                    FanoutMetrics.delivery.record(.nanoseconds((NIODeadline.now() - oldest).nanoseconds))
                    oldestReceived = nil
                }
                if let range = skipped, self.outbox.isIdle {
                    // The end of a burst over the cap: say what was skipped now, not later.
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), writer)
                    skipped = nil
                }
                ready.removeAll(keepingCapacity: true)
                next = 0
                self.outbox.drain(into: &ready, limit: Self.itemsPerBatch)
                if ready.isEmpty {
                    try await self.flush(writer)  // nothing more to add: send what is batched
                    // Collapsed lines are counted until the agent says something else, or for
                    // a second at most (the heartbeat ticks the writer while some are pending).
                    self.state.withLock { $0.collapsePending = collapse.hasPending }
                    return true
                }
                let rate = Double(self.state.withLock { $0.eventsPerSecond })
                (limiter.capacity, limiter.perSecond) = (rate, rate)
            }
            let item = ready[next]
            next += 1
            switch item {
            case .closed:
                return false
            case .control(let message):
                if message.readableBytes > 0 { try await self.write(message, writer) }
            case .request:
                continue  // the stream protocol handles its messages in the reader
            case .ping:
                try await self.flush(writer)
                try await writer.ping()
            case .tick:
                for notice in collapse.flush(olderThan: .seconds(1)) { try await self.write(notice, writer) }
            case .catchUp(let itemGeneration):
                guard try await current(itemGeneration) else { continue }
                FanoutMetrics.catchUps.increment()
                let through = self.outbox.caughtUp()
                if through - cursor > Int64(self.settings.maxCatchUpEvents) {
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "slow_consumer"), writer)
                    cursor = through
                } else if through > cursor {
                    cursor = try await self.replay(after: cursor, through: through, filter: filter, writer: writer)
                }
            case .gap(let from, let to, let itemGeneration):
                guard try await current(itemGeneration), to > cursor else { continue }
                FanoutMetrics.gapNotices.increment()
                try await self.write(ServerMessage.gap(from: max(from, cursor + 1), to: to, reason: "unavailable"), writer)
                cursor = to
            case .event(let event, let after, let itemGeneration):
                guard try await current(itemGeneration), event.seq > cursor else { continue }
                if after > cursor {
                    cursor = try await self.replay(after: cursor, through: after, filter: filter, writer: writer)
                }
                if collapse.isDue(.seconds(1)) {
                    for notice in collapse.flush(olderThan: .seconds(1)) { try await self.write(notice, writer) }
                }
                switch collapse.admit(event) {
                case .suppress:
                    cursor = event.seq
                    continue
                case .send(let notice):
                    if let notice { try await self.write(notice, writer) }
                }
                if limiter.take() == nil {
                    if let range = skipped {
                        FanoutMetrics.gapNotices.increment()
                        try await self.write(ServerMessage.gap(from: range.from, to: range.to, reason: "rate_limit"), writer)
                        skipped = nil
                    }
                    try await self.writeEvent(event, writer)
                    delivered += 1
                    if let received = event.received, oldestReceived.map({ received < $0 }) ?? true { oldestReceived = received }
                } else {
                    skipped = (skipped?.from ?? event.seq, event.seq)
                }
                cursor = event.seq
            }
        }
    }

    /// Sends the events of `(after, through]` from the log that match `filter`, and returns
    /// `through`. The rate cap does not apply: the client asked for them. With
    /// `checkRetention`, seqs already dropped by the log's retention are announced as a gap.
    private func replay(
        after: Int64,
        through: Int64,
        filter: StreamFilter,
        writer: WebSocketFrameWriter,
        checkRetention: Bool = false
    ) async throws -> Int64 {
        var cursor = after
        do {
            if checkRetention, after < through {
                writer.endBatch()  // what is written goes out before the log is read
                let tenant = self.tenant
                let oldest = try await inTaskOfItsOwn { try await self.reader.oldest(tenant: tenant) } ?? (through + 1)
                if oldest > after + 1 {
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: after + 1, to: min(oldest - 1, through), reason: "expired"), writer)
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
                try await self.flush(writer)
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
                    try await self.writeEvent(event, writer)
                }
                FanoutMetrics.caughtUp.increment(by: page.count)
                cursor = pageEnd
                if scanLimited {
                    FanoutMetrics.gapNotices.increment()
                    try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "scan_limit"), writer)
                    cursor = through
                }
            }
        } catch let error as PSQLError {
            self.logger.warning("replay from the event log failed", metadata: ["error": "\(String(reflecting: error))"])
            FanoutMetrics.gapNotices.increment()
            try await self.write(ServerMessage.gap(from: cursor + 1, to: through, reason: "unavailable"), writer)
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
    /// any other message, so the order is kept).
    private func writeEvent(_ event: FeedEvent, _ writer: WebSocketFrameWriter) async throws {
        let frame = event.frame
        let full: Bool? = self.batch.withLock { batch in
            guard batch.enabled else { return nil }
            batch.frames.append(frame)
            batch.bytes += frame.readableBytes
            return batch.frames.count >= 256 || batch.bytes >= 64 << 10
        }
        switch full {
        case nil:
            if let wire = event.wire {
                try await writer.send(framed: wire)
            } else {
                try await self.send(frame, writer)
            }
        case true?: try await self.flush(writer)
        case false?: break
        }
    }

    /// Sends the batched events: one alone as itself, several as a JSON array.
    private func flush(_ writer: WebSocketFrameWriter) async throws {
        let frames: [ByteBuffer] = self.batch.withLock { batch in
            defer {
                batch.frames = []  // handed over: keeping its capacity would copy it
                batch.bytes = 0
            }
            return batch.frames
        }
        guard !frames.isEmpty else { return }
        if frames.count == 1 {
            try await self.send(frames[0], writer)
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
        try await self.send(message, writer)
    }

    /// Writes a protocol message, after whatever events are batched.
    private func write(_ buffer: ByteBuffer, _ writer: WebSocketFrameWriter) async throws {
        try await self.flush(writer)
        try await self.send(buffer, writer)
    }

    private func send(_ buffer: ByteBuffer, _ writer: WebSocketFrameWriter) async throws {
        try await writer.send(buffer)
    }
}

/// The recent output of one attached terminal session, chunk by chunk, each numbered: a viewer
/// that reconnects after seq N is sent the chunks after N, or told to take a fresh screen when
/// some of them were evicted.
///
/// It holds at most `maxBytes` of output (the newest chunk is kept even when it alone is larger).
/// Appending and evicting cost O(1) amortized: evicted chunks are skipped by a head index and the
/// storage is compacted only once they make up half of it.
struct TerminalOutputLog: Sendable {
    /// The most bytes kept (a single larger chunk is kept alone).
    let maxBytes: Int
    /// The seq of the last chunk appended; 0 before any.
    private(set) var lastSeq: UInt64 = 0
    /// The bytes held, in the chunks kept.
    private(set) var bytes = 0

    /// The chunks kept are `storage[head...]`; `storage[head]` has seq `lastSeq - (storage.count - head) + 1`.
    private var storage: [[UInt8]] = []
    private var head = 0

    /// - Parameter maxBytes: the most bytes kept; positive.
    init(maxBytes: Int) {
        precondition(maxBytes > 0, "maxBytes must be positive")
        self.maxBytes = maxBytes
    }

    /// The number of chunks kept.
    var count: Int { self.storage.count - self.head }

    /// The seq of the oldest chunk kept, or nil when none is.
    var firstSeq: UInt64? { self.count == 0 ? nil : self.lastSeq - UInt64(self.count) + 1 }

    /// Appends a chunk, evicting the oldest ones past ``maxBytes``, and returns its seq (1 for
    /// the first chunk, then one more each time).
    @discardableResult
    mutating func append(_ data: [UInt8]) -> UInt64 {
        self.storage.append(data)
        self.bytes += data.count
        self.lastSeq += 1
        while self.bytes > self.maxBytes, self.count > 1 {
            self.bytes -= self.storage[self.head].count
            self.storage[self.head] = []
            self.head += 1
        }
        if self.head >= 16, self.head * 2 >= self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
        return self.lastSeq
    }

    /// The chunks after `seq`, oldest first: empty when `seq` is ``lastSeq`` (up to date), and
    /// nil when some chunk after `seq` was evicted or `seq` is past ``lastSeq`` (the caller sends
    /// a fresh screen instead).
    func chunks(after seq: UInt64) -> [(seq: UInt64, data: [UInt8])]? {
        guard seq <= self.lastSeq else { return nil }
        if seq == self.lastSeq { return [] }
        guard let firstSeq = self.firstSeq, seq + 1 >= firstSeq else { return nil }
        let start = self.head + Int(seq + 1 - firstSeq)
        return (start..<self.storage.count).map { index in
            (seq: firstSeq + UInt64(index - self.head), data: self.storage[index])
        }
    }
}

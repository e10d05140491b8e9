/// The exports the relay has taken and not yet forwarded: bounded in bytes, oldest first. A
/// batch to forward joins consecutive exports of one signal (an OTLP export's only field is
/// repeated, so their bytes concatenated are one export holding all of them). Pure.
struct RelayQueue: Sendable {
    /// One stamped export: protobuf, or OTLP JSON (`json`; sent on as it came, since ingest
    /// reads JSON's hex ids only from JSON).
    struct Entry: Sendable, Equatable {
        var signal: RelaySignal
        var bytes: [UInt8]
        var items: Int
        /// Its fields, nested messages and values (what decoding it builds).
        var values = 0
        var json = false
    }

    /// What the forwarder sends at once: `count` entries of one signal and encoding, joined
    /// (JSON exports one at a time: their bytes do not join).
    struct Batch: Sendable, Equatable {
        var signal: RelaySignal
        var bytes: [UInt8]
        var items: Int
        var count: Int
        var values = 0
        var json = false
    }

    /// The most bytes held.
    let maxBytes: Int
    private(set) var bytes = 0
    private(set) var items = 0
    private var entries: [Entry] = []
    private var head = 0

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    var isEmpty: Bool { self.head == self.entries.count }
    var count: Int { self.entries.count - self.head }

    /// Adds `entry` unless it would take the queue past ``maxBytes``.
    mutating func push(_ entry: Entry) -> Bool {
        guard self.bytes + entry.bytes.count <= self.maxBytes else { return false }
        self.entries.append(entry)
        self.bytes += entry.bytes.count
        self.items += entry.items
        return true
    }

    /// The oldest exports of the oldest one's signal, joined, within `maxBytes`, `maxItems` and
    /// `maxValues` (the first one always, whatever its size), left in the queue until
    /// ``remove(_:)``.
    func peek(maxBytes: Int, maxItems: Int, maxValues: Int = .max) -> Batch? {
        guard !self.isEmpty else { return nil }
        let first = self.entries[self.head]
        var batch = Batch(signal: first.signal, bytes: first.bytes, items: first.items, count: 1, values: first.values, json: first.json)
        var index = self.head + 1
        while !batch.json, index < self.entries.count {
            let next = self.entries[index]
            guard next.signal == batch.signal, !next.json, batch.bytes.count + next.bytes.count <= maxBytes, batch.items + next.items <= maxItems,
                batch.values + next.values <= maxValues
            else {
                break
            }
            batch.bytes += next.bytes
            batch.items += next.items
            batch.values += next.values
            batch.count += 1
            index += 1
        }
        return batch
    }

    /// Removes the `batch` ``peek(maxBytes:maxItems:)`` gave.
    mutating func remove(_ batch: Batch) {
        for entry in self.entries[self.head..<(self.head + batch.count)] {
            self.bytes -= entry.bytes.count
            self.items -= entry.items
        }
        self.head += batch.count
        if self.head > 64 && self.head * 2 > self.entries.count {
            self.entries.removeFirst(self.head)
            self.head = 0
        }
    }

    /// Empties the queue; answers the items it held.
    mutating func removeAll() -> Int {
        let items = self.items
        self.entries = []
        self.head = 0
        self.bytes = 0
        self.items = 0
        return items
    }
}

import TestSupport
import Testing

@testable import TerminalBroker

/// The log's contract in the plainest terms: an array, evicted from the front.
private struct ModelLog {
    let maxBytes: Int
    var chunks: [(seq: UInt64, data: [UInt8])] = []
    var lastSeq: UInt64 = 0

    mutating func append(_ data: [UInt8]) -> UInt64 {
        self.lastSeq += 1
        self.chunks.append((self.lastSeq, data))
        while self.chunks.count > 1, self.chunks.reduce(0, { $0 + $1.data.count }) > self.maxBytes {
            self.chunks.removeFirst()
        }
        return self.lastSeq
    }

    var bytes: Int { self.chunks.reduce(0) { $0 + $1.data.count } }

    func chunks(after seq: UInt64) -> [(seq: UInt64, data: [UInt8])]? {
        if seq > self.lastSeq { return nil }
        let wanted = self.chunks.filter { $0.seq > seq }
        return wanted.count == Int(self.lastSeq - seq) ? wanted : nil
    }
}

/// The seqs and data of `chunks`, comparable (tuples are not Equatable).
private func flat(_ chunks: [(seq: UInt64, data: [UInt8])]?) -> [String]? {
    chunks?.map { "\($0.seq): \($0.data)" }
}

private func seqs(_ chunks: [(seq: UInt64, data: [UInt8])]?) -> [UInt64]? {
    chunks?.map(\.seq)
}

@Suite("The output log numbers chunks from 1, keeps the newest within its byte bound, and tells a late reader when it missed some")
struct TerminalOutputLogTests {
    @Test func anEmptyLogIsUpToDateAtZeroAndNothingElse() {
        let log = TerminalOutputLog(maxBytes: 10)
        #expect(log.lastSeq == 0 && log.bytes == 0 && log.count == 0 && log.firstSeq == nil)
        #expect(seqs(log.chunks(after: 0)) == [])
        #expect(log.chunks(after: 1) == nil)
    }

    @Test func seqsStartAtOneAndAReaderGetsWhatFollowsItsSeq() {
        var log = TerminalOutputLog(maxBytes: 100)
        #expect(log.append(Array("ab".utf8)) == 1)
        #expect(log.append([]) == 2)
        #expect(log.append(Array("cde".utf8)) == 3)
        #expect(log.lastSeq == 3 && log.bytes == 5 && log.count == 3 && log.firstSeq == 1)
        let all = log.chunks(after: 0)
        #expect(seqs(all) == [1, 2, 3])
        #expect(all?.map { String(decoding: $0.data, as: UTF8.self) } == ["ab", "", "cde"])
        #expect(seqs(log.chunks(after: 2)) == [3])
        #expect(seqs(log.chunks(after: 3)) == [])
        #expect(log.chunks(after: 4) == nil)
        #expect(log.chunks(after: .max) == nil)
    }

    @Test func theOldestChunksGoOnlyOnceTheBoundIsExceeded() {
        var log = TerminalOutputLog(maxBytes: 10)
        log.append([UInt8](repeating: 1, count: 4))
        log.append([UInt8](repeating: 2, count: 4))
        log.append([UInt8](repeating: 3, count: 2))
        // Exactly at the bound: all kept.
        #expect(log.bytes == 10 && log.firstSeq == 1)
        #expect(seqs(log.chunks(after: 0)) == [1, 2, 3])
        // One byte over: the oldest goes, and a reader at 0 has missed it.
        log.append([4])
        #expect(log.bytes == 7 && log.firstSeq == 2 && log.count == 3)
        #expect(log.chunks(after: 0) == nil)
        #expect(seqs(log.chunks(after: 1)) == [2, 3, 4])
        // A chunk that needs two to go: 7 + 8 bytes, less 4 is still over, less 2 more is 9.
        log.append([UInt8](repeating: 5, count: 8))
        #expect(log.bytes == 9 && log.firstSeq == 4)
        #expect(log.chunks(after: 2) == nil)
        #expect(seqs(log.chunks(after: 3)) == [4, 5])
    }

    @Test func aChunkLargerThanTheBoundIsKeptAloneUntilTheNext() {
        var log = TerminalOutputLog(maxBytes: 10)
        log.append([1, 2, 3])
        #expect(log.append([UInt8](repeating: 9, count: 25)) == 2)
        #expect(log.bytes == 25 && log.count == 1 && log.firstSeq == 2)
        #expect(log.chunks(after: 0) == nil)
        #expect(log.chunks(after: 1)?.map(\.data.count) == [25])
        log.append([7])
        #expect(log.bytes == 1 && log.count == 1 && log.firstSeq == 3)
        #expect(log.chunks(after: 1) == nil)
        #expect(seqs(log.chunks(after: 2)) == [3])
    }

    @Test(arguments: [1, 7, 64, 1000])
    func itMatchesAPlainArrayModelOverRandomAppends(maxBytes: Int) {
        var random = SplitMix64(state: UInt64(maxBytes))
        var log = TerminalOutputLog(maxBytes: maxBytes)
        var model = ModelLog(maxBytes: maxBytes)
        for step in 0..<3000 {
            let size = Int.random(in: 0...(maxBytes * 2 / 3 + 2), using: &random)
            let data = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(log.append(data) == model.append(data))
            #expect(log.bytes == model.bytes && log.lastSeq == model.lastSeq && log.count == model.chunks.count)
            if step % 97 == 0 || step > 2990 {
                for seq in 0...(model.lastSeq + 1) {
                    #expect(flat(log.chunks(after: seq)) == flat(model.chunks(after: seq)), "step \(step), after \(seq)")
                }
            } else {
                let seq = model.lastSeq - UInt64.random(in: 0...min(model.lastSeq, 40), using: &random)
                #expect(flat(log.chunks(after: seq)) == flat(model.chunks(after: seq)), "step \(step), after \(seq)")
            }
        }
    }
}

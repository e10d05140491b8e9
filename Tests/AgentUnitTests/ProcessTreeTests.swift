import Foundation
import SwarmdeckTools
import Testing

@Suite("ProcessTree: /proc stat lines and descendants (pure)")
struct ProcessTreeTests {
    @Test("a stat line's state and parent come after the last parenthesis, whatever the name holds")
    func statLines() {
        #expect(ProcessTree.entry(stat: "42 (sleep) S 7 42 42 0 -1") == .init(parent: 7, state: "S"))
        #expect(ProcessTree.entry(stat: "43 (a) b (c)) T 9 1 1") == .init(parent: 9, state: "T"))
        #expect(ProcessTree.entry(stat: "44 (x") == nil)
        #expect(ProcessTree.entry(stat: "45 (x) Z") == nil)
    }

    @Test("descendants: children, their children, adopted orphans; never the root, never a cycle")
    func descendants() {
        let table: [Int32: ProcessTree.Entry] = [
            10: .init(parent: 1, state: "S"),  // the connector
            11: .init(parent: 10, state: "S"),  // the command
            12: .init(parent: 11, state: "T"),  // its child
            13: .init(parent: 10, state: "S"),  // an orphan the connector adopted
            14: .init(parent: 13, state: "Z"),
            20: .init(parent: 1, state: "S"),  // someone else's
            30: .init(parent: 31, state: "S"), 31: .init(parent: 30, state: "S"),  // a cycle (never in /proc, but bounded)
        ]
        #expect(ProcessTree.descendants(of: 10, in: table) == [11: "S", 12: "T", 13: "S", 14: "Z"])
        #expect(ProcessTree.descendants(of: 20, in: table).isEmpty)
        #expect(ProcessTree.descendants(of: 30, in: table) == [31: "S"])
    }

    @Test("a process's start time is the 22nd field of its stat line, whatever its name holds")
    func startTime() {
        let stat = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1234 5 18446744073709551615"
        #expect(ProcessTree.startTime(stat: stat) == 987654)
        #expect(ProcessTree.startTime(stat: "4242 (short) S 1 2 3") == nil)
        #expect(ProcessTree.startTime(of: getpid()) != nil)
    }
}

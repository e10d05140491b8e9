import Foundation
import Testing

@testable import ControlAPI

@Suite("LastAnswers: the last answer per key, bounded by dropping the oldest")
struct LastAnswersTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a key's last answer replaces its earlier one, and another key's is kept apart")
    func lastPerKey() {
        var answers = LastAnswers<Int>(capacity: 4)
        answers.record(1, for: "a", at: self.start)
        answers.record(2, for: "b", at: self.start.addingTimeInterval(1))
        answers.record(3, for: "a", at: self.start.addingTimeInterval(2))
        #expect(answers.last(for: "a")?.value == 3)
        #expect(answers.last(for: "a")?.at == self.start.addingTimeInterval(2))
        #expect(answers.last(for: "b")?.value == 2)
        #expect(answers.last(for: "c") == nil)
        #expect(answers.answers.count == 2)
        // An answer older than the one kept (answered out of order) does not replace it.
        answers.record(4, for: "a", at: self.start.addingTimeInterval(1))
        #expect(answers.last(for: "a")?.value == 3)
    }

    @Test("past its capacity a new key drops the key answered longest ago; a known key drops none")
    func bounded() {
        var answers = LastAnswers<Int>(capacity: 3)
        for (index, key) in ["a", "b", "c"].enumerated() {
            answers.record(index, for: key, at: self.start.addingTimeInterval(Double(index)))
        }
        // "a" answers again: now "b" is the oldest.
        answers.record(10, for: "a", at: self.start.addingTimeInterval(5))
        #expect(answers.answers.count == 3)
        answers.record(20, for: "d", at: self.start.addingTimeInterval(6))
        #expect(answers.answers.count == 3)
        #expect(answers.last(for: "b") == nil)
        #expect(answers.last(for: "a")?.value == 10 && answers.last(for: "c")?.value == 2 && answers.last(for: "d")?.value == 20)
        // 10,000 keys through a capacity of 3 keep 3, the newest.
        for index in 0..<10_000 {
            answers.record(index, for: "k\(index)", at: self.start.addingTimeInterval(100 + Double(index)))
        }
        #expect(Set(answers.answers.keys) == ["k9997", "k9998", "k9999"])
    }
}

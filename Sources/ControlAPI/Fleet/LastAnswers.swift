import Foundation
import ServiceKit

/// The last answer per key, bounded: past `capacity` keys, recording a new key drops the key
/// answered longest ago. Control-api keeps health-monitor's last summary per tenant in one, so an
/// overview built while health-monitor is slow shows what it last said, marked stale, instead
/// of nothing.
struct LastAnswers<Value> {
    struct Answer {
        var value: Value
        var at: Date
    }

    let capacity: Int
    private(set) var answers: [String: Answer] = [:]

    init(capacity: Int) {
        precondition(capacity > 0, "LastAnswers needs room for one key")
        self.capacity = capacity
    }

    /// Records `value` as `key`'s answer at `at`, unless the answer kept is a newer one (two
    /// questions answered out of order).
    mutating func record(_ value: Value, for key: String, at: Date) {
        if let kept = self.answers[key], kept.at > at { return }
        if self.answers[key] == nil { self.answers.evictOldest(bound: self.capacity) { $0.at } }
        self.answers[key] = Answer(value: value, at: at)
    }

    /// `key`'s last answer, if it is still kept.
    func last(for key: String) -> Answer? {
        self.answers[key]
    }
}

extension LastAnswers: Sendable where Value: Sendable {}
extension LastAnswers.Answer: Sendable where Value: Sendable {}

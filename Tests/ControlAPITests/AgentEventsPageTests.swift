import Testing

@testable import ControlAPI

@Suite("AgentEventsPage: the newest events that fit, and where the page before starts")
struct AgentEventsPageTests {
    struct Page: Equatable {
        var count: Int
        var nextBefore: Int64?
        init(_ count: Int, _ nextBefore: Int64?) {
            self.count = count
            self.nextBefore = nextBefore
        }
    }

    static func page(_ events: [(seq: Int64, bytes: Int)], limit: Int, maxBytes: Int) -> Page {
        let page = AgentEventsPage(events, limit: limit, maxBytes: maxBytes)
        return Page(page.count, page.nextBefore)
    }

    @Test("a full read has an older page before it; a short read does not")
    func fullAndShort() {
        let events: [(seq: Int64, bytes: Int)] = [(4, 10), (9, 10), (12, 10)]
        #expect(Self.page(events, limit: 3, maxBytes: 100) == Page(3, 4))
        #expect(Self.page(events, limit: 50, maxBytes: 100) == Page(3, nil))
        #expect(Self.page([], limit: 50, maxBytes: 100) == Page(0, nil))
    }

    @Test("the bytes cut from the oldest end, keep at least the newest event, and the page before starts at what was cut")
    func cutByBytes() {
        let events: [(seq: Int64, bytes: Int)] = [(1, 40), (2, 40), (3, 40)]
        #expect(Self.page(events, limit: 50, maxBytes: 100) == Page(2, 2))
        #expect(Self.page(events, limit: 50, maxBytes: 80) == Page(2, 2))
        #expect(Self.page(events, limit: 50, maxBytes: 79) == Page(1, 3))
        // One event larger than the cap is still answered, alone.
        #expect(Self.page([(7, 500)], limit: 50, maxBytes: 100) == Page(1, nil))
        #expect(Self.page([(6, 1), (7, 500)], limit: 50, maxBytes: 100) == Page(1, 7))
    }
}

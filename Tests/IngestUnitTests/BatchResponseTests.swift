import Foundation
import TestSupport
import Testing

@testable import Ingest

@Suite("A batch's answer, written by hand, is the JSON Foundation's encoder writes")
struct BatchResponseTests {
    typealias Response = IngestController.BatchResponse

    static let awkward = [
        "m1", "quote \" back\\slash", "line\nbreak\ttab", "control \u{1}\u{1f}", "é ü 漢字 🚀", "slash / </script>", "\u{2028}\u{2029}", "",
    ]

    @Test("every outcome, absent fields and awkward strings decode to the same values", arguments: 0..<20)
    func sameValues(seed: Int) throws {
        var random = SplitMix64(state: UInt64(seed))
        let results = (0..<Int(random.next() % 40)).map { index -> Response.Result in
            let pick = { Self.awkward[Int(random.next() % UInt64(Self.awkward.count))] }
            switch random.next() % 4 {
            case 0: return .init(msgId: pick(), status: "accepted", seq: Int64(index) + 1, reason: nil)
            case 1: return .init(msgId: pick(), status: "duplicate", seq: Int64.max - Int64(index), reason: nil)
            case 2: return .init(msgId: pick(), status: "rejected", seq: nil, reason: pick())
            default: return .init(msgId: nil, status: "rejected", seq: nil, reason: "the body is not an object")
            }
        }
        let response = Response(accepted: seed, duplicates: seed * 2, rejected: results.count, results: results)
        let mine = try JSONSerialization.jsonObject(with: Data(response.json())) as? NSDictionary
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(response)) as? NSDictionary
        #expect(mine != nil && mine == foundation, "\(String(decoding: response.json(), as: UTF8.self))")
    }

    @Test("an empty batch's answer")
    func empty() {
        #expect(
            String(decoding: Response(accepted: 0, duplicates: 0, rejected: 0, results: []).json(), as: UTF8.self)
                == #"{"accepted":0,"duplicates":0,"rejected":0,"results":[]}"#
        )
    }
}

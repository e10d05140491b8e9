import Contracts
import Foundation
import Testing

/// The stream protocol's messages as JSON.
@Suite struct StreamMessagesTests {
    @Test func anEventIdIsReadFromAStringOrANumberAndWrittenAsAString() throws {
        let decoder = JSONDecoder()
        let fromString = try decoder.decode(StreamClientMessage.self, from: Data(#"{"type":"subscribe","lastEventId":"42"}"#.utf8))
        let fromNumber = try decoder.decode(StreamClientMessage.self, from: Data(#"{"type":"subscribe","lastEventId":42}"#.utf8))
        #expect(fromString.lastEventId == StreamEventID(seq: 42) && fromNumber == fromString)
        for bad in [#"{"type":"subscribe","lastEventId":-1}"#, #"{"type":"subscribe","lastEventId":"x"}"#] {
            #expect(throws: DecodingError.self) { try decoder.decode(StreamClientMessage.self, from: Data(bad.utf8)) }
        }
        let written = String(decoding: try JSONEncoder().encode(StreamEventID(seq: 7)), as: UTF8.self)
        #expect(written == #""7""#)
    }

    @Test func aServerMessageCarriesOnlyItsTypesFields() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let gap = String(decoding: try encoder.encode(StreamServerMessage.gap(from: 11, to: 20, reason: "slow_consumer")), as: UTF8.self)
        #expect(gap == #"{"fromSeq":11,"reason":"slow_consumer","resumeFrom":"10","toSeq":20,"type":"gap"}"#)
        let error = StreamServerMessage.error(ErrorEnvelope.Body(code: .invalidRequest, message: "no", requestId: "r1"))
        let decoded = try JSONDecoder().decode(StreamServerMessage.self, from: try encoder.encode(error))
        #expect(decoded == error && decoded.requestId == "r1" && decoded.error?.code == .invalidRequest)
    }
}

import Anthropic
import NIOCore
import Testing

@Suite("SSEParser: server-sent events fed in chunks split anywhere")
struct SSEParserTests {
    /// A stream with LF, CRLF and CR line ends, a comment, multi-line data, multi-byte UTF-8,
    /// a field without a space after the colon, ignored fields and an event without data.
    static let stream = Array(
        ("event: message_start\ndata: {\"a\":1}\n\n"
            + ": a comment\nevent: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n"
            + "data: line one\ndata: line two\n\n"
            + "event: delta\ndata: héllo — ✓ 🎉\rdata:no-space\r\r"
            + "id: 7\nretry: 100\nevent: no-data\n\n"
            + "event: last\ndata:\n\n").utf8
    )

    static let expected = [
        SSEEvent(event: "message_start", data: "{\"a\":1}"),
        SSEEvent(event: "ping", data: "{\"type\": \"ping\"}"),
        SSEEvent(event: nil, data: "line one\nline two"),
        SSEEvent(event: "delta", data: "héllo — ✓ 🎉\nno-space"),
        SSEEvent(event: "last", data: ""),
    ]

    static func parse(_ chunks: [ArraySlice<UInt8>]) throws -> [SSEEvent] {
        var parser = SSEParser()
        var events: [SSEEvent] = []
        for chunk in chunks {
            events += try parser.feed(ByteBuffer(bytes: chunk))
        }
        #expect(!parser.hasPartialEvent)
        return events
    }

    @Test("the whole stream at once")
    func whole() throws {
        #expect(try Self.parse([Self.stream[...]]) == Self.expected)
    }

    @Test("split in two at every byte position (mid-line, mid-CRLF, mid-UTF-8)")
    func everySplit() throws {
        let bytes = Self.stream
        for split in 0...bytes.count {
            let events = try Self.parse([bytes[..<split], bytes[split...]])
            #expect(events == Self.expected, "split at \(split)")
        }
    }

    @Test("split in three at every pair of positions (CR, CRLF and multi-byte characters)")
    func everyPairOfSplits() throws {
        let bytes = Array("event: a\r\ndata: é🎉\r\rdata: x\r\ndata: ✓\n\n: c\r\n\r\ndata: y\n\n".utf8)
        let expected = [SSEEvent(event: "a", data: "é🎉"), SSEEvent(event: nil, data: "x\n✓"), SSEEvent(event: nil, data: "y")]
        for first in 0...bytes.count {
            for second in first...bytes.count {
                let events = try Self.parse([bytes[..<first], bytes[first..<second], bytes[second...]])
                #expect(events == expected, "splits at \(first) and \(second)")
            }
        }
    }

    @Test("one byte at a time")
    func byteByByte() throws {
        #expect(try Self.parse(Self.stream.indices.map { Self.stream[$0...$0] }) == Self.expected)
    }

    @Test("a leading byte-order mark is skipped")
    func byteOrderMark() throws {
        var parser = SSEParser()
        let first = try parser.feed([0xEF, 0xBB])
        let rest = try parser.feed([0xBF] + Array("event: a\ndata: b\n\n".utf8))
        #expect(first.isEmpty)
        #expect(rest == [SSEEvent(event: "a", data: "b")])
    }

    @Test("an event not ended by a blank line is held back")
    func partialEvent() throws {
        var parser = SSEParser()
        #expect(try parser.feed(Array("event: a\ndata: b\n".utf8)).isEmpty)
        #expect(parser.hasPartialEvent)
        #expect(try parser.feed(Array("\n".utf8)) == [SSEEvent(event: "a", data: "b")])
        #expect(!parser.hasPartialEvent)
    }

    @Test("an event over the cap is refused, however it is split; events under it pass")
    func eventCap() throws {
        let big = Array(("data: " + String(repeating: "x", count: 100) + "\n\n").utf8)
        var whole = SSEParser(maximumEventBytes: 64)
        #expect(throws: AnthropicError.invalidResponse("a server-sent event exceeds 64 bytes")) { try whole.feed(big) }

        var pieces = SSEParser(maximumEventBytes: 64)
        #expect(throws: AnthropicError.self) {
            for byte in big { _ = try pieces.feed([byte]) }
        }

        // Many data lines that together exceed the cap.
        var lines = SSEParser(maximumEventBytes: 64)
        #expect(throws: AnthropicError.self) {
            _ = try lines.feed(Array(String(repeating: "data: 0123456789\n", count: 10).utf8))
        }

        // The cap is per event: many small events are fine.
        var many = SSEParser(maximumEventBytes: 64)
        let small = Array(String(repeating: "event: e\ndata: 0123456789\n\n", count: 1000).utf8)
        #expect(try many.feed(small).count == 1000)
    }

    @Test("the default cap is 1 MiB")
    func defaultCap() throws {
        #expect(SSEParser.defaultMaximumEventBytes == 1 << 20)
        var parser = SSEParser()
        let payload = String(repeating: "y", count: (1 << 20) - 100)
        #expect(try parser.feed(Array(("data: " + payload + "\n\n").utf8)) == [SSEEvent(event: nil, data: payload)])
        #expect(throws: AnthropicError.self) { try parser.feed(Array(("data: " + payload + payload + "\n\n").utf8)) }
    }
}

import Foundation
import TestSupport
import Testing

@testable import TerminalBroker

private func text(_ line: [UInt8]) -> String {
    String(decoding: line, as: UTF8.self)
}

/// The JSON value of one line, read by Foundation's own parser rather than ours.
private func foundationJSON(_ line: [UInt8]) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(line), options: [])
}

@Suite("asciicast v2 lines are the JSON asciinema writes, escape every control character, and read back to the same events")
struct AsciicastRecordingTests {
    @Test func theHeaderIsOneJSONObjectLine() throws {
        let header = AsciicastHeader(
            width: 80,
            height: 24,
            timestamp: 1_700_000_000,
            title: "demo \"one\"",
            env: ["TERM": "xterm-256color", "SHELL": "/bin/bash"]
        )
        #expect(
            text(AsciicastRecording.line(header: header))
                == #"{"version": 2, "width": 80, "height": 24, "timestamp": 1700000000, "title": "demo \"one\"", "#
                + #""env": {"SHELL": "/bin/bash", "TERM": "xterm-256color"}}"# + "\n"
        )
        let bare = AsciicastHeader(width: 120, height: 40, timestamp: 0)
        #expect(text(AsciicastRecording.line(header: bare)) == #"{"version": 2, "width": 120, "height": 40, "timestamp": 0}"# + "\n")
        let decoded = try JSONDecoder().decode(AsciicastHeader.self, from: Data(AsciicastRecording.line(header: header)))
        #expect(decoded == header)
    }

    @Test func eventsAreArraysOfTimeCodeAndData() {
        #expect(text(AsciicastRecording.line(elapsed: 0.123456, event: .output("hi"))) == #"[0.123456, "o", "hi"]"# + "\n")
        #expect(text(AsciicastRecording.line(elapsed: 12, event: .input("q"))) == #"[12.0, "i", "q"]"# + "\n")
        #expect(text(AsciicastRecording.line(elapsed: 1.5, event: .resize(cols: 100, rows: 30))) == #"[1.5, "r", "100x30"]"# + "\n")
        #expect(text(AsciicastRecording.line(elapsed: 3.25, event: .marker("build done"))) == #"[3.25, "m", "build done"]"# + "\n")
    }

    @Test(arguments: [
        (0.0, "0.0"), (0.000001, "0.000001"), (0.0000004, "0.0"), (0.0000006, "0.000001"), (1.1, "1.1"), (59.9999996, "60.0"),
        (3600.000250, "3600.00025"), (-1, "0.0"), (.nan, "0.0"), (.infinity, "0.0"),
    ])
    func timesHaveAtMostSixDecimals(elapsed: Double, written: String) {
        #expect(text(AsciicastRecording.line(elapsed: elapsed, event: .output(""))) == "[\(written), \"o\", \"\"]\n")
    }

    @Test func controlCharactersQuotesAndBackslashesAreEscapedAndOtherTextKept() throws {
        let output = "\u{1B}[1m\r\n\t\u{0}\u{7}\u{7F} \"q\" \\ é 日本 🎉 \u{2028}"
        let line = AsciicastRecording.line(elapsed: 0, event: .output(output))
        #expect(
            text(line) == #"[0.0, "o", "\u001b[1m\u000d\u000a\u0009\u0000\u0007\u007f \"q\" \\ é 日本 🎉 "# + "\u{2028}\"]\n"
        )
        // One line: the only line end is the last byte.
        #expect(line.firstIndex(of: 0x0A) == line.count - 1)
        #expect(line.dropLast().allSatisfy { $0 >= 0x20 && $0 != 0x7F })
        // Foundation's parser reads the same string back.
        let array = try #require(try foundationJSON(line) as? [Any])
        #expect(array.count == 3)
        #expect(array[1] as? String == "o")
        #expect(array[2] as? String == output)
    }

    @Test func aRecordingParsesBackToItsHeaderAndEvents() throws {
        let header = AsciicastHeader(width: 80, height: 24, timestamp: 1_700_000_000, title: "t", env: ["TERM": "xterm"])
        let events: [(Double, AsciicastEvent)] = [
            (0.000001, .output("$ ")), (0.5, .input("ls\r")), (0.51, .output("ls\r\n\u{1B}[0m")), (1.25, .resize(cols: 132, rows: 43)),
            (2, .marker("")), (3600.123456, .output("\u{FFFD}\\\"")),
        ]
        var recording = AsciicastRecording.line(header: header)
        for (elapsed, event) in events { recording += AsciicastRecording.line(elapsed: elapsed, event: event) }
        let (parsedHeader, parsedEvents) = try AsciicastRecording.parse(recording)
        #expect(parsedHeader == header)
        #expect(parsedEvents.map { $0.1 } == events.map { $0.1 })
        #expect(parsedEvents.map { $0.0 } == events.map { $0.0 })
    }

    @Test func outputDecodedInChunksReplaysToTheSameBytes() throws {
        var random = SplitMix64(state: 5)
        let pieces = ["a", "é", "€", "🎉", "日本", "\u{1B}[31m", "\r\n", "\t", "\u{0}", "\"", "\\", "\u{7F}"]
        for _ in 0..<50 {
            let written = (0..<200).map { _ in pieces.randomElement(using: &random)! }.joined()
            let bytes = Array(written.utf8)
            // As the broker records: pane output in chunks split anywhere, decoded, one event each.
            var decoder = UTF8ChunkDecoder()
            var recording = AsciicastRecording.line(header: AsciicastHeader(width: 80, height: 24, timestamp: 0))
            var start = 0
            var elapsed = 0.0
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...17, using: &random))
                elapsed += Double(Int.random(in: 0...500_000, using: &random)) / 1_000_000
                recording += AsciicastRecording.line(elapsed: elapsed, event: .output(decoder.decode(Array(bytes[start..<end]))))
                start = end
            }
            let (_, events) = try AsciicastRecording.parse(recording)
            let replayed = events.map { event -> String in
                guard case .output(let text) = event.1 else { return "<not output>" }
                return text
            }
            #expect(Array(replayed.joined().utf8) == bytes)
        }
    }

    @Test func aBrokenRecordingIsRefusedWithTheLineAtFault() {
        func refusal(_ lines: [String]) -> AsciicastParseError? {
            do {
                _ = try AsciicastRecording.parse(Array(lines.joined(separator: "\n").utf8))
                return nil
            } catch {
                return error
            }
        }
        let header = #"{"version": 2, "width": 80, "height": 24, "timestamp": 0}"#
        #expect(refusal([]) == .missingHeader)
        #expect(refusal(["", "  "]) == .missingHeader)
        #expect(refusal([header, "", #"[1.0, "o", "x"]"#, ""]) == nil)
        #expect(refusal([#"{"version": 1, "width": 80, "height": 24, "timestamp": 0}"#]) == .unsupportedVersion(1))
        #expect(refusal([#"{"width": 80}"#]) == .malformedLine(1))
        #expect(refusal([header, #"[1.0, "o", "x"]"#, #"[1.0, "x", "x"]"#]) == .malformedLine(3))
        #expect(refusal([header, #"[1.0, "o"]"#]) == .malformedLine(2))
        #expect(refusal([header, #"[1.0, "o", "x", 4]"#]) == .malformedLine(2))
        #expect(refusal([header, #"[1.0, "r", "80by24"]"#]) == .malformedLine(2))
        #expect(refusal([header, "", "not json"]) == .malformedLine(3))
    }
}

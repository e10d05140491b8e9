import TestSupport
import Testing

@testable import TerminalBroker

/// What tmux 3.3a wrote to `tmux -C new-session "printf ...; sleep 10"` given the commands
/// `display-message -p "hello #{window_width}"`, `bogus-command`, `split-window -d "sleep 5"`,
/// `list-panes -F "#{pane_id} #{pane_width}"` and `rename-session main`, then `kill-server`.
/// The pane printed `A \001 \033[1m \134 \177 é \r\n Z` (the pty made its `\n` a `\r\n`).
private let sampleLines = [
    "%begin 1795636352 260 0",
    "%end 1795636352 260 0",
    "%window-add @0",
    "%sessions-changed",
    "%session-changed $0 0",
    "%output %0 A\\001\\033[1m\\134\u{7F}é\\015\\015\\012Z",
    "%window-renamed @0 bash",
    "%begin 1795636354 268 1",
    "hello 80",
    "%end 1795636354 268 1",
    "%begin 1795636354 269 1",
    "parse error: unknown command: bogus-command",
    "%error 1795636354 269 1",
    "%begin 1795636355 270 1",
    "%end 1795636355 270 1",
    "%layout-change @0 c195,80x24,0,0[80x12,0,0,0,80x11,0,13,1] c195,80x24,0,0[80x12,0,0,0,80x11,0,13,1] *",
    "%begin 1795636355 272 1",
    "%0 80",
    "%1 80",
    "%end 1795636355 272 1",
    "%session-renamed $0 main",
    "%sessions-changed",
    "%exit",
]
private let sample = Array(sampleLines.map { $0 + "\n" }.joined().utf8)

private let sampleEvents: [TmuxControlEvent] = [
    .reply(TmuxReply(number: 260, lines: [], isError: false)),
    .notification(name: "window-add", arguments: "@0"),
    .notification(name: "sessions-changed", arguments: ""),
    .notification(name: "session-changed", arguments: "$0 0"),
    .output(pane: "%0", data: [0x41, 0x01, 0x1B] + Array("[1m".utf8) + [0x5C, 0x7F, 0xC3, 0xA9, 0x0D, 0x0D, 0x0A, 0x5A]),
    .notification(name: "window-renamed", arguments: "@0 bash"),
    .reply(TmuxReply(number: 268, lines: ["hello 80"], isError: false)),
    .reply(TmuxReply(number: 269, lines: ["parse error: unknown command: bogus-command"], isError: true)),
    .reply(TmuxReply(number: 270, lines: [], isError: false)),
    .notification(
        name: "layout-change",
        arguments: "@0 c195,80x24,0,0[80x12,0,0,0,80x11,0,13,1] c195,80x24,0,0[80x12,0,0,0,80x11,0,13,1] *"
    ),
    // Lines of a reply that start with "%" are the reply's, not notifications.
    .reply(TmuxReply(number: 272, lines: ["%0 80", "%1 80"], isError: false)),
    .notification(name: "session-renamed", arguments: "$0 main"),
    .notification(name: "sessions-changed", arguments: ""),
    .exit(reason: nil),
]

private func events(_ text: String, _ parser: TmuxControlParser = TmuxControlParser()) -> [TmuxControlEvent] {
    var parser = parser
    return parser.feed(Array(text.utf8))
}

/// tmux's `%output` escaping (control.c): each byte below 32, and the backslash, as `\ooo`.
private func tmuxEscape(_ bytes: [UInt8]) -> [UInt8] {
    bytes.flatMap { byte -> [UInt8] in
        guard byte < 32 || byte == UInt8(ascii: "\\") else { return [byte] }
        return [UInt8(ascii: "\\"), UInt8(ascii: "0") + (byte >> 6), UInt8(ascii: "0") + (byte >> 3 & 7), UInt8(ascii: "0") + (byte & 7)]
    }
}

@Suite("tmux control mode's output parses into replies, pane output and notifications, the same however it is split, with bounded memory")
struct TmuxControlParserTests {
    @Test func aRealTmuxStreamParsesIntoItsRepliesOutputAndNotifications() {
        var parser = TmuxControlParser()
        #expect(parser.feed(sample) == sampleEvents)
    }

    @Test func theEventsAreTheSameWhereverTheStreamIsSplit() {
        // Byte by byte.
        var parser = TmuxControlParser()
        #expect(sample.flatMap { parser.feed([$0]) } == sampleEvents)
        // In two at every position.
        for split in 0...sample.count {
            var parser = TmuxControlParser()
            let events = parser.feed(sample[..<split]) + parser.feed(sample[split...])
            #expect(events == sampleEvents, "split at \(split)")
        }
        // In random pieces.
        var random = SplitMix64(state: 42)
        for round in 0..<200 {
            var parser = TmuxControlParser()
            var events: [TmuxControlEvent] = []
            var start = 0
            while start < sample.count {
                let end = min(sample.count, start + Int.random(in: 0...40, using: &random))
                events += parser.feed(sample[start..<end])
                start = end
            }
            #expect(events == sampleEvents, "round \(round)")
        }
    }

    @Test func crlfLineEndsGiveTheSameEvents() {
        var parser = TmuxControlParser()
        let crlf = Array(sampleLines.map { $0 + "\r\n" }.joined().utf8)
        #expect(parser.feed(crlf) == sampleEvents)
    }

    @Test func anIncompleteLineWaitsForItsEnd() {
        var parser = TmuxControlParser()
        #expect(parser.feed(Array("%begin 1 7 1\nfirst".utf8)).isEmpty)
        #expect(parser.feed(Array(" line\n%end 1 7".utf8)).isEmpty)
        #expect(parser.feed(Array(" 1\n%exit too far behind".utf8)) == [.reply(TmuxReply(number: 7, lines: ["first line"], isError: false))])
        #expect(parser.feed(Array("\n".utf8)) == [.exit(reason: "too far behind")])
    }

    @Test func onlyTheEndWithTheBeginsTimeAndNumberClosesAReply() {
        let text = "%begin 100 5 1\n%end 100 4 1\n%error 101 5 1\n%end 100 5\n%exit\n%end 100 5 1\n%sessions-changed\n"
        #expect(
            events(text) == [
                .reply(TmuxReply(number: 5, lines: ["%end 100 4 1", "%error 101 5 1", "%end 100 5", "%exit"], isError: false)),
                .notification(name: "sessions-changed", arguments: ""),
            ]
        )
    }

    @Test func linesOutsideRepliesAreNotificationsExitOrOutput() {
        let text = [
            "%exit", "%exit detached", "%pause %1", "%continue %1", "%window-pane-changed @1 %2", "plain text", "",
            "%output malformed", "%output %4 ", "%output %12 x y\\040z", "%begin not a block", "%end 1 2 3",
        ].map { $0 + "\n" }.joined()
        #expect(
            events(text) == [
                .exit(reason: nil),
                .exit(reason: "detached"),
                .notification(name: "pause", arguments: "%1"),
                .notification(name: "continue", arguments: "%1"),
                .notification(name: "window-pane-changed", arguments: "@1 %2"),
                .notification(name: "", arguments: "plain text"),
                .notification(name: "", arguments: ""),
                .notification(name: "output", arguments: "malformed"),
                .output(pane: "%4", data: []),
                .output(pane: "%12", data: Array("x y z".utf8)),
                .notification(name: "begin", arguments: "not a block"),
                .notification(name: "end", arguments: "1 2 3"),
            ]
        )
    }

    @Test func unescapeUndoesTmuxsOctalEscapesAndPassesUTF8Through() {
        #expect(TmuxControlParser.unescape(Array("a\\015\\012b".utf8)) == [0x61, 0x0D, 0x0A, 0x62])
        #expect(TmuxControlParser.unescape(Array("\\033[31m".utf8)) == [0x1B] + Array("[31m".utf8))
        #expect(TmuxControlParser.unescape(Array("C:\\134dir".utf8)) == Array("C:\\dir".utf8))
        #expect(TmuxControlParser.unescape(Array("\\000\\037\\377".utf8)) == [0x00, 0x1F, 0xFF])
        #expect(TmuxControlParser.unescape(Array("日本 é 🎉".utf8)) == Array("日本 é 🎉".utf8))
        #expect(TmuxControlParser.unescape([0xFF, 0x80, 0x5C, 0x30, 0x30, 0x37, 0xC3]) == [0xFF, 0x80, 0x07, 0xC3])
    }

    @Test(arguments: ["\\", "x\\", "\\0", "\\01", "\\8", "\\018", "\\400", "\\777", "\\a12", "\\\\"])
    func aMalformedEscapePassesThroughLiterally(text: String) {
        #expect(TmuxControlParser.unescape(Array(text.utf8)) == Array(text.utf8))
    }

    @Test func escapingAsTmuxDoesThenUnescapingGivesBackAnyBytes() {
        var random = SplitMix64(state: 7)
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in
                // Biased towards the bytes that are escaped.
                Bool.random(using: &random) ? UInt8.random(in: 0...32, using: &random) : UInt8.random(in: 0...255, using: &random)
            }
            #expect(TmuxControlParser.unescape(tmuxEscape(bytes)) == bytes)
        }
    }

    @Test func aLineOverTheBoundIsReportedOnceAndDroppedToItsEnd() {
        var parser = TmuxControlParser(maxLineBytes: 16)
        // The bound itself is fine, with "\n" or "\r\n".
        #expect(parser.feed(Array("%output %1 12345\n".utf8)) == [.output(pane: "%1", data: Array("12345".utf8))])
        #expect(parser.feed(Array("%output %1 12345\r\n".utf8)) == [.output(pane: "%1", data: Array("12345".utf8))])
        // One more byte is not, nor is a line much longer, fed in pieces.
        #expect(parser.feed(Array("%output %1 123456\n".utf8)) == [.overflow])
        #expect(parser.feed(Array("%output %1 123456\r\n".utf8)) == [.overflow])
        var events: [TmuxControlEvent] = []
        for _ in 0..<100 { events += parser.feed(Array("%output %1 0123456789".utf8)) }
        #expect(events == [.overflow])
        // The next line is read as usual.
        #expect(parser.feed(Array("tail\n%exit\n".utf8)) == [.exit(reason: nil)])
    }

    @Test func aTooLongLineInAReplyMarksItTruncated() {
        let text = "%begin 1 3 1\nshort\n" + String(repeating: "x", count: 40) + "\nafter\n%end 1 3 1\n"
        #expect(
            events(text, TmuxControlParser(maxLineBytes: 20)) == [
                .overflow,
                .reply(TmuxReply(number: 3, lines: ["short", "after"], isError: false, isTruncated: true)),
            ]
        )
    }

    @Test func aReplyOverItsLineBoundKeepsItsFirstLinesAndEndsMarkedTruncated() {
        var parser = TmuxControlParser(maxReplyLines: 3)
        let lines = (1...10).map { "line \($0)\n" }.joined()
        let text = "%begin 9 4 1\n\(lines)%error 9 4 1\n%begin 9 5 1\na\nb\nc\n%end 9 5 1\n"
        #expect(
            parser.feed(Array(text.utf8)) == [
                .overflow,
                .reply(TmuxReply(number: 4, lines: ["line 1", "line 2", "line 3"], isError: true, isTruncated: true)),
                .reply(TmuxReply(number: 5, lines: ["a", "b", "c"], isError: false)),
            ]
        )
    }

    @Test func invalidUTF8InAReplyLineBecomesReplacementCharacters() {
        var parser = TmuxControlParser()
        let bytes = Array("%begin 1 1 1\n".utf8) + [0x61, 0xFF, 0x62, 0x0A] + Array("%end 1 1 1\n".utf8)
        #expect(parser.feed(bytes) == [.reply(TmuxReply(number: 1, lines: ["a\u{FFFD}b"], isError: false))])
    }

    /// Each of these was sent as `set-buffer -b N -- <quoted>` to tmux 3.3a in control mode and
    /// read back byte for byte with `save-buffer`.
    @Test(arguments: [
        ("plain", "'plain'"),
        ("", "''"),
        ("it's", #"'it'\''s'"#),
        ("'", #"\'"#),
        ("a b; c", "'a b; c'"),
        ("$HOME ~ #{session_name} #comment", "'$HOME ~ #{session_name} #comment'"),
        (#"\"#, #"'\'"#),
        (#""dq" \n { } \;"#, #"'"dq" \n { } \;'"#),
        ("line1\nline2", #"'line1'\012'line2'"#),
        ("tab\there\r\u{1}\u{1B}[1m\u{7F}", #"'tab'\011'here'\015\001\033'[1m'\177"#),
        ("é 日本 🎉", "'é 日本 🎉'"),
        ("~root", "'~root'"),
        ("a\u{0}b", "'ab'"),
        ("'a'b'", #"\''a'\''b'\'"#),
    ])
    func quoteWritesWhatTmuxsParserReadsBackExactly(argument: String, quoted: String) {
        #expect(TmuxControlParser.quote(argument) == quoted)
    }

    @Test func quotedTextNeverHasALineEndOrAControlCharacter() {
        var random = SplitMix64(state: 3)
        for _ in 0..<500 {
            let scalars = (0..<Int.random(in: 0...20, using: &random)).map { _ in
                Unicode.Scalar(UInt8.random(in: 0...0x7F, using: &random))
            }
            let quoted = TmuxControlParser.quote(String(String.UnicodeScalarView(scalars)))
            #expect(!quoted.isEmpty)
            #expect(quoted.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F })
        }
    }

    @Test func hexKeysAreSpaceSeparatedLowercaseHexPairs() {
        #expect(TmuxControlParser.hexKeys([]) == "")
        #expect(TmuxControlParser.hexKeys([0x1B, 0x5B, 0x41]) == "1b 5b 41")
        #expect(TmuxControlParser.hexKeys([0x00, 0x0A, 0xFF]) == "00 0a ff")
        #expect(TmuxControlParser.hexKeys(Array("é".utf8)) == "c3 a9")
    }
}

import SwarmdeckTools
import Testing

@Suite("What a program writes to a terminal, made plain for a log line")
struct TerminalTextTests {
    @Test(arguments: [
        ("plain words", "plain words"),
        ("\u{1B}[1;31mred\u{1B}[0m and \u{1B}[38;5;208morange\u{1B}[m", "red and orange"),
        ("\u{1B}]0;a window title\u{07}after the title", "after the title"),
        ("\u{1B}]8;;https://example.com\u{1B}\\link\u{1B}]8;;\u{1B}\\", "link"),
        ("\u{1B}(Bcharset\u{1B}=keypad\u{1B}7saved", "charsetkeypadsaved"),
        ("\u{1B}P1$r0m\u{1B}\\after a DCS", "after a DCS"),
        ("progress 10%\rprogress 99%\r\n", "progress 10%progress 99%"),
        ("tab\tkept, bell\u{07} and backspace\u{08} gone, DEL\u{7F} too", "tab\tkept, bell and backspace gone, DEL too"),
        ("cut at the end \u{1B}[38;5", "cut at the end "),
        ("naïve 🚀 \u{1B}[2Kkept", "naïve 🚀 kept"),
    ])
    func plain(_ pair: (String, String)) {
        #expect(TerminalText.plain(Array(pair.0.utf8)) == pair.1)
    }

    @Test func invalidUTF8BecomesReplacementCharacters() {
        #expect(TerminalText.plain([0x61, 0xFF, 0x62]) == "a\u{FFFD}b")
    }
}

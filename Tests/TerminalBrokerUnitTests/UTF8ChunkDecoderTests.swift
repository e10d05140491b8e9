import TestSupport
import Testing

@testable import TerminalBroker

/// Terminal-like text: ASCII, 2-, 3- and 4-byte characters, escape sequences and line ends.
private func randomText(_ count: Int, using random: inout SplitMix64) -> String {
    let pieces = [
        "a", "Z", " ", "~", "é", "ß", "Ж", "€", "日本", "\u{FFFD}", "🎉", "👍🏽", "𝄞", "\u{1B}[1;31m", "\u{1B}]0;title\u{7}", "\r\n", "\t",
    ]
    return (0..<count).map { _ in pieces.randomElement(using: &random)! }.joined()
}

/// Bytes that are often not UTF-8: lead bytes without their continuations, stray continuations,
/// overlongs, surrogates, bytes that start nothing, mixed with valid characters.
private func randomBytes(_ count: Int, using random: inout SplitMix64) -> [UInt8] {
    let pieces: [[UInt8]] = [
        [0x41], [0x80], [0xBF], [0xC0], [0xC1, 0x81], [0xC2], [0xC3, 0xA9], [0xE0], [0xE0, 0x80], [0xE0, 0xA0], [0xE2, 0x82],
        [0xE2, 0x82, 0xAC], [0xED, 0xA0, 0x80], [0xED, 0x9F], [0xEF, 0xBF, 0xBD], [0xF0], [0xF0, 0x80], [0xF0, 0x90, 0x80],
        [0xF0, 0x9F, 0x8E, 0x89], [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90], [0xF5], [0xFF], [0x1B, 0x5B],
    ]
    return (0..<count).flatMap { _ in pieces.randomElement(using: &random)! }
}

/// Decodes `bytes` cut at `cuts` (ascending offsets) and flushes, joining the strings.
private func decodeSplit(_ bytes: [UInt8], at cuts: [Int]) -> String {
    var decoder = UTF8ChunkDecoder()
    var output = ""
    var start = 0
    for cut in cuts + [bytes.count] {
        output += decoder.decode(Array(bytes[start..<cut]))
        start = cut
    }
    return output + decoder.flush()
}

private func randomCuts(_ count: Int, using random: inout SplitMix64) -> [Int] {
    guard count > 0 else { return [] }
    return (0..<Int.random(in: 0...8, using: &random)).map { _ in Int.random(in: 0...count, using: &random) }.sorted()
}

@Suite("A UTF-8 stream split anywhere decodes to the same text as decoded whole, invalid bytes included")
struct UTF8ChunkDecoderTests {
    @Test func anIncompleteCharacterIsHeldBackUntilItsLastByte() {
        var decoder = UTF8ChunkDecoder()
        #expect(decoder.decode([0x61, 0xE2]) == "a")
        #expect(decoder.decode([0x82]) == "")
        #expect(decoder.decode([0xAC, 0x62]) == "€b")
        #expect(decoder.decode([0xF0, 0x9F, 0x8E]) == "")
        #expect(decoder.decode([0x89]) == "🎉")
        // A whole character at a chunk's end is not held back.
        #expect(decoder.decode([0xC3, 0xA9]) == "é")
        #expect(decoder.decode([0xE2, 0x82, 0xAC]) == "€")
        #expect(decoder.flush() == "")
    }

    @Test func whatIsHeldBackAtTheEndFlushesAsOneReplacementCharacter() {
        var decoder = UTF8ChunkDecoder()
        #expect(decoder.decode([0x61, 0xF0, 0x9F, 0x8E]) == "a")
        #expect(decoder.flush() == "\u{FFFD}")
        #expect(decoder.flush() == "")
        #expect(decoder.decode([0x62]) == "b")
    }

    @Test func bytesThatCannotStartOrContinueACharacterAreNotHeldBack() {
        var decoder = UTF8ChunkDecoder()
        #expect(decoder.decode([0x61, 0xFF]) == "a\u{FFFD}")
        #expect(decoder.decode([0xC0]) == "\u{FFFD}")
        // 0xE0 0x80 is an overlong start, 0xED 0xA0 a surrogate's, 0xF4 0x90 past U+10FFFF: invalid already.
        #expect(decoder.decode([0xE0, 0x80]) == "\u{FFFD}\u{FFFD}")
        #expect(decoder.decode([0xED, 0xA0]) == "\u{FFFD}\u{FFFD}")
        #expect(decoder.decode([0xF4, 0x90]) == "\u{FFFD}\u{FFFD}")
        #expect(decoder.decode([0x80, 0x80]) == "\u{FFFD}\u{FFFD}")
        #expect(decoder.flush() == "")
    }

    @Test func validTextSplitAtEveryPositionComesOutWhole() {
        var random = SplitMix64(state: 11)
        for _ in 0..<30 {
            let text = randomText(40, using: &random)
            let bytes = Array(text.utf8)
            for cut in 0...bytes.count {
                #expect(Array(decodeSplit(bytes, at: [cut]).utf8) == bytes, "\(bytes) cut at \(cut)")
            }
            for _ in 0..<50 {
                let cuts = randomCuts(bytes.count, using: &random)
                #expect(Array(decodeSplit(bytes, at: cuts).utf8) == bytes, "\(bytes) cut at \(cuts)")
            }
            // Byte by byte.
            #expect(Array(decodeSplit(bytes, at: Array(0...bytes.count)).utf8) == bytes)
        }
    }

    @Test func invalidBytesDecodeAsTheWholeStreamWouldWhereverItIsSplit() {
        var random = SplitMix64(state: 12)
        for _ in 0..<300 {
            let bytes = randomBytes(Int.random(in: 0...30, using: &random), using: &random)
            let whole = Array(String(decoding: bytes, as: UTF8.self).utf8)
            for cut in 0...bytes.count {
                #expect(Array(decodeSplit(bytes, at: [cut]).utf8) == whole, "\(bytes) cut at \(cut)")
            }
            let cuts = randomCuts(bytes.count, using: &random)
            #expect(Array(decodeSplit(bytes, at: cuts).utf8) == whole, "\(bytes) cut at \(cuts)")
            #expect(Array(decodeSplit(bytes, at: Array(0...bytes.count)).utf8) == whole, "\(bytes) byte by byte")
        }
    }

    @Test func randomBytesOfAnyValueDecodeAsTheWholeStreamWould() {
        var random = SplitMix64(state: 13)
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let whole = Array(String(decoding: bytes, as: UTF8.self).utf8)
            let cuts = randomCuts(bytes.count, using: &random)
            #expect(Array(decodeSplit(bytes, at: cuts).utf8) == whole, "\(bytes) cut at \(cuts)")
        }
    }
}

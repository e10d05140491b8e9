/// One thing tmux said in control mode (`tmux -C`), as ``TmuxControlParser`` reads it.
enum TmuxControlEvent: Sendable, Equatable {
    /// A command's reply: the lines between `%begin` and its `%end` (or `%error`).
    case reply(TmuxReply)
    /// `%output %<pane> <data>`: what a pane wrote, unescaped. `pane` keeps its `%` ("%3").
    case output(pane: String, data: [UInt8])
    /// `%exit` (nil) or `%exit <reason>`: the control client is detaching.
    case exit(reason: String?)
    /// Any other line outside a reply. `name` is the word after the `%` ("session-changed" for
    /// `%session-changed $1 main`) and `arguments` the rest after one space ("$1 main"). A line
    /// that does not start with `%` comes as name "" with the whole line as its arguments.
    case notification(name: String, arguments: String)
    /// A line longer than the parser's `maxLineBytes` (it was dropped), or a reply longer than
    /// its `maxReplyLines` (its reply comes at its end, marked ``TmuxReply/isTruncated``).
    /// Output may have been lost: the caller should redraw what it shows.
    case overflow
}

/// A command's reply in control mode.
struct TmuxReply: Sendable, Equatable {
    /// The command's number, as tmux counts them (the second field of `%begin`).
    var number: Int
    /// The reply's lines, without their line ends (decoded as UTF-8, invalid bytes as U+FFFD).
    var lines: [String]
    /// Whether the reply ended with `%error` (the command failed; `lines` say why).
    var isError: Bool
    /// Whether lines were dropped: a line past the parser's bounds, or lines past `maxReplyLines`.
    var isTruncated: Bool = false
}

/// An incremental parser of tmux control mode's output: bytes in, in chunks split anywhere,
/// ``TmuxControlEvent``s out, with the memory it holds bounded.
///
/// A command's reply is a block: `%begin <time> <number> <flags>`, the output lines, then
/// `%end` or `%error` with the same time and number (tmux writes no notification inside one).
/// A line in a block that looks like `%end` but with another time or number is taken as output.
struct TmuxControlParser: Sendable {
    /// The longest line kept, in bytes before its line end.
    let maxLineBytes: Int
    /// The most lines a reply keeps; the rest are dropped.
    let maxReplyLines: Int

    /// The current line's bytes so far.
    private var line: [UInt8] = []
    /// The current line is too long: its bytes are dropped until its `\n`.
    private var discardingLine = false
    /// The reply under way, if any.
    private var block: Block?

    private struct Block {
        /// `%begin`'s time and number, which its `%end` repeats.
        var time: Substring
        var number: Int
        var lines: [String] = []
        var isTruncated = false
    }

    /// - Parameters:
    ///   - maxLineBytes: the longest line kept (a longer one gives ``TmuxControlEvent/overflow``).
    ///   - maxReplyLines: the most lines a reply keeps.
    init(maxLineBytes: Int = 1 << 20, maxReplyLines: Int = 100_000) {
        precondition(maxLineBytes > 0 && maxReplyLines >= 0, "maxLineBytes must be positive and maxReplyLines not negative")
        self.maxLineBytes = maxLineBytes
        self.maxReplyLines = maxReplyLines
    }

    /// Takes the next bytes tmux wrote and returns the events their complete lines make; an
    /// incomplete last line waits for the next call.
    mutating func feed(_ bytes: some Collection<UInt8>) -> [TmuxControlEvent] {
        // The work is done on contiguous bytes, in code that needs no specializing to be fast.
        if let events = bytes.withContiguousStorageIfAvailable({ self.feed(buffer: $0) }) { return events }
        return Array(bytes).withUnsafeBufferPointer { self.feed(buffer: $0) }
    }

    private mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>) -> [TmuxControlEvent] {
        var events: [TmuxControlEvent] = []
        var start = 0
        while start < bytes.count {
            let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
            if !self.discardingLine {
                self.line.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<(newline ?? bytes.count)]))
                // Over the bound even if its last byte is the `\r` of a `\r\n`: drop the rest of the line.
                if self.line.count > self.maxLineBytes + 1 {
                    self.overflow(&events)
                    self.discardingLine = true
                }
            }
            guard let newline else { break }
            if self.discardingLine {
                self.discardingLine = false
            } else {
                if self.line.last == UInt8(ascii: "\r") { self.line.removeLast() }
                if self.line.count > self.maxLineBytes {
                    self.overflow(&events)
                } else {
                    self.take(self.line[...], &events)
                }
            }
            // A buffer grown for a long line is let go.
            self.line.removeAll(keepingCapacity: self.line.capacity <= 4096)
            start = newline + 1
        }
        return events
    }

    /// Reports a line over the bound (the caller drops it) and marks the reply under way, if any, truncated.
    private mutating func overflow(_ events: inout [TmuxControlEvent]) {
        events.append(.overflow)
        self.line = []
        self.block?.isTruncated = true
    }

    /// Takes one complete line (without its line end).
    private mutating func take(_ line: ArraySlice<UInt8>, _ events: inout [TmuxControlEvent]) {
        if var block = self.block {
            if let (keyword, time, number) = Self.blockLine(line), keyword != "begin", time == block.time, number == block.number {
                events.append(.reply(TmuxReply(number: number, lines: block.lines, isError: keyword == "error", isTruncated: block.isTruncated)))
                self.block = nil
            } else if block.lines.count < self.maxReplyLines {
                // Appended in place: the block's lines are not copied for each line.
                self.block = nil
                block.lines.append(String(decoding: line, as: UTF8.self))
                self.block = block
            } else if !block.isTruncated {
                events.append(.overflow)
                self.block?.isTruncated = true
            }
            return
        }
        guard line.first == UInt8(ascii: "%") else {
            events.append(.notification(name: "", arguments: String(decoding: line, as: UTF8.self)))
            return
        }
        let body = line.dropFirst()
        let space = body.firstIndex(of: UInt8(ascii: " "))
        let name = String(decoding: body[..<(space ?? body.endIndex)], as: UTF8.self)
        let arguments = space.map { body[body.index(after: $0)...] }
        switch name {
        case "begin":
            if let (_, time, number) = Self.blockLine(line) {
                self.block = Block(time: time, number: number)
                return
            }
        case "output":
            if let arguments, let paneEnd = arguments.firstIndex(of: UInt8(ascii: " ")), arguments.first == UInt8(ascii: "%") {
                let pane = String(decoding: arguments[..<paneEnd], as: UTF8.self)
                events.append(.output(pane: pane, data: Self.unescape(arguments[arguments.index(after: paneEnd)...])))
                return
            }
        case "exit":
            events.append(.exit(reason: arguments.map { String(decoding: $0, as: UTF8.self) }))
            return
        default:
            break
        }
        events.append(.notification(name: name, arguments: arguments.map { String(decoding: $0, as: UTF8.self) } ?? ""))
    }

    /// The keyword (`begin`, `end` or `error`), time and number of a line that opens or closes a
    /// reply, as tmux's `cmdq_guard` writes it (`%end <time> <number> <flags>`; the flags are not
    /// checked), or nil for any other line.
    private static func blockLine(_ line: ArraySlice<UInt8>) -> (keyword: Substring, time: Substring, number: Int)? {
        guard line.first == UInt8(ascii: "%"), line.count <= 128 else { return nil }
        let fields = String(decoding: line.dropFirst(), as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 4, ["begin", "end", "error"].contains(fields[0]),
            !fields[1].isEmpty, fields[1].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let number = Int(fields[2]), number >= 0
        else { return nil }
        return (fields[0], fields[1], number)
    }

    /// Undoes `%output`'s escaping: tmux writes each byte below 32, and the backslash, as a
    /// backslash and three octal digits (`\015`, `\134`), and every other byte as it is (UTF-8
    /// included). A backslash not followed by three octal digits (at most `\377`) is kept as it is.
    static func unescape(_ bytes: some Collection<UInt8>) -> [UInt8] {
        if let result = bytes.withContiguousStorageIfAvailable({ Self.unescape(buffer: $0) }) { return result }
        return Array(bytes).withUnsafeBufferPointer { Self.unescape(buffer: $0) }
    }

    private static func unescape(buffer bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\"), index + 3 < bytes.count, let value = Self.octal(bytes[index + 1], bytes[index + 2], bytes[index + 3]) {
                result.append(value)
                index += 4
            } else {
                result.append(byte)
                index += 1
            }
        }
        return result
    }

    /// The byte three octal digits make, or nil when they are not octal digits or exceed 0o377.
    private static func octal(_ first: UInt8, _ second: UInt8, _ third: UInt8) -> UInt8? {
        let zero = UInt8(ascii: "0")
        guard (zero...zero + 3).contains(first), (zero...zero + 7).contains(second), (zero...zero + 7).contains(third) else { return nil }
        return (first - zero) << 6 | (second - zero) << 3 | (third - zero)
    }

    /// `argument` quoted for a command line sent in control mode, as tmux's command parser reads
    /// it back exactly: printable text in single quotes (inside which nothing is special), a
    /// single quote as `\'` and a control character as an octal escape (`\012`) between quoted
    /// runs, since a control-mode command ends at its line's `\n`. A NUL is dropped: tmux's
    /// arguments are C strings. The empty string is `''`.
    static func quote(_ argument: String) -> String {
        var quoted = ""
        var inQuotes = false
        for scalar in argument.unicodeScalars {
            switch scalar.value {
            case 0:
                continue
            case 0x27, 1..<0x20, 0x7F:
                if inQuotes {
                    quoted.append("'")
                    inQuotes = false
                }
                quoted.append(scalar == "'" ? "\\'" : Self.octalEscape(UInt8(scalar.value)))
            default:
                if !inQuotes {
                    quoted.append("'")
                    inQuotes = true
                }
                quoted.unicodeScalars.append(scalar)
            }
        }
        if inQuotes { quoted.append("'") }
        return quoted.isEmpty ? "''" : quoted
    }

    private static func octalEscape(_ byte: UInt8) -> String {
        "\\" + String(byte >> 6) + String(byte >> 3 & 7) + String(byte & 7)
    }

    /// The arguments of `send-keys -H` that type `bytes`: each byte as two lowercase hex digits,
    /// separated by spaces ("1b 5b 41").
    static func hexKeys(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.count * 3)
        for byte in bytes {
            if !hex.isEmpty { hex.append(UInt8(ascii: " ")) }
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}

/// Text as a terminal program wrote it, made plain for a log line: the connector that gives
/// its command a terminal (`swarmdeck agent run --terminal`) reads colours, cursor moves and
/// titles along with the words, and reports only the words.
public enum TerminalText {
    /// `line` without its escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL` or
    /// `ESC \`, DCS/APC/PM/SOS strings up to `ESC \`, and two-byte `ESC x`), without carriage
    /// returns, backspaces and other C0 controls but the tab, decoded as UTF-8 (invalid bytes
    /// become U+FFFD). A sequence cut off by the end of the line is dropped.
    public static func plain(_ line: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(line.count)
        var state = State.text
        for byte in line {
            switch state {
            case .text:
                if byte == 0x1B {
                    state = .escape
                } else if byte == 0x09 || byte >= 0x20 && byte != 0x7F {
                    output.append(byte)
                }
            case .escape:
                switch byte {
                case UInt8(ascii: "["): state = .csi
                case UInt8(ascii: "]"): state = .string(endsWithBell: true)
                case UInt8(ascii: "P"), UInt8(ascii: "_"), UInt8(ascii: "^"), UInt8(ascii: "X"): state = .string(endsWithBell: false)
                case 0x20...0x2F: state = .intermediate
                default: state = .text
                }
            case .intermediate:
                // `ESC ( B` and friends: intermediates, then one final byte.
                if !(0x20...0x2F).contains(byte) { state = .text }
            case .csi:
                if (0x40...0x7E).contains(byte) { state = .text }
            case .string(let endsWithBell):
                if byte == 0x07 && endsWithBell {
                    state = .text
                } else if byte == 0x1B {
                    state = .stringEscape(endsWithBell: endsWithBell)
                }
            case .stringEscape(let endsWithBell):
                state = byte == UInt8(ascii: "\\") ? .text : .string(endsWithBell: endsWithBell)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private enum State {
        case text
        case escape
        case intermediate
        case csi
        case string(endsWithBell: Bool)
        case stringEscape(endsWithBell: Bool)
    }
}

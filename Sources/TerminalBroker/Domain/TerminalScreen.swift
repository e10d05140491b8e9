/// A first screen from what tmux reports of a pane: its size, its cursor and `capture-pane -p -e`'s
/// lines (with their escapes). Painted on a terminal of the pane's size, it shows what the pane
/// shows.
struct TerminalScreen: Sendable, Equatable {
    var cols: Int
    var rows: Int
    var cursorX: Int
    var cursorY: Int
    var lines: [String]

    /// Clear, home, the lines (each reset to default attributes first), the cursor in place.
    var painted: String {
        var text = "\u{1B}[0m\u{1B}[H\u{1B}[2J"
        for (index, line) in self.lines.prefix(self.rows).enumerated() {
            if index > 0 { text += "\r\n" }
            text += line
            text += "\u{1B}[0m"
        }
        text += "\u{1B}[\(self.cursorY + 1);\(self.cursorX + 1)H"
        return text
    }

    /// Parses `display-message -p '#{pane_id} #{pane_width} #{pane_height} #{cursor_x} #{cursor_y}'`.
    static func parsePane(_ line: String) -> (pane: String, cols: Int, rows: Int, cursorX: Int, cursorY: Int)? {
        let fields = line.split(separator: " ")
        guard fields.count == 5, fields[0].hasPrefix("%"), fields[0].count > 1, fields[0].dropFirst().allSatisfy(\.isASCII),
            fields[0].dropFirst().allSatisfy(\.isNumber), let cols = Int(fields[1]), let rows = Int(fields[2]), let x = Int(fields[3]),
            let y = Int(fields[4])
        else { return nil }
        return (String(fields[0]), cols, rows, x, y)
    }

    static let paneFormat = "#{pane_id} #{pane_width} #{pane_height} #{cursor_x} #{cursor_y}"
}

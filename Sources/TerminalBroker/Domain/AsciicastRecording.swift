import Foundation

/// The first line of an asciicast v2 recording (https://docs.asciinema.org/manual/asciicast/v2/).
struct AsciicastHeader: Codable, Sendable, Equatable {
    /// The format's version: 2.
    var version = 2
    /// The terminal's size when the recording started, in columns and rows.
    var width: Int
    var height: Int
    /// When the recording started, in seconds since 1970.
    var timestamp: Int
    /// A title for players to show.
    var title: String?
    /// Environment variables of the recorded shell (asciinema keeps `SHELL` and `TERM`).
    var env: [String: String]?
}

/// One event of an asciicast v2 recording, after its time.
enum AsciicastEvent: Sendable, Equatable {
    /// What the terminal wrote ("o").
    case output(String)
    /// What was typed ("i").
    case input(String)
    /// The terminal was resized ("r", written "COLSxROWS").
    case resize(cols: Int, rows: Int)
    /// A marker, a named point to jump to ("m").
    case marker(String)
}

/// Why ``AsciicastRecording/parse(_:)`` refused a recording.
enum AsciicastParseError: Error, Equatable, CustomStringConvertible {
    /// The recording has no header line.
    case missingHeader
    /// The header's version is not 2.
    case unsupportedVersion(Int)
    /// The line (1-based) is not a header or an event of asciicast v2.
    case malformedLine(Int)

    var description: String {
        switch self {
        case .missingHeader: "the asciicast recording has no header line"
        case .unsupportedVersion(let version): "asciicast version \(version) (2 expected)"
        case .malformedLine(let line): "line \(line) of the asciicast recording is not valid asciicast v2"
        }
    }
}

/// The asciicast v2 format: newline-delimited JSON, a header object then one array per event,
/// `[elapsed, code, data]`, with elapsed in seconds since the start.
enum AsciicastRecording {
    /// The header as a line of JSON, with its `\n`. Its keys come in the order asciinema writes
    /// them, `env`'s sorted.
    static func line(header: AsciicastHeader) -> [UInt8] {
        var line = Array("{\"version\": \(header.version), \"width\": \(header.width), \"height\": \(header.height)".utf8)
        line += Array(", \"timestamp\": \(header.timestamp)".utf8)
        if let title = header.title {
            line += Array(", \"title\": ".utf8)
            Self.appendJSONString(title, to: &line)
        }
        if let env = header.env {
            line += Array(", \"env\": {".utf8)
            for (index, (key, value)) in env.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { line += Array(", ".utf8) }
                Self.appendJSONString(key, to: &line)
                line += Array(": ".utf8)
                Self.appendJSONString(value, to: &line)
            }
            line.append(UInt8(ascii: "}"))
        }
        line += Array("}\n".utf8)
        return line
    }

    /// An event as a line of JSON, with its `\n`: `[0.123456, "o", "hi"]`. `elapsed` (seconds
    /// since the start; a negative or non-finite one is written as 0) is rounded to the
    /// microsecond and written with at most 6 decimals.
    static func line(elapsed: Double, event: AsciicastEvent) -> [UInt8] {
        let (code, data) =
            switch event {
            case .output(let text): ("o", text)
            case .input(let text): ("i", text)
            case .resize(let cols, let rows): ("r", "\(cols)x\(rows)")
            case .marker(let label): ("m", label)
            }
        var line = Array("[\(Self.seconds(elapsed)), \"\(code)\", ".utf8)
        Self.appendJSONString(data, to: &line)
        line += Array("]\n".utf8)
        return line
    }

    /// Reads a recording back: its header and its events with their times. Blank lines are skipped.
    static func parse(_ data: [UInt8]) throws(AsciicastParseError) -> (AsciicastHeader, [(Double, AsciicastEvent)]) {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
            .filter { !$0.element.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") } }
        guard let first = lines.first else { throw .missingHeader }
        let decoder = JSONDecoder()
        let header: AsciicastHeader
        do {
            header = try decoder.decode(AsciicastHeader.self, from: Data(first.element))
        } catch {
            throw .malformedLine(first.offset + 1)
        }
        guard header.version == 2 else { throw .unsupportedVersion(header.version) }
        var events: [(Double, AsciicastEvent)] = []
        for (offset, line) in lines.dropFirst() {
            let entry: EventLine
            do {
                entry = try decoder.decode(EventLine.self, from: Data(line))
            } catch {
                throw .malformedLine(offset + 1)
            }
            guard let event = entry.event else { throw .malformedLine(offset + 1) }
            events.append((entry.elapsed, event))
        }
        return (header, events)
    }

    /// An event line as JSON has it: `[elapsed, code, data]`.
    private struct EventLine: Decodable {
        var elapsed: Double
        var code: String
        var data: String

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            self.elapsed = try container.decode(Double.self)
            self.code = try container.decode(String.self)
            self.data = try container.decode(String.self)
            guard container.isAtEnd else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "more than 3 elements")
            }
        }

        var event: AsciicastEvent? {
            switch self.code {
            case "o": return .output(self.data)
            case "i": return .input(self.data)
            case "m": return .marker(self.data)
            case "r":
                let size = self.data.split(separator: "x", omittingEmptySubsequences: false)
                guard size.count == 2, let cols = Int(size[0]), let rows = Int(size[1]) else { return nil }
                return .resize(cols: cols, rows: rows)
            default: return nil
            }
        }
    }

    /// `elapsed` in seconds with at most 6 decimals and at least one ("1.5", "2.0", "0.000001").
    private static func seconds(_ elapsed: Double) -> String {
        // Clamped below 2^53 µs (285 years), where a Double still holds each microsecond.
        let clamped = elapsed.isFinite ? min(max(elapsed, 0), 9e9) : 0
        let micros = Int64((clamped * 1_000_000).rounded())
        var fraction = String(micros % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.count > 1, fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(micros / 1_000_000).\(fraction)"
    }

    /// Appends `string` as a JSON string: `"` and `\` escaped, control characters (and DEL) as
    /// `\u00XX`, everything else (non-ASCII included) as its UTF-8.
    private static func appendJSONString(_ string: String, to line: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        line.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                line.append(UInt8(ascii: "\\"))
                line.append(byte)
            case 0..<0x20, 0x7F:
                line += Array("\\u00".utf8)
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0xF)])
            default:
                line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }
}

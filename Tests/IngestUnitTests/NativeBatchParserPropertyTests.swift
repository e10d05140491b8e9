import Foundation
import Testing

@testable import Ingest

/// The native batch parser against Foundation's JSON parser, on generated documents: every
/// document both accept must mean the same to both, and every truncation of one must be refused
/// by both.
@Suite("Native batch parser, property test against Foundation's JSON parser")
struct NativeBatchParserPropertyTests {
    /// A small seeded generator (SplitMix64): the same seed gives the same documents.
    struct Generator {
        var state: UInt64

        mutating func next() -> UInt64 {
            self.state &+= 0x9E37_79B9_7F4A_7C15
            var z = self.state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        mutating func below(_ bound: Int) -> Int { Int(self.next() % UInt64(bound)) }
        mutating func chance(_ percent: Int) -> Bool { self.below(100) < percent }
    }

    /// A value and one of its many texts (whitespace, escapes and number forms vary).
    static func value(_ random: inout Generator, depth: Int) -> (JSONValue, String) {
        let space = [" ", "", "\n", "\t", "  ", "\r\n"]
        func ws() -> String { space[random.below(space.count)] }
        switch depth > 3 ? random.below(4) : random.below(6) {
        case 0: return (.null, "null")
        case 1:
            let flag = random.chance(50)
            return (.bool(flag), flag ? "true" : "false")
        case 2:
            let forms = ["0", "-0", "7", "-12", "3.25", "-0.5", "1e3", "2E-2", "12.5e+1", "9007199254740991", "-1.5e-7", "100"]
            let text = forms[random.below(forms.count)]
            return (.number(Double(text)!), text)
        case 3:
            let (string, text) = Self.string(&random)
            return (.string(string), text)
        case 4:
            var elements: [JSONValue] = []
            var texts: [String] = []
            for _ in 0..<random.below(4) {
                let (element, text) = Self.value(&random, depth: depth + 1)
                elements.append(element)
                texts.append(ws() + text + ws())
            }
            return (.array(elements), "[" + ws() + texts.joined(separator: ",") + "]")
        default:
            var fields: [(String, JSONValue)] = []
            var texts: [String] = []
            for index in 0..<random.below(4) {
                let (key, keyText) = Self.string(&random, suffix: "_\(index)")  // keys unique within the object
                let (element, text) = Self.value(&random, depth: depth + 1)
                fields.append((key, element))
                texts.append(ws() + keyText + ws() + ":" + ws() + text + ws())
            }
            return (.object(fields), "{" + ws() + texts.joined(separator: ",") + "}")
        }
    }

    /// A string and a JSON text of it, each character written plainly or escaped.
    static func string(_ random: inout Generator, suffix: String = "") -> (String, String) {
        let alphabet: [Character] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "é", "€", "🚀", "\u{7F}", "\u{2028}"]
        var string = ""
        for _ in 0..<random.below(8) { string.append(alphabet[random.below(alphabet.count)]) }
        string += suffix
        var text = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += random.chance(50) ? "\\\\" : "\\u005c"
            case "\n": text += random.chance(50) ? "\\n" : "\\u000A"
            case "\t": text += "\\t"
            case "/": text += random.chance(50) ? "/" : "\\/"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
            case _ where scalar.value > 0xFFFF && random.chance(50):
                let value = scalar.value - 0x10000
                text += String(format: "\\ud%03x\\ud%03x", 0x800 + (value >> 10), 0xC00 + (value & 0x3FF))
            case _ where scalar.value > 0x7F && scalar.value <= 0xFFFF && random.chance(30):
                text += String(format: "\\u%04X", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return (string, text + "\"")
    }

    /// Foundation's reading of the same text, in our terms (objects compared without order).
    static func same(_ value: JSONValue, _ foundation: Any) -> Bool {
        switch value {
        case .null: return foundation is NSNull
        case .bool(let flag): return (foundation as? NSNumber).map { $0.boolValue == flag } ?? (foundation as? Bool == flag)
        case .number(let number): return (foundation as? NSNumber)?.doubleValue == number
        case .string(let string): return foundation as? String == string
        case .array(let elements):
            guard let array = foundation as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { Self.same($0, $1) }
        case .object(let fields):
            guard let object = foundation as? [String: Any], object.count == fields.count else { return false }
            return fields.allSatisfy { key, element in object[key].map { Self.same(element, $0) } ?? false }
        }
    }

    @Test("2000 generated documents: both parsers accept them and agree with the model; truncations are refused by both")
    func agreesWithFoundation() throws {
        var random = Generator(state: 0x5EED)
        var truncationsChecked = 0
        for _ in 0..<2000 {
            let (model, text) = Self.value(&random, depth: 0)
            let bytes = Array(text.utf8)
            let ours = try NativeBatchParser.parseJSON(bytes)
            #expect(ours == model, "our parser read \(text) as \(ours)")
            let theirs = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            #expect(Self.same(model, theirs), "Foundation read \(text) otherwise")

            // A prefix that is not itself a document (cut inside a value) is refused by both.
            guard bytes.count > 1 else { continue }
            let cut = Array(bytes.prefix(1 + random.below(bytes.count - 1)))
            let foundationAccepts = (try? JSONSerialization.jsonObject(with: Data(cut), options: [.fragmentsAllowed])) != nil
            let oursAccepts = (try? NativeBatchParser.parseJSON(cut)) != nil
            if !foundationAccepts {
                #expect(!oursAccepts, "our parser accepted the truncation \(String(decoding: cut, as: UTF8.self))")
                truncationsChecked += 1
            }
        }
        #expect(truncationsChecked > 1000)
    }
}

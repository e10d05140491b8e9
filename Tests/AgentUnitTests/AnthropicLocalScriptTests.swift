import Contracts
import Testing

@testable import AnthropicLocal

@Suite("anthropic-local's scripts: the step after the conversation's assistant turns")
struct AnthropicLocalScriptTests {
    @Test("tools with their input, text, usage; past the end, Done.")
    func steps() throws {
        let prompt = """
            Fix the build.
            <local-script>[{"tool":"Bash","input":{"command":"make","timeout":5}},
            {"text":"Built.","usage":{"input_tokens":150000,"cache_read_input_tokens":30000}}]</local-script>
            """
        let script = try #require(try AnthropicLocalScript.find(in: prompt))
        #expect(script.step(after: 0).action == .tool(name: "Bash", input: .object(["command": .string("make"), "timeout": .number(5)])))
        #expect(script.step(after: 1).action == .text("Built."))
        #expect(script.step(after: 1).usage?.inputTokens == 150_000)
        #expect(script.step(after: 1).usage?.cacheReadInputTokens == 30_000)
        #expect(script.step(after: 2).action == .text("Done."))
        let text = AnthropicLocalScript.text(of: .object(["command": .string("make"), "timeout": .number(5)]))
        #expect(text == #"{"command":"make","timeout":5}"# || text == #"{"command":"make","timeout":5.0}"#, "\(text)")
    }

    @Test("no script is nil; a broken one is an error that says why")
    func errors() throws {
        #expect(try AnthropicLocalScript.find(in: "just a prompt") == nil)
        for broken in [
            "<local-script>[{\"tool\":\"Bash\"}]", "<local-script>{}</local-script>", "<local-script>[{\"nothing\":1}]</local-script>",
            "<local-script>[{\"tool\":\"Bash\",\"input\":[1]}]</local-script>",
        ] {
            #expect(throws: AnthropicLocalScript.ScriptError.self) { try AnthropicLocalScript.find(in: broken) }
        }
    }

    @Test("a tool's input streams in pieces that join to it")
    func pieces() {
        let text = #"{"command":"echo hello world"}"#
        let pieces = AnthropicLocalAnswer.pieces(text, count: 3)
        #expect(pieces.count == 3)
        #expect(pieces.joined() == text)
        #expect(AnthropicLocalAnswer.pieces("ab", count: 3) == ["a", "b"])
        #expect(AnthropicLocalAnswer.pieces("", count: 3).isEmpty)
    }
}

import ArgumentParser
import Foundation
import NIOCore
import ServiceKit
import SwarmdeckTools

/// What `permessage-deflate` costs stream-fanout and saves the phone, for frames like the
/// stream's: each frame compressed on its own (as every live event is, once for all the
/// connections that agreed), beside writing it uncompressed, in one run.
struct DeflateBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deflate",
        abstract: "WebSocket compression of stream frames: bytes saved and CPU per frame, beside framing them uncompressed."
    )

    @Option(help: "Frames per round.")
    var frames = 50_000

    @Option(help: "Rounds of each (alternating); the median is reported.")
    var rounds = 3

    func validate() throws {
        guard self.frames > 0, self.rounds > 0 else { throw ValidationError("frames and rounds must be positive") }
    }

    /// Frames as ingest renders them: logs, tool calls and usage of a few agents, with the
    /// variety of real messages (numbers, paths, ids).
    static func frames(_ count: Int) -> [ByteBuffer] {
        let tools = ["bash", "read_file", "edit", "grep", "web_fetch"]
        return (0..<count).map { index in
            let seq = 1_000_000 + index
            let agent = "claude-\(index % 7)"
            let text: String
            switch index % 3 {
            case 0:
                text =
                    #"{"seq":\#(seq),"eventId":"\#(seq)","type":"log","ts":\#(1_790_000_000_000 + index * 37),"swarmId":"checkout","agentId":"\#(agent)","severity":"info","level":"info","message":"ran tests in src/module\#(index % 40)/Tests: \#(index % 97) passed, \#(index % 3) failed in \#(index % 900) ms"}"#
            case 1:
                text =
                    #"{"seq":\#(seq),"eventId":"\#(seq)","type":"toolCall","ts":\#(1_790_000_000_000 + index * 37),"swarmId":"checkout","agentId":"\#(agent)","severity":"info","tool":"\#(tools[index % tools.count])","ok":true,"latencyMs":\#(index % 1500),"attrs":{"spanId":"\#(String(index &* 2_654_435_761 % 0xFFFF_FFFF, radix: 16))"}}"#
            default:
                text =
                    #"{"seq":\#(seq),"eventId":"\#(seq)","type":"usage","ts":\#(1_790_000_000_000 + index * 37),"swarmId":"checkout","agentId":"\#(agent)","severity":"info","model":"claude-sonnet-4-5","inputTokens":\#(1000 + index % 50_000),"outputTokens":\#(index % 4000),"attrs":{"session.id":"\#(agent)-session"}}"#
            }
            return ByteBuffer(string: text)
        }
    }

    func run() async throws {
        let frames = Self.frames(self.frames)
        let raw = frames.reduce(0) { $0 + $1.readableBytes }
        print("deflate bench: \(self.frames) stream frames (mean \(raw / self.frames) B), \(self.rounds) rounds")
        var plain: [Double] = []
        var deflated: [Double] = []
        var compressedBytes = 0
        for _ in 0..<self.rounds {
            let start = ContinuousClock.now
            var bytes = 0
            for frame in frames { bytes += WebSocketFraming.frame(.text, frame).readableBytes }
            plain.append((ContinuousClock.now - start).secondsDouble / Double(self.frames))
            let started = ContinuousClock.now
            compressedBytes = 0
            for frame in frames { compressedBytes += WebSocketDeflate.frame(.text, frame).readableBytes }
            deflated.append((ContinuousClock.now - started).secondsDouble / Double(self.frames))
            precondition(bytes > 0)
        }
        let (plainMedian, deflatedMedian) = (plain.sorted().atQuantile(0.5) ?? 0, deflated.sorted().atQuantile(0.5) ?? 0)
        let framedRaw = frames.reduce(0) { $0 + WebSocketFraming.headerLength(payload: $1.readableBytes) + $1.readableBytes }
        print(String(format: "uncompressed: %.2f µs per frame, %d B per frame on the wire", plainMedian * 1e6, framedRaw / self.frames))
        print(
            String(
                format: "permessage-deflate: %.2f µs per frame (%.1f× the uncompressed framing), %d B per frame on the wire (%.0f%% of uncompressed)",
                deflatedMedian * 1e6,
                deflatedMedian / plainMedian,
                compressedBytes / self.frames,
                Double(compressedBytes) / Double(framedRaw) * 100
            )
        )
    }
}

import Foundation
import HummingbirdTesting
import ServiceHarnesses
import StreamTestSupport
import TestSupport
import Testing

/// Seed 003's ACP client against stream-fanout's `/v1/acp`: envelopes decoded into the seed's
/// persisted form as it declares it, `checksum` checked as the seed defines it, `blake3(body)`,
/// by another BLAKE3 implementation than ours (Debian's `b3sum`, the reference Rust one), on the
/// body's bytes as the envelope carries them; de-dup by `msg_id`, resume from `last_seq + 1`.
@Suite("Seed 003's ACP client: the persisted envelope, its blake3 checksum by another implementation, de-dup and resume (live)")
struct Seed003ContractTests {
    /// Seed 003's envelope, every field the seed lists.
    struct Envelope: Decodable {
        var thread_id: String
        var session_id: String
        var seq: Int
        var ts: String
        var direction: String
        var kind: String
        var jsonrpc: String
        var msg_id: String
        var checksum: String
    }

    /// BLAKE3 of `bytes` as Debian's `b3sum` prints it (the test command installs it).
    static func b3sum(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("b3-\(UUID().uuidString)")
        try Data(bytes).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/b3sum")
        process.arguments = ["--no-names", path.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Bodies as agents send them: escapes, non-ASCII, odd spacing, one past a BLAKE3 chunk
    /// (1024 bytes) and one past several.
    static let bodies: [String] = [
        #"{"jsonrpc":"2.0","method":"session/update","params":{"text":"caf\u00e9 é \"q\" \\ /"}}"#,
        #"{"jsonrpc":"2.0",  "method":"session/update" ,"params":{"n":1}}"#,
        #"{"jsonrpc":"2.0","method":"session/update","params":{"text":"\#(String(repeating: "chunk ", count: 200))"}}"#,
        #"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"\#(String(repeating: "ab", count: 3000))"}]}}"#,
    ]

    @Test(
        "each envelope decodes as the seed's, its checksum is b3sum's of its body as carried; a msg_id sent twice is one envelope; resume from last_seq + 1"
    )
    func envelopes() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for (index, body) in Self.bodies.enumerated() {
                try await harness.postACP(ingest, key: key, thread: "t-123", body: body, msgID: "m\(index)")
            }
            // At-least-once on the sending side: the same msg_id again is the same envelope.
            try await harness.postACP(ingest, key: key, thread: "t-123", body: Self.bodies[0], msgID: "m0")
            try await harness.fanout().test(.live) { fanout in
                let phone = StreamClient(
                    port: try #require(fanout.port),
                    token: try await harness.token(subject: "phone-1"),
                    path: "/v1/acp",
                    protocolVersion: nil
                )
                let texts = try await phone.runRaw(sending: [
                    FanoutHarness.acpRequest(1, "acp.cache.fetch", ["thread_id": "t-123", "from_seq": 1, "limit": 500])
                ])
                let raw = try #require(texts.first)
                let answer = try #require(try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any])
                let result = try #require(answer["result"] as? [String: Any])
                let objects = try #require(result["envelopes"] as? [Any])
                #expect(objects.count == Self.bodies.count, "a msg_id sent twice is one envelope")
                let envelopes = try objects.map { try JSONDecoder().decode(Envelope.self, from: JSONSerialization.data(withJSONObject: $0)) }
                #expect(envelopes.map(\.seq) == Array(1...Self.bodies.count))
                let timestamps = ISO8601DateFormatter()
                timestamps.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                for (envelope, body) in zip(envelopes, Self.bodies) {
                    #expect(envelope.thread_id == "t-123" && envelope.jsonrpc == "2.0" && envelope.direction == "agent_to_client")
                    #expect(["request", "result", "notification"].contains(envelope.kind))
                    #expect(timestamps.date(from: envelope.ts) != nil, "ts \(envelope.ts) is not ISO 8601 with milliseconds")
                    // The body is carried as it came, so the phone hashes the bytes it holds.
                    #expect(raw.contains(#""body":"# + body))
                    #expect(envelope.checksum == (try Self.b3sum(Array(body.utf8))), "msg \(envelope.msg_id)")
                }
                // Resume: subscribe from last_seq + 1 gives the rest, each seq once.
                let resumed = try await phone.run(
                    sending: [FanoutHarness.acpRequest(2, "acp.cache.subscribe", ["thread_id": "t-123", "from_seq": 3, "live": false])]
                ) { $0["seq"] as? Int == Self.bodies.count }
                #expect(resumed.frames.compactMap { $0["id"] == nil ? $0["seq"] as? Int : nil } == Array(3...Self.bodies.count))
            }
        }
    }
}

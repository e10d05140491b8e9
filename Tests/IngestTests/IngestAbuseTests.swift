import Foundation
import OTLP
import ServiceHarnesses
import SwiftProtobuf
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one tenant's ingest key can make ingest spend (issue 11): bodies built to cost the
/// most memory once parsed, sent to the real executable at once, and its peak resident memory
/// read from /proc. Prints the figures (docs/ingest.md quotes them).
@Suite("Ingest abuse: bodies that would cost gigabytes parsed (live, the real executable)", .serialized)
struct IngestAbuseTests {
    /// The documented bound on ingest's peak resident memory under this suite's attack
    /// (docs/ingest.md, "Limits and overflow"): the parse budget's 256 MiB, the runtime, slack.
    static let peakBound = 512 << 20

    /// `prefix` + `element,` repeated + `element` + `suffix`, at most `bytes` long: by default
    /// `{"events":[1,1,1,…]}`.
    static func arrayBomb(bytes: Int, prefix: String = #"{"events":["#, element: String = "1", suffix: String = "]}") -> Data {
        let unit = Array((element + ",").utf8)
        let count = (bytes - prefix.utf8.count - element.utf8.count - suffix.utf8.count) / unit.count
        var data = Data(prefix.utf8)
        data.reserveCapacity(bytes)
        for _ in 0..<count { data.append(contentsOf: unit) }
        data.append(contentsOf: Array((element + suffix).utf8))
        return data
    }

    /// An OTLP logs export of `bytes`, protobuf: one scope of empty log records (2 bytes each),
    /// or, with `record` (a field of two bytes), one log record of that field repeated.
    static func otlpProtobufBomb(bytes: Int, record field: [UInt8]? = nil) -> Data {
        let unit: [UInt8] = field ?? [0x12, 0x00]  // ScopeLogs.log_records (2), empty
        var records = [UInt8]()
        records.reserveCapacity(bytes)
        for _ in 0..<((bytes - 24) / 2) { records += unit }
        func delimited(_ field: UInt8, _ payload: [UInt8]) -> [UInt8] {
            var length = payload.count
            var varint: [UInt8] = []
            repeat {
                varint.append(UInt8(length & 0x7F) | (length > 0x7F ? 0x80 : 0))
                length >>= 7
            } while length > 0
            return [(field << 3) | 2] + varint + payload
        }
        // ExportLogsServiceRequest.resource_logs(1) → ResourceLogs.scope_logs(2) → records.
        if field != nil { return Data(delimited(1, delimited(2, delimited(2, records)))) }
        return Data(delimited(1, delimited(2, records)))
    }

    struct Answer {
        var status: Int
        var body: String
    }

    static func post(_ base: String, _ path: String, key: String, contentType: String, body: Data) async -> Answer {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 60
        guard let (data, response) = try? await URLSession.shared.data(for: request) else { return Answer(status: 0, body: "no answer") }
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: String(decoding: data.prefix(300), as: UTF8.self))
    }

    /// VmRSS and VmHWM (peak) of a process, in bytes.
    static func memory(_ pid: Int32) -> (rss: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    @Test(
        "8 MiB of [1,1,1,…] (native and in attrs) and their OTLP twins (items and attributes), eight at once: 413 or 429, and the peak stays under the bound"
    )
    func memoryBombs() async throws {
        let harness = try await IngestHarness()
        let (process, base, key) = try await harness.startExecutable()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let before = Self.memory(process.processIdentifier)

        let size = 8 << 20
        let native = Self.arrayBomb(bytes: size)
        let attrs = Self.arrayBomb(
            bytes: size,
            prefix: #"{"events":[{"msgId":"m","swarmId":"s","agentId":"a","kind":"log","attrs":{"a":["#,
            suffix: "]}}]}"
        )
        let otlpJSON = Self.arrayBomb(bytes: size, prefix: #"{"resourceLogs":[{"scopeLogs":[{"logRecords":["#, element: "{}", suffix: "]}]}]}")
        let otlpProtobuf = Self.otlpProtobufBomb(bytes: size)
        // One log record of about four million empty attributes (LogRecord.attributes is field 6).
        let attributesBomb = Self.otlpProtobufBomb(bytes: size, record: [0x32, 0x00])
        let attributesJSON = Self.arrayBomb(
            bytes: size,
            prefix: #"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":["#,
            element: "{}",
            suffix: "]}]}]}]}"
        )
        for bomb in [native, attrs, otlpJSON, otlpProtobuf, attributesBomb, attributesJSON] { #expect(bomb.count <= size) }

        let attacks: [(String, String, Data)] = [
            ("/v1/ingest/events", "application/json", native), ("/v1/ingest/events", "application/json", attrs),
            ("/v1/logs", "application/json", otlpJSON), ("/v1/logs", "application/x-protobuf", otlpProtobuf),
            ("/v1/ingest/events", "application/json", native), ("/v1/logs", "application/x-protobuf", otlpProtobuf),
            ("/v1/logs", "application/x-protobuf", attributesBomb), ("/v1/logs", "application/json", attributesJSON),
        ]
        let started = ContinuousClock.now
        let answers = await withTaskGroup(of: (Int, Answer).self) { group in
            for (index, (path, type, body)) in attacks.enumerated() {
                group.addTask { (index, await Self.post(base, path, key: key, contentType: type, body: body)) }
            }
            var answers = [Answer](repeating: Answer(status: 0, body: ""), count: attacks.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers
        }
        let elapsed = ContinuousClock.now - started
        let after = Self.memory(process.processIdentifier)
        for (index, answer) in answers.enumerated() {
            #expect([413, 429].contains(answer.status), "attack \(index) (\(attacks[index].0)) answered \(answer.status): \(answer.body)")
        }
        print(
            "ingest abuse: eight 8 MiB bombs answered \(answers.map(\.status)) in \(elapsed); resident \(before.rss >> 20) MiB before, peak \(after.peak >> 20) MiB (bound \(Self.peakBound >> 20) MiB)"
        )
        #expect(after.peak < Self.peakBound, "peak resident memory \(after.peak >> 20) MiB")

        // Alone (no budget contention), an item hiding millions of attributes is refused by its
        // value count, before decoding.
        for (type, body) in [("application/x-protobuf", attributesBomb), ("application/json", attributesJSON)] {
            let answer = await Self.post(base, "/v1/logs", key: key, contentType: type, body: body)
            #expect(answer.status == 413, "\(type): \(answer.status) \(answer.body)")
        }
        #expect(Self.memory(process.processIdentifier).peak < Self.peakBound)

        // And ingest still serves an honest batch.
        let honest = try JSONSerialization.data(withJSONObject: ["events": [logEvent("after-the-bombs")]])
        let answer = await Self.post(base, "/v1/ingest/events", key: key, contentType: "application/json", body: honest)
        #expect(answer.status == 200, "\(answer.body)")
    }
}

import Foundation
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import TerminalBroker

@Suite("Recordings: a tenant's share of the disk, and an attach that cannot be recorded")
struct TerminalRecordingQuotaTests {
    typealias H = TerminalHarness

    @Test(
        "a new recording removes the tenant's oldest finished ones until it fits at its largest; one being written counts at its largest and stays; other tenants' stay"
    )
    func quotaRemovesOldestFirst() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordings-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let recordings = TerminalRecordings(directory: directory, maxBytes: 4096, maxTenantBytes: 10_000, retention: .seconds(3600))
        let session = TerminalSessionID(hostID: "h_1", name: "s")
        func write(_ tenant: String, _ millis: Int, bytes: Int) throws -> URL {
            let file = recordings.newFile(tenant: tenant, session: session).deletingLastPathComponent()
                .appendingPathComponent("\(millis)-0000000a.cast")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(repeating: 0x41, count: bytes).write(to: file)
            return file
        }
        // 9000 bytes in four recordings; a new one may take 4096: the two oldest must go.
        let files = try [(1000, 3000), (2000, 2000), (3000, 2000), (4000, 2000)].map { try write("noisy", $0.0, bytes: $0.1) }
        let theirs = try write("quiet", 500, bytes: 9000)
        let first = try recordings.reserve(tenant: "noisy", session: session)
        #expect(files.map { FileManager.default.fileExists(atPath: $0.path) } == [false, false, true, true])
        #expect(FileManager.default.fileExists(atPath: theirs.path))
        // The first is being written (4096 counted): the next removes both older ones left.
        try Data(repeating: 0x41, count: 10).write(to: first)
        let second = try recordings.reserve(tenant: "noisy", session: session)
        #expect(!FileManager.default.fileExists(atPath: files[2].path) && !FileManager.default.fileExists(atPath: files[3].path))
        #expect(FileManager.default.fileExists(atPath: first.path), "a recording being written is never removed")
        // Two being written take 8192 of 10000: a third cannot start.
        #expect(throws: APIError.self) { try recordings.reserve(tenant: "noisy", session: session) }
        recordings.finished(second, tenant: "noisy")
        _ = try recordings.reserve(tenant: "noisy", session: session)
    }

    @Test("a recording that cannot start: the attach goes on, its hello says recorded false, the audit trail keeps it")
    func unrecordedAttach() async throws {
        // Recordings go under a regular file: no folder can be made there.
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-folder-\(UUID().uuidString)")
        try Data("x".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let harness = try await H(["TERMINAL_RECORDINGS_DIR": blocker.appendingPathComponent("recordings").path])
        try await harness.sshd.newSession("busy")
        try await harness.run { client in
            let host = try await harness.register(client)
            let viewer = harness.viewer(client, session: harness.sessionID(host: host, name: "busy"), token: try await harness.token())
            try await viewer.wait(for: "a screen") { frames in frames.contains { $0["type"] as? String == "screen" } }
            let hello = try #require(viewer.frames.first { $0["type"] as? String == "hello" })
            #expect(hello["recorded"] as? Bool == false, "\(hello)")
            viewer.close()
            let (_, audit) = try await LiveCall.call(client, .get, "/v1/terminal/audit", token: try await harness.admin())
            let entry = (audit["entries"] as? [[String: Any]] ?? []).first { $0["action"] as? String == "attach.unrecorded" }
            #expect(entry?["sessionName"] as? String == "busy", "\(audit)")
        }
    }
}

import EventLog
import Foundation
import OpenAPIRuntime
import ServiceKit
import Testing

@testable import ControlAPI

@Suite("Seed 004's workers: ownership per principal and the request line a worker reads")
struct WorkerOwnershipTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func record(_ id: String, seenAgo seconds: Double, worker: Bool = true) -> FleetAgent {
        var record = FleetAgent(
            agentID: id,
            swarmID: "s",
            stateChangedAt: self.start,
            lastSeenAt: self.start.addingTimeInterval(-seconds)
        )
        record.acceptsRequests = worker
        record.state = "running"
        return record
    }

    func registration(_ id: String, owner: String, registeredAgo seconds: Double = 0) -> ControlStore.WorkerRegistration {
        let at = self.start.addingTimeInterval(-seconds)
        return .init(workerID: id, owner: owner, metadata: "{}", registeredAt: at, updatedAt: at)
    }

    @Test("nobody's worker is the tenant's; a registered one is its owner's and an admin's")
    func permits() {
        #expect(WorkerOwnership.permits(owner: nil, caller: "ana", admin: false))
        #expect(WorkerOwnership.permits(owner: "ana", caller: "ana", admin: false))
        #expect(!WorkerOwnership.permits(owner: "ana", caller: "ben", admin: false))
        #expect(WorkerOwnership.permits(owner: "ana", caller: "ben", admin: true))
    }

    @Test("the list: seen workers by last seen, then registered ones not seen (newest first), others' left out, filtered, limited")
    func visible() {
        let workers = [
            self.record("old", seenAgo: 60), self.record("new", seenAgo: 1), self.record("bens", seenAgo: 5),
            self.record("plain", seenAgo: 2, worker: false),
        ]
        let registrations = [
            self.registration("bens", owner: "ben"), self.registration("early", owner: "ana", registeredAgo: 100),
            self.registration("late", owner: "ana", registeredAgo: 10),
            // An agent that is no worker counts as not seen yet.
            self.registration("plain", owner: "ana", registeredAgo: 50),
        ]
        func ids(_ caller: String, admin: Bool = false, only: String? = nil, limit: Int = 100) -> [String] {
            WorkerOwnership.visible(
                workers: workers,
                registrations: registrations,
                caller: caller,
                admin: admin,
                only: only,
                status: { $0.record == nil ? "registered" : "running" },
                limit: limit
            ).map(\.workerID)
        }
        #expect(ids("ana") == ["new", "old", "late", "plain", "early"])
        #expect(ids("ben") == ["new", "bens", "old"])
        #expect(ids("root", admin: true) == ["new", "bens", "old", "late", "plain", "early"])
        #expect(ids("ana", only: "registered") == ["late", "plain", "early"])
        #expect(ids("ana", only: "running", limit: 1) == ["new"])
        #expect(ids("ana", limit: 2) == ["new", "old"])
        let entry = WorkerOwnership.visible(
            workers: workers,
            registrations: registrations,
            caller: "root",
            admin: true,
            status: { _ in "" },
            limit: 100
        ).first { $0.workerID == "bens" }
        #expect(entry?.record?.agentID == "bens" && entry?.registration?.owner == "ben")
    }

    @Test("a request is the JSON-RPC line {id, method, params}: keys sorted, one line whatever the strings hold")
    func line() throws {
        let params = try JSONDecoder().decode(
            OpenAPIObjectContainer.self,
            from: Data(#"{"threadId":"t/1","input":[{"type":"text","text":"a\nb\u2028c\u0085d\u2029e"}]}"#.utf8)
        )
        let line = try WorkerRequestLine.render(requestID: "r-1", method: "turn/start", params: params)
        #expect(
            line == #"{"id":"r-1","method":"turn/start","params":{"input":[{"text":"a\nb\u2028c\u0085d\u2029e","type":"text"}],"threadId":"t/1"}}"#
        )
        #expect(!line.contains { $0.isNewline })
        // The line decodes back to what was sent.
        let decoded = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        let input = ((decoded?["params"] as? [String: Any])?["input"] as? [[String: Any]])?.first
        #expect(input?["text"] as? String == "a\nb\u{2028}c\u{85}d\u{2029}e")
        #expect(try WorkerRequestLine.render(requestID: "r", method: "thread/list", params: nil) == #"{"id":"r","method":"thread/list","params":{}}"#)
    }

    @Test("bounds: a line over 16,000 characters, metadata over 8 KiB or holding NUL are refused")
    func bounds() throws {
        func container(_ text: String) throws -> OpenAPIObjectContainer {
            try JSONDecoder().decode(OpenAPIObjectContainer.self, from: JSONSerialization.data(withJSONObject: ["text": text]))
        }
        let fits = String(repeating: "x", count: 15_900)
        #expect(try WorkerRequestLine.render(requestID: "r", method: "turn/start", params: container(fits)).count <= 16_000)
        #expect(throws: APIError.self) {
            try WorkerRequestLine.render(requestID: "r", method: "turn/start", params: container(String(repeating: "x", count: 16_000)))
        }
        // Characters as the worker reads them: a line break counts as its two-character escape.
        #expect(throws: APIError.self) {
            try WorkerRequestLine.render(requestID: "r", method: "turn/start", params: container(String(repeating: "\n", count: 8_000)))
        }
        #expect(try WorkerRequestLine.metadata(container(String(repeating: "m", count: 8_000))) != nil)
        #expect(throws: APIError.self) { try WorkerRequestLine.metadata(container(String(repeating: "m", count: 8_200))) }
        #expect(throws: APIError.self) { try WorkerRequestLine.metadata(container("a\u{0}b")) }
        #expect(try WorkerRequestLine.metadata(nil) == nil)
    }
}

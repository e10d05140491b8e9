import Crypto
import Foundation

/// The JSON payloads the notifier sends, always under APNs' 4096 bytes: texts are cut to fit,
/// ids and links are kept whole (an id is at most 256 bytes, a link a few hundred).
enum PushPayload {
    /// The alert's title and body are cut to these many bytes.
    static let maxTitleBytes = 120
    static let maxBodyBytes = 1000
    /// The category of an approval push: the app registers it with approve and reject actions.
    static let gateCategory = "APPROVAL_GATE"
    static let incidentCategory = "INCIDENT"

    /// `prefix + id`, or `prefix` and a digest of the id when that passes APNs' 64 bytes.
    static func collapseID(_ prefix: String, _ id: String) -> String {
        let whole = prefix + id
        if whole.utf8.count <= 64 { return whole }
        return prefix + SHA256.hash(data: Data(id.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The payload of `notice`, delivered as `delivery`.
    static func render(_ notice: PushNotice, delivery: PushDelivery) -> Data {
        var alert: [String: Any] = ["title": Self.cut(notice.title, to: Self.maxTitleBytes), "body": Self.cut(notice.body, to: Self.maxBodyBytes)]
        if let swarm = notice.swarmID { alert["subtitle"] = Self.cut(swarm, to: Self.maxTitleBytes) }
        var aps: [String: Any] = [
            "alert": alert,
            "category": notice.category == .approvalGate ? Self.gateCategory : Self.incidentCategory,
            "thread-id": Self.collapseID("swarm-", notice.swarmID ?? ""),
        ]
        switch delivery {
        case .silent:
            aps["interruption-level"] = "passive"
        case .normal:
            aps["sound"] = "default"
            let urgent = !notice.isResolution && (notice.category == .criticalError || notice.category == .approvalGate)
            aps["interruption-level"] = urgent ? "time-sensitive" : "active"
        }
        var payload: [String: Any] = notice.fields
        payload["aps"] = aps
        return Self.encode(payload)
    }

    /// The summary of `count` pushes folded in a device's window: about one swarm when they all
    /// were (`swarm`), else about the tenant.
    static func renderSummary(count: Int, swarm: String?, delivery: PushDelivery) -> Data {
        let noun = count == 1 ? "alert" : "alerts"
        let body = swarm.map { "\(count) more \(noun) in \(Self.cut($0, to: Self.maxTitleBytes))" } ?? "\(count) more \(noun)"
        var aps: [String: Any] = [
            "alert": ["title": "Swarmdeck", "body": body],
            "category": Self.incidentCategory,
            "thread-id": Self.collapseID("swarm-", swarm ?? ""),
            "interruption-level": delivery == .silent ? "passive" : "active",
        ]
        if delivery == .normal { aps["sound"] = "default" }
        var payload: [String: Any] = ["type": "summary", "count": count, "aps": aps]
        if let swarm { payload["swarmId"] = swarm }
        return Self.encode(payload)
    }

    /// The silent push of an ACP thread's advance (seed 003): `content-available` and the
    /// thread, so the app fetches the delta in the background; without `thread`, of several
    /// threads' advances (the app fetches its inbox).
    static func renderACP(_ advance: ACPAdvance, thread: Bool = true) -> Data {
        var payload: [String: Any] = ["aps": ["content-available": 1], "type": "acp_thread", "hint": "inbox_delta"]
        if thread {
            payload["thread_id"] = advance.thread
            payload["threadId"] = advance.thread
            payload["swarmId"] = advance.swarm
        }
        return Self.encode(payload)
    }

    /// At most `bytes` bytes of `text`, cut at a character boundary, with an ellipsis when cut.
    static func cut(_ text: String, to bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > bytes - 3 { break }
            result.append(character)
            used += size
        }
        return result + "…"
    }

    private static func encode(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }
}

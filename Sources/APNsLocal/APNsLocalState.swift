import Foundation
import Synchronization

/// What the local APNs server received: one accepted or refused push.
public struct APNsLocalPush: Sendable, Codable, Hashable {
    /// Its place among everything received (1, 2, 3…).
    public var index: Int
    public var receivedAt: Int64
    public var deviceToken: String
    public var topic: String?
    public var pushType: String?
    public var priority: String?
    public var expiration: String?
    public var collapseID: String?
    public var apnsID: String?
    /// The payload as sent (UTF-8).
    public var payload: String
    /// The provider token's key id, issue time and digest (never the token itself).
    public var keyID: String?
    public var tokenIssuedAt: Int64?
    public var tokenDigest: String?
    /// What the server answered.
    public var status: Int
    public var reason: String?
}

/// An answer the local server is told to give instead of its own, to the next `count` pushes
/// (to one device token, or to any).
public struct APNsLocalRule: Sendable, Codable, Hashable {
    /// Only pushes to this device token (any when nil).
    public var deviceToken: String?
    /// The status to answer (200 for a normal answer after `delayMilliseconds`).
    public var status: Int
    /// The `reason` of the error body.
    public var reason: String?
    /// How many pushes the rule answers; nil for every one.
    public var count: Int?
    /// Wait this long before answering.
    public var delayMilliseconds: Int?
    /// After answering, end the connection with GOAWAY (as APNs does on `Shutdown`).
    public var goAway: Bool?

    public init(deviceToken: String? = nil, status: Int, reason: String? = nil, count: Int? = 1, delayMilliseconds: Int? = nil, goAway: Bool? = nil) {
        self.deviceToken = deviceToken
        self.status = status
        self.reason = reason
        self.count = count
        self.delayMilliseconds = delayMilliseconds
        self.goAway = goAway
    }
}

/// The server's memory: the rules it was given, the tokens it unregistered, and the pushes it
/// received (the last ``maximumRecords``).
final class APNsLocalState: Sendable {
    static let maximumRecords = 200_000
    static let maximumRules = 1000

    private struct Storage {
        var rules: [APNsLocalRule] = []
        var unregistered: [String: Int64] = [:]
        var pushes: [APNsLocalPush] = []
        var received = 0
    }

    private let storage = Mutex(Storage())

    func add(_ rule: APNsLocalRule) -> Bool {
        self.storage.withLock { storage in
            guard storage.rules.count < Self.maximumRules else { return false }
            storage.rules.append(rule)
            return true
        }
    }

    func clearRules() {
        self.storage.withLock { $0.rules.removeAll() }
    }

    /// The rule that answers a push to `deviceToken`, used up by one.
    func takeRule(for deviceToken: String) -> APNsLocalRule? {
        self.storage.withLock { storage in
            guard let index = storage.rules.firstIndex(where: { $0.deviceToken == nil || $0.deviceToken == deviceToken }) else { return nil }
            let rule = storage.rules[index]
            if let count = rule.count {
                if count <= 1 { storage.rules.remove(at: index) } else { storage.rules[index].count = count - 1 }
            }
            return rule
        }
    }

    /// Since when `deviceToken` is unregistered (milliseconds), if it is.
    func unregisteredSince(_ deviceToken: String) -> Int64? {
        self.storage.withLock { $0.unregistered[deviceToken] }
    }

    func unregister(_ deviceToken: String, at: Int64) {
        self.storage.withLock { storage in
            if storage.unregistered[deviceToken] == nil, storage.unregistered.count < Self.maximumRecords { storage.unregistered[deviceToken] = at }
        }
    }

    func record(_ push: APNsLocalPush) {
        self.storage.withLock { storage in
            storage.received += 1
            var push = push
            push.index = storage.received
            storage.pushes.append(push)
            if storage.pushes.count > Self.maximumRecords { storage.pushes.removeFirst(storage.pushes.count - Self.maximumRecords) }
        }
    }

    /// The pushes received after index `after`, at most `limit`.
    func pushes(after: Int, limit: Int) -> [APNsLocalPush] {
        self.storage.withLock { storage in
            Array(storage.pushes.lazy.filter { $0.index > after }.prefix(limit))
        }
    }
}

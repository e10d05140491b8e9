import Contracts

/// Which ACP threads each device follows live, from stream-fanout's announcements
/// (``ACPPresence``), each holding until its time to live runs out or another announcement of
/// the same connection replaces it. Pure: the caller passes the time (milliseconds).
///
/// Bounded: at most `maxConnections` connections; past it expired ones are dropped first and a
/// new connection is not recorded (its device may then get a silent push it did not need).
struct ACPPresenceTable: Sendable {
    private struct Key: Hashable {
        var tenant: String
        var connection: String
    }

    private struct Entry {
        var device: String
        var threads: Set<String>
        var until: Int64
    }

    let maxConnections: Int
    /// An announcement holds at most this long, whatever it says (ten minutes).
    static let maxTTLMilliseconds: Int64 = 600_000
    private var entries: [Key: Entry] = [:]
    /// The connections of each device (tenant and device).
    private var byDevice: [DeviceKey: Set<String>] = [:]

    private struct DeviceKey: Hashable {
        var tenant: String
        var device: String
    }

    init(maxConnections: Int) {
        self.maxConnections = maxConnections
    }

    /// Connections recorded (expired ones included until they are dropped).
    var count: Int { self.entries.count }

    /// Records `presence` at `now`; one that ended (no threads, or no time to live) removes its
    /// connection.
    mutating func apply(_ presence: ACPPresence, now: Int64) {
        let key = Key(tenant: presence.tenant, connection: presence.connection)
        let device = DeviceKey(tenant: presence.tenant, device: presence.device)
        if presence.threads.isEmpty || presence.ttlMilliseconds <= 0 {
            self.remove(key)
            return
        }
        if self.entries[key] == nil, self.entries.count >= self.maxConnections {
            self.dropExpired(now: now)
            guard self.entries.count < self.maxConnections else { return }
        }
        if let old = self.entries[key], old.device != presence.device {
            self.remove(key)
        }
        self.entries[key] = Entry(
            device: presence.device,
            threads: Set(presence.threads.prefix(ACPPresence.maxThreads)),
            until: now + min(presence.ttlMilliseconds, Self.maxTTLMilliseconds)
        )
        self.byDevice[device, default: []].insert(presence.connection)
    }

    /// Whether `device` of `tenant` follows `thread` live at `now`.
    func isLive(tenant: String, device: String, thread: String, now: Int64) -> Bool {
        guard let connections = self.byDevice[DeviceKey(tenant: tenant, device: device)] else { return false }
        return connections.contains { connection in
            guard let entry = self.entries[Key(tenant: tenant, connection: connection)] else { return false }
            return entry.until > now && entry.threads.contains(thread)
        }
    }

    /// Drops the announcements whose time ran out.
    mutating func dropExpired(now: Int64) {
        for (key, entry) in self.entries where entry.until <= now {
            self.remove(key)
        }
    }

    private mutating func remove(_ key: Key) {
        guard let entry = self.entries.removeValue(forKey: key) else { return }
        let device = DeviceKey(tenant: key.tenant, device: entry.device)
        self.byDevice[device]?.remove(key.connection)
        if self.byDevice[device]?.isEmpty == true { self.byDevice[device] = nil }
    }
}

import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Devices' APNs registrations and preferences, in the notifier's schema.
struct DeviceStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    struct Registration: Sendable, Hashable {
        var apnsToken: String
        var environment: String
        var topic: String
        var registeredAt: Date
        var invalidEnvironment: Bool
    }

    func registration(tenant: String, device: String) async throws -> Registration? {
        let rows = try await self.client.query(
            """
            SELECT apns_token, environment, topic, registered_at, invalid_environment FROM devices
            WHERE tenant_id = \(tenant) AND device_id = \(device)
            """,
            logger: self.logger
        )
        for try await (token, environment, topic, at, invalid) in rows.decode((String, String, String, Date, Bool).self) {
            return Registration(apnsToken: token, environment: environment, topic: topic, registeredAt: at, invalidEnvironment: invalid)
        }
        return nil
    }

    /// Registers or replaces the device's token (a new registration clears the environment
    /// mark and the throttle). Answers nil when the tenant already has `limit` other devices.
    func register(tenant: String, device: String, token: String, environment: String, topic: String, limit: Int) async throws -> Registration? {
        try await self.client.transaction(logger: self.logger) { connection in
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('devices'), hashtext(\(tenant)))", logger: self.logger)
            let rows = try await connection.query(
                "SELECT count(*) FILTER (WHERE device_id <> \(device)) FROM devices WHERE tenant_id = \(tenant)",
                logger: self.logger
            )
            var others = 0
            for try await count in rows.decode(Int.self) { others = count }
            guard others < limit else { return nil }
            let now = Date()
            // Another device of the tenant that held this token (the phone re-enrolled) loses it.
            try await connection.query(
                "DELETE FROM devices WHERE tenant_id = \(tenant) AND apns_token = \(token) AND device_id <> \(device)",
                logger: self.logger
            )
            try await connection.query(
                """
                INSERT INTO devices (tenant_id, device_id, apns_token, environment, topic, registered_at)
                VALUES (\(tenant), \(device), \(token), \(environment), \(topic), \(now))
                ON CONFLICT (tenant_id, device_id) DO UPDATE SET apns_token = EXCLUDED.apns_token, environment = EXCLUDED.environment,
                    topic = EXCLUDED.topic, registered_at = EXCLUDED.registered_at, invalid_environment = false, throttled_until = NULL
                """,
                logger: self.logger
            )
            return Registration(apnsToken: token, environment: environment, topic: topic, registeredAt: now, invalidEnvironment: false)
        }
    }

    /// Removes the device's registration and drops its pending pushes.
    func unregister(tenant: String, device: String) async throws {
        try await self.client.transaction(logger: self.logger) { connection in
            try await connection.query("DELETE FROM devices WHERE tenant_id = \(tenant) AND device_id = \(device)", logger: self.logger)
            try await connection.query(
                """
                UPDATE jobs SET state = 'dropped', finished_at = now(), last_reason = 'unregistered by the device'
                WHERE tenant_id = \(tenant) AND device_id = \(device) AND state = 'pending'
                """,
                logger: self.logger
            )
        }
    }

    func preferences(tenant: String, device: String) async throws -> NotificationPreferences {
        let rows = try await self.client.query(
            "SELECT document FROM preferences WHERE tenant_id = \(tenant) AND device_id = \(device)",
            logger: self.logger
        )
        for try await text in rows.decode(String.self) {
            return (try? JSONDecoder().decode(NotificationPreferences.self, from: Data(text.utf8))) ?? .defaults
        }
        return .defaults
    }

    func setPreferences(_ preferences: NotificationPreferences, tenant: String, device: String) async throws {
        let text = String(decoding: try JSONEncoder().encode(preferences), as: UTF8.self)
        try await self.client.write(
            """
            INSERT INTO preferences (tenant_id, device_id, document, updated_at) VALUES (\(tenant), \(device), \(text), now())
            ON CONFLICT (tenant_id, device_id) DO UPDATE SET document = EXCLUDED.document, updated_at = EXCLUDED.updated_at
            """,
            logger: self.logger
        )
    }

    /// Every device the schema knows (registered, or with preferences), `limit` at a time after
    /// `after` (tenant and device, in order).
    func devices(after: (tenant: String, device: String)?, limit: Int) async throws -> [(tenant: String, device: String)] {
        let (tenant, device) = after ?? ("", "")
        let rows = try await self.client.query(
            """
            SELECT tenant_id, device_id FROM devices WHERE (tenant_id, device_id) > (\(tenant), \(device))
            UNION SELECT tenant_id, device_id FROM preferences WHERE (tenant_id, device_id) > (\(tenant), \(device))
            ORDER BY 1, 2 LIMIT \(limit)
            """,
            logger: self.logger
        )
        var devices: [(tenant: String, device: String)] = []
        for try await (tenant, device) in rows.decode((String, String).self) { devices.append((tenant, device)) }
        return devices
    }
}

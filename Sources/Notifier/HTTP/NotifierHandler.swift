import APNs
import Contracts
import Foundation
import NotifierContract
import ServiceKit

/// The notifier's operations (the `APIProtocol` generated from openapi/notifier.yaml): a device
/// registers its APNs token and sets its preferences, always as itself ("me" is the
/// credential's subject in the credential's tenant).
struct NotifierHandler: Sendable {
    let settings: NotifierSettings
    let devices: DeviceStore
    /// Registration and preference writes per device per minute.
    let writes: KeyedTokenBuckets

    private func limitWrites(_ person: AccessIdentity) throws(APIError) {
        if let wait = self.writes.take(person.tenant + "\u{0}" + person.subject) {
            throw APIError(
                .rateLimited,
                "more than \(Int(self.writes.capacity)) changes a minute from this device",
                retryAfterSeconds: wait.retryAfterSeconds
            )
        }
    }

    static func contract(_ registration: DeviceStore.Registration) -> Components.Schemas.PushRegistration {
        Components.Schemas.PushRegistration(
            apnsToken: String(registration.apnsToken.suffix(8)),
            environment: .init(rawValue: registration.environment) ?? .production,
            topic: registration.topic,
            registeredAt: registration.registeredAt,
            status: registration.invalidEnvironment ? .invalidForEnvironment : .active
        )
    }
}

extension NotifierHandler: APIProtocol {
    func getPushRegistration(_ input: Operations.GetPushRegistration.Input) async throws -> Operations.GetPushRegistration.Output {
        let person = try Caller.person()
        guard let registration = try await self.devices.registration(tenant: person.tenant, device: person.subject) else {
            throw APIError(.notFound, "this device has no push registration")
        }
        return .ok(.init(body: .json(Self.contract(registration))))
    }

    func registerForPush(_ input: Operations.RegisterForPush.Input) async throws -> Operations.RegisterForPush.Output {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let token = body.apnsToken.lowercased()
        guard APNsNotification.isDeviceToken(token) else { throw APIError(.invalidRequest, "apnsToken must be 64 to 200 hex digits") }
        guard self.settings.apnsTopics.contains(body.topic) else {
            throw APIError(.invalidRequest, "topic must be one of: \(self.settings.apnsTopics.sorted().joined(separator: ", "))")
        }
        try self.limitWrites(person)
        guard
            let registration = try await self.devices.register(
                tenant: person.tenant,
                device: person.subject,
                token: token,
                environment: body.environment.rawValue,
                topic: body.topic,
                limit: self.settings.maxDevicesPerTenant
            )
        else {
            throw APIError(
                .rateLimited,
                "the tenant has \(self.settings.maxDevicesPerTenant) devices registered for push (notifier.max-devices-per-tenant)"
            )
        }
        return .ok(.init(body: .json(Self.contract(registration))))
    }

    func unregisterForPush(_ input: Operations.UnregisterForPush.Input) async throws -> Operations.UnregisterForPush.Output {
        let person = try Caller.person()
        try await self.devices.unregister(tenant: person.tenant, device: person.subject)
        return .noContent(.init())
    }

    func getNotificationPreferences(_ input: Operations.GetNotificationPreferences.Input) async throws -> Operations.GetNotificationPreferences.Output
    {
        let person = try Caller.person()
        return .ok(.init(body: .json(try await self.devices.preferences(tenant: person.tenant, device: person.subject).contract)))
    }

    func setNotificationPreferences(_ input: Operations.SetNotificationPreferences.Input) async throws -> Operations.SetNotificationPreferences.Output
    {
        let person = try Caller.person()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        let preferences = try NotificationPreferences(body)
        try self.limitWrites(person)
        try await self.devices.setPreferences(preferences, tenant: person.tenant, device: person.subject)
        return .ok(.init(body: .json(preferences.contract)))
    }
}

extension NotificationPreferences {
    /// Checks the document's values (the generated decoder checks only its shape).
    init(_ document: Components.Schemas.NotificationPreferences) throws(APIError) {
        guard document.types.count <= PushCategory.allCases.count else { throw APIError(.invalidRequest, "types has at most 5 entries") }
        guard document.swarms.count <= 100 else { throw APIError(.invalidRequest, "swarms has at most 100 entries") }
        for swarm in document.swarms { try InputCheck.id(swarm, "swarms") }
        var quiet: QuietHours?
        if let hours = document.quietHours {
            guard let start = QuietHours.minutes(hours.start), let end = QuietHours.minutes(hours.end) else {
                throw APIError(.invalidRequest, "quietHours.start and end are HH:MM")
            }
            guard hours.timeZone.utf8.count <= 64, TimeZone(identifier: hours.timeZone) != nil else {
                throw APIError(.invalidRequest, "quietHours.timeZone must be an IANA time zone such as Europe/Paris")
            }
            quiet = QuietHours(start: start, end: end, timeZone: hours.timeZone, includeCritical: hours.includeCritical ?? false)
        }
        self.init(
            types: Set(document.types.compactMap { PushCategory(rawValue: $0.rawValue) }),
            swarms: Set(document.swarms),
            resolutions: document.resolutions,
            quietHours: quiet,
            acpThreads: document.acpThreads ?? true
        )
    }

    var contract: Components.Schemas.NotificationPreferences {
        Components.Schemas.NotificationPreferences(
            types: PushCategory.allCases.filter { self.types.contains($0) }.compactMap { .init(rawValue: $0.rawValue) },
            swarms: self.swarms.sorted(),
            resolutions: self.resolutions,
            quietHours: self.quietHours.map {
                .init(start: QuietHours.text($0.start), end: QuietHours.text($0.end), timeZone: $0.timeZone, includeCritical: $0.includeCritical)
            },
            acpThreads: self.acpThreads
        )
    }
}

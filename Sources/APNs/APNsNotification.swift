public import Foundation

/// One push as APNs receives it: the device, the headers and the JSON payload.
///
/// ``validate()`` applies the rules APNs would answer with a 400 or 413, so nothing that
/// cannot succeed is ever sent.
public struct APNsNotification: Sendable, Hashable {
    /// `apns-push-type`: what the payload does.
    public enum PushType: String, Sendable, Hashable, CaseIterable {
        /// Shows an alert, plays a sound or badges the icon.
        case alert
        /// Wakes the app in the background (`content-available`), shows nothing; needs
        /// priority 5.
        case background
    }

    /// `apns-priority`.
    public enum Priority: Int, Sendable, Hashable, CaseIterable {
        /// Send at once; the payload must alert, sound or badge.
        case immediate = 10
        /// Send when the device's power allows; required for background pushes.
        case powerAware = 5
    }

    /// The largest payload APNs accepts for alert and background pushes.
    public static let maximumPayloadBytes = 4096
    /// The longest `apns-collapse-id`.
    public static let maximumCollapseIDBytes = 64

    /// The device token, lower-case hex.
    public var deviceToken: String
    public var environment: APNsEnvironment
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    public var pushType: PushType
    public var priority: Priority
    /// `apns-expiration`: until when APNs keeps trying (epoch seconds); 0 tries once.
    public var expiration: Int64
    /// `apns-collapse-id`: a later push with the same id replaces an undelivered earlier one.
    public var collapseID: String?
    /// `apns-id`: a lower-case UUID, echoed back; the job's id, so a resend is recognisable.
    public var apnsID: UUID
    /// The JSON payload (`{"aps": …, …}`).
    public var payload: Data

    public init(
        deviceToken: String,
        environment: APNsEnvironment,
        topic: String,
        pushType: PushType,
        priority: Priority,
        expiration: Int64,
        collapseID: String?,
        apnsID: UUID,
        payload: Data
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// Throws ``APNsError/Code/invalidNotification`` naming the first rule this push breaks.
    public func validate() throws(APNsError) {
        guard Self.isDeviceToken(self.deviceToken) else {
            throw APNsError(.invalidNotification, "the device token must be 64 to 200 lower-case hex digits")
        }
        guard !self.topic.isEmpty, self.topic.utf8.count <= 255, self.topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw APNsError(.invalidNotification, "the topic must be the app's bundle id")
        }
        guard !self.payload.isEmpty else { throw APNsError(.invalidNotification, "the payload is empty") }
        guard self.payload.count <= Self.maximumPayloadBytes else {
            throw APNsError(.invalidNotification, "the payload is \(self.payload.count) bytes, over APNs' \(Self.maximumPayloadBytes)")
        }
        if let collapseID = self.collapseID {
            guard !collapseID.isEmpty, collapseID.utf8.count <= Self.maximumCollapseIDBytes else {
                throw APNsError(.invalidNotification, "the collapse id must be 1 to \(Self.maximumCollapseIDBytes) bytes")
            }
        }
        if self.pushType == .background, self.priority != .powerAware {
            throw APNsError(.invalidNotification, "a background push must have priority 5")
        }
        guard self.expiration >= 0 else { throw APNsError(.invalidNotification, "the expiration must not be negative") }
    }

    /// 64 to 200 lower-case hex digits (today's tokens are 64; Apple says not to assume it).
    public static func isDeviceToken(_ text: String) -> Bool {
        (64...200).contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

public import Contracts

/// What a service's NATS user may publish and subscribe to, no wider: each service declares
/// its own (``SwarmdeckService/natsPermissions(_:)``), and the deployments' NATS configuration
/// is written from the declarations (`swarmdeckd deploy`), so a subject a service starts to use
/// and its permission are changed in one place.
public struct NATSPermissions: Sendable, Equatable {
    /// Subjects (wildcards allowed) the user may publish to.
    public var publish: [String]
    /// Subjects the user may subscribe to.
    public var subscribe: [String]
    /// Whether the user may answer requests on the requesters' reply subjects (a service that
    /// serves request/reply).
    public var allowResponses: Bool

    public init(publish: [String] = [], subscribe: [String] = [], allowResponses: Bool = false) {
        self.publish = publish
        self.subscribe = subscribe
        self.allowResponses = allowResponses
    }

    /// What every service needs beyond its own part of the bus: the revocations (every
    /// service's `RevocationFeed` reads the stream's state and messages and hears new ones) and
    /// replies on its own inboxes only (``NATSConnection/inboxRoot(name:)``).
    public static func everyService(named name: String, subjects: Subjects) -> NATSPermissions {
        NATSPermissions(
            publish: [
                JetStreamOperation.streamInfo(stream: subjects.revocationStreamName).subject(),
                JetStreamOperation.streamMessageGet(stream: subjects.revocationStreamName).subject(),
            ],
            subscribe: [subjects.allRevocations, NATSConnection.inboxRoot(name: name) + ".>"]
        )
    }

    /// The publish permissions that create or update `stream` (a stream the service owns).
    public static func owning(stream: String) -> [String] {
        [JetStreamOperation.streamCreate(stream: stream).subject(), JetStreamOperation.streamUpdate(stream: stream).subject()]
    }

    /// The publish permissions that create a durable consumer of `stream`, pull from it and
    /// acknowledge its messages (a service's one consumer).
    public static func pulling(stream: String, consumer: String) -> [String] {
        [
            JetStreamOperation.durableConsumerCreate(stream: stream, consumer: consumer).subject(),
            JetStreamOperation.consumerNext(stream: stream, consumer: consumer).subject(),
            JetStreamOperation.acknowledgements(stream: stream, consumer: consumer),
        ]
    }

    /// These permissions and `other`'s: each subject once, in order of first appearance.
    public func merging(_ other: NATSPermissions) -> NATSPermissions {
        func union(_ first: [String], _ second: [String]) -> [String] {
            var seen = Set<String>()
            return (first + second).filter { seen.insert($0).inserted }
        }
        return NATSPermissions(
            publish: union(self.publish, other.publish),
            subscribe: union(self.subscribe, other.subscribe),
            allowResponses: self.allowResponses || other.allowResponses
        )
    }

    /// The permissions as a NATS configuration map (the value of a user's `permissions`).
    public var configuration: String {
        func allow(_ direction: String, _ subjects: [String]) -> [String] {
            // An empty list: everything denied, said explicitly rather than left to how the server reads `allow: []`.
            guard !subjects.isEmpty else { return ["  \(direction): { deny: [\">\"] }"] }
            return ["  \(direction): { allow: ["] + subjects.map { "    \"\($0)\"," } + ["  ] }"]
        }
        var lines = ["{"]
        lines += allow("publish", self.publish)
        lines += allow("subscribe", self.subscribe)
        if self.allowResponses { lines.append("  allow_responses: true") }
        lines.append("}")
        return lines.joined(separator: "\n")
    }
}

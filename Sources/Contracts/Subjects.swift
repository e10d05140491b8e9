/// Builds every NATS subject Swarmdeck uses. No other module writes a subject string.
///
/// All subjects start with a configurable prefix (`sd` in production) so that tests and
/// side-by-side deployments can isolate themselves on one server:
///
/// | subject                                          | carries                         |
/// | ------------------------------------------------ | ------------------------------- |
/// | `<prefix>.ev.<partition>.<tenant>.<swarm>.<agent>.<kind>` | a committed event (core NATS) |
/// | `<prefix>.ev.<partition>.<tenant>.batch`         | a run of committed events (core NATS) |
/// | `<prefix>.ctl.<tenant>.<swarm>.<agent>`          | control commands (JetStream)    |
/// | `<prefix>.revoked.<tenant>`                      | revoked devices (JetStream)     |
/// | `<prefix>.svc.events`                            | services' events for ingest (request/reply) |
/// | `<prefix>.gates.<tenant>`                        | approval gates opened (JetStream) |
/// | `<prefix>.incidents.<tenant>`                    | incident changes (JetStream)    |
/// | `<prefix>.health.summary`                        | a tenant's health summary (request/reply) |
/// | `<prefix>.health.thresholds.<tenant>`            | a tenant's thresholds changed (core NATS) |
/// | `<prefix>.acp.advance.<tenant>`                  | an ACP thread advanced (JetStream)  |
/// | `<prefix>.acp.presence.<tenant>`                 | which ACP threads a device watches live (core NATS) |
///
/// `<partition>` is the tenant's ``EventPartition`` (a decimal), so that a service serving a share
/// of the tenants subscribes to its partitions, not to every event.
///
/// Identifiers are encoded with ``SubjectToken`` so that a `.`, `*`, `>` or space in an id
/// can never change the shape of a subject.
public struct Subjects: Sendable, Hashable {
    /// The first token of every subject.
    public let prefix: String

    /// The production prefix.
    public static let defaultPrefix = "sd"

    /// Creates a subject namespace.
    /// - Parameter prefix: one or more subject tokens without wildcards, e.g. `sd` or `test.a1b2`.
    public init(prefix: String = Subjects.defaultPrefix) throws(ContractsError) {
        let tokens = prefix.split(separator: ".", omittingEmptySubsequences: false)
        guard !tokens.isEmpty, tokens.allSatisfy({ !$0.isEmpty && SubjectToken.isPlain($0) }) else {
            throw ContractsError(.invalidSubjectPrefix, "subject prefix '\(prefix)' must be dot-separated tokens of [A-Za-z0-9_-]")
        }
        self.prefix = prefix
    }

    // MARK: Events

    /// The subject one committed event is published on.
    public func event(tenant: String, swarm: String, agent: String, kind: BusEventKind) -> String {
        "\(self.eventBase(tenant: tenant)).\(SubjectToken.encode(swarm)).\(SubjectToken.encode(agent)).\(kind.subjectToken)"
    }

    /// The subject a run of one tenant's committed events is published on, as one
    /// `BusEventBatch` (read with ``BusEventBatch/envelopes(in:subject:subjects:)``). It falls
    /// under ``events(tenant:)`` and ``events(partition:)``, not under a swarm's or a kind's: an
    /// event subject has three more tokens after the tenant, a batch subject one.
    public func eventBatch(tenant: String) -> String {
        "\(self.eventBase(tenant: tenant)).\(Self.batchToken)"
    }

    /// `<prefix>.ev.<partition>.<tenant>`.
    private func eventBase(tenant: String) -> String {
        "\(self.prefix).ev.\(EventPartition(tenant: tenant)).\(SubjectToken.encode(tenant))"
    }

    /// Whether `subject` is an ``eventBatch(tenant:)`` subject of this namespace.
    public func isEventBatch(_ subject: String) -> Bool {
        guard let tokens = self.eventTokens(subject), tokens.count == 2, tokens[1] == Self.batchToken[...] else { return false }
        return true
    }

    private static let batchToken = "batch"

    /// The tokens of an event subject of this namespace after its partition, when the partition
    /// is the tenant's: the tenant's token first. Nil for any other subject.
    private func eventTokens(_ subject: String) -> [Substring]? {
        guard subject.hasPrefix(self.prefix + ".ev.") else { return nil }
        let tokens = subject.dropFirst(self.prefix.utf8.count + 4).split(separator: ".", omittingEmptySubsequences: false)
        guard tokens.count >= 3, let partition = EventPartition(token: tokens[0]), let tenant = SubjectToken.decode(tokens[1]),
            EventPartition(tenant: tenant) == partition
        else { return nil }
        return Array(tokens.dropFirst())
    }

    /// Every event of one tenant (both shapes: single events and batches).
    public func events(tenant: String) -> String {
        "\(self.eventBase(tenant: tenant)).>"
    }

    /// Every event of the tenants of one partition (both shapes), for a service that serves a
    /// share of the tenants (health-monitor's replicas hold partitions).
    public func events(partition: EventPartition) -> String {
        "\(self.prefix).ev.\(partition).>"
    }

    /// Every ACP message of every tenant (approvals reads them for permission requests). Only
    /// ACP messages can be subscribed to by kind: ingest publishes each alone on its event
    /// subject, and every other event in batches (a kind's or a swarm's wildcard would miss
    /// those).
    public var allACPEvents: String {
        "\(self.prefix).ev.*.*.*.*.\(BusEventKind.acp.subjectToken)"
    }

    /// Every event of every tenant, both shapes. A permission (ingest publishes them, consumers
    /// may hear them), never a subscription: consumers subscribe per tenant or per partition.
    public var allEvents: String {
        "\(self.prefix).ev.>"
    }

    // MARK: ACP threads

    /// The subject ingest announces an advance of one of `tenant`'s ACP threads on
    /// (``ACPAdvanceNotice``), for the notifier.
    public func acpAdvanced(tenant: String) -> String {
        "\(self.prefix).acp.advance.\(SubjectToken.encode(tenant))"
    }

    /// The subjects the ACP stream captures.
    public var allACPAdvances: String {
        "\(self.prefix).acp.advance.>"
    }

    /// The tenant an ``acpAdvanced(tenant:)`` subject names; nil for another subject.
    public func parseACPAdvanced(_ subject: String) -> String? {
        Self.tenant(of: subject, base: "\(self.prefix).acp.advance.")
    }

    /// The JetStream stream that keeps ACP threads' advances for a while, so that the notifier
    /// takes every one on a durable consumer.
    public var acpStreamName: String {
        "SD_ACP_" + self.prefix.replacingAll(".", with: "_").uppercased()
    }

    /// The subject stream-fanout announces which ACP threads a device of `tenant` watches live
    /// on (``ACPPresence``).
    public func acpPresence(tenant: String) -> String {
        "\(self.prefix).acp.presence.\(SubjectToken.encode(tenant))"
    }

    /// Every tenant's ACP presence.
    public var allACPPresence: String {
        "\(self.prefix).acp.presence.*"
    }

    /// The tenant an ``acpPresence(tenant:)`` subject names; nil for another subject.
    public func parseACPPresence(_ subject: String) -> String? {
        Self.tenant(of: subject, base: "\(self.prefix).acp.presence.")
    }

    /// The tenant token that ends `subject` after `base`, decoded; nil when `subject` is not
    /// `base` and one token.
    private static func tenant(of subject: String, base: String) -> String? {
        guard subject.hasPrefix(base) else { return nil }
        let token = subject.dropFirst(base.utf8.count)
        guard !token.isEmpty, !token.contains(".") else { return nil }
        return SubjectToken.decode(token)
    }

    // MARK: Control

    /// The subject a control command for one agent of one swarm is published on (and its
    /// session's consumer filters on).
    public func controlCommand(tenant: String, swarm: String, agent: String) -> String {
        "\(self.prefix).ctl.\(SubjectToken.encode(tenant)).\(SubjectToken.encode(swarm)).\(SubjectToken.encode(agent))"
    }

    /// The control commands of every agent of swarm `swarm`, in every tenant (the filter of
    /// a service that is those agents, as pipeline-runner is the swarm of pipelines).
    public func controlCommands(swarm: String) -> String {
        "\(self.prefix).ctl.*.\(SubjectToken.encode(swarm)).*"
    }

    /// The subjects the control JetStream stream captures.
    public var allControlCommands: String {
        "\(self.prefix).ctl.>"
    }

    /// The JetStream stream that holds control commands; unique per prefix.
    public var controlStreamName: String {
        "SD_CONTROL_" + self.prefix.replacingAll(".", with: "_").uppercased()
    }

    // MARK: Revocations

    /// The subject a revoked device of `tenant` is announced on.
    public func revocation(tenant: String) -> String {
        "\(self.prefix).revoked.\(SubjectToken.encode(tenant))"
    }

    /// The subjects the revocations stream captures.
    public var allRevocations: String {
        "\(self.prefix).revoked.>"
    }

    /// The JetStream stream that holds revocations for as long as an access token lives.
    public var revocationStreamName: String {
        "SD_REVOKED_" + self.prefix.replacingAll(".", with: "_").uppercased()
    }

    // MARK: Service events

    /// The subject services send events for the tenant's log to (ingest answers after commit).
    public var serviceEvents: String {
        "\(self.prefix).svc.events"
    }

    /// The subject stream-fanout sends people's ACP frames to (`/v1/acp`), as a
    /// `ServiceEventBatch` of ACP events (request/reply, ingest answers after commit). Ingest
    /// stores whatever comes here as `"origin":"client"`: stream-fanout, which may publish only
    /// here, can forge no service's message.
    public var clientACPFrames: String {
        "\(self.prefix).svc.acp.client"
    }

    /// The subject a service that is an agent (pipeline-runner) reports the outcome of a
    /// control command on (request/reply; control-api's replicas share it as a queue group and
    /// record it as an agent's acknowledgement).
    public var serviceControlAcks: String {
        "\(self.prefix).svc.ctl.acks"
    }

    /// The subject a service asks approvals to open a gate on (request/reply, queue group
    /// `approvals`; outside `gates.>`, which the gates stream captures).
    public var serviceGateRequests: String {
        "\(self.prefix).svc.gates.open"
    }

    // MARK: Approval gates

    /// The subject an approval gate opening of `tenant` is published on, for the notifier.
    public func gateOpened(tenant: String) -> String {
        "\(self.prefix).gates.\(SubjectToken.encode(tenant))"
    }

    /// The subjects the gates stream captures.
    public var allGateOpenings: String {
        "\(self.prefix).gates.>"
    }

    /// The JetStream stream that holds gate openings until the notifier has taken them.
    public var gateStreamName: String {
        "SD_GATES_" + self.prefix.replacingAll(".", with: "_").uppercased()
    }

    // MARK: Pipelines

    /// The subject pipeline-runner's replicas hear that a pipeline was paused, resumed or
    /// terminated on (the replica running it acts at once).
    public var pipelineChanged: String {
        "\(self.prefix).pipelines.changed"
    }

    // MARK: Health

    /// The subject a change of one of `tenant`'s incidents is published on, for the notifier.
    public func incidentChanged(tenant: String) -> String {
        "\(self.prefix).incidents.\(SubjectToken.encode(tenant))"
    }

    /// The subjects the incidents stream captures.
    public var allIncidentChanges: String {
        "\(self.prefix).incidents.>"
    }

    /// The JetStream stream that holds incident changes until the notifier has taken them.
    public var incidentStreamName: String {
        "SD_INCIDENTS_" + self.prefix.replacingAll(".", with: "_").uppercased()
    }

    /// The subject control-api asks health-monitor for a tenant's health summary on
    /// (request/reply; health-monitor's replicas share it as a queue group).
    public var healthSummary: String {
        "\(self.prefix).health.summary"
    }

    /// The subject health-monitor's replicas hear that `tenant`'s thresholds changed on.
    public func healthThresholdsChanged(tenant: String) -> String {
        "\(self.prefix).health.thresholds.\(SubjectToken.encode(tenant))"
    }

    /// The tenant a ``healthThresholdsChanged(tenant:)`` subject names; nil for another subject.
    public func parseHealthThresholdsChanged(_ subject: String) -> String? {
        let base = "\(self.prefix).health.thresholds."
        guard subject.hasPrefix(base) else { return nil }
        let token = subject.dropFirst(base.utf8.count)
        guard !token.contains(".") else { return nil }
        return SubjectToken.decode(token)
    }

    /// Every tenant's threshold changes.
    public var allHealthThresholdChanges: String {
        "\(self.prefix).health.thresholds.>"
    }

    // MARK: Parsing

    /// The identifiers an event subject carries, or `nil` if `subject` is not an event subject
    /// of this namespace.
    public func parseEvent(_ subject: String) -> EventSubject? {
        guard let tokens = self.eventTokens(subject), tokens.count == 4, let kind = BusEventKind(subjectToken: tokens[3]),
            let tenant = SubjectToken.decode(tokens[0]),
            let swarm = SubjectToken.decode(tokens[1]),
            let agent = SubjectToken.decode(tokens[2])
        else { return nil }
        return EventSubject(tenant: tenant, swarm: swarm, agent: agent, kind: kind)
    }
}

/// The identifiers carried by an event subject.
public struct EventSubject: Sendable, Hashable {
    public var tenant: String
    public var swarm: String
    public var agent: String
    public var kind: BusEventKind

    public init(tenant: String, swarm: String, agent: String, kind: BusEventKind) {
        self.tenant = tenant
        self.swarm = swarm
        self.agent = agent
        self.kind = kind
    }
}

extension BusEventKind {
    /// The subject token of this kind.
    public var subjectToken: String {
        switch self {
        case .unspecified, .UNRECOGNIZED: "unspecified"
        case .trace: "trace"
        case .log: "log"
        case .metric: "metric"
        case .state: "state"
        case .toolCall: "tool_call"
        case .usage: "usage"
        case .acp: "acp"
        case .approval: "approval"
        case .incident: "incident"
        }
    }

    /// The kind named by a subject token.
    public init?(subjectToken: Substring) {
        switch subjectToken {
        case "trace": self = .trace
        case "log": self = .log
        case "metric": self = .metric
        case "state": self = .state
        case "tool_call": self = .toolCall
        case "usage": self = .usage
        case "acp": self = .acp
        case "approval": self = .approval
        case "incident": self = .incident
        default: return nil
        }
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        result.reserveCapacity(self.utf8.count)
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}

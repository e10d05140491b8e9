import Foundation

/// The environment the connector gives its command so that the command's OpenTelemetry export
/// goes to the relay: Claude Code's switch, the standard `OTEL_*` variables (any OpenTelemetry
/// SDK reads them) with short export intervals, and the resource attributes. Pure.
public struct RelayEnvironment: Sendable, Equatable {
    /// The variables set, `NAME=value`.
    public var adding: [String]
    /// The inherited variables removed first: a signal's own endpoint, headers or protocol
    /// would send that signal past the relay.
    public var hiding: Set<String>

    /// Export intervals: metrics every 5 s, logs and spans batched for 1 s.
    public static let metricIntervalMilliseconds = 5000
    public static let batchDelayMilliseconds = 1000

    /// What Codex is given on its command line: it reads no `OTEL_*` variable, only its config
    /// (`-c` overrides it), and posts its logs to the endpoint as written.
    public var codexArguments: [String]

    public init(endpoint: String, secret: String, stamp: RelayStamp) {
        self.codexArguments = [
            "-c",
            #"otel.exporter={otlp-http={endpoint="\#(endpoint)/v1/logs", protocol="binary", headers={"\#(TelemetryRelay.secretHeader)"="\#(secret)"}}}"#,
        ]
        let resource = [(RelayStamp.swarmKey, stamp.swarm), (RelayStamp.agentKey, stamp.agent)].map { "\($0)=\(Self.percentEncoded($1))" }
        self.adding = [
            "CLAUDE_CODE_ENABLE_TELEMETRY=1",
            "OTEL_METRICS_EXPORTER=otlp",
            "OTEL_LOGS_EXPORTER=otlp",
            "OTEL_TRACES_EXPORTER=otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT=\(endpoint)",
            "OTEL_EXPORTER_OTLP_HEADERS=\(TelemetryRelay.secretHeader)=\(secret)",
            "OTEL_RESOURCE_ATTRIBUTES=\(resource.joined(separator: ","))",
            "OTEL_METRIC_EXPORT_INTERVAL=\(Self.metricIntervalMilliseconds)",
            "OTEL_LOGS_EXPORT_INTERVAL=\(Self.batchDelayMilliseconds)",
            "OTEL_BLRP_SCHEDULE_DELAY=\(Self.batchDelayMilliseconds)",
            "OTEL_BSP_SCHEDULE_DELAY=\(Self.batchDelayMilliseconds)",
        ]
        var hiding: Set<String> = Set(self.adding.map { String($0.prefix { $0 != "=" }) })
        for signal in ["TRACES", "LOGS", "METRICS"] {
            for part in ["ENDPOINT", "HEADERS", "PROTOCOL", "COMPRESSION"] { hiding.insert("OTEL_EXPORTER_OTLP_\(signal)_\(part)") }
        }
        self.hiding = hiding
    }

    /// `command` as the connector runs it: a command whose program is named `codex` gets
    /// ``codexArguments`` after its program; any other is left as it is.
    public func command(_ command: [String]) -> [String] {
        guard let program = command.first, program.split(separator: "/").last == "codex" else { return command }
        return [program] + self.codexArguments + command.dropFirst()
    }

    /// `value` with everything but RFC 3986's unreserved characters percent-encoded, as
    /// `OTEL_RESOURCE_ATTRIBUTES` wants (its `,` and `=` separate pairs).
    static func percentEncoded(_ value: String) -> String {
        // RFC 3986's unreserved characters stay; everything else is %XX of its UTF-8 bytes.
        value.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? value
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

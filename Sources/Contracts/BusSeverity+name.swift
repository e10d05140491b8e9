extension BusSeverity {
    /// The severity named `trace`, `debug`, `info`, `warn`, `error` or `fatal` (any case;
    /// `warning` and `critical` too).
    public init?(name: String) {
        switch name.lowercased() {
        case "trace": self = .trace
        case "debug": self = .debug
        case "info": self = .info
        case "warn", "warning": self = .warn
        case "error": self = .error
        case "fatal", "critical": self = .fatal
        default: return nil
        }
    }

    /// The lower-case name used in frames and filters.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .warn: "warn"
        case .error: "error"
        case .fatal: "fatal"
        case .unspecified, .UNRECOGNIZED: "info"
        }
    }
}

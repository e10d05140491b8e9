import Foundation
public import Logging

/// Writes one JSON object per line to stderr: time, level, label, message and all metadata
/// (including `request_id`, set by ``RequestIDMiddleware``).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: Any] = [
            "ts": Date().rfc3339Milliseconds,
            "level": event.level.rawValue,
            "label": self.label,
            "msg": event.message.description,
        ]
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        for (key, value) in merged { fields[key] = Self.json(value) }
        guard var line = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardError.write(line)
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let array): array.map(json)
        case .dictionary(let dictionary): dictionary.mapValues(json)
        }
    }

    /// Sends every logger of the process through this handler at `level`.
    public static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: level) }
    }
}

public import ArgumentParser
import Foundation

/// Where load goes: the options `loadgen ingest` and `bench ingest` share.
public struct IngestTargetOptions: ParsableArguments {
    @Option(help: "Base URL of ingest or the edge.")
    public var url = "http://127.0.0.1:8080"

    @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY).")
    public var key: String?

    @Option(help: "Concurrent connections.")
    public var connections = 8

    public init() {}

    public func validate() throws {
        guard (1...1024).contains(self.connections) else { throw ValidationError("connections must be 1…1024") }
    }

    /// `--key`, else `$SWARMDECK_INGEST_KEY`.
    public func ingestKey() throws -> String {
        try Self.ingestKey(self.key)
    }

    /// `key`, else `$SWARMDECK_INGEST_KEY`.
    public static func ingestKey(_ key: String?) throws -> String {
        if let key { return key }
        if let key = ProcessInfo.processInfo.environment["SWARMDECK_INGEST_KEY"], !key.isEmpty { return key }
        throw ValidationError("no ingest key: pass --key or source .swarmdeck/local.env")
    }
}

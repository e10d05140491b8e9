import Foundation
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The connector's gate socket: a Unix socket in a directory of its own (mode 0700, owned by the
/// command's user), where the command asks for approval (``GateRelayRequest``, one JSON line)
/// and gets the outcome (``GateRelayReply``) once a person decides. The command thereby opens
/// gates for its own agent only, without ever holding a credential.
///
/// Bounded: a request line over 1 MiB is refused, at most ``maxConnections`` requests are
/// served at once (one more is answered with an error at once: its hook fails closed).
final class GateRelay: Sendable {
    let path: String
    private let directory: String
    private let channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>

    static let maxRequestBytes = 1 << 20
    static let maxConnections = 64

    private init(path: String, directory: String, channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>) {
        self.path = path
        self.directory = directory
        self.channel = channel
    }

    /// Listens in a new private directory; `owner` (uid, gid) gets it when the command runs as
    /// another user. Requests are answered by `answer` until ``close()``.
    static func start(
        owner: (uid: uid_t, gid: gid_t)?,
        answer: @escaping @Sendable (GateRelayRequest) async -> GateRelayReply
    ) async throws -> GateRelay {
        var template = Array("/tmp/swarmdeck-agent-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChildProcessError("mkdtemp: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        if let owner, chown(directory, owner.uid, owner.gid) != 0 {
            throw ChildProcessError("chown \(directory): \(String(cString: strerror(errno)))")
        }
        let path = directory + "/gates.sock"
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { child in
                child.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child) }
            }
        if let owner { _ = chown(path, owner.uid, owner.gid) }
        let relay = GateRelay(path: path, directory: directory, channel: channel)
        Task {
            try? await channel.executeThenClose { connections in
                let active = ActiveCount()
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        guard active.enter(limit: Self.maxConnections) else {
                            group.addTask {
                                await Self.serve(connection) { _ in .failure("the connector serves \(Self.maxConnections) gate requests at once") }
                            }
                            continue
                        }
                        group.addTask {
                            await Self.serve(connection, answer: answer)
                            active.leave()
                        }
                    }
                }
            }
        }
        return relay
    }

    private static func serve(
        _ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>,
        answer: @Sendable (GateRelayRequest) async -> GateRelayReply
    ) async {
        try? await connection.executeThenClose { inbound, outbound in
            var line = ByteBuffer()
            for try await chunk in inbound {
                var chunk = chunk
                line.writeBuffer(&chunk)
                if line.readableBytesView.contains(UInt8(ascii: "\n")) || line.readableBytes > Self.maxRequestBytes { break }
            }
            let reply: GateRelayReply
            if line.readableBytes > Self.maxRequestBytes {
                reply = .failure("the request is over \(Self.maxRequestBytes) bytes")
            } else if let request = try? JSONDecoder().decode(GateRelayRequest.self, from: Data(line.readableBytesView)) {
                reply = await answer(request)
            } else {
                reply = .failure("not a gate request (one JSON line)")
            }
            var bytes = try JSONEncoder().encode(reply)
            bytes.append(UInt8(ascii: "\n"))
            try await outbound.write(ByteBuffer(bytes: bytes))
        }
    }

    /// Stops listening and removes the socket and its directory.
    func close() async {
        try? await self.channel.channel.close()
        unlink(self.path)
        rmdir(self.directory)
    }
}

/// Requests being served.
private final class ActiveCount: Sendable {
    private let count = Mutex(0)

    func enter(limit: Int) -> Bool {
        self.count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() {
        self.count.withLock { $0 -= 1 }
    }
}

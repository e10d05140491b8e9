import Contracts
import Crypto
import Foundation
import NIOCore
import NIOPosix
import NIOSSH
import ServiceKit

/// Where the broker connects and as whom.
struct SSHEndpoint: Sendable, Hashable {
    var host: String
    var port: Int
    var username: String
}

/// What the trust store says of the key a host presented.
enum HostKeyVerdict: Sendable {
    /// Pinned before, or pinned now on first use.
    case trusted
    /// Another key is pinned for this host and port.
    case mismatch
    /// The trust store could not answer (Postgres): the connection fails, nothing is pinned.
    case unknown
}

/// One SSH connection to a host, authenticated with the broker's ed25519 key, its host key
/// checked by the trust store. Commands and attaches run on channels multiplexed over it.
final class SSHConnection: Sendable {
    let channel: any Channel
    let endpoint: SSHEndpoint

    private init(channel: any Channel, endpoint: SSHEndpoint) {
        self.channel = channel
        self.endpoint = endpoint
    }

    /// Whether the connection can still open channels.
    var isActive: Bool { self.channel.isActive }

    /// Connects and authenticates, or throws an ``APIError`` a user can act on:
    /// `SSHHostUnreachable` (no TCP connection or no SSH handshake in `timeout`),
    /// `SSHHostKeyMismatch` (the trust store refused the host's key) or `SSHAuthFailed` (the
    /// host refused the broker's key).
    static func connect(
        to endpoint: SSHEndpoint,
        at address: String,
        key: Curve25519.Signing.PrivateKey,
        checkHostKey: @escaping @Sendable (String) async -> HostKeyVerdict,
        group: any EventLoopGroup,
        timeout: Duration
    ) async throws -> SSHConnection {
        let loop = group.next()
        let handshake = loop.makePromise(of: Void.self)
        let where_ = "\(endpoint.host):\(endpoint.port)"
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(TimeAmount(timeout))
            .channelOption(ChannelOptions.socket(SocketOptionLevel(IPPROTO_TCP), TCP_NODELAY), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let ssh = NIOSSHHandler(
                        role: .client(
                            .init(
                                userAuthDelegate: KeyAuthentication(username: endpoint.username, key: key, handshake: handshake, host: where_),
                                serverAuthDelegate: TrustOnFirstUse(check: checkHostKey, handshake: handshake, host: where_)
                            )
                        ),
                        allocator: channel.allocator,
                        inboundChildChannelInitializer: nil
                    )
                    try channel.pipeline.syncOperations.addHandler(ssh)
                    try channel.pipeline.syncOperations.addHandler(HandshakeWatcher(handshake: handshake, host: where_))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: address, port: endpoint.port).get()
        } catch {
            handshake.fail(error)
            throw APIError(.sshHostUnreachable, "cannot reach \(where_): \(Self.describe(error))", retryAfterSeconds: 5)
        }
        let deadline = loop.scheduleTask(in: TimeAmount(timeout)) {
            handshake.fail(APIError(.sshHostUnreachable, "\(where_) did not complete the SSH handshake in time", retryAfterSeconds: 5))
        }
        defer { deadline.cancel() }
        do {
            try await handshake.futureResult.get()
        } catch let error as APIError {
            channel.close(promise: nil)
            throw error
        } catch {
            channel.close(promise: nil)
            throw APIError(.sshHostUnreachable, "the SSH handshake with \(where_) failed: \(Self.describe(error))", retryAfterSeconds: 5)
        }
        return SSHConnection(channel: channel, endpoint: endpoint)
    }

    /// Closes the connection and every channel on it.
    func close() {
        self.channel.close(promise: nil)
    }

    /// Runs `command` on a new channel and collects what it writes, at most `maxOutputBytes`
    /// (beyond: `TerminalInitFailed`), within `timeout`.
    func run(_ command: String, maxOutputBytes: Int = 4 << 20, timeout: Duration = .seconds(10)) async throws -> SSHCommandResult {
        let stream = try await self.open(command)
        do {
            // On the deadline the channel is closed: that ends the output and the exit status
            // wait the deadline leaves behind.
            return try await withDeadline(
                timeout,
                orThrow: APIError(.terminalInitFailed, "the command on \(self.endpoint.host) did not finish in \(timeout)")
            ) {
                try await withTaskCancellationHandler {
                    try await Self.collect(stream, maxOutputBytes: maxOutputBytes, host: self.endpoint.host)
                } onCancel: {
                    stream.close()
                }
            }
        } catch {
            stream.close()
            throw error
        }
    }

    private static func collect(_ stream: SSHCommandStream, maxOutputBytes: Int, host: String) async throws -> SSHCommandResult {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        for try await chunk in stream.output {
            switch chunk {
            case .stdout(let bytes): stdout += bytes
            case .stderr(let bytes): stderr += bytes
            }
            guard stdout.count + stderr.count <= maxOutputBytes else {
                throw APIError(.terminalInitFailed, "the command on \(host) wrote more than \(maxOutputBytes) bytes")
            }
        }
        return SSHCommandResult(stdout: stdout, stderr: stderr, exitStatus: await stream.exitStatus())
    }

    /// Runs `command` on a new channel (no PTY) and returns its streams.
    func open(_ command: String) async throws -> SSHCommandStream {
        let created = self.channel.eventLoop.makePromise(of: SSHCommandStream.self)
        let active = self.channel.eventLoop.makePromise(of: (any Channel).self)
        let parent = self.channel
        parent.eventLoop.execute {
            do {
                let handler = try parent.pipeline.syncOperations.handler(type: NIOSSHHandler.self)
                handler.createChannel(active, channelType: .session) { child, _ in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(SSHCommandHandler())
                        created.succeed(try SSHCommandStream(child: child))
                    }.flatMap { child.setOption(ChannelOptions.allowRemoteHalfClosure, value: true) }
                }
            } catch {
                active.fail(APIError(.sshHostUnreachable, "the connection to \(self.endpoint.host) is closed", retryAfterSeconds: 1))
            }
        }
        let child: any Channel
        do {
            child = try await active.futureResult.get()
        } catch {
            created.fail(error)
            throw APIError(.terminalInitFailed, "\(self.endpoint.host) refused a session channel: \(Self.describe(error))")
        }
        let stream = try await created.futureResult.get()
        do {
            try await child.triggerUserOutboundEvent(SSHChannelRequestEvent.ExecRequest(command: command, wantReply: false)).get()
        } catch {
            child.close(promise: nil)
            throw APIError(.terminalInitFailed, "\(self.endpoint.host) refused to run a command: \(Self.describe(error))")
        }
        return stream
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? APIError { return error.message }
        return String(describing: error)
    }
}

/// What a finished command wrote and its exit status (nil when the host sent none).
struct SSHCommandResult: Sendable {
    var stdout: [UInt8]
    var stderr: [UInt8]
    var exitStatus: Int?

    var stdoutText: String { String(decoding: self.stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: self.stderr, as: UTF8.self) }
}

/// A command running on its own channel: its output as it arrives, its standard input, and its
/// exit status once the channel has closed.
struct SSHCommandStream: Sendable {
    enum Chunk: Sendable {
        case stdout([UInt8])
        case stderr([UInt8])
    }

    let output: AsyncThrowingStream<Chunk, any Error>
    private let child: any Channel
    private let status: EventLoopFuture<Int?>

    init(child: any Channel) throws {
        let handler = try child.pipeline.syncOperations.handler(type: SSHCommandHandler.self)
        self.child = child
        self.output = handler.output
        self.status = handler.status.futureResult
    }

    /// Writes `bytes` to the command's standard input; returns once they are on the wire (so a
    /// caller that awaits each write is held back by SSH flow control, never buffers without
    /// bound).
    func write(_ bytes: [UInt8]) async throws {
        let buffer = self.child.allocator.buffer(bytes: bytes)
        try await self.child.writeAndFlush(SSHChannelData(type: .channel, data: .byteBuffer(buffer))).get()
    }

    /// Queues `bytes` for the command's standard input at once (writes queued from one thread
    /// go out in the order queued).
    func send(_ bytes: [UInt8]) -> EventLoopFuture<Void> {
        let buffer = self.child.allocator.buffer(bytes: bytes)
        return self.child.writeAndFlush(SSHChannelData(type: .channel, data: .byteBuffer(buffer)))
    }

    /// The exit status, once the channel has closed.
    func exitStatus() async -> Int? {
        (try? await self.status.get()) ?? nil
    }

    func close() {
        self.child.close(promise: nil)
    }
}

/// Turns a session channel's data into ``SSHCommandStream/Chunk``s and keeps its exit status.
final class SSHCommandHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = SSHChannelData

    let output: AsyncThrowingStream<SSHCommandStream.Chunk, any Error>
    private let continuation: AsyncThrowingStream<SSHCommandStream.Chunk, any Error>.Continuation
    private(set) var status: EventLoopPromise<Int?>!
    private var exitStatus: Int?

    init() {
        (self.output, self.continuation) = AsyncThrowingStream.makeStream(bufferingPolicy: .unbounded)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.status = context.eventLoop.makePromise()
        // Read only as fast as the consumer takes chunks would need back-pressure through
        // NIOAsyncChannel; the broker's readers drain at once into bounded buffers instead.
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = self.unwrapInboundIn(data)
        guard case .byteBuffer(let buffer) = message.data else { return }
        let bytes = Array(buffer.readableBytesView)
        switch message.type {
        case .channel: self.continuation.yield(.stdout(bytes))
        case .stdErr: self.continuation.yield(.stderr(bytes))
        default: break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let exit = event as? SSHChannelRequestEvent.ExitStatus {
            self.exitStatus = exit.exitStatus
        } else if case .some(ChannelEvent.inputClosed) = event as? ChannelEvent {
            self.continuation.finish()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.continuation.finish()
        self.status.succeed(self.exitStatus)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.continuation.finish()
        self.status.succeed(self.exitStatus)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.continuation.finish(throwing: error)
        context.close(promise: nil)
    }
}

/// Offers the broker's key once; a refusal fails the handshake with `SSHAuthFailed`.
private final class KeyAuthentication: NIOSSHClientUserAuthenticationDelegate {
    let username: String
    let key: Curve25519.Signing.PrivateKey
    let handshake: EventLoopPromise<Void>
    let host: String
    var offered = false

    init(username: String, key: Curve25519.Signing.PrivateKey, handshake: EventLoopPromise<Void>, host: String) {
        self.username = username
        self.key = key
        self.handshake = handshake
        self.host = host
    }

    func nextAuthenticationType(
        availableMethods: NIOSSHAvailableUserAuthenticationMethods,
        nextChallengePromise: EventLoopPromise<NIOSSHUserAuthenticationOffer?>
    ) {
        guard !self.offered, availableMethods.contains(.publicKey) else {
            self.handshake.fail(
                APIError(
                    .sshAuthFailed,
                    "\(self.host) refused the broker's key for user \(self.username) (is the broker's public key in its authorized_keys?)"
                )
            )
            nextChallengePromise.succeed(nil)
            return
        }
        self.offered = true
        nextChallengePromise.succeed(
            NIOSSHUserAuthenticationOffer(
                username: self.username,
                serviceName: "",
                offer: .privateKey(.init(privateKey: NIOSSHPrivateKey(ed25519Key: self.key)))
            )
        )
    }
}

/// Asks the trust store about the host's key; a mismatch fails the handshake with
/// `SSHHostKeyMismatch`.
private final class TrustOnFirstUse: NIOSSHClientServerAuthenticationDelegate {
    let check: @Sendable (String) async -> HostKeyVerdict
    let handshake: EventLoopPromise<Void>
    let host: String

    init(check: @escaping @Sendable (String) async -> HostKeyVerdict, handshake: EventLoopPromise<Void>, host: String) {
        self.check = check
        self.handshake = handshake
        self.host = host
    }

    func validateHostKey(hostKey: NIOSSHPublicKey, validationCompletePromise: EventLoopPromise<Void>) {
        let key = String(openSSHPublicKey: hostKey)
        let check = self.check
        let handshake = self.handshake
        let host = self.host
        Task {
            switch await check(key) {
            case .trusted:
                validationCompletePromise.succeed(())
            case .unknown:
                let error = APIError(.serviceUnavailable, "the broker cannot check \(host)'s host key right now", retryAfterSeconds: 5)
                handshake.fail(error)
                validationCompletePromise.fail(error)
            case .mismatch:
                let error = APIError(
                    .sshHostKeyMismatch,
                    "\(host) presented another host key than the one pinned on first use; an administrator must reset its trust"
                )
                handshake.fail(error)
                validationCompletePromise.fail(error)
            }
        }
    }
}

/// Completes the handshake promise when user authentication succeeds, fails it when the
/// connection ends first.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = Any
    let handshake: EventLoopPromise<Void>
    let host: String

    init(handshake: EventLoopPromise<Void>, host: String) {
        self.handshake = handshake
        self.host = host
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is UserAuthSuccessEvent { self.handshake.succeed(()) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.handshake.fail(APIError(.sshHostUnreachable, "the SSH connection to \(self.host) failed: \(error)", retryAfterSeconds: 5))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.handshake.fail(APIError(.sshHostUnreachable, "\(self.host) closed the SSH connection", retryAfterSeconds: 5))
        context.fireChannelInactive()
    }
}

import Foundation

/// JetStream over a core connection: stream and consumer management, de-duplicated publish and
/// pull consumers, all through the JetStream JSON API on request/reply.
///
/// This avoids nats.c 3.4.1's `js_PullSubscribe`/`natsSubscription_Fetch` paths (a fetch that
/// ignores its timeout, a heap overflow when a fetch loops, durables deleted on unsubscribe).
public struct JetStream: Sendable {
    /// The connection requests go through.
    public let connection: NATSConnection
    /// The API subject prefix (`$JS.API` unless a domain is used).
    public let apiPrefix: String
    /// How long an API call may take.
    public let timeout: Duration
    /// The replicas of every stream made or updated through this handle: the deployment's
    /// `nats.jetstream-replicas` (``ServiceAssembly/jetStream``), 1 on one server.
    public let streamReplicas: Int
    /// The bytes each notice stream (``prepareNoticeStream(name:subject:)``) and the revocation
    /// stream hold at most: the deployment's `nats.notice-stream-max-bytes`. JetStream reserves
    /// a stream's bound on the server's store as it makes the stream.
    public let noticeStreamMaxBytes: Int64

    public init(
        connection: NATSConnection,
        apiPrefix: String = JetStreamOperation.defaultAPIPrefix,
        timeout: Duration = .seconds(5),
        streamReplicas: Int = 1,
        noticeStreamMaxBytes: Int64 = 256 << 20
    ) {
        self.connection = connection
        self.apiPrefix = apiPrefix
        self.timeout = timeout
        self.streamReplicas = streamReplicas
        self.noticeStreamMaxBytes = noticeStreamMaxBytes
    }

    // MARK: Streams

    /// Creates the stream, or updates it to `configuration` if it exists, with
    /// ``streamReplicas`` replicas.
    @discardableResult
    public func createOrUpdateStream(_ configuration: StreamConfiguration) async throws -> StreamInfo {
        var configuration = configuration
        configuration.replicas = self.streamReplicas
        do {
            return try await self.call(.streamCreate(stream: configuration.name), configuration)
        } catch let error as ServiceKitError where error.jetStreamErrorCode == 10058 {
            // 10058: the stream exists with another configuration.
            return try await self.call(.streamUpdate(stream: configuration.name), configuration)
        }
    }

    /// The stream's configuration and state.
    public func streamInfo(_ name: String) async throws -> StreamInfo {
        try await self.call(.streamInfo(stream: name), Optional<String>.none)
    }

    /// Deletes a stream and its messages.
    public func deleteStream(_ name: String) async throws {
        let _: DeleteResponse = try await self.call(.streamDelete(stream: name), Optional<String>.none)
    }

    // MARK: Consumers

    /// Creates (or updates) a durable pull consumer. Durables made this way outlive every
    /// client; they are removed only by ``deleteConsumer(stream:name:)``.
    public func createOrUpdateConsumer(stream: String, _ configuration: ConsumerConfiguration) async throws {
        struct Request: Encodable {
            var streamName: String
            var config: ConsumerConfiguration
            enum CodingKeys: String, CodingKey {
                case streamName = "stream_name"
                case config
            }
        }
        let _: ConsumerCreated = try await self.call(
            .durableConsumerCreate(stream: stream, consumer: configuration.durableName),
            Request(streamName: stream, config: configuration)
        )
    }

    /// Deletes a consumer.
    public func deleteConsumer(stream: String, name: String) async throws {
        let _: DeleteResponse = try await self.call(.consumerDelete(stream: stream, consumer: name), Optional<String>.none)
    }

    /// A handle to pull from a durable consumer.
    public func consumer(stream: String, name: String) -> JetStreamConsumer {
        JetStreamConsumer(jetStream: self, stream: stream, name: name)
    }

    // MARK: Publish

    /// Publishes into a stream and waits for it to be stored.
    /// - Parameter messageID: the de-duplication key (`Nats-Msg-Id`): a second publish with
    ///   the same id inside the stream's window is answered with `duplicate == true` and not
    ///   stored again.
    public func publish(
        _ payload: some Collection<UInt8>,
        to subject: String,
        messageID: String? = nil,
        headers: NATSHeaders = [:]
    ) async throws -> PublishAck {
        var headers = headers
        if let messageID { headers["Nats-Msg-Id"] = messageID }
        let reply: NATSMessage
        do {
            reply = try await self.connection.request(payload, to: subject, headers: headers, timeout: self.timeout)
        } catch let error as ServiceKitError where error.code == .natsNoResponders {
            throw ServiceKitError(.jetStream, "no stream captures subject \(subject)")
        }
        return try Self.decode(PublishAck.self, from: reply, operation: "publish to \(subject)")
    }

    // MARK: API plumbing

    private struct ErrorProbe: Decodable { var error: JetStreamAPIError? }
    /// The stored message at `sequence` of `stream` (its payload), or nil when there is none
    /// (deleted, or past the end).
    public func message(stream: String, sequence: UInt64) async throws -> [UInt8]? {
        struct Request: Encodable { var seq: UInt64 }
        struct Response: Decodable {
            struct Message: Decodable { var data: String? }
            var message: Message
        }
        do {
            let response: Response = try await self.call(.streamMessageGet(stream: stream), Request(seq: sequence))
            return response.message.data.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        } catch let error as ServiceKitError where error.jetStreamErrorCode == 10037 {
            return nil  // no message found
        }
    }

    /// The first stored message of `stream` on `subject` at sequence `from` or after it, or nil
    /// when there is none: a cursor's read, with no consumer on the server.
    public func nextMessage(stream: String, subject: String, from sequence: UInt64) async throws -> StoredMessage? {
        struct Request: Encodable {
            var seq: UInt64
            var nextBySubject: String
            enum CodingKeys: String, CodingKey {
                case seq
                case nextBySubject = "next_by_subj"
            }
        }
        struct Response: Decodable {
            struct Message: Decodable {
                var subject: String
                var seq: UInt64
                var data: String?
            }
            var message: Message
        }
        do {
            let response: Response = try await self.call(
                .streamMessageGet(stream: stream),
                Request(seq: max(1, sequence), nextBySubject: subject)
            )
            return StoredMessage(
                subject: response.message.subject,
                sequence: response.message.seq,
                payload: response.message.data.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
            )
        } catch let error as ServiceKitError where error.jetStreamErrorCode == 10037 {
            return nil  // no message found
        }
    }

    private struct DeleteResponse: Decodable { var success: Bool }
    private struct ConsumerCreated: Decodable { var name: String }

    func call<Request: Encodable, Response: Decodable>(_ call: JetStreamOperation, _ request: Request?) async throws -> Response {
        let body = try request.map { try JSONEncoder().encode($0) } ?? Data()
        let subject = call.subject(apiPrefix: self.apiPrefix)
        let operation = call.operation
        let reply: NATSMessage
        do {
            reply = try await self.connection.request(Array(body), to: subject, timeout: self.timeout)
        } catch let error as ServiceKitError where error.code == .natsNoResponders {
            throw ServiceKitError(.jetStream, "JetStream is not enabled on the server (no responders for \(subject))")
        }
        return try Self.decode(Response.self, from: reply, operation: operation)
    }

    static func decode<Response: Decodable>(_ type: Response.Type, from reply: NATSMessage, operation: String) throws -> Response {
        let data = Data(reply.payload)
        if let probe = try? JSONDecoder().decode(ErrorProbe.self, from: data), let error = probe.error {
            throw ServiceKitError(
                .jetStream,
                "\(operation): \(error.description ?? "error \(error.code)")",
                jetStreamErrorCode: error.errorCode
            )
        }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw ServiceKitError(.jetStream, "\(operation): unexpected answer \(String(decoding: reply.payload.prefix(200), as: UTF8.self))")
        }
    }
}

extension JetStream {
    /// The largest notice a notice stream takes.
    public static let noticeMaxBytes: Int64 = 65_536

    /// Creates (or updates) a stream of notices for the notifier (gate openings, incident
    /// changes): kept a day within ``noticeStreamMaxBytes`` (the oldest go first past it), each
    /// at most ``noticeMaxBytes``, published with a message id de-duplicated for ten minutes.
    public func prepareNoticeStream(name: String, subject: String) async throws {
        _ = try await self.createOrUpdateStream(
            StreamConfiguration(
                name: name,
                subjects: [subject],
                maxBytes: self.noticeStreamMaxBytes,
                maxAge: .seconds(86_400),
                duplicateWindow: .seconds(600),
                maxMessageSize: Self.noticeMaxBytes
            )
        )
    }
}

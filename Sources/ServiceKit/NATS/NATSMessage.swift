import CNATS

/// A message received from NATS. Owns copies of its bytes; the C message is already freed.
public struct NATSMessage: Sendable {
    /// The subject it was published on.
    public var subject: String
    /// The reply subject, if the publisher asked for an answer.
    public var reply: String?
    /// Its headers (empty when it had none).
    public var headers: NATSHeaders
    /// Its payload.
    public var payload: [UInt8]
    /// The status of a server-generated message (e.g. 503 no responders, 404/408 for
    /// JetStream pulls), or `nil` for an ordinary message.
    public var status: Int?
    /// The text that came with ``status``.
    public var statusDescription: String?

    public init(subject: String, reply: String? = nil, headers: NATSHeaders = [:], payload: [UInt8]) {
        self.subject = subject
        self.reply = reply
        self.headers = headers
        self.payload = payload
    }

    /// Copies a C message and destroys it.
    init(consuming message: OpaquePointer) {
        defer { natsMsg_Destroy(message) }
        self.subject = String(cString: natsMsg_GetSubject(message))
        self.reply = natsMsg_GetReply(message).flatMap { String(cString: $0) }
        let length = Int(natsMsg_GetDataLength(message))
        if length > 0, let data = natsMsg_GetData(message) {
            self.payload = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                Array(UnsafeBufferPointer(start: $0, count: length))
            }
        } else {
            self.payload = []
        }
        self.headers = NATSHeaders(reading: message)
        var status: UnsafePointer<CChar>?
        if natsMsgHeader_Get(message, "Status", &status) == NATS_OK, let status {
            self.status = Int(String(cString: status))
            var description: UnsafePointer<CChar>?
            if natsMsgHeader_Get(message, "Description", &description) == NATS_OK, let description {
                self.statusDescription = String(cString: description)
            }
        }
    }
}

/// Header names shared by HTTP and NATS messages.
public enum HeaderName {
    /// The request correlation id, echoed on every HTTP response and carried onto NATS headers.
    public static let requestID = "x-request-id"
    /// JetStream's de-duplication header.
    public static let natsMessageID = "Nats-Msg-Id"
}

/// The rule every identifier a client gives us follows (msg, swarm, agent, thread, session
/// ids): 1 to 256 bytes of UTF-8 without control characters (C0, DEL or C1). Ingest accepts
/// exactly the ids control-api can act on: they become subject tokens and Postgres text, which
/// cannot hold NUL, and are shown on a phone.
public enum EntityID {
    /// The longest identifier, in UTF-8 bytes.
    public static let maxBytes = 256

    /// What is wrong with `value` as the identifier `field`, or nil when it is one.
    public static func problem(_ value: String, field: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= Self.maxBytes else {
            return "\(field) must be 1 to \(Self.maxBytes) bytes"
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return "\(field) must not contain control characters"
        }
        // A URL path step to every browser and router, in a deep link or an API path alike.
        guard value != ".", value != ".." else { return "\(field) must not be . or .." }
        return nil
    }
}

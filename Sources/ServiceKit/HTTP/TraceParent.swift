/// A W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/ §3.2):
/// `00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>`, lowercase. The services create no
/// spans of their own: a valid one is passed on as it came (onto the bus, beside `x-request-id`)
/// and its trace id is put in the request's log lines, so one trace can be followed from a phone
/// through the edge, a service and the bus to an agent. An invalid one is ignored, as the
/// specification asks.
public struct TraceParent: Sendable, Hashable {
    /// The header to pass on: as received for version 00, a later version's first four fields as 00.
    public let header: String
    /// The trace's id, 32 lowercase hex digits, not all zero.
    public let traceID: Substring
    /// The caller's span id, 16 lowercase hex digits, not all zero.
    public let parentID: Substring

    /// The header's name.
    public static let headerName = "traceparent"

    /// The parsed header, or nil when `text` is not a valid `traceparent`.
    public init?(_ text: String?) {
        guard let text, text.utf8.count >= 55, text.utf8.count <= 512 else { return nil }
        let fields = text.split(separator: "-", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count >= 4 else { return nil }
        let (version, trace, parent, flags) = (fields[0], fields[1], fields[2], fields[3].prefix(2))
        guard version.isLowercaseHex(count: 2), version != "ff",
            trace.isLowercaseHex(count: 32), trace.contains(where: { $0 != "0" }),
            parent.isLowercaseHex(count: 16), parent.contains(where: { $0 != "0" }),
            flags.isLowercaseHex(count: 2)
        else { return nil }
        // Version 00 is exactly 55 characters; a later version may add fields after a dash.
        guard version == "00" ? text.utf8.count == 55 : fields[3].utf8.count == 2 else { return nil }
        // A later version is passed on as the version these services speak (§3.2.4.1).
        self.header = version == "00" ? text : ["00", trace, parent, flags].joined(separator: "-")
        self.traceID = trace
        self.parentID = parent
    }
}

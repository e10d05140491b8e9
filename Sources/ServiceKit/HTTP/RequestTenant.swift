import Synchronization

/// The tenant a request turned out to be of, recorded by the authenticators inside
/// ``ErrorEnvelopeMiddleware`` so that its log of a failed request names it: the context the
/// envelope holds is the one from before authentication (a value the authenticators copy).
final class RequestTenant: Sendable {
    /// The request being served, when the envelope is around it.
    @TaskLocal static var current: RequestTenant?

    private let tenant = Mutex<String?>(nil)

    /// The tenant recorded, if an authenticator ran.
    var value: String? { self.tenant.withLock { $0 } }

    /// Records `tenant` for the request being served (nothing outside the envelope).
    static func record(_ tenant: String) {
        Self.current?.tenant.withLock { $0 = tenant }
    }
}

public import Hummingbird
public import OpenAPIRuntime

extension Router where Context == ServiceRequestContext {
    /// What every OpenAPI service puts on its router: `document` served at `/openapi.yaml` (and
    /// each of `otherDocuments`, path → text, at its path: a service that serves more than one
    /// document), then, for the routes `register` adds (the generated
    /// `registerHandlers(on:middlewares:)` of each document's handler), the shared error
    /// envelope, the request scope (request id, client address behind `trustedProxies`),
    /// `authentication` (the operations' credential table), a request that sends no body
    /// reaching its operation without one (``NoBodyMiddleware``) and a redirect's `Location` as
    /// the operation wrote it (``RedirectLocationMiddleware``).
    public func addOpenAPIOperations(
        document: String,
        otherDocuments: [String: String] = [:],
        trustedProxies: Set<String>,
        authentication: OperationAuthenticationMiddleware,
        register: ([any ServerMiddleware]) throws -> Void
    ) rethrows {
        for (path, text) in [("openapi.yaml", document)] + otherDocuments.sorted(by: { $0.key < $1.key }) {
            self.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: text)))
            }
        }
        self.add(middleware: OpenAPIErrorMiddleware())
        self.add(middleware: RequestScopeMiddleware(trustedProxies: trustedProxies))
        try register([authentication, NoBodyMiddleware(), RedirectLocationMiddleware()])
    }
}

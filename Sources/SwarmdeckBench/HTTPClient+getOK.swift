import ArgumentParser
import AsyncHTTPClient
import NIOCore

extension HTTPClient {
    /// The body of a GET with `token` as its bearer, up to 8 MiB; any answer but 200 throws, with
    /// the body.
    func getOK(_ url: String, token: String) async throws -> ByteBuffer {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "authorization", value: "Bearer " + token)
        let response = try await self.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 8 << 20)
        guard response.status == .ok else { throw ValidationError("GET \(url): \(response.status) \(String(buffer: body).prefix(300))") }
        return body
    }
}

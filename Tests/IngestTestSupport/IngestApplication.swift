public import Configuration
public import Hummingbird

@testable import Ingest

/// Ingest's application, for tests of other services that need real events written and
/// published (their own `buildApplication` would clash with ingest's in one test module).
public func buildIngestApplication(reader: ConfigReader) async throws -> some ApplicationProtocol {
    try await buildApplication(reader: reader)
}

public import Configuration
public import Hummingbird

@testable import StreamFanout

/// Stream-fanout's application, for tests of other services that need a real stream (their
/// own `buildApplication` would clash with stream-fanout's in one test module).
public func buildFanoutApplication(reader: ConfigReader) async throws -> some ApplicationProtocol {
    try await buildApplication(reader: reader)
}

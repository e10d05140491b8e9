import Foundation
import ServiceKit
import SwarmdeckServices
import TestSupport
import Testing

@Suite("The docs' configuration tables are the declarations")
struct ConfigurationDocsTests {
    static let root = TestEnvironment.repositoryRoot

    @Test(
        "README.md and each service's page show the keys the code declares (swarmdeckd config docs writes them)",
        arguments: ConfigurationDocs.pages(services: ServiceRegistry.all.map { ($0.name, $0.settingsKeys) }).map { ($0.path, $0.keys) }
    )
    func page(path: String, keys: [SettingKey]) throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        let written = try #require(ConfigurationDocs.rewritten(text, keys: keys), "\(path) lacks the markers")
        #expect(written == text, "\(path) is out of date: run swift run swarmdeckd config docs")
    }
}

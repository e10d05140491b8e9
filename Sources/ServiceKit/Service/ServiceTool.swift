/// A command of the services' executable beside running a service (`swarmdeckd config keys`):
/// its name, a line for the usage, and what it does with the arguments after its name.
public struct ServiceTool: Sendable {
    /// The first argument that runs it.
    public var name: String
    /// What it does, for the usage.
    public var summary: String
    /// Runs it with the arguments after its name.
    public var run: @Sendable ([String]) async throws -> Void

    public init(name: String, summary: String, run: @escaping @Sendable ([String]) async throws -> Void) {
        self.name = name
        self.summary = summary
        self.run = run
    }
}

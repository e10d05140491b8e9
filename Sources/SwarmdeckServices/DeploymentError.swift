/// A registry that cannot be deployed as it is (a service without a schema key, no ingest), as
/// `swarmdeckd deploy` reports it.
public struct DeploymentError: Error, CustomStringConvertible {
    /// What is wrong.
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

public import Foundation

/// `swarmdeckd`, the one executable of every service, built beside the test bundle: what the
/// crash, abuse and replica tests start for real.
public enum Swarmdeckd {
    /// The executable beside the test bundle.
    public static var url: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("swarmdeckd")
    }

    /// A process (not started) that runs `service`: `swarmdeckd <service>`. `executable` names
    /// another build's instead: a `swarmdeckd`, or a service's own executable from before it
    /// (run without arguments).
    public static func process(_ service: String, executable: URL? = nil) -> Process {
        let process = Process()
        let url = executable ?? Self.url
        process.executableURL = url
        process.arguments = url.lastPathComponent == "swarmdeckd" ? [service] : []
        return process
    }
}

import Contracts
import Foundation
import ServiceKit

/// A pipeline changed by a command (paused, resumed, terminated, a gate decided): announced on
/// ``Subjects/pipelineChanged`` so the replica running it acts at once (a terminate cancels the
/// call in flight) and every replica looks for work that became runnable.
struct PipelineChange: Codable, Sendable, Equatable {
    var tenant: String
    var pipelineId: String
    /// pause, resume, terminate or decision.
    var change: String
}

extension PipelineChange {
    func publish(on connection: NATSConnection, subjects: Subjects) {
        guard let payload = try? JSONEncoder().encode(self) else { return }
        // Best effort: a replica that misses it finds the change at its next round.
        try? connection.publish(Array(payload), to: subjects.pipelineChanged)
    }
}

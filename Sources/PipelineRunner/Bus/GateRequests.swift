import Contracts
import Foundation
import ServiceKit

/// Asks approvals to open a stage's gate (``Subjects/serviceGateRequests``): the gate's
/// outcome comes back as a `gate` command on the pipeline's command queue.
struct GateRequests: Sendable {
    let connection: NATSConnection
    let subjects: Subjects

    /// Opens (or finds, by its key) the gate; returns its id.
    /// - Throws: ``APIError`` with approvals' reason when it refused, or a NATS error.
    func open(_ request: ServiceGateRequest) async throws -> String {
        var lastError: any Error = APIError(.serviceUnavailable, "approvals did not answer")
        for attempt in 1...5 {
            do {
                let reply = try await self.connection.request(
                    Array(try JSONEncoder().encode(request)),
                    to: self.subjects.serviceGateRequests,
                    timeout: .seconds(5)
                )
                let answer = try JSONDecoder().decode(ServiceGateReply.self, from: Data(reply.payload))
                if let gateID = answer.gateId { return gateID }
                let refusal = APIError(
                    answer.retryable ? .serviceUnavailable : .invalidRequest,
                    "approvals refused the gate: \(answer.error ?? "no reason")"
                )
                guard answer.retryable else { throw refusal }
                lastError = refusal
            } catch let error as APIError where error.code == .invalidRequest {
                throw error
            } catch {
                lastError = error
            }
            try await Task.sleep(for: .milliseconds(250 * attempt))
        }
        throw lastError
    }
}

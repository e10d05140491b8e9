import Synchronization

/// A value made once, by the first caller that needs it: callers that come while it is being
/// made wait for that making instead of making their own. A failure reaches the callers that
/// waited for it, and the next caller makes it again.
///
/// For what costs a subscribe (a connection's request and pull inboxes): while nats.c
/// reconnects, each subscribe holds one of the NATS threads for up to the connect timeout.
final class MadeOnce<Value: Sendable>: Sendable {
    private enum State {
        case none
        case making(Task<Result<Value, ServiceKitError>, Never>)
        case made(Value)
    }

    private let state = Mutex<State>(.none)

    /// What ``get(making:)`` does next: hand out the value, or wait for its making.
    private enum Next {
        case made(Value)
        case wait(Task<Result<Value, ServiceKitError>, Never>)
    }

    /// The value, once made.
    var value: Value? {
        self.state.withLock { state in
            if case .made(let value) = state { value } else { nil }
        }
    }

    /// The value: made by `make` if no one has made it or is making it.
    func get(making make: @escaping @Sendable () async throws(ServiceKitError) -> Value) async throws(ServiceKitError) -> Value {
        let next = self.state.withLock { state -> Next in
            switch state {
            case .made(let value):
                return .made(value)
            case .making(let task):
                return .wait(task)
            case .none:
                let task = Task { () -> Result<Value, ServiceKitError> in
                    let result: Result<Value, ServiceKitError>
                    do throws(ServiceKitError) {
                        result = .success(try await make())
                    } catch {
                        result = .failure(error)
                    }
                    self.state.withLock { state in
                        switch result {
                        case .success(let value): state = .made(value)
                        case .failure: state = .none
                        }
                    }
                    return result
                }
                state = .making(task)
                return .wait(task)
            }
        }
        switch next {
        case .made(let value): return value
        case .wait(let task): return try await task.value.get()
        }
    }
}

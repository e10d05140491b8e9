import Synchronization

/// The first of several answers, for one waiter that may arrive before or after it: whoever
/// answers first resumes the waiter (or leaves the answer for it), later answers are ignored.
/// The continuation is resumed outside the lock.
public final class FirstAnswer<Value: Sendable>: Sendable {
    private enum State {
        case waiting
        case armed(CheckedContinuation<Value, any Error>)
        case answered(Result<Value, any Error>)
        case done
    }

    private let state = Mutex(State.waiting)

    public init() {}

    /// The waiter: resumed at once if an answer came already. Call it once.
    public func arm(_ continuation: CheckedContinuation<Value, any Error>) {
        let ready: Result<Value, any Error>? = self.state.withLock { state in
            switch state {
            case .waiting:
                state = .armed(continuation)
                return nil
            case .answered(let result):
                state = .done
                return result
            case .armed, .done:
                preconditionFailure("FirstAnswer is armed once")
            }
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Whether an answer was given.
    public var isAnswered: Bool {
        self.state.withLock { state in
            switch state {
            case .waiting, .armed: false
            case .answered, .done: true
            }
        }
    }

    /// Gives the answer; false if another came first.
    @discardableResult
    public func answer(_ result: Result<Value, any Error>) -> Bool {
        let (first, waiter): (Bool, CheckedContinuation<Value, any Error>?) = self.state.withLock { state in
            switch state {
            case .waiting:
                state = .answered(result)
                return (true, nil)
            case .armed(let continuation):
                state = .done
                return (true, continuation)
            case .answered, .done:
                return (false, nil)
            }
        }
        waiter?.resume(with: result)
        return first
    }
}

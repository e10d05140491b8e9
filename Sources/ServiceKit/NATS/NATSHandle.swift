import CNATS
import Synchronization

/// Owns a C connection pointer. The C objects lock internally, so sharing is safe.
final class NATSHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        natsConnection_Destroy(self.pointer)
    }
}

/// Owns a C subscription pointer.
final class NATSSubscriptionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    private let lastDropped = Atomic<Int64>(0)
    /// Woken before destruction: a delivery thread blocked on a full buffer would otherwise
    /// wait forever and the subscription would never complete.
    private weak let buffer: SubscriptionBuffer?

    init(_ pointer: OpaquePointer, buffer: SubscriptionBuffer? = nil) {
        self.pointer = pointer
        self.buffer = buffer
    }

    /// nats.c's slow-consumer drop count: read now if the subscription is live, else the last
    /// count read.
    func libraryDropped() -> Int64 {
        var dropped: Int64 = 0
        if natsSubscription_GetDropped(self.pointer, &dropped) == NATS_OK {
            self.lastDropped.max(dropped, ordering: .relaxed)
            return dropped
        }
        return self.lastDropped.load(ordering: .relaxed)
    }

    deinit {
        self.buffer?.cancel()
        // Destroying a live subscription unsubscribes it, which takes the connection's lock: on
        // the dedicated threads, never on the thread that let it go.
        let pointer = SubscriptionPointer(self.pointer)
        runBlockingDetached { natsSubscription_Destroy(pointer.pointer) }
    }
}

/// Throws a ``ServiceKitError`` for a failed nats.c status.
func natsCheck(_ status: natsStatus, _ what: @autoclosure () -> String) throws(ServiceKitError) {
    guard status != NATS_OK else { return }
    throw natsError(status, what())
}

func natsError(_ status: natsStatus, _ what: String) -> ServiceKitError {
    let text = String(cString: natsStatus_GetText(status))
    switch status {
    case NATS_TIMEOUT: return ServiceKitError(.natsTimeout, "\(what): \(text)")
    case NATS_NO_RESPONDERS: return ServiceKitError(.natsNoResponders, "\(what): \(text)")
    case NATS_CONNECTION_CLOSED: return ServiceKitError(.natsClosed, "\(what): \(text)")
    default: return ServiceKitError(.natsOperation, "\(what): \(text)")
    }
}

/// A C subscription pointer handed to the dedicated threads to destroy.
private struct SubscriptionPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

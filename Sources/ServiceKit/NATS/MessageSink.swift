import CNATS

/// Receives the messages of one C subscription on its delivery thread.
///
/// A sink is retained for the C subscription's lifetime and released by the
/// subscription's on-complete callback, which nats.c calls once after the last message
/// callback has returned.
protocol MessageSink: AnyObject, Sendable {
    /// Called on the subscription's delivery thread, one message at a time, in order.
    func deliver(_ message: NATSMessage)
    /// Called once when the subscription is gone (unsubscribed, drained or connection closed).
    func complete()
}

/// The C message callback shared by every subscription: copies the message and hands it to the
/// sink passed as the closure.
let natsMessageTrampoline: natsMsgHandler = { _, _, message, closure in
    guard let message, let closure else { return }
    let sink = Unmanaged<AnyObject>.fromOpaque(closure).takeUnretainedValue() as! any MessageSink
    sink.deliver(NATSMessage(consuming: message))
}

/// The C on-complete callback: tells the sink and releases the retain taken at subscribe.
let natsCompleteTrampoline: natsOnCompleteCB = { closure in
    guard let closure else { return }
    let unmanaged = Unmanaged<AnyObject>.fromOpaque(closure)
    (unmanaged.takeUnretainedValue() as! any MessageSink).complete()
    unmanaged.release()
}
